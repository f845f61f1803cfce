import { join } from 'node:path';
import type { Config } from '../config.js';
import { DirectoryStorage } from './directory-storage.js';
import { guarded, type FileStorage } from './storage.js';

/**
 * The bucket when S3_BUCKET is set, else the directory (UPLOADS_DIR, default DATA_DIR/uploads). The
 * S3 client (about 24 MiB of memory once loaded) is loaded only when a bucket is configured.
 */
export async function openStorage(config: Config): Promise<FileStorage> {
  const { uploads } = config;
  if (uploads.s3) {
    const { S3Storage } = await import('./s3-storage.js');
    return guarded(new S3Storage(uploads.s3));
  }
  return guarded(new DirectoryStorage(uploads.directory ?? join(config.dataDir, 'uploads')));
}
