// Sign-outs kept on disk during an outage (src/domain/auth/ended-sessions.ts): made-up tokens, which
// nothing can tell from real ones while the database is down, fill no more than MAX_PENDING files.
import { createHash } from 'node:crypto';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { EndedSessions, MAX_PENDING } from '../../src/domain/auth/ended-sessions.js';

let folder: string;
beforeAll(async () => {
  folder = await mkdtemp(join(tmpdir(), 'teamchat-ended-sessions-'));
});
afterAll(() => rm(folder, { recursive: true, force: true }));

const hashOf = (text: string) => createHash('sha256').update(text).digest('hex');

test('at most MAX_PENDING sign-outs are kept; files that are not token hashes are ignored', async () => {
  const names = Array.from({ length: MAX_PENDING - 1 }, (_, i) => hashOf(`made-up ${i}`));
  for (let i = 0; i < names.length; i += 500) await Promise.all(names.slice(i, i + 500).map((name) => writeFile(join(folder, name), '')));
  await writeFile(join(folder, 'not-a-hash'), '');
  const ended = await EndedSessions.open(folder);
  expect(ended.size).toBe(MAX_PENDING - 1);

  await ended.record(hashOf('the last one kept'));
  expect(ended.has(hashOf('the last one kept'))).toBe(true);
  await ended.record(hashOf('one too many'));
  expect(ended.has(hashOf('one too many'))).toBe(false);
  expect(ended.size).toBe(MAX_PENDING);
  expect((await readdir(folder)).length).toBe(MAX_PENDING + 1);
});
