// An S3-compatible server (@20minutes/s3rver, pure JavaScript, from the npm registry) started by
// the tests themselves on port 0 over a temporary directory, and the configuration that points the
// S3 storage backend at it.
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import type { AddressInfo } from 'node:net';
// @ts-expect-error: the package ships no type declarations.
import S3rver from '@20minutes/s3rver';
import type { S3Config } from '../../src/config.js';

/** An object the S3 server stored: `ObjectCreated:Put` (one request) or `ObjectCreated:Post` (a completed multipart upload). */
export interface S3Event {
  name: string;
  key: string;
  size: number;
  eTag: string;
}

export interface TestS3 {
  config: S3Config;
  /** What the server stored, in order (its own event notifications). */
  events: S3Event[];
  /** Every object key in the bucket, and any other file the server keeps there (unfinished multipart uploads). */
  storedKeys(): Promise<string[]>;
  /** Stops the server, keeping what it stored; the function returned starts it again on the same port. */
  interrupt(): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

const OBJECT = /\._S3rver_object$/;
const OBJECT_SIDECAR = /\._S3rver_(metadata\.json|object\.md5)$/;

/**
 * `uncheckedSignatures`: for bucket-level requests (listing). s3rver signs a path-style bucket's path
 * as `/bucket`, where the AWS SDK (v3) sends and signs `/bucket/`, so it refuses every listing
 * request the SDK signs; object requests are checked either way.
 */
export async function startTestS3(bucket = 'teamchat-uploads', options: { uncheckedSignatures?: boolean } = {}): Promise<TestS3> {
  const directory = await mkdtemp(join(tmpdir(), 'teamchat-s3-'));
  const events: S3Event[] = [];
  const serve = async (onPort: number) => {
    const started = new S3rver({
      address: '127.0.0.1',
      port: onPort,
      silent: true,
      directory,
      configureBuckets: [{ name: bucket }],
      allowMismatchedSignatures: options.uncheckedSignatures ?? false,
    });
    type Notification = { Records: { eventName: string; s3: { object: { key: string; size: number; eTag: string } } }[] };
    started.on('event', ({ Records: [record] }: Notification) => {
      const { key, size, eTag } = record!.s3.object;
      events.push({ name: record!.eventName, key, size, eTag });
    });
    return { started, port: ((await started.run()) as AddressInfo).port };
  };
  let { started: server, port } = await serve(0);
  return {
    events,
    config: {
      bucket,
      endpoint: `http://127.0.0.1:${port}`,
      region: 'us-east-1',
      accessKeyId: 'S3RVER',
      secretAccessKey: 'S3RVER',
      forcePathStyle: true,
    },
    // Read from the server's directory: the server's listing would only show completed objects.
    async storedKeys() {
      const root = join(directory, bucket);
      const entries = await readdir(directory, { recursive: true, withFileTypes: true });
      return entries
        .filter((e) => e.isFile() && !OBJECT_SIDECAR.test(e.name))
        .map((e) => relative(root, join(e.parentPath, e.name)).replace(OBJECT, ''))
        .sort();
    },
    async interrupt() {
      await server.close();
      return async () => {
        ({ started: server, port } = await serve(port));
      };
    },
    async close() {
      await server.close();
      await rm(directory, { recursive: true, force: true });
    },
  };
}
