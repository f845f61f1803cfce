// Signing in through the sign-in form over HTTP as a browser does (GET the form and its CSRF cookie,
// POST it back), and the cookies a browser would then send.
import { expect } from 'vitest';
import { setPassword } from '../../src/domain/auth/sign-in.js';
import type { DatabaseClient } from '../../src/db/database.js';

/** The name=value pairs of a response's Set-Cookie headers (attributes dropped). */
export function setCookies(response: Response): Map<string, string> {
  const cookies = new Map<string, string>();
  for (const header of response.headers.getSetCookie()) {
    const pair = header.split(';')[0]!;
    const equals = pair.indexOf('=');
    cookies.set(pair.slice(0, equals), pair.slice(equals + 1));
  }
  return cookies;
}

/** A Set-Cookie header of that name, whole (with its attributes). */
export const setCookieHeader = (response: Response, name: string) =>
  response.headers.getSetCookie().find((header) => header.startsWith(`${name}=`));

/** A Cookie header from name=value pairs. */
export const cookieHeader = (cookies: Record<string, string>) =>
  Object.entries(cookies)
    .map(([name, value]) => `${name}=${value}`)
    .join('; ');

/** The value of the form's hidden CSRF field. */
export function formCsrfToken(page: string): string {
  const match = /name="csrfmiddlewaretoken" value="([^"]+)"/.exec(page);
  if (!match) throw new Error('the page has no CSRF field');
  return match[1]!;
}

/** GET a form page: its CSRF token, and the cookies to send with its POST. */
export async function openForm(
  url: string,
  cookies: Record<string, string> = {},
): Promise<{ token: string; cookies: Record<string, string>; page: string }> {
  const response = await fetch(url, { headers: { cookie: cookieHeader(cookies) } });
  expect(response.status).toBe(200);
  const page = await response.text();
  return { token: formCsrfToken(page), cookies: { ...cookies, ...Object.fromEntries(setCookies(response)) }, page };
}

/**
 * POST a form as a browser does: urlencoded, with the cookies and the page's Origin (a browser sends
 * it with every POST: the server's own unless `origin` says another), not following the redirect.
 */
export function postForm(
  url: string,
  fields: Record<string, string>,
  cookies: Record<string, string> = {},
  origin = new URL(url).origin,
): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    redirect: 'manual',
    headers: { cookie: cookieHeader(cookies), 'content-type': 'application/x-www-form-urlencoded', origin },
    body: new URLSearchParams(fields),
  });
}

export interface SignedIn {
  /** The session's cookies (session and CSRF), as a browser holds them. */
  cookies: Record<string, string>;
  /** The session cookie alone, as a Cookie header. */
  cookie: string;
  csrfToken: string;
}

export const PASSWORD = 'correct horse battery staple';

/** Gives the user a password (the domain's own setPassword: what the CLI and the forms call). */
export async function givePassword(prisma: DatabaseClient, userId: number, password = PASSWORD): Promise<void> {
  await setPassword(prisma, userId, password);
}

/** Signs in through the form; fails the test unless the answer is the redirect with the session's cookies. */
export async function signIn(serverUrl: string, credentials: { username: string; password?: string; realm?: string }): Promise<SignedIn> {
  const form = await openForm(`${serverUrl}/accounts/login/`);
  const response = await postForm(
    `${serverUrl}/accounts/login/`,
    {
      csrfmiddlewaretoken: form.token,
      username: credentials.username,
      password: credentials.password ?? PASSWORD,
      realm: credentials.realm ?? '',
      next: '',
    },
    form.cookies,
  );
  expect(response.status, await response.clone().text()).toBe(303);
  const cookies = Object.fromEntries(setCookies(response));
  const sessionName = Object.keys(cookies).find((name) => name.endsWith('sessionid'))!;
  const csrfName = Object.keys(cookies).find((name) => name.endsWith('csrftoken'))!;
  return { cookies, cookie: `${sessionName}=${cookies[sessionName]}`, csrfToken: cookies[csrfName]! };
}
