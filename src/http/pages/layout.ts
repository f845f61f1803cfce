// The shell of the server-rendered pages: self-contained (no external assets), strict headers.
import { html, trustedHtml, type HtmlFragment } from '../../domain/email/html.js';

const HEADERS: Record<string, string> = {
  'Content-Type': 'text/html; charset=utf-8',
  // Pages can show an API key: never cache them, never leak their URL (it holds the confirmation key)
  // to another site. `same-origin` rather than `no-referrer`: under `no-referrer` a browser sends
  // `Origin: null` with the page's own form POSTs, which the origin check must refuse.
  'Cache-Control': 'no-store',
  'Referrer-Policy': 'same-origin',
  'X-Content-Type-Options': 'nosniff',
  // Never inside another page's frame (clickjacking): CSP for today's browsers, X-Frame-Options for older ones.
  'Content-Security-Policy': "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'X-Frame-Options': 'DENY',
};

const STYLE = `
  body { font-family: system-ui, sans-serif; background: #f5f5f7; color: #222; margin: 0; }
  main { max-width: 34rem; margin: 4rem auto; background: #fff; padding: 2rem; border-radius: 8px; box-shadow: 0 1px 4px #0002; }
  h1 { font-size: 1.4rem; margin-top: 0; }
  label { display: block; font-weight: 600; margin-bottom: .3rem; }
  input { width: 100%; box-sizing: border-box; padding: .5rem; font-size: 1rem; }
  button { margin-top: 1rem; padding: .6rem 1.2rem; font-size: 1rem; }
  code { background: #eee; padding: .1rem .3rem; border-radius: 3px; word-break: break-all; }
  .error { color: #a00; }
`;

/** A page; `cookies` are Set-Cookie values (the sign-in pages' session and CSRF cookies). */
export function page(title: string, body: HtmlFragment, status = 200, cookies: string[] = []): Response {
  const document = html`<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title}</title><style>${trustedHtml(STYLE)}</style></head>
<body><main>
${body}
</main></body>
</html>
`;
  const headers = new Headers(HEADERS);
  for (const cookie of cookies) headers.append('Set-Cookie', cookie);
  return new Response(document.value, { status, headers });
}

/** A redirect after a form (303: the browser follows with GET), with its cookies. */
export function redirect(location: string, cookies: string[] = []): Response {
  const headers = new Headers({ Location: location, 'Cache-Control': 'no-store', 'Referrer-Policy': 'no-referrer' });
  for (const cookie of cookies) headers.append('Set-Cookie', cookie);
  return new Response(null, { status: 303, headers });
}

export function errorPage(title: string, message: string, status: number): Response {
  return page(title, html`<h1>${title}</h1>\n<p class="error" id="error">${message}</p>`, status);
}

/** A page's answer while the database is unavailable (or too busy): 503 with Retry-After, as the API's. */
export function unavailablePage(retryAfterSeconds: number): Response {
  const response = errorPage('Temporarily unavailable', 'The service is temporarily unavailable. Please try again in a few moments.', 503);
  response.headers.set('Retry-After', String(retryAfterSeconds));
  return response;
}
