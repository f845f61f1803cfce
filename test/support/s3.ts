// An S3-compatible server (@20minutes/s3rver, pure JavaScript, from the npm registry) started by
// the tests themselves on port 0 over a temporary directory, and the configuration that points the
// S3 storage backend at it.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
// @ts-expect-error: the package ships no type declarations.
import S3rver from '@20minutes/s3rver';
import type { S3Config } from '../../src/config.js';

export interface TestS3 {
  config: S3Config;
  close(): Promise<void>;
}

export async function startTestS3(bucket = 'teamchat-uploads'): Promise<TestS3> {
  const directory = await mkdtemp(join(tmpdir(), 'teamchat-s3-'));
  const server = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory, configureBuckets: [{ name: bucket }] });
  const { port } = (await server.run()) as AddressInfo;
  return {
    config: {
      bucket,
      endpoint: `http://127.0.0.1:${port}`,
      region: 'us-east-1',
      accessKeyId: 'S3RVER',
      secretAccessKey: 'S3RVER',
      forcePathStyle: true,
    },
    async close() {
      await server.close();
      await rm(directory, { recursive: true, force: true });
    },
  };
}
