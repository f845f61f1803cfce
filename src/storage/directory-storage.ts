// Files under a directory on this machine: `<root>/<key>`, parent directories made on demand and
// removed again when a deletion empties them (up to the root).
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, opendir, rename, rm, rmdir, stat, truncate, unlink, writeFile } from 'node:fs/promises';
import type { Dir } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { dirname, relative, resolve, sep } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { assertSafeKey, type ByteRange, type FileStorage, type ListedObject } from './storage.js';

const isMissing = (error: unknown) => (error as NodeJS.ErrnoException).code === 'ENOENT';

export class DirectoryStorage implements FileStorage {
  readonly root: string;

  constructor(root: string) {
    this.root = resolve(root);
  }

  private pathOf(key: string): string {
    assertSafeKey(key);
    const path = resolve(this.root, key);
    // Belt and braces: the checked key cannot leave the root, and neither can its resolved path.
    if (!path.startsWith(this.root + sep)) throw new Error(`${key} resolves outside the storage root`);
    return path;
  }

  async write(key: string, body: Readable, _contentType: string): Promise<void> {
    const path = this.pathOf(key);
    await mkdir(dirname(path), { recursive: true });
    // Written under a temporary name and renamed when complete: a reader never sees half a file.
    const partial = `${path}.${randomBytes(6).toString('hex')}.partial`;
    const out = createWriteStream(partial, { flags: 'wx' });
    try {
      await pipeline(body, out);
      await rename(partial, path);
    } catch (error) {
      // A body that fails at once can fail before the file is even opened: the stream still creates
      // it, then closes. Removing it before the close would leave it behind.
      if (!out.closed) await new Promise<void>((resolve) => out.once('close', () => resolve()));
      await rm(partial, { force: true });
      await this.removeEmptyParents(path);
      throw error;
    }
  }

  /** A sparse file: it takes no disk space however large. */
  async writePlaceholder(key: string, size: number, _contentType: string): Promise<void> {
    const path = this.pathOf(key);
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, '', { flag: 'w' });
    await truncate(path, size);
  }

  async read(key: string, range?: ByteRange): Promise<Readable | null> {
    const path = this.pathOf(key);
    if (!(await this.stat(key))) return null;
    return createReadStream(path, range ? { start: range.start, end: range.end } : {});
  }

  async stat(key: string) {
    try {
      const info = await stat(this.pathOf(key));
      return info.isFile() ? { size: info.size } : null;
    } catch (error) {
      if (isMissing(error)) return null;
      throw error;
    }
  }

  async delete(key: string): Promise<boolean> {
    const path = this.pathOf(key);
    try {
      await unlink(path);
    } catch (error) {
      if (isMissing(error)) return false;
      throw error;
    }
    await this.removeEmptyParents(path);
    return true;
  }

  /** Files under `<root>/<prefix>` (the `.partial` files of writes that never finished included). */
  async *list(prefix: string): AsyncIterable<ListedObject> {
    yield* this.walk(prefix === '' ? this.root : this.pathOf(prefix.replace(/\/+$/, '')));
  }

  private async *walk(dir: string): AsyncIterable<ListedObject> {
    let entries: Dir;
    try {
      entries = await opendir(dir);
    } catch (error) {
      if (isMissing(error) || (error as NodeJS.ErrnoException).code === 'ENOTDIR') return;
      throw error;
    }
    for await (const entry of entries) {
      const path = resolve(dir, entry.name);
      if (entry.isDirectory()) yield* this.walk(path);
      else if (entry.isFile()) {
        // Removed meanwhile (a deletion, a rename of a finished write): not listed.
        const info = await stat(path).catch((error: unknown) => (isMissing(error) ? null : Promise.reject(error)));
        if (info) yield { key: relative(this.root, path).split(sep).join('/'), modifiedAt: info.mtime };
      }
    }
  }

  /** rmdir each now-empty parent up to the root, stopping at the first that is not empty. */
  private async removeEmptyParents(path: string) {
    for (let dir = dirname(path); relative(this.root, dir) !== '' && dir.startsWith(this.root + sep); dir = dirname(dir)) {
      try {
        await rmdir(dir);
      } catch {
        return;
      }
    }
  }
}
