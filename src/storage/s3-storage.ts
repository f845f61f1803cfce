// Objects in an S3-compatible bucket (AWS S3, MinIO, Ceph, R2 ...), for deployments on several
// machines: every server process sees the same files. Uploads are streamed as multipart uploads.
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsCommand,
  NoSuchKey,
  NotFound,
  S3Client,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import type { Readable } from 'node:stream';
import type { S3Config } from '../config.js';
import { assertSafeKey, zeros, type ByteRange, type FileStorage, type ListedObject } from './storage.js';

const isMissing = (error: unknown) =>
  error instanceof NoSuchKey ||
  error instanceof NotFound ||
  (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === 404;

export class S3Storage implements FileStorage {
  private readonly client: S3Client;

  constructor(private readonly config: S3Config) {
    this.client = new S3Client({
      region: config.region,
      endpoint: config.endpoint,
      forcePathStyle: config.forcePathStyle,
      credentials:
        config.accessKeyId && config.secretAccessKey
          ? { accessKeyId: config.accessKeyId, secretAccessKey: config.secretAccessKey }
          : undefined,
    });
  }

  async write(key: string, body: Readable, contentType: string): Promise<void> {
    assertSafeKey(key);
    const upload = new Upload({
      client: this.client,
      params: { Bucket: this.config.bucket, Key: key, Body: body, ContentType: contentType },
    });
    // A failing body aborts the multipart upload; a part of an object is never left visible.
    const failed = new Promise<never>((_, reject) => body.once('error', reject));
    try {
      await Promise.race([upload.done(), failed]);
    } catch (error) {
      await upload.abort().catch(() => {});
      await this.delete(key).catch(() => {});
      throw error;
    }
  }

  writePlaceholder(key: string, size: number, contentType: string): Promise<void> {
    return this.write(key, zeros(size), contentType);
  }

  async read(key: string, range?: ByteRange): Promise<Readable | null> {
    assertSafeKey(key);
    try {
      const object = await this.client.send(
        new GetObjectCommand({ Bucket: this.config.bucket, Key: key, Range: range ? `bytes=${range.start}-${range.end}` : undefined }),
      );
      return object.Body as Readable;
    } catch (error) {
      if (isMissing(error)) return null;
      throw error;
    }
  }

  async stat(key: string) {
    assertSafeKey(key);
    try {
      const head = await this.client.send(new HeadObjectCommand({ Bucket: this.config.bucket, Key: key }));
      return { size: head.ContentLength ?? 0 };
    } catch (error) {
      if (isMissing(error)) return null;
      throw error;
    }
  }

  async delete(key: string): Promise<boolean> {
    if (!(await this.stat(key))) return false;
    await this.client.send(new DeleteObjectCommand({ Bucket: this.config.bucket, Key: key }));
    return true;
  }

  /** ListObjects (version 1): every S3-compatible server has it. */
  async *list(prefix: string): AsyncIterable<ListedObject> {
    let Marker: string | undefined;
    for (;;) {
      const page = await this.client.send(new ListObjectsCommand({ Bucket: this.config.bucket, Prefix: prefix, Marker }));
      const objects = page.Contents ?? [];
      for (const object of objects) {
        if (object.Key) yield { key: object.Key, modifiedAt: object.LastModified ?? new Date(0) };
      }
      // Without a delimiter, the next page starts after the last key of this one.
      Marker = page.NextMarker ?? objects.at(-1)?.Key;
      if (!page.IsTruncated || !Marker) return;
    }
  }

  destroy() {
    this.client.destroy();
  }
}
