// Fails when the built schema breaks the GraphQL contract in docs/contract/schema.graphql
// (additions are fine), or when the committed schema.graphql is out of date.
import { readFile } from 'node:fs/promises';
import { buildSchema, lexicographicSortSchema, printSchema } from 'graphql';
import { CriticalityLevel, diff } from '@graphql-inspector/core';
import { schema } from '../src/graphql/schema/index.js';

const contractPath = new URL('../docs/contract/schema.graphql', import.meta.url);
const contract = buildSchema(await readFile(contractPath, 'utf8'));
// Compare SDL with SDL: the live schema holds enum defaults as internal values (400), the contract as names (MEMBER).
const built = buildSchema(printSchema(schema));
const changes = await diff(contract, built);
const breaking = changes.filter((c) => c.criticality.level === CriticalityLevel.Breaking);
for (const change of changes) console.log(`${change.criticality.level.padEnd(12)} ${change.message}`);

const printed = `${printSchema(lexicographicSortSchema(schema))}\n`;
const committed = await readFile(new URL('../schema.graphql', import.meta.url), 'utf8').catch(() => '');
let failed = false;
if (breaking.length > 0) {
  console.error(`\n${breaking.length} breaking change(s) against the contract.`);
  failed = true;
}
if (committed !== printed) {
  console.error('\nschema.graphql is out of date: run `npm run schema:print` and commit it.');
  failed = true;
}
if (failed) process.exit(1);
console.log(`\nSchema keeps the contract (${changes.length} non-breaking change(s)); schema.graphql is current.`);
