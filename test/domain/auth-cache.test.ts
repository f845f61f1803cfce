// The authentication cache of each server process (src/domain/auth/auth-cache.ts). Two server
// processes (`node dist/main.js`) over one database each cache a user; a key reset made by the CLI,
// a deactivation, a role change or an organization's deactivation made outside them takes effect at
// once: polled right after the change returns, without waiting for its notification, both refuse
// (or act on the new state) within 1 s; after a regeneration the other process refuses the old key
// 100 ms after the answer, every time. That each process answers from its cache is proven by the
// statements it sends (SQL_STATEMENT_COUNTER): with the cache off, every request reads the credentials.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { STATEMENT_COUNT_PREFIX } from '../../src/db/statement-counter.js';
import { hashApiKey } from '../../src/domain/users/api-keys.js';
import {
  runCli,
  serverProcessesOnTestDatabase,
  testDatabaseEnvironment,
  type ProcessesOnTestDatabase,
  type Started,
} from '../support/process.js';
import { startCountingApp } from '../support/query-count.js';
import { basicAuth, runOnTestDatabase, startTestServer, type TestServer } from '../support/server.js';
import { createWorld, type World, type WorldUserName } from '../support/world.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server?.close());

interface Answer {
  status: number;
  body: { msg: string; role?: number; [field: string]: unknown };
}

const me = (url: string, auth: string): Promise<Answer> =>
  fetch(`${url}/api/v1/users/me`, { headers: { authorization: auth } }).then(async (r) => ({ status: r.status, body: await r.json() }));

describe('the cache in one process', () => {
  test('each server caches a user it authenticated', async () => {
    const world = await createWorld(server.app.prisma);
    expect(server.app.authCache!.enabled).toBe(true);
    expect(server.app.authCache!.get(hashApiKey(world.users.member.apiKey))).toBeUndefined();
    expect((await me(server.url, world.users.member.auth)).status).toBe(200);
    expect(server.app.authCache!.get(hashApiKey(world.users.member.apiKey))).toBeDefined();
  });

  test('a cached request sends one statement less: the authentication query', async () => {
    const counting = await startCountingApp();
    try {
      const world = await createWorld(counting.prisma);
      const request = () => counting.request('/api/v1/users/me', { headers: { authorization: world.users.member.auth } });
      const first = await request();
      const second = await request();
      expect([first.response.status, second.response.status]).toEqual([200, 200]);
      expect(first.statements).toBe(1);
      expect(second.statements).toBe(0);
    } finally {
      await counting.close();
    }
  });
});

describe('changes made outside two server processes take effect in both at once', () => {
  let processes: ProcessesOnTestDatabase;
  beforeAll(async () => {
    // A first organization before the processes start, so that neither creates the demo one.
    await createWorld(server.app.prisma);
    // Without the failed-login limit: the old keys refused below are failures of this one client.
    processes = await serverProcessesOnTestDatabase(2, { API_RATE_LIMIT: 'off', AUTH_FAILURE_LIMIT: 'off', SQL_STATEMENT_COUNTER: '1' });
  }, 120_000);
  afterAll(() => processes?.stop());

  /** The statements the process has sent so far: it prints their total on SIGUSR2. */
  async function statementsSent(started: Started): Promise<number> {
    const totals = () =>
      [...started.output().matchAll(new RegExp(`^${STATEMENT_COUNT_PREFIX}(\\d+)$`, 'gm'))].map((match) => Number(match[1]));
    const printed = totals().length;
    started.child.kill('SIGUSR2');
    while (totals().length === printed) await new Promise((resolve) => setTimeout(resolve, 10));
    return totals()[printed]!;
  }

  const CACHED_REQUESTS = 10;

  /**
   * Both processes authenticate each user, then answer it from their cache: further requests send
   * fewer statements than one each (GET /users/me sends none but the credentials' read).
   */
  async function cachedInBoth(world: World, who: WorldUserName[]) {
    for (const [i, url] of processes.urls.entries()) {
      for (const name of who) {
        expect((await me(url, world.users[name].auth)).status).toBe(200);
        const before = await statementsSent(processes.processes[i]!);
        for (let n = 0; n < CACHED_REQUESTS; n++) expect((await me(url, world.users[name].auth)).status).toBe(200);
        expect(
          (await statementsSent(processes.processes[i]!)) - before,
          `${url}: statements of ${CACHED_REQUESTS} cached requests of ${name}`,
        ).toBeLessThan(CACHED_REQUESTS);
      }
    }
  }

  /**
   * Asks every process right after the change returned, again and again for at most 1 s, until
   * `expected` holds; then that answer must hold on (asked once more). Fails with the last answer.
   */
  async function withinOneSecond(auth: string, expected: (answer: Answer) => boolean): Promise<Answer[]> {
    return Promise.all(
      processes.urls.map(async (url) => {
        const deadline = Date.now() + 1_000;
        let answer = await me(url, auth);
        while (!expected(answer) && Date.now() < deadline) answer = await me(url, auth);
        expect(answer, `${url} after 1 s`).toSatisfy(expected);
        const again = await me(url, auth);
        expect(again).toEqual(answer);
        return answer;
      }),
    );
  }

  const refusal = (msg: string) => ({ status: 401, body: { result: 'error', msg, code: 'UNAUTHORIZED' } });
  const refused = (msg: string) => (answer: Answer) => answer.status === 401 && answer.body.msg === msg;

  test('`reset-api-key`: once the CLI returns, both refuse the old key and accept the new one', async () => {
    const world = await createWorld(server.app.prisma);
    await cachedInBoth(world, ['member']);
    const reset = await runCli(
      await testDatabaseEnvironment(),
      'reset-api-key',
      '--org',
      world.org.stringId,
      '--email',
      world.users.member.email,
    );
    expect(reset).toMatchObject({ code: 0, stderr: '' });
    const answers = await withinOneSecond(world.users.member.auth, refused('Invalid API key'));
    expect(answers).toEqual([refusal('Invalid API key'), refusal('Invalid API key')]);
    const newAuth = basicAuth(world.users.member.email, reset.stdout.trim());
    for (const url of processes.urls) expect((await me(url, newAuth)).status).toBe(200);
  });

  test('POST /users/me/api_key/regenerate in one process: both refuse the old key and accept the new one', async () => {
    const world = await createWorld(server.app.prisma);
    await cachedInBoth(world, ['member']);
    const regenerated = await fetch(`${processes.urls[0]}/api/v1/users/me/api_key/regenerate`, {
      method: 'POST',
      headers: { authorization: world.users.member.auth },
    });
    const { api_key: apiKey } = await regenerated.json();
    const answers = await withinOneSecond(world.users.member.auth, refused('Invalid API key'));
    expect(answers).toEqual([refusal('Invalid API key'), refusal('Invalid API key')]);
    for (const url of processes.urls) expect((await me(url, basicAuth(world.users.member.email, apiKey))).status).toBe(200);
  });

  test('200 regenerations in one process: the other, asked right after each answer, is counted; 100 ms later it refuses', async () => {
    const world = await createWorld(server.app.prisma);
    const [answering, other] = processes.urls as [string, string];
    let auth = world.users.member.auth;
    let acceptedRightAfter = 0;
    for (let trial = 0; trial < 200; trial++) {
      expect((await me(other, auth)).status).toBe(200); // cached there now
      const regenerate = `${answering}/api/v1/users/me/api_key/regenerate`;
      const regenerated = await fetch(regenerate, { method: 'POST', headers: { authorization: auth } });
      expect(regenerated.status).toBe(200);
      const { api_key: apiKey } = await regenerated.json();
      if ((await me(other, auth)).status === 200) acceptedRightAfter++;
      // signin.md section 6: still accepted 100 ms after the answer is a defect.
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(await me(other, auth), `trial ${trial}, 100 ms after the answer`).toEqual(refusal('Invalid API key'));
      auth = basicAuth(world.users.member.email, apiKey);
    }
    console.log(`old key accepted by the other process right after the answer: ${acceptedRightAfter} of 200`);
  }, 180_000);

  test('a deactivation: both refuse the account', async () => {
    const world = await createWorld(server.app.prisma);
    await cachedInBoth(world, ['member']);
    await runOnTestDatabase('UPDATE user_account SET "isActive" = false WHERE id = $1', [world.users.member.id]);
    await withinOneSecond(world.users.member.auth, refused('Account is deactivated'));
  });

  test("an organization's deactivation: both refuse every cached user of it, and only of it", async () => {
    const [world, other] = [await createWorld(server.app.prisma), await createWorld(server.app.prisma)];
    const users: WorldUserName[] = ['owner', 'admin', 'moderator', 'member', 'guest', 'bot'];
    await cachedInBoth(world, users);
    await cachedInBoth(other, ['member']);
    await runOnTestDatabase('UPDATE organization SET deactivated = true WHERE id = $1', [world.org.id]);
    for (const name of users) await withinOneSecond(world.users[name].auth, refused('This organization has been deactivated'));
    for (const url of processes.urls) expect((await me(url, other.users.member.auth)).status).toBe(200);
  });

  test('a role change: both act with the new role', async () => {
    const world = await createWorld(server.app.prisma);
    await cachedInBoth(world, ['member']);
    for (const url of processes.urls) expect((await me(url, world.users.member.auth)).body.role).toBe(400);
    await runOnTestDatabase('UPDATE user_account SET role = 200 WHERE id = $1', [world.users.member.id]);
    const answers = await withinOneSecond(world.users.member.auth, (answer) => answer.body.role === 200);
    for (const answer of answers) expect(answer.body).toMatchObject({ role: 200, is_admin: true });
  });
});
