import { join } from 'node:path';
import type { Config } from '../config.js';
import { DirectoryStorage } from './directory-storage.js';
import { S3Storage } from './s3-storage.js';
import { guarded, type FileStorage } from './storage.js';

/** The bucket when S3_BUCKET is set, else the directory (UPLOADS_DIR, default DATA_DIR/uploads). */
export function openStorage(config: Config): FileStorage {
  const { uploads } = config;
  if (uploads.s3) return guarded(new S3Storage(uploads.s3));
  return guarded(new DirectoryStorage(uploads.directory ?? join(config.dataDir, 'uploads')));
}
