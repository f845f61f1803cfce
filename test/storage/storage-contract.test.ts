// The storage contract, run against both backends: a directory and an S3-compatible bucket (a real
// S3 server started by the test).
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { text } from 'node:stream/consumers';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { DirectoryStorage } from '../../src/storage/directory-storage.js';
import { S3Storage } from '../../src/storage/s3-storage.js';
import { UnsafeStorageKeyError, type FileStorage } from '../../src/storage/storage.js';
import { startTestS3, type TestS3 } from '../support/s3.js';

let directory: string;
let s3: TestS3;
let s3Storage: S3Storage;
beforeAll(async () => {
  directory = await mkdtemp(join(tmpdir(), 'teamchat-storage-'));
  s3 = await startTestS3();
  s3Storage = new S3Storage(s3.config);
});
afterAll(async () => {
  s3Storage.destroy();
  await s3.close();
  await rm(directory, { recursive: true, force: true });
});

const backends: [string, () => FileStorage][] = [
  ['directory', () => new DirectoryStorage(directory)],
  ['S3 bucket', () => s3Storage],
];

/** A stream that yields `chunks` and then fails, as a broken upload does. */
function failingStream(chunks: string[], error: Error) {
  return new Readable({
    read() {
      const next = chunks.shift();
      if (next !== undefined) this.push(next);
      else this.destroy(error);
    },
  });
}

describe.each(backends)('%s storage', (_name, storageOf) => {
  test('writes, stats, reads (whole and by range) and deletes an object', async () => {
    const storage = storageOf();
    const key = `files/1/ab/${Math.random().toString(36).slice(2)}/hello.txt`;
    await storage.write(key, Readable.from([Buffer.from('hello, '), Buffer.from('world')]), 'text/plain');
    expect(await storage.stat(key)).toEqual({ size: 12 });
    expect(await text((await storage.read(key))!)).toBe('hello, world');
    expect(await text((await storage.read(key, { start: 7, end: 11 }))!)).toBe('world');
    expect(await storage.delete(key)).toBe(true);
    expect(await storage.stat(key)).toBeNull();
    expect(await storage.read(key)).toBeNull();
    expect(await storage.delete(key)).toBe(false);
  });

  test('a stream that fails midway leaves no object behind and the error comes back', async () => {
    const storage = storageOf();
    const key = `files/2/cd/${Math.random().toString(36).slice(2)}/broken.bin`;
    const broken = new Error('connection reset');
    await expect(storage.write(key, failingStream(['part one', 'part two'], broken), 'application/octet-stream')).rejects.toThrow(
      'connection reset',
    );
    expect(await storage.stat(key)).toBeNull();
  });

  test('keys that could leave the storage root are refused before any I/O', async () => {
    const storage = storageOf();
    for (const key of [
      '../escape',
      'files/../../escape',
      '/etc/passwd',
      'files//x',
      'files/./x',
      'files\\..\\x',
      'files/a\0b',
      '',
      'files/..',
    ]) {
      await expect(storage.write(key, Readable.from(['x']), 'text/plain')).rejects.toThrow(UnsafeStorageKeyError);
      await expect(storage.read(key)).rejects.toThrow(UnsafeStorageKeyError);
      await expect(storage.delete(key)).rejects.toThrow(UnsafeStorageKeyError);
    }
  });
});

test('the directory backend removes the directories a deletion empties, and only those', async () => {
  const storage = new DirectoryStorage(directory);
  await storage.write('files/9/aa/token1/one.txt', Readable.from(['1']), 'text/plain');
  await storage.write('files/9/aa/token2/two.txt', Readable.from(['2']), 'text/plain');
  await storage.delete('files/9/aa/token1/one.txt');
  expect(await readdir(join(directory, 'files/9/aa'))).toEqual(['token2']);
  await storage.delete('files/9/aa/token2/two.txt');
  expect(await readdir(directory)).not.toContain('files');
});

let listingS3: TestS3;
let listingStorage: S3Storage;
beforeAll(async () => {
  listingS3 = await startTestS3('teamchat-uploads', { uncheckedSignatures: true });
  listingStorage = new S3Storage(listingS3.config);
});
afterAll(async () => {
  listingStorage.destroy();
  await listingS3.close();
});

const listingBackends: [string, () => FileStorage][] = [
  ['directory', () => new DirectoryStorage(directory)],
  ['S3 bucket', () => listingStorage],
];

describe.each(listingBackends)('%s storage: listing', (_name, storageOf) => {
  test("lists every object under a prefix, past one page of the bucket's listing (1,000 keys), and nothing outside it", async () => {
    const storage = storageOf();
    const run = Math.random().toString(36).slice(2);
    const inside = Array.from({ length: 1_005 }, (_, i) => `files/9/${String(i % 7).padStart(2, '0')}/${run}-${i}/f.txt`);
    // Beside the prefix: a folder whose name only starts like it, and another tree.
    const outside = [`files/9x/${run}/f.txt`, `emoji/9/${run}/e.png`];
    for (let i = 0; i < inside.length; i += 50) {
      await Promise.all(inside.slice(i, i + 50).map((key) => storage.writePlaceholder(key, 0, 'text/plain')));
    }
    await Promise.all(outside.map((key) => storage.writePlaceholder(key, 0, 'text/plain')));
    const listed: string[] = [];
    for await (const object of storage.list('files/9/')) {
      expect(object.modifiedAt).toBeInstanceOf(Date);
      // Other tests' objects may be there too: this run's are told by their key.
      if (object.key.includes(run)) listed.push(object.key);
    }
    expect(listed.sort()).toEqual([...inside].sort());
    const emoji: string[] = [];
    for await (const object of storage.list(`emoji/9/${run}/`)) emoji.push(object.key);
    expect(emoji).toEqual([`emoji/9/${run}/e.png`]);
    await Promise.all([...inside, ...outside].map((key) => storage.delete(key)));
  }, 60_000);
});
