// Password reset by e-mail (signin.md sections 2 and 5, Decision 4), through the real outbox worker and
// a real SMTP receiver: the same page for every request, the e-mail each address gets, the limits
// past which nothing is sent, and the link (3 days, once, a weak password refused, every session
// ended, the sign-in rate limit cleared).
import { randomBytes } from 'node:crypto';
import type { ParsedMail } from 'mailparser';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { resetLinkAccount } from '../../src/domain/auth/password-reset.js';
import { setPassword } from '../../src/domain/auth/sign-in.js';
import type { RunningServer } from '../../src/server.js';
import { cookieHeader, givePassword, openForm, postForm, signIn } from '../support/sessions.js';
import { runOnTestDatabase } from '../support/server.js';
import { eventually, recipient, startMailReceiver, startServerWithOutbox, type MailReceiver } from '../support/smtp.js';
import { createWorld, type World } from '../support/world.js';

let receiver: MailReceiver;
let server: RunningServer;
beforeAll(async () => {
  receiver = await startMailReceiver();
  // Behind a trusted proxy (the test itself) each test names its own client address.
  server = await startServerWithOutbox({ smtpUrl: receiver.url, trustedProxies: ['127.0.0.1'] }, { outbox: { pollMs: 200 } });
});
afterAll(async () => {
  await server?.close();
  await receiver?.close();
});

const RESET = () => `${server.url}/accounts/password/reset/`;
const newClient = () => `10.${randomBytes(1)[0]}.${randomBytes(1)[0]}.${1 + (randomBytes(1)[0]! % 250)}`;
const newAddress = (label: string) => `${label}-${randomBytes(5).toString('hex')}@reset.example`;

/** A world whose member has an address of their own (world addresses repeat across worlds) and a password. */
async function memberWithOwnAddress(): Promise<{ world: World; email: string }> {
  const world = await createWorld(server.app.prisma);
  const email = newAddress('member');
  await runOnTestDatabase(`UPDATE user_account SET email = $1, "emailKey" = lower($1) WHERE id = $2`, [email, world.users.member.id]);
  await givePassword(server.app.prisma, world.users.member.id);
  return { world, email };
}

/** The reset request as a browser sends it, from `client`. */
async function requestReset(email: string, client = newClient()): Promise<Response> {
  const form = await openForm(RESET());
  return fetch(RESET(), {
    method: 'POST',
    redirect: 'manual',
    headers: {
      cookie: cookieHeader(form.cookies),
      'content-type': 'application/x-www-form-urlencoded',
      'x-forwarded-for': client,
      origin: server.url,
    },
    body: new URLSearchParams({ csrfmiddlewaretoken: form.token, email }),
  });
}

const mailsTo = (address: string) => receiver.received.filter((mail) => recipient(mail) === address.toLowerCase());
const mailTo = (address: string, count = 1) =>
  eventually(() => mailsTo(address).length >= count && mailsTo(address), `${count} e-mail(s) to ${address}`);

const LINK = /(http:\/\/[^\s]+\/accounts\/password\/reset\/([^/\s]+)\/([^/\s]+)\/)/;

function linkIn(mail: ParsedMail): { url: string; uid: string; token: string } {
  const match = LINK.exec(mail.text ?? '');
  if (!match) throw new Error(`no reset link in: ${mail.text}`);
  return { url: match[1]!, uid: match[2]!, token: match[3]! };
}

/** A reset link e-mailed to the address. */
async function resetLink(email: string) {
  const before = mailsTo(email).length;
  expect((await requestReset(email)).status).toBe(303);
  const mails = await mailTo(email, before + 1);
  return linkIn(mails.at(-1)!);
}

/** Sends the new-password form of a link. */
async function submitNewPassword(url: string, password1: string, password2 = password1): Promise<{ status: number; page: string }> {
  const form = await openForm(url);
  const response = await postForm(
    url,
    { csrfmiddlewaretoken: form.token, new_password1: password1, new_password2: password2 },
    form.cookies,
  );
  return { status: response.status, page: await response.text() };
}

const shownError = (page: string) => /<p class="error" id="error">([^<]*)<\/p>/.exec(page)?.[1];
const NEW_PASSWORD = 'a much better passphrase';

describe('the request', () => {
  test('GET shows the form (e-mail, CSRF token) with no external assets', async () => {
    const response = await fetch(RESET());
    expect(response.status).toBe(200);
    const page = await response.text();
    expect(page).toContain('name="email"');
    expect(page).toContain('name="csrfmiddlewaretoken"');
    expect(page).not.toMatch(/<(script|link|img)\b/);
  });

  test('an active account gets the link: subject names the organization, the link is SERVER_URL/accounts/password/reset/<uid>/<token>/', async () => {
    const { world, email } = await memberWithOwnAddress();
    const response = await requestReset(email);
    expect(response.status).toBe(303);
    expect(response.headers.get('location')).toBe('/accounts/password/reset/done/');
    const [mail] = await mailTo(email);
    const organization = await server.app.prisma.organization.findUniqueOrThrow({ where: { id: world.org.id } });
    expect(mail!.subject).toBe(`Password reset request for ${organization.name}`);
    const link = linkIn(mail!);
    expect(link.url.startsWith(`${server.app.config.serverUrl}/accounts/password/reset/`)).toBe(true);
    expect(mail!.html).toContain(link.url);
  });

  test('any other address (unknown, deactivated, a bot) gets a notice without a link; the page is the same for every address', async () => {
    const { email: known } = await memberWithOwnAddress();
    const unknown = newAddress('nobody');
    const world = await createWorld(server.app.prisma);
    const deactivated = newAddress('dora');
    await runOnTestDatabase(`UPDATE user_account SET email = $1, "emailKey" = lower($1) WHERE id = $2`, [
      deactivated,
      world.users.deactivated.id,
    ]);
    const bot = newAddress('bot');
    await runOnTestDatabase(`UPDATE user_account SET email = $1, "emailKey" = lower($1) WHERE id = $2`, [bot, world.users.bot.id]);
    const answers = [];
    for (const address of [known, unknown, deactivated, bot, 'not an address']) {
      const response = await requestReset(address);
      answers.push({
        status: response.status,
        location: response.headers.get('location'),
        cookies: response.headers.getSetCookie(),
        body: await response.text(),
      });
    }
    for (const answer of answers) expect(answer).toEqual(answers[0]);
    for (const address of [unknown, deactivated, bot]) {
      const [notice] = await mailTo(address);
      expect(notice!.subject).toBe('Password reset request');
      expect(notice!.text).toContain('no active account uses this address');
      expect(notice!.text).not.toMatch(LINK);
    }
    // The done page itself says nothing about the address.
    const done = await fetch(`${server.url}/accounts/password/reset/done/`);
    expect(done.status).toBe(200);
    expect(await done.text()).toContain('Check your e-mail');
  });

  test('POST without the CSRF token: 403, nothing sent', async () => {
    const email = newAddress('csrf');
    const response = await postForm(RESET(), { email });
    expect(response.status).toBe(403);
    // A later request for another address is delivered, so this one's absence is known.
    const marker = newAddress('marker');
    await requestReset(marker);
    await mailTo(marker);
    expect(mailsTo(email)).toEqual([]);
  });

  test('2 an hour per address: the third is answered the same, with no e-mail', async () => {
    const email = newAddress('hourly');
    const client = newClient();
    for (let i = 0; i < 3; i++) expect((await requestReset(email, client)).headers.get('location')).toBe('/accounts/password/reset/done/');
    const marker = newAddress('marker');
    await requestReset(marker);
    await mailTo(marker);
    expect(mailsTo(email)).toHaveLength(2);
  });

  test('5 a day per address, and 5 a day per client address', async () => {
    const email = newAddress('daily');
    // Each hour's window passes (made to end now) between pairs of requests.
    const endHour = () =>
      runOnTestDatabase(`UPDATE rate_counter SET "windowEnd" = now() AT TIME ZONE 'UTC' WHERE key = $1`, [`password-reset:${email}:3600`]);
    for (let i = 0; i < 6; i++) {
      if (i % 2 === 0) await endHour();
      await requestReset(email);
    }
    const client = newClient();
    const addresses = Array.from({ length: 6 }, () => newAddress('client'));
    for (const address of addresses) await requestReset(address, client);
    const marker = newAddress('marker');
    await requestReset(marker);
    await mailTo(marker);
    expect(mailsTo(email)).toHaveLength(5);
    expect(addresses.map((address) => mailsTo(address).length)).toEqual([1, 1, 1, 1, 1, 0]);
  });
});

describe('the link', () => {
  test('shows the form for the account; the passwords must match, be strong and hold no NUL, nothing changes until they do', async () => {
    const { world, email } = await memberWithOwnAddress();
    const link = await resetLink(email);
    const page = await (await fetch(link.url)).text();
    expect(page).toContain(email);
    expect(page).toContain('name="new_password1"');
    expect(page).toContain('name="new_password2"');
    const hash = async () => (await server.app.prisma.user.findUniqueOrThrow({ where: { id: world.users.member.id } })).passwordHash;
    const before = await hash();
    const differ = await submitNewPassword(link.url, NEW_PASSWORD, `${NEW_PASSWORD}!`);
    expect(differ.status).toBe(200);
    expect(shownError(differ.page)).toBe('The two password fields didn’t match.');
    const weak = await submitNewPassword(link.url, 'abcdef');
    expect(weak.status).toBe(200);
    expect(shownError(weak.page)).toBe('The password is too weak.');
    for (const withNul of [`${NEW_PASSWORD}\0`, '\0abc']) {
      const refused = await submitNewPassword(link.url, withNul);
      const shown = { status: refused.status, error: shownError(refused.page) };
      expect(shown).toEqual({ status: 200, error: 'Null characters are not allowed.' });
    }
    expect(await hash()).toBe(before);
  });

  test('success: the new password works, every session ends, the sign-in rate limit is cleared, the page links to the sign-in page; the link works once', async () => {
    const { world, email } = await memberWithOwnAddress();
    const realm = world.org.stringId;
    const sessions = [await signIn(server.url, { username: email, realm }), await signIn(server.url, { username: email, realm })];
    // Four wrong attempts: one more would be the fifth, the sixth refused.
    for (let i = 0; i < 4; i++) {
      const form = await openForm(`${server.url}/accounts/login/`);
      await postForm(
        `${server.url}/accounts/login/`,
        { csrfmiddlewaretoken: form.token, username: email, password: 'wrong', realm, next: '' },
        form.cookies,
      );
    }
    const link = await resetLink(email);
    const done = await submitNewPassword(link.url, NEW_PASSWORD);
    expect(done.status).toBe(200);
    expect(done.page).toContain('href="/accounts/login/"');
    for (const session of sessions)
      expect((await fetch(`${server.url}/json/users/me`, { headers: { cookie: session.cookie } })).status).toBe(401);
    expect(await server.app.prisma.userSession.count({ where: { userId: world.users.member.id } })).toBe(0);
    // Cleared: two more attempts (wrong, then right) are the first two of a new count.
    const form = await openForm(`${server.url}/accounts/login/`);
    await postForm(
      `${server.url}/accounts/login/`,
      { csrfmiddlewaretoken: form.token, username: email, password: 'wrong', realm, next: '' },
      form.cookies,
    );
    await signIn(server.url, { username: email, password: NEW_PASSWORD, realm });
    // Once: the same link no longer works.
    const again = await fetch(link.url);
    expect(again.status).toBe(404);
    expect(shownError(await again.text())).toMatch(/^The password reset link was invalid/);
    expect((await submitNewPasswordRaw(link.url)).status).toBe(404);
  });

  test('stops working when the password changes otherwise, and after 3 days', async () => {
    const { world, email } = await memberWithOwnAddress();
    const link = await resetLink(email);
    const now = Date.now();
    expect(await resetLinkAccount(server.app, link, now + 3 * 24 * 3600 * 1000 - 60_000)).toMatchObject({ id: world.users.member.id });
    expect(await resetLinkAccount(server.app, link, now + 3 * 24 * 3600 * 1000 + 60_000)).toBeNull();
    await setPassword(server.app.prisma, world.users.member.id, 'changed elsewhere meanwhile');
    expect((await fetch(link.url)).status).toBe(404);
  });

  test('a made-up, altered or hostile link is the invalid-link page, never a 500', async () => {
    const { email } = await memberWithOwnAddress();
    const link = await resetLink(email);
    const base = `${server.url}/accounts/password/reset`;
    const altered = link.token.slice(0, -1) + (link.token.endsWith('A') ? 'B' : 'A');
    const paths = [
      `${base}/${link.uid}/${altered}/`,
      `${base}/${Buffer.from('999999999').toString('base64url')}/${link.token}/`,
      `${base}/${'A'.repeat(5000)}/${link.token}/`,
      `${base}/%00/${link.token}/`,
      `${base}/${link.uid}/%00-${'a'.repeat(32)}/`,
      `${base}/${Buffer.from('-1').toString('base64url')}/zzzzzzzzz-${'a'.repeat(32)}/`,
    ];
    for (const path of paths) {
      const response = await fetch(path);
      expect(response.status, path).toBe(404);
      const posted = await submitNewPasswordRaw(path);
      expect(posted.status, path).toBe(404);
    }
  });
});

/** A new-password POST with a valid CSRF pair (from the sign-in form), to any URL. */
async function submitNewPasswordRaw(url: string): Promise<Response> {
  const form = await openForm(`${server.url}/accounts/login/`);
  return postForm(url, { csrfmiddlewaretoken: form.token, new_password1: NEW_PASSWORD, new_password2: NEW_PASSWORD }, form.cookies);
}
