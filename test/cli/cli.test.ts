// The administrator CLI as users run it (`node dist/cli/main.js`, what `npm run cli --` runs), on an
// embedded database of its own: it starts PostgreSQL itself when no server runs, and stops it after.
// It creates DATA_DIR as the server does, every failure is one line (the stack with --debug), and the
// import shows its progress on standard error (plain lines, or bars at a terminal) and a summary.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { environment, listeningUrl, runCli, runCliWithInput, startServerProcess, stopServerProcess } from '../support/process.js';
import { exampleOrganization } from '../support/world.js';

let scratch: string;
/** Not there until the first command that needs the database creates it. */
let dataDir: string;
const cli = (...args: string[]) => runCli({ DATA_DIR: dataDir }, ...args);
beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'tc-cli-'));
  // As root the embedded PostgreSQL runs as the postgres user: let it reach the data directory here.
  await chmod(scratch, 0o711);
  dataDir = join(scratch, 'not', 'yet', 'data');
});
afterAll(() => rm(scratch, { recursive: true, force: true }));

describe('help and usage errors (no database needed)', () => {
  test('--help, -h and help print the commands', async () => {
    const help = await cli('--help');
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^Usage: npm run cli -- <command> \[options\]\n/);
    for (const command of [
      'import <file.json> [--replace]',
      'create-user --org',
      'reset-api-key --org',
      'set-password --org',
      'list-organizations',
      'help [command]',
    ]) {
      expect(help.stdout).toContain(command);
    }
    expect(await cli('-h')).toEqual(help);
    expect(await cli('help')).toEqual(help);
  });

  test('help <command> and <command> --help print that command', async () => {
    const expected = {
      code: 0,
      stderr: '',
      stdout: expect.stringMatching(
        /^Usage: npm run cli -- reset-api-key --org <string_id> --email <address>\n {2}give an account a new API key/,
      ),
    };
    expect(await cli('help', 'reset-api-key')).toEqual(expected);
    expect(await cli('reset-api-key', '--help')).toEqual(expected);
  });

  test('an unknown command, a missing option and an unknown option are named', async () => {
    const unknown = await cli('frobnicate');
    expect(unknown).toMatchObject({ code: 2, stdout: '' });
    expect(unknown.stderr).toBe('Unknown command "frobnicate".\nRun `npm run cli -- help` for the list of commands.\n');
    const missing = await cli('reset-api-key', '--org', 'demo');
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/^reset-api-key: missing --email\.\nUsage: npm run cli -- reset-api-key/);
    const noFile = await cli('import');
    expect(noFile.stderr).toMatch(/^import: expected 1 argument\(s\), got 0\./);
    const option = await cli('list-organizations', '--colour');
    expect(option.code).toBe(2);
    expect(option.stderr).toContain("Unknown option '--colour'");
    expect(await cli('help', 'nope')).toMatchObject({ code: 2, stderr: expect.stringContaining('Unknown command "nope".') });
  });
});

/** The import's plain progress lines for the example organization, without their times, and its summary. */
const STAGES = ['users: 7', 'groups: 3', 'channels: 4', 'emoji: 3', 'files: 3', 'messages: 3']
  .map((stage) => `${stage} rows`)
  .concat('stored files: 3 files');
const SUMMARY = String.raw`Created 7 users, 3 groups, 4 channels, 3 emoji, 3 files \(3 stored\), 3 messages and 0 invitations`;

describe('commands on the embedded database', () => {
  test('import before any server ever ran creates DATA_DIR; then create-user, reset-api-key and list-organizations; the embedded PostgreSQL is stopped afterwards', async () => {
    await expect(stat(dataDir)).rejects.toMatchObject({ code: 'ENOENT' });
    const good = join(scratch, 'good.json');
    await writeFile(good, JSON.stringify(exampleOrganization()));
    const imported = await cli('import', good);
    expect(imported).toMatchObject({ code: 0, stdout: '7 lighthouse\n' });
    // Not at a terminal: a plain line per stage (the file is too small for the lines every few seconds), then the summary.
    const seconds = String.raw`\d+\.\d s`;
    expect(imported.stderr.split('\n')).toEqual([
      `Creating the embedded PostgreSQL database in ${dataDir}/postgres ...`,
      ...STAGES.map((stage) => expect.stringMatching(new RegExp(`^${stage} in ${seconds}$`))),
      expect.stringMatching(new RegExp(`^${SUMMARY} in ${seconds}\\.$`)),
      '',
    ]);
    expect((await stat(dataDir)).isDirectory()).toBe(true);

    const created = await cli('create-user', '--org', 'lighthouse', '--email', 'new@lighthouse.example', '--name', 'New Person');
    expect(created.stdout).toMatch(/^Created user \d+\. API key \(shown once\): [A-Za-z0-9]{32}\n$/);
    expect((await cli('reset-api-key', '--org', 'lighthouse', '--email', 'new@lighthouse.example')).stdout).toMatch(/^[A-Za-z0-9]{32}\n$/);
    expect(await cli('reset-api-key', '--org', 'lighthouse', '--email', 'ghost@lighthouse.example')).toMatchObject({
      code: 1,
      stderr: 'No user ghost@lighthouse.example in lighthouse.\n',
    });
    expect((await cli('list-organizations')).stdout).toBe('7\tlighthouse\tLighthouse Cooperative\t10 users\n');
    await expect(readFile(join(dataDir, 'postgres', 'postmaster.pid'))).rejects.toMatchObject({ code: 'ENOENT' });
  }, 120_000);

  const withScript = test.skipIf(!existsSync('/usr/bin/script'));
  withScript(
    'at a terminal (a pseudo-terminal: script(1)), the import draws a bar per stage in place, then the summary',
    async () => {
      const file = join(scratch, 'good.json');
      const command = `${process.execPath} dist/cli/main.js import --replace ${file}`;
      const { stdout } = await promisify(execFile)('script', ['-qec', command, '/dev/null'], { env: environment({ DATA_DIR: dataDir }) });
      const drawn = stdout.split('\r\x1b[2K');
      expect(drawn).toContainEqual('users [------------------------]  0/7 rows  0/s');
      expect(drawn).toContainEqual(expect.stringMatching(/^messages \[#{24}\] {2}3\/3 rows {2}\d+\/s {2}in \d+\.\d s\r\n$/));
      const lastBar = String.raw`stored files \[#{24}\] {2}3\/3 files {2}\d+\/s {2}in \d+\.\d s`;
      expect(drawn.at(-1)).toMatch(new RegExp(`^${lastBar}\r\n${SUMMARY} in \\d+\\.\\d s\\.\r\n7 lighthouse\r\n$`));
    },
    120_000,
  );

  test('set-password reads one line of standard input; refuses a weak one, one with NUL, a bot, an unknown account', async () => {
    const setPassword = (input: string, email = 'mark@lighthouse.example') =>
      runCliWithInput({ DATA_DIR: dataDir }, input, 'set-password', '--org', 'lighthouse', '--email', email);
    expect(await setPassword('password123\n')).toEqual({ code: 1, stdout: '', stderr: 'The password is too weak.\n' });
    expect(await setPassword('')).toEqual({ code: 1, stdout: '', stderr: 'The password is too weak.\n' });
    expect(await setPassword('Lighthouse-keeper-42\0\n')).toEqual({ code: 1, stdout: '', stderr: 'Null characters are not allowed.\n' });
    expect(await setPassword('Lighthouse-keeper-42\n', 'bolt-bot@lighthouse.example')).toEqual({
      code: 1,
      stdout: '',
      stderr: 'Bots have no password.\n',
    });
    expect(await setPassword('Lighthouse-keeper-42\n', 'ghost@lighthouse.example')).toEqual({
      code: 1,
      stdout: '',
      stderr: 'No user ghost@lighthouse.example in lighthouse.\n',
    });
    // Only the first line counts: the second is not part of the password.
    expect(await setPassword('Lighthouse-keeper-42\r\nsecond line\n')).toEqual({
      code: 0,
      stdout: 'Password set for mark@lighthouse.example in lighthouse.\n',
      stderr: '',
    });
    const server = startServerProcess({ DATA_DIR: dataDir });
    try {
      const url = await listeningUrl(server);
      const fetched = await fetch(`${url}/api/v1/fetch_api_key`, {
        method: 'POST',
        body: new URLSearchParams({ username: 'mark@lighthouse.example', password: 'Lighthouse-keeper-42' }),
      });
      expect({ status: fetched.status, body: await fetched.json() }).toMatchObject({
        status: 200,
        body: { result: 'success', email: 'mark@lighthouse.example' },
      });
    } finally {
      await stopServerProcess(server);
    }
  }, 120_000);

  test('import reports every problem of a file at once, references included, and imports nothing', async () => {
    const bad = exampleOrganization() as Record<string, any>;
    bad.organization.string_id = 'broken';
    bad.users[2].role = 350;
    bad.users[3].api_key = 'short';
    bad.channels[0].subscribers.push('stranger@lighthouse.example');
    const file = join(scratch, 'bad.json');
    await writeFile(file, JSON.stringify(bad));
    const refused = await cli('import', file);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe(
      [
        `${file} has 3 problem(s); nothing was imported:`,
        '  users[2].role: must be 100, 200, 300, 400 or 600',
        '  users[3].api_key: must be exactly 32 ASCII letters and digits',
        '  channels[0].subscribers[4]: no user with e-mail stranger@lighthouse.example in the file',
        '',
      ].join('\n'),
    );
    expect((await cli('list-organizations')).stdout).not.toContain('broken');
  }, 120_000);
});

describe('failures are one line and exit status 1', () => {
  test('a DATA_DIR that cannot be a folder', async () => {
    expect(await runCli({ DATA_DIR: '/etc/passwd/data' }, 'list-organizations')).toEqual({
      code: 1,
      stdout: '',
      stderr: 'DATA_DIR /etc/passwd/data is not a writable folder (ENOTDIR): set DATA_DIR elsewhere.\n',
    });
  });

  test('an unexpected failure (a file storage that cannot write) is its reason in one line; --debug adds the stack', async () => {
    const file = join(scratch, 'with-file.json');
    const withFile = {
      organization: { string_id: 'files', name: 'Files' },
      users: [{ email: 'owner@files.example', full_name: 'Owner', role: 100 }],
      attachments: [{ owner: 'owner@files.example', name: 'a.txt', size: 5, content_base64: Buffer.from('hello').toString('base64') }],
    };
    await writeFile(file, JSON.stringify(withFile));
    const env = { DATA_DIR: dataDir, UPLOADS_DIR: '/etc/passwd/uploads' };
    const failed = await runCli(env, 'import', file);
    // After the progress of the stages that were written (none of it committed), the reason.
    expect(failed).toEqual({
      code: 1,
      stdout: '',
      stderr: expect.stringMatching(
        new RegExp(
          String.raw`^(Creating .*\n)?users: 1 rows in \d+\.\d s\n(.*\n)*` +
            String.raw`Failed: File storage could not write files/\S+/a\.txt \(run again with --debug for details\)\n$`,
        ),
      ),
    });
    const debug = await runCli(env, 'import', file, '--debug');
    expect(debug.code).toBe(1);
    expect(debug.stderr).toMatch(/\nStorageError: File storage could not write files\/\S+\/a\.txt\n {4}at /);
    expect((await cli('list-organizations')).stdout).not.toContain('files');
  }, 120_000);
});
