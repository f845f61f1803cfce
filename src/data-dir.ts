// DATA_DIR, made ready the same way by the server and the CLI: created with its missing parents,
// then checked to be a folder this process can write.
import { constants } from 'node:fs';
import { access, mkdir, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { StartupError } from './startup-error.js';

/** mkdir -p, one level at a time: Node's recursive mkdir never returns for some paths (e.g. under /proc). */
async function makeFolder(path: string): Promise<void> {
  try {
    await mkdir(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') return;
    if (code !== 'ENOENT' || dirname(path) === path) throw error;
    await makeFolder(dirname(path));
    await mkdir(path).catch((again: NodeJS.ErrnoException) => {
      if (again.code !== 'EEXIST') throw again;
    });
  }
}

export async function prepareDataDir(dataDir: string): Promise<void> {
  try {
    await makeFolder(dataDir);
    if (!(await stat(dataDir)).isDirectory()) throw Object.assign(new Error('not a folder'), { code: 'ENOTDIR' });
    await access(dataDir, constants.W_OK | constants.X_OK);
  } catch (error) {
    throw new StartupError(
      `DATA_DIR ${dataDir} is not a writable folder (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}): set DATA_DIR elsewhere.`,
    );
  }
}
