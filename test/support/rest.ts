// Calls the REST API over HTTP the way a plain client does and hands back everything a test
// asserts on: status, headers and the parsed body (null when there is none).
export interface ApiResponse {
  status: number;
  headers: Headers;
  body: any;
}

export interface ApiCall {
  authorization?: string;
  query?: Record<string, string>;
  /** Sent as application/x-www-form-urlencoded. */
  form?: Record<string, string>;
  headers?: Record<string, string>;
}

/** `path` is everything after /api/v1, already percent-encoded where it must be. */
export async function callApi(serverUrl: string, method: string, path: string, call: ApiCall = {}): Promise<ApiResponse> {
  const query = call.query ? `?${new URLSearchParams(call.query)}` : '';
  const response = await fetch(`${serverUrl}/api/v1${path}${query}`, {
    method,
    redirect: 'manual',
    headers: { ...(call.authorization ? { authorization: call.authorization } : {}), ...call.headers },
    body: call.form ? new URLSearchParams(call.form) : undefined,
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: text === '' ? null : JSON.parse(text) };
}
