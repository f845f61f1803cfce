// Once per test run: migrate a template database, so each test file starts from a copy of it:
// a dumped PGlite data directory, or (DATABASE_URL set) a PostgreSQL template database.
import { mkdtemp, writeFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { migratedTemplate, openDatabase } from '../../src/db/database.js';
import { createTemplate, dropCopies } from './postgres-databases.js';

export default async function setup(project: TestProject) {
  const databaseUrl = process.env.DATABASE_URL;
  if (databaseUrl) {
    const database = await openDatabase({ databaseUrl: await createTemplate(databaseUrl) });
    await database.close();
    project.provide('templatePath', '');
    return () => dropCopies(databaseUrl);
  }
  const folder = await mkdtemp(join(tmpdir(), 'teamchat-template-'));
  const templatePath = join(folder, 'template.tar');
  await writeFile(templatePath, Buffer.from(await (await migratedTemplate()).arrayBuffer()));
  project.provide('templatePath', templatePath);
  return () => rm(folder, { recursive: true, force: true });
}

declare module 'vitest' {
  export interface ProvidedContext {
    templatePath: string;
  }
}
