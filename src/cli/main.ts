// Administrator command line: npm run cli -- <command> [options]
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { loadConfig } from '../config.js';
import { DataDirInUseError, databaseOptionsFor, openDatabase, type Database } from '../db/database.js';
import { DomainError } from '../domain/errors.js';
import { importOrganization } from '../import/import-organization.js';
import { parseOrganizationFile } from '../import/organization-file.js';
import { createUser, resetApiKey } from '../import/users.js';

const USAGE = `Usage: npm run cli -- <command>
  import <file.json> [--replace]                                   create an organization from an import file
  create-user --org <string_id> --email <e> --name <n> [--role 400]  prints the new user's API key
  reset-api-key --org <string_id> --email <e>                       prints a new API key
  list-organizations`;

type Command = (database: Database, positionals: string[], values: Record<string, string | boolean | undefined>) => Promise<void>;

const commands: Record<string, Command> = {
  async import(database, [path], values) {
    if (!path) throw new DomainError(USAGE);
    let json: unknown;
    try {
      json = JSON.parse(await readFile(path, 'utf8'));
    } catch (error) {
      throw new DomainError(`${path}: ${(error as Error).message}`);
    }
    const parsed = parseOrganizationFile(json);
    if (!parsed.ok) throw new DomainError(parsed.problems.map((p) => `${p.path}: ${p.message}`).join('\n'));
    const imported = await importOrganization(database.prisma, parsed.value, { replace: values.replace === true });
    console.log(`${imported.id} ${imported.stringId}`);
  },
  async 'create-user'(database, _positionals, values) {
    const { id, apiKey } = await createUser(database.prisma, {
      organizationStringId: String(values.org ?? ''),
      email: String(values.email ?? ''),
      fullName: String(values.name ?? ''),
      role: Number(values.role ?? 400),
    });
    console.log(`Created user ${id}. API key (shown once): ${apiKey}`);
  },
  async 'reset-api-key'(database, _positionals, values) {
    console.log(await resetApiKey(database.prisma, String(values.org ?? ''), String(values.email ?? '')));
  },
  async 'list-organizations'(database) {
    const orgs = await database.prisma.organization.findMany({ orderBy: { id: 'asc' }, include: { _count: { select: { users: true } } } });
    for (const o of orgs) console.log(`${o.id}\t${o.stringId}\t${o.name}\t${o._count.users} users${o.deactivated ? '\tdeactivated' : ''}`);
  },
};

async function main(): Promise<number> {
  const { positionals, values } = parseArgs({
    allowPositionals: true,
    options: {
      replace: { type: 'boolean' },
      org: { type: 'string' },
      email: { type: 'string' },
      name: { type: 'string' },
      role: { type: 'string' },
    },
  });
  const [name, ...rest] = positionals;
  const command = name ? commands[name] : undefined;
  if (!command) {
    console.error(USAGE);
    return 2;
  }
  const database = await openDatabase(databaseOptionsFor(loadConfig()));
  try {
    await command(database, rest, values);
    return 0;
  } finally {
    await database.close();
  }
}

main().then(
  (code) => process.exit(code),
  (error) => {
    if (!(error instanceof DomainError || error instanceof DataDirInUseError || (error as { code?: string }).code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION')) throw error;
    console.error(error.message);
    process.exit(1);
  },
);
