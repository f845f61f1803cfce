// The hand-written statements' driver settings: number arrays parsed by the fast path, everything
// else (NULL elements, other types) exactly as the driver parses it.
import pg from 'pg';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { namedStatement, SQL_TYPE_PARSERS, sqlOver, type Sql } from '../../src/db/sql.js';
import { testDatabaseUrl } from '../support/server.js';

let pool: pg.Pool;
let sql: Sql;
beforeAll(async () => {
  pool = new pg.Pool({ connectionString: await testDatabaseUrl(), types: SQL_TYPE_PARSERS });
  sql = sqlOver(pool);
});
afterAll(() => pool?.end());

test('int4[] and float8[] become arrays of numbers, empty ones included', async () => {
  const [row] = await sql.rows(
    `SELECT '{}'::int4[] AS empty, ARRAY[1, -2, 2147483647]::int4[] AS ints,
            ARRAY[1.5, -0.25, 1793003216, 2e20]::float8[] AS floats, '{}'::float8[] AS "emptyFloats"`,
    [],
  );
  expect(row).toEqual({ empty: [], ints: [1, -2, 2147483647], floats: [1.5, -0.25, 1793003216, 2e20], emptyFloats: [] });
});

test('arrays with NULL, NaN or infinities, and other types, are parsed by the driver', async () => {
  const [row] = await sql.rows<Record<string, unknown>>(
    `SELECT ARRAY[1, NULL]::int4[] AS "withNull", ARRAY['NaN', 'Infinity', '-Infinity']::float8[] AS specials,
            ARRAY[9007199254740993]::int8[] AS bigs, ARRAY['a,b', 'N']::text[] AS texts, 7::int4 AS scalar`,
    [],
  );
  expect(row).toEqual({
    withNull: [1, null],
    specials: [NaN, Infinity, -Infinity],
    bigs: ['9007199254740993'],
    texts: ['a,b', 'N'],
    scalar: 7,
  });
});

test('whole numbers digit by digit, long ones and nested arrays as the driver reads them', async () => {
  const [row] = await sql.rows<Record<string, unknown>>(
    `SELECT ARRAY[0, 123456789012345, -123456789012345, 1234567890123456, 9007199254740991, -7]::float8[] AS floats,
            ARRAY[2147483647, -2147483648]::int4[] AS limits, '{{1,2},{3,4}}'::int4[] AS nested`,
    [],
  );
  expect(row).toEqual({
    floats: [0, 123456789012345, -123456789012345, 1234567890123456, 9007199254740991, -7],
    limits: [2147483647, -2147483648],
    nested: [
      [1, 2],
      [3, 4],
    ],
  });
});

test('named statements are prepared once on a connection, answer through the pool and in transactions, and reject with their errors', async () => {
  const onePool = new pg.Pool({ connectionString: await testDatabaseUrl(), types: SQL_TYPE_PARSERS, max: 1 });
  try {
    const named = sqlOver(onePool, 'BEGIN', true);
    const next = namedStatement('test.next', 'SELECT $1::int + 1 AS next, ARRAY[$1::int] AS ids');
    expect(await named.rows(next, [1])).toEqual([{ next: 2, ids: [1] }]);
    expect(await named.transaction((tx) => tx.rows(next, [2]))).toEqual([{ next: 3, ids: [2] }]);
    const divide = namedStatement('test.divide', 'SELECT 1 / $1::int AS quotient');
    const refused = await named.rows(divide, [0]).catch((error: unknown) => error);
    expect(refused).toMatchObject({ code: '22012' });
    expect((refused as Error).stack).toContain('sql.test.ts');
    await expect(named.transaction((tx) => tx.rows(divide, [0]))).rejects.toMatchObject({ code: '22012' });
    expect(await named.rows(next, [5])).toEqual([{ next: 6, ids: [5] }]);
    const { rows } = await onePool.query<{ name: string }>('SELECT name FROM pg_prepared_statements ORDER BY name');
    expect(rows.map((row) => row.name)).toEqual([divide.name, next.name]);
  } finally {
    await onePool.end();
  }
});
