// Uploading over HTTP as browsers and curl do (multipart/form-data), servers on either storage
// backend, and what a storage holds (to check that refused uploads leave nothing behind).
import { readdir, rename, rm, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { loadConfig } from '../../src/config.js';
import { startTestS3, type S3Event, type TestS3 } from './s3.js';
import { startTestServer, type TestServer } from './server.js';
import type { ApiResponse } from './rest.js';

export interface FilePart {
  field?: string;
  name: string;
  type?: string;
  content: string | Uint8Array;
}

export function multipartForm(files: FilePart[], fields: Record<string, string> = {}): FormData {
  const form = new FormData();
  for (const [name, value] of Object.entries(fields)) form.append(name, value);
  for (const file of files) {
    form.append(file.field ?? 'file', new Blob([file.content as BlobPart], { type: file.type ?? 'application/octet-stream' }), file.name);
  }
  return form;
}

/** POST a multipart form to `path` under /api/v1. */
export async function postFiles(
  serverUrl: string,
  path: string,
  authorization: string | undefined,
  files: FilePart[],
): Promise<ApiResponse> {
  const response = await fetch(`${serverUrl}/api/v1${path}`, {
    method: 'POST',
    headers: authorization ? { authorization } : {},
    body: multipartForm(files),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: text === '' ? null : JSON.parse(text) };
}

export type StorageKind = 'directory' | 's3';
export const STORAGE_KINDS: StorageKind[] = ['directory', 's3'];

export interface UploadServer {
  server: TestServer;
  /** Every key the storage holds, sorted. */
  storedKeys(): Promise<string[]>;
  /** What the S3 server stored, in order (none for the directory). */
  s3Events(): S3Event[];
  /** Makes every storage operation fail from now on: the directory becomes a file, the S3 server stops. */
  breakStorage(): Promise<void>;
  /** Makes every storage operation fail until the function returned is called (nothing stored is lost). */
  interruptStorage(): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

export async function startUploadServer(
  kind: StorageKind,
  uploads: Partial<ReturnType<typeof loadConfig>['uploads']> = {},
  s3Options: Parameters<typeof startTestS3>[1] = {},
): Promise<UploadServer> {
  const base = loadConfig({}).uploads;
  let s3: TestS3 | undefined;
  if (kind === 's3') s3 = await startTestS3(undefined, s3Options);
  const server = await startTestServer({ uploads: { ...base, ...uploads, s3: s3?.config } });
  return {
    server,
    storedKeys: () => (s3 ? s3.storedKeys() : listFiles(directoryOf(server))),
    s3Events: () => s3?.events ?? [],
    async breakStorage() {
      if (!s3) {
        await rm(directoryOf(server), { recursive: true, force: true });
        await writeFile(directoryOf(server), 'not a directory');
      } else {
        await s3!.close();
        s3 = undefined;
      }
    },
    async interruptStorage() {
      if (s3) return s3.interrupt();
      const directory = directoryOf(server);
      await rename(directory, `${directory}.away`);
      await writeFile(directory, 'not a directory');
      return async () => {
        await rm(directory);
        await rename(`${directory}.away`, directory);
      };
    },
    async close() {
      await server.close();
      await s3?.close();
    },
  };
}

const directoryOf = (server: TestServer) => server.app.config.uploads.directory ?? join(server.app.config.dataDir, 'uploads');

async function listFiles(root: string): Promise<string[]> {
  const entries = await readdir(root, { recursive: true, withFileTypes: true }).catch(() => []);
  return entries
    .filter((e) => e.isFile())
    .map((e) => relative(root, join(e.parentPath, e.name)))
    .sort();
}
