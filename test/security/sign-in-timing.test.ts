// Issue 26 item 5 (signin.md Decision 4): fetch_api_key tells nothing about whether an address has
// an account: an unknown address and a wrong password get the same status and body, in the same
// time (a dummy hash is verified). Measured on a server process of its own with every limit off:
// the medians of 50 of each, asked in alternation, differ by less than 10%.
import { afterAll, beforeAll, expect, test } from 'vitest';
import { setPassword } from '../../src/domain/auth/sign-in.js';
import { serverProcessesOnTestDatabase, type ProcessesOnTestDatabase } from '../support/process.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { createWorld, type World } from '../support/world.js';

let server: TestServer;
let processes: ProcessesOnTestDatabase;
let world: World;
beforeAll(async () => {
  server = await startTestServer();
  world = await createWorld(server.app.prisma);
  await setPassword(server.app.prisma, world.users.member.id, 'lighthouse-keeper-42');
  processes = await serverProcessesOnTestDatabase(1, { API_RATE_LIMIT: 'off', AUTH_FAILURE_LIMIT: 'off', SIGNIN_RATE_LIMIT: 'off' });
}, 120_000);
afterAll(async () => {
  await processes?.stop();
  await server?.close();
});

async function attempt(username: string): Promise<{ ms: number; status: number; body: string }> {
  const started = performance.now();
  const response = await fetch(`${processes.urls[0]}/api/v1/fetch_api_key`, {
    method: 'POST',
    body: new URLSearchParams({ username, password: 'not-the-password' }),
  });
  const body = await response.text();
  return { ms: performance.now() - started, status: response.status, body };
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return (sorted[24]! + sorted[25]!) / 2;
};

test('50 unknown addresses and 50 wrong passwords: the same answer, medians within 10%', async () => {
  const known = world.users.member.email;
  const unknown = (i: number) => `nobody-${i}@lighthouse.example`;
  // The first of each warms the process (its dummy hash, its statements' plans).
  await attempt(known);
  await attempt(unknown(-1));
  const times = { unknown: [] as number[], wrong: [] as number[] };
  const bodies = new Set<string>();
  for (let i = 0; i < 50; i++) {
    // Alternating, in a random order within each pair: a slow moment of the shared machine hits both alike.
    const order = Math.random() < 0.5 ? (['unknown', 'wrong'] as const) : (['wrong', 'unknown'] as const);
    for (const kind of order) {
      const answer = await attempt(kind === 'wrong' ? known : unknown(i));
      expect(answer.status).toBe(401);
      bodies.add(answer.body);
      times[kind].push(answer.ms);
    }
  }
  expect([...bodies]).toEqual(['{"result":"error","msg":"Your username or password is incorrect","code":"AUTHENTICATION_FAILED"}\n']);
  const [unknownMedian, wrongMedian] = [median(times.unknown), median(times.wrong)];
  const difference = Math.abs(unknownMedian - wrongMedian) / Math.max(unknownMedian, wrongMedian);
  console.info(`medians: unknown address ${unknownMedian.toFixed(1)} ms, wrong password ${wrongMedian.toFixed(1)} ms`);
  expect({ unknownMedian, wrongMedian, differenceUnder10Percent: difference < 0.1 }).toMatchObject({ differenceUnder10Percent: true });
}, 120_000);
