// Prints the built GraphQL schema to schema.graphql (committed; diffed against the contract in CI).
import { writeFile } from 'node:fs/promises';
import { lexicographicSortSchema, printSchema } from 'graphql';
import { schema } from '../src/graphql/schema/index.js';

const target = new URL('../schema.graphql', import.meta.url);
await writeFile(target, `${printSchema(lexicographicSortSchema(schema))}\n`);
console.log('Wrote schema.graphql');
