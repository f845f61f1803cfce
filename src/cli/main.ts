// Administrator command line: npm run cli -- <command> [options]. It works while the server runs
// (same database) and, on the embedded database with the server down, starts PostgreSQL itself.
import { readFile } from 'node:fs/promises';
import { performance } from 'node:perf_hooks';
import { inspect, parseArgs } from 'node:util';
import { loadConfig } from '../config.js';
import { prepareDataDir } from '../data-dir.js';
import { databaseOptionsFor, openDatabase, type Database } from '../db/database.js';
import { DomainError } from '../domain/errors.js';
import { importOrganization } from '../import/import-organization.js';
import { openStorage } from '../storage/open-storage.js';
import { SWEEP_GRACE_MS, sweepOrphanFiles } from '../domain/uploads/sweep-files.js';
import { createMailTransport } from '../domain/email/transport.js';
import { OutboxWorker } from '../domain/email/worker.js';
import { parseOrganizationFile } from '../import/organization-file.js';
import { createUser, resetApiKey, setPasswordByAddress } from '../import/users.js';
import { readPasswordLine } from './password-input.js';
import { formatDuration, Progress } from './progress.js';
import type { ImportCounts, ImportStage } from '../import/import-organization.js';
import { StartupError } from '../startup-error.js';

type Values = Record<string, string | boolean | undefined>;

interface Command {
  usage: string;
  summary: string;
  /** Options that must be given (named in the error when missing). */
  required: string[];
  /** How many file arguments the command takes. */
  positionals: number;
  run(database: Database, positionals: string[], values: Values): Promise<void>;
}

const commands: Record<string, Command> = {
  import: {
    usage: 'import <file.json> [--replace]',
    summary:
      'create an organization from an import file (docs/contract/organization-import.md); --replace drops one with the same string_id first',
    required: [],
    positionals: 1,
    async run(database, [path], values) {
      const started = performance.now();
      const progress = new Progress();
      const imported = await importOrganization(database.prisma, await readImportFile(path!), {
        replace: values.replace === true,
        storage: await openStorage(loadConfig()),
        onProgress: (stage, done, total) =>
          progress.update(IMPORT_STAGES[stage], done, total, { unit: stage === 'files' ? 'files' : 'rows' }),
      }).catch((error: unknown) => {
        progress.abandon();
        throw error;
      });
      progress.line(importSummary(imported.created, performance.now() - started));
      console.log(`${imported.id} ${imported.stringId}`);
    },
  },
  'create-user': {
    usage: 'create-user --org <string_id> --email <address> --name "<full name>" [--role 400]',
    summary: 'create an account and print its API key (roles: 100 owner, 200 administrator, 300 moderator, 400 member, 600 guest)',
    required: ['org', 'email', 'name'],
    positionals: 0,
    async run(database, _positionals, values) {
      const { id, apiKey } = await createUser(database.prisma, {
        organizationStringId: String(values.org),
        email: String(values.email),
        fullName: String(values.name),
        role: Number(values.role ?? 400),
      });
      console.log(`Created user ${id}. API key (shown once): ${apiKey}`);
    },
  },
  'reset-api-key': {
    usage: 'reset-api-key --org <string_id> --email <address>',
    summary: 'give an account a new API key and print it (the old key stops working)',
    required: ['org', 'email'],
    positionals: 0,
    async run(database, _positionals, values) {
      console.log(await resetApiKey(database, String(values.org), String(values.email)));
    },
  },
  'set-password': {
    usage: 'set-password --org <string_id> --email <address>',
    summary: "set an account's password, read as one line from standard input (never from the command line); a weak one is refused",
    required: ['org', 'email'],
    positionals: 0,
    async run(database, _positionals, values) {
      const password = await readPasswordLine();
      await setPasswordByAddress(database.prisma, String(values.org), String(values.email), password);
      console.log(`Password set for ${String(values.email)} in ${String(values.org)}.`);
    },
  },
  'sweep-files': {
    usage: `sweep-files [--grace-minutes ${SWEEP_GRACE_MS / 60_000}]`,
    summary:
      "what the server's own file sweep does (FILE_SWEEP_MINUTES), at once: remove stored upload bytes that no file row names " +
      `(left by a crash or a failed deletion), if older than the grace (default ${SWEEP_GRACE_MS / 60_000} minutes: ` +
      'uploads still being committed are younger)',
    required: [],
    positionals: 0,
    async run(database, _positionals, values) {
      const graceMinutes = Number(values['grace-minutes'] ?? SWEEP_GRACE_MS / 60_000);
      if (!Number.isFinite(graceMinutes) || graceMinutes < 0)
        throw new UsageError('sweep-files: --grace-minutes must be a number of minutes, 0 or more.');
      const progress = new Progress(process.stderr, { quiet: true });
      const { examined, removed } = await sweepOrphanFiles(
        { prisma: database.prisma, storage: await openStorage(loadConfig()) },
        {
          graceMs: graceMinutes * 60_000,
          onProgress: (p) => progress.update('sweep', p.listed, undefined, { unit: 'stored files listed', detail: `${p.removed} removed` }),
        },
      );
      progress.end();
      for (const key of removed) console.log(`removed ${key}`);
      console.log(`${examined} stored files older than ${graceMinutes} minutes examined, ${removed.length} without a row removed`);
    },
  },
  'deliver-emails': {
    usage: 'deliver-emails',
    summary:
      'deliver the queued e-mail that is due now (SMTP_URL, or files in DATA_DIR/outbox), then exit: for fleets whose servers run with EMAIL_WORKER=off',
    required: [],
    positionals: 0,
    async run(database) {
      const worker = new OutboxWorker(database.prisma, createMailTransport(loadConfig()));
      const progress = new Progress(process.stderr, { quiet: true });
      const total = await worker
        .deliverAllDue(({ sent, failed }) =>
          progress.update('deliver-emails', sent + failed, undefined, { unit: 'attempted', detail: `${sent} sent, ${failed} failed` }),
        )
        .finally(() => worker.stop());
      progress.end();
      console.log(`E-mails delivered: ${total.sent}, failed: ${total.failed} (tried again later). Destination: ${worker.destination}`);
    },
  },
  'list-organizations': {
    usage: 'list-organizations',
    summary: 'id, string_id, name and number of users of every organization',
    required: [],
    positionals: 0,
    async run(database) {
      const orgs = await database.prisma.organization.findMany({
        orderBy: { id: 'asc' },
        include: { _count: { select: { users: true } } },
      });
      for (const o of orgs)
        console.log(`${o.id}\t${o.stringId}\t${o.name}\t${o._count.users} users${o.deactivated ? '\tdeactivated' : ''}`);
    },
  },
};

const OPTIONS = {
  replace: { type: 'boolean' },
  org: { type: 'string' },
  email: { type: 'string' },
  name: { type: 'string' },
  role: { type: 'string' },
  'grace-minutes': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
  debug: { type: 'boolean' },
} as const;

function usage(): string {
  const lines = Object.values(commands).map((c) => `  ${c.usage}\n      ${c.summary}`);
  return `Usage: npm run cli -- <command> [options]\n\nCommands:\n${lines.join('\n')}\n  help [command]\n      this text, or one command's\n\nAny command takes --debug: a failure then also prints its stack trace.\n`;
}

const commandUsage = (name: string) => `Usage: npm run cli -- ${commands[name]!.usage}\n  ${commands[name]!.summary}\n`;

class UsageError extends Error {}

/** The import's stages as its progress names them. */
const IMPORT_STAGES: Record<ImportStage, string> = {
  users: 'users',
  groups: 'groups',
  channels: 'channels',
  emoji: 'emoji',
  attachments: 'files',
  messages: 'messages',
  files: 'stored files',
};

const importSummary = (created: ImportCounts, ms: number) =>
  `Created ${created.users} users, ${created.groups} groups, ${created.channels} channels, ${created.emoji} emoji, ` +
  `${created.files} files (${created.storedFiles} stored), ${created.messages} messages and ${created.invitations} invitations ` +
  `in ${formatDuration(ms)}.`;

async function readImportFile(path: string) {
  let json: unknown;
  try {
    json = JSON.parse(await readFile(path, 'utf8'));
  } catch (error) {
    throw new DomainError(`${path}: ${(error as Error).message}`);
  }
  const parsed = parseOrganizationFile(json);
  if (!parsed.ok) {
    const lines = parsed.problems.map((p) => `  ${p.path}: ${p.message}`);
    throw new DomainError(`${path} has ${parsed.problems.length} problem(s); nothing was imported:\n${lines.join('\n')}`);
  }
  return parsed.value;
}

/** The command to run with its arguments, or the text to print (help). */
function interpret(argv: string[]): { help: string } | { command: Command; positionals: string[]; values: Values } {
  let parsed: ReturnType<typeof parseArgs<{ args: string[]; allowPositionals: true; options: typeof OPTIONS }>>;
  try {
    parsed = parseArgs({ args: argv, allowPositionals: true, options: OPTIONS });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const [name, ...positionals] = parsed.positionals;
  if (name === 'help' || (parsed.values.help && !name)) {
    const topic = name === 'help' ? positionals[0] : undefined;
    if (topic && !commands[topic]) throw new UsageError(`Unknown command "${topic}".`);
    return { help: topic ? commandUsage(topic) : usage() };
  }
  if (!name) throw new UsageError('No command given.');
  const command = commands[name];
  if (!command) throw new UsageError(`Unknown command "${name}".`);
  if (parsed.values.help) return { help: commandUsage(name) };
  const missing = command.required.filter((option) => parsed.values[option as keyof typeof parsed.values] === undefined);
  if (missing.length) throw new UsageError(`${name}: missing ${missing.map((m) => `--${m}`).join(', ')}.\n${commandUsage(name)}`);
  if (positionals.length !== command.positionals) {
    throw new UsageError(`${name}: expected ${command.positionals} argument(s), got ${positionals.length}.\n${commandUsage(name)}`);
  }
  return { command, positionals, values: parsed.values };
}

async function main(argv: string[]): Promise<number> {
  const request = interpret(argv);
  if ('help' in request) {
    process.stdout.write(request.help);
    return 0;
  }
  const config = loadConfig();
  await prepareDataDir(config.dataDir);
  const database = await openDatabase(databaseOptionsFor(config, 'tool', (line) => console.error(line)));
  try {
    await request.command.run(database, request.positionals, request.values);
    return 0;
  } finally {
    await database.close();
  }
}

/** The last line of an error's message: Prisma's and pg's messages end with the reason. */
const reasonOf = (error: unknown) =>
  (error instanceof Error ? error.message : String(error)).trim().split('\n').filter(Boolean).pop() ?? String(error);

/** Failures the user can act on print their message; anything else one line, its stack with --debug. */
function report(error: unknown, debug: boolean): number {
  if (error instanceof UsageError) {
    console.error(`${error.message}\nRun \`npm run cli -- help\` for the list of commands.`);
    return 2;
  }
  if (error instanceof DomainError || error instanceof StartupError) {
    console.error(error.message);
  } else if (debug) {
    console.error(inspect(error));
  } else {
    console.error(`Failed: ${reasonOf(error)} (run again with --debug for details)`);
  }
  return 1;
}

const argv = process.argv.slice(2);
// An error a library emits outside the command's own promise (a connection's 'error' event, say).
process.on('uncaughtException', (error) => process.exit(report(error, argv.includes('--debug'))));
main(argv).then(
  (code) => process.exit(code),
  (error) => process.exit(report(error, argv.includes('--debug'))),
);
