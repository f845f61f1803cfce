// The file sweep the server runs itself (uploads.md Decision 7), on both storage backends: bytes a
// failed storage step left behind are gone after the next sweep, an upload between its stored bytes
// and its commit keeps them, one process sweeps at a time, and the timer runs and stops with the server.
import { stat, utimes } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { describe, expect, test } from 'vitest';
import { SWEEP_GRACE_MS } from '../../src/domain/uploads/sweep-files.js';
import { connectToTestDatabase, startTestServer } from '../support/server.js';
import { postFiles, startUploadServer, STORAGE_KINDS } from '../support/uploads.js';
import { createWorld } from '../support/world.js';

const FILE_SWEEP_LOCK_KEY = 7_294_015_333;
const METRICS_TOKEN = 'file-sweep-test-token-0123456789';
/** A moment at which every byte stored so far is past the sweep's grace. */
const pastTheGrace = () => new Date(Date.now() + SWEEP_GRACE_MS + 2_000);

/** The sweep lists the bucket, whose signature s3rver checks wrongly (test/support/s3.ts). */
const startSweepingServer = (kind: (typeof STORAGE_KINDS)[number]) => startUploadServer(kind, {}, { uncheckedSignatures: true });

async function until<T>(probe: () => Promise<T | undefined>, what: string): Promise<T> {
  for (let i = 0; i < 400; i++) {
    const value = await probe();
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`never happened: ${what}`);
}

describe.each(STORAGE_KINDS)('the file sweep (%s storage)', (kind) => {
  test('a deletion whose storage step fails answers 200; the bytes are gone after the next sweep', async () => {
    const uploads = await startSweepingServer(kind);
    try {
      const { app, url } = uploads.server;
      const world = await createWorld(app.prisma);
      const stuck = await postFiles(url, '/user_uploads', world.users.member.auth, [{ name: 'stuck.txt', content: 'stuck' }]);
      const key = `files/${stuck.body.url.slice('/user_uploads/'.length)}`;
      const { id } = await app.prisma.attachment.findUniqueOrThrow({ where: { pathId: key.slice('files/'.length) } });
      const restore = await uploads.interruptStorage();
      const authorization = world.users.member.auth;
      const deleted = await fetch(`${url}/api/v1/attachments/${id}`, { method: 'DELETE', headers: { authorization } });
      expect({ status: deleted.status, body: await deleted.json() }).toEqual({ status: 200, body: { result: 'success', msg: '' } });
      await restore();
      expect(await uploads.storedKeys()).toContain(key);

      const swept = await uploads.server.fileSweeper!.sweepNow(pastTheGrace());
      expect(swept!.removed).toEqual([key]);
      expect(await uploads.storedKeys()).not.toContain(key);
    } finally {
      await uploads.close();
    }
  });

  test('an upload held between storing its bytes and committing its row keeps them through a sweep', async () => {
    const uploads = await startSweepingServer(kind);
    const { app, url } = uploads.server;
    const world = await createWorld(app.prisma);
    const held = heldUpload(url, world.users.member.auth);
    try {
      // The file part has ended (a text field follows, not yet complete): its bytes are stored, no row yet.
      const prefix = `files/${world.org.id}/`;
      const isHeld = (k: string) => k.startsWith(prefix) && k.endsWith('/held.txt');
      const key = await until(async () => (await uploads.storedKeys()).find(isHeld), 'the bytes stored');
      const rowsOf = () => app.prisma.attachment.count({ where: { pathId: key.slice('files/'.length) } });
      expect(await rowsOf()).toBe(0);

      const swept = await uploads.server.fileSweeper!.sweepNow();
      expect(swept!.removed).toEqual([]);
      const response = await held.finish();
      expect(response.status).toBe(200);
      expect(`files/${response.body.url.slice('/user_uploads/'.length)}`).toBe(key);
      expect(await uploads.storedKeys()).toContain(key);
      expect(await rowsOf()).toBe(1);
    } finally {
      await held.finish().catch(() => {});
      await uploads.close();
    }
  });

  test('one process sweeps at a time: while another session holds the sweep lock, a sweep skips its turn', async () => {
    const uploads = await startSweepingServer(kind);
    const other = await connectToTestDatabase();
    try {
      const { app } = uploads.server;
      const world = await createWorld(app.prisma);
      const orphan = `files/${world.org.id}/ab/${world.org.id}-orphan/orphan.txt`;
      await app.storage.write(orphan, Readable.from([Buffer.from('orphan')]), 'text/plain');
      await other.query('SELECT pg_advisory_lock($1)', [FILE_SWEEP_LOCK_KEY]);
      expect(await uploads.server.fileSweeper!.sweepNow(pastTheGrace())).toBeNull();
      expect(await uploads.storedKeys()).toContain(orphan);
      await other.query('SELECT pg_advisory_unlock($1)', [FILE_SWEEP_LOCK_KEY]);
      expect((await uploads.server.fileSweeper!.sweepNow(pastTheGrace()))!.removed).toContain(orphan);
      expect(await uploads.storedKeys()).not.toContain(orphan);
    } finally {
      await other.end();
      await uploads.close();
    }
  });
});

test('the timer sweeps by itself (teamchat_file_sweep_removed_total counts it); the server stops after the sweep in flight', async () => {
  // A turn every 30 ms (FILE_SWEEP_MINUTES itself takes whole minutes); the orphan is dated back past the grace.
  const server = await startTestServer({ fileSweepMinutes: 0.0005, metrics: { token: METRICS_TOKEN } });
  const { app, url } = server;
  const world = await createWorld(app.prisma);
  const orphan = `files/${world.org.id}/cd/${world.org.id}-old/old.txt`;
  await app.storage.write(orphan, Readable.from([Buffer.from('old')]), 'text/plain');
  const path = join(app.config.dataDir, 'uploads', orphan);
  const longAgo = new Date(Date.now() - SWEEP_GRACE_MS - 60_000);
  await utimes(path, longAgo, longAgo);

  const removedCount = async () => {
    const text = await (await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text();
    const count = Number(/^teamchat_file_sweep_removed_total (\d+)$/m.exec(text)?.[1]);
    return count >= 1 ? count : undefined;
  };
  expect(await until(removedCount, 'a sweep by the timer')).toBe(1);
  await expect(stat(path)).rejects.toMatchObject({ code: 'ENOENT' });

  let settled = false;
  const inFlight = server.fileSweeper!.sweepNow().finally(() => (settled = true));
  await server.close();
  expect(settled).toBe(true);
  await inFlight;
  expect(server.fileSweeper!.scheduled).toBe(false);
});

test('FILE_SWEEP_MINUTES=0 runs no sweep timer', async () => {
  const server = await startTestServer({ fileSweepMinutes: 0 });
  expect(server.fileSweeper).toBeNull();
  await server.close();
});

/**
 * POST /user_uploads whose body stops after its file part and the start of a text field; `finish`
 * sends the rest and returns the answer.
 */
function heldUpload(serverUrl: string, authorization: string) {
  const boundary = 'held-upload-boundary';
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const parts = [
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="held.txt"\r\nContent-Type: text/plain\r\n\r\nheld bytes`,
    `\r\n--${boundary}\r\nContent-Disposition: form-data; name="note"\r\n\r\n`,
    `trailing field\r\n--${boundary}--\r\n`,
  ];
  let sent = 0;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (sent === parts.length) return controller.close();
      if (sent === parts.length - 1) await released;
      controller.enqueue(new TextEncoder().encode(parts[sent++]));
    },
  });
  const answer = fetch(`${serverUrl}/api/v1/user_uploads`, {
    method: 'POST',
    headers: { authorization, 'content-type': `multipart/form-data; boundary=${boundary}` },
    body,
    duplex: 'half',
  } as RequestInit);
  const answered = answer.then(async (response) => ({ status: response.status, body: await response.json() }));
  return {
    finish() {
      release();
      return answered;
    },
  };
}
