// No web page of another origin can act for a signed-in user. CORS answers only the
// allow-listed origins (never a reflected one), GraphQL requests a browser sends without a preflight
// need a CSRF header, and state-changing requests from other origins are refused on both doors.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { storedInvitations } from '../support/invites.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { createWorld, type World } from '../support/world.js';

const EVIL = 'https://evil.example';
const FRIEND = 'https://admin.friend.example';
let server: TestServer;
let allowing: TestServer;
let w: World;
beforeAll(async () => {
  server = await startTestServer();
  allowing = await startTestServer({ allowedOrigins: [FRIEND] });
  w = await createWorld(server.app.prisma);
});
afterAll(async () => {
  await server?.close();
  await allowing?.close();
});

const inviteMutation = (email: string) =>
  `mutation { sendInvitations(input: { inviteeEmails: ["${email}"], streamIds: [] }) { __typename } }`;
const invited = async () => (await storedInvitations(server.app.prisma, w.org.id)).map((i) => i.email);

function preflight(url: string, path: string, origin: string) {
  return fetch(`${url}${path}`, {
    method: 'OPTIONS',
    headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization,content-type' },
  });
}

describe('CORS', () => {
  test('by default no origin gets CORS headers, on either door', async () => {
    for (const path of ['/graphql', '/api/v1/invites']) {
      const answer = await preflight(server.url, path, EVIL);
      expect(answer.headers.get('access-control-allow-origin')).toBeNull();
      expect(answer.headers.get('access-control-allow-credentials')).toBeNull();
    }
    const get = await fetch(`${server.url}/api/v1/server_settings`, { headers: { origin: EVIL } });
    expect(get.headers.get('access-control-allow-origin')).toBeNull();
  });

  test('CORS_ALLOWED_ORIGINS: the listed origin is answered with credentials, others are not', async () => {
    for (const path of ['/graphql', '/api/v1/invites']) {
      const friend = await preflight(allowing.url, path, FRIEND);
      expect(friend.status).toBe(204);
      expect(friend.headers.get('access-control-allow-origin')).toBe(FRIEND);
      expect(friend.headers.get('access-control-allow-credentials')).toBe('true');
      expect(friend.headers.get('access-control-allow-headers')?.toLowerCase()).toContain('authorization');
      const evil = await preflight(allowing.url, path, EVIL);
      expect(evil.headers.get('access-control-allow-origin')).toBeNull();
    }
    const allowedWorld = await createWorld(allowing.app.prisma);
    const fromFriend = await fetch(`${allowing.url}/api/v1/users/me`, {
      headers: { origin: FRIEND, authorization: allowedWorld.users.member.auth },
    });
    expect(fromFriend.status).toBe(200);
    expect(fromFriend.headers.get('access-control-allow-origin')).toBe(FRIEND);
  });
});

describe('requests a browser sends cross-site without a preflight change nothing', () => {
  test('GraphQL: form-urlencoded, multipart and text/plain mutations without the CSRF header are refused with 403', async () => {
    const query = inviteMutation('csrf-form@example.net');
    const bodies: [string, BodyInit, Record<string, string>][] = [
      ['form', new URLSearchParams({ query }), {}],
      [
        'multipart',
        (() => {
          const f = new FormData();
          f.set('operations', JSON.stringify({ query }));
          f.set('map', '{}');
          return f;
        })(),
        {},
      ],
      ['text/plain', JSON.stringify({ query }), { 'content-type': 'text/plain' }],
    ];
    for (const [, body, headers] of bodies) {
      const answer = await fetch(`${server.url}/graphql`, {
        method: 'POST',
        body,
        headers: { authorization: w.users.owner.auth, ...headers },
      });
      expect(answer.status).toBe(403);
      expect((await answer.json()).errors[0].message).toBe('Required CSRF header(s) not present');
    }
    expect(await invited()).toEqual([]);
  });

  test('GraphQL: a non-browser client sending the header may use form-urlencoded', async () => {
    const answer = await fetch(`${server.url}/graphql`, {
      method: 'POST',
      body: new URLSearchParams({ query: inviteMutation('csrf-header@example.net') }),
      headers: { authorization: w.users.owner.auth, 'x-graphql-yoga-csrf': '1' },
    });
    expect(answer.status).toBe(200);
    expect(await invited()).toEqual(['csrf-header@example.net']);
  });

  test('GraphQL: JSON and GET queries need no header; GET never runs a mutation', async () => {
    const json = await fetch(`${server.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: w.users.member.auth },
      body: JSON.stringify({ query: '{ me { email } }' }),
    });
    expect((await json.json()).data.me.email).toBe(w.users.member.email);
    const get = await fetch(`${server.url}/graphql?query=${encodeURIComponent('{ me { email } }')}`, {
      headers: { authorization: w.users.member.auth, accept: 'application/json' },
    });
    expect((await get.json()).data.me.email).toBe(w.users.member.email);
    const getMutation = await fetch(`${server.url}/graphql?query=${encodeURIComponent(inviteMutation('csrf-get@example.net'))}`, {
      headers: { authorization: w.users.owner.auth, accept: 'application/json' },
    });
    expect(getMutation.status).toBe(405);
    expect(await invited()).not.toContain('csrf-get@example.net');
  });

  test('both doors: a state-changing request from another origin is refused with 403, even as JSON with the header', async () => {
    const graphql = await fetch(`${server.url}/graphql`, {
      method: 'POST',
      headers: { origin: EVIL, 'content-type': 'application/json', 'x-graphql-yoga-csrf': '1', authorization: w.users.owner.auth },
      body: JSON.stringify({ query: inviteMutation('csrf-origin@example.net') }),
    });
    expect(graphql.status).toBe(403);
    const rest = await fetch(`${server.url}/api/v1/invites`, {
      method: 'POST',
      headers: { origin: EVIL, authorization: w.users.owner.auth },
      body: new URLSearchParams({ invitee_emails: 'csrf-rest@example.net', stream_ids: '[]' }),
    });
    expect(rest.status).toBe(403);
    expect(await rest.json()).toEqual({ result: 'error', msg: `Cross-origin requests from ${EVIL} are not allowed`, code: 'BAD_REQUEST' });
    expect(await invited()).not.toContain('csrf-origin@example.net');
    expect(await invited()).not.toContain('csrf-rest@example.net');
  });

  test("REST: the same request from the server's own origin, or from a client that sends no Origin, works", async () => {
    for (const [email, headers] of [
      ['same-origin@example.net', { origin: server.url }],
      ['no-origin@example.net', {}],
    ] as const) {
      const answer = await fetch(`${server.url}/api/v1/invites`, {
        method: 'POST',
        headers: { ...headers, authorization: w.users.owner.auth },
        body: new URLSearchParams({ invitee_emails: email, stream_ids: '[]' }),
      });
      expect(answer.status).toBe(200);
    }
    expect(await invited()).toEqual(expect.arrayContaining(['same-origin@example.net', 'no-origin@example.net']));
  });
});
