// Where uploaded bytes live: one interface, a directory backend and an S3-compatible bucket backend.
// Keys are relative, '/'-separated paths such as `files/<path_id>`; `assertSafeKey` refuses every
// key that could name something outside the storage root.
import { Readable } from 'node:stream';

export interface StoredObjectInfo {
  size: number;
}

/** One stored object as a listing sees it. */
export interface ListedObject {
  key: string;
  /** When its bytes were last written. */
  modifiedAt: Date;
}

export interface ByteRange {
  /** Inclusive offsets, as in HTTP. */
  start: number;
  end: number;
}

export interface FileStorage {
  /**
   * Streams `body` to `key`. When the stream fails (a size limit, a broken connection) nothing is
   * left behind and the stream's error is rethrown.
   */
  write(key: string, body: Readable, contentType: string): Promise<void>;
  /** An object of `size` zero bytes (imported files whose content the import did not carry). */
  writePlaceholder(key: string, size: number, contentType: string): Promise<void>;
  /** The object's bytes (a range of them when asked), or null when it does not exist. */
  read(key: string, range?: ByteRange): Promise<Readable | null>;
  stat(key: string): Promise<StoredObjectInfo | null>;
  /** Removes the object; false when there was none. */
  delete(key: string): Promise<boolean>;
  /** Every object whose key starts with `prefix` (a folder: `files/`), in no set order. */
  list(prefix: string): AsyncIterable<ListedObject>;
}

export class UnsafeStorageKeyError extends Error {}

const SEGMENT = /^[^/\\\0]+$/;

/** Every segment non-empty, not `.` or `..`, without `\` or NUL; no leading `/`. */
export function assertSafeKey(key: string): void {
  const segments = key.split('/');
  const safe = segments.every((s) => SEGMENT.test(s) && s !== '.' && s !== '..');
  if (!safe) throw new UnsafeStorageKeyError(`Refusing the storage key ${JSON.stringify(key)}`);
}

export const isSafeKey = (key: string) => {
  try {
    assertSafeKey(key);
    return true;
  } catch {
    return false;
  }
};

/** `size` zero bytes as a stream, in chunks of at most 1 MiB. */
export function zeros(size: number): Readable {
  const chunk = Buffer.alloc(Math.min(size, 1024 * 1024));
  let left = size;
  return Readable.from(
    (function* () {
      while (left > 0) {
        const next = Math.min(left, chunk.length);
        left -= next;
        yield chunk.subarray(0, next);
      }
    })(),
    { objectMode: false },
  );
}

/**
 * A storage backend's failure, told apart from the database's: its own message names neither
 * network errors nor file-system codes (the doors read those as a database outage).
 */
export class StorageError extends Error {
  constructor(
    operation: string,
    key: string,
    /** What the backend threw. */
    readonly failure: unknown,
  ) {
    super(`File storage could not ${operation} ${key}`);
    this.name = 'StorageError';
  }
}

/**
 * Wraps a backend so that its failures are StorageErrors. Errors of the bytes written (a size limit
 * refusing a stream, a dropped upload) and refused keys pass through unchanged.
 */
export function guarded(backend: FileStorage): FileStorage {
  const attempt = async <T>(
    operation: string,
    key: string,
    work: () => Promise<T>,
    passThrough: (error: unknown) => boolean = () => false,
  ): Promise<T> => {
    try {
      return await work();
    } catch (error) {
      if (error instanceof UnsafeStorageKeyError || passThrough(error)) throw error;
      throw new StorageError(operation, key, error);
    }
  };
  return {
    write: (key, body, contentType) => {
      let bodyFailure: unknown;
      body.once('error', (error) => (bodyFailure = error));
      return attempt(
        'write',
        key,
        () => backend.write(key, body, contentType),
        (error) => error === bodyFailure,
      );
    },
    writePlaceholder: (key, size, contentType) => attempt('write', key, () => backend.writePlaceholder(key, size, contentType)),
    read: (key, range) => attempt('read', key, () => backend.read(key, range)),
    stat: (key) => attempt('inspect', key, () => backend.stat(key)),
    delete: (key) => attempt('delete', key, () => backend.delete(key)),
    list: (prefix) => guardedListing(prefix, backend.list(prefix)),
  };
}

async function* guardedListing(prefix: string, listing: AsyncIterable<ListedObject>): AsyncIterable<ListedObject> {
  try {
    yield* listing;
  } catch (error) {
    if (error instanceof UnsafeStorageKeyError) throw error;
    throw new StorageError('list', prefix, error);
  }
}
