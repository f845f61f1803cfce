// Hand-written statements on the hottest paths go straight to the driver, on the same connection
// pool Prisma's adapter uses: no query interpretation, no per-value conversion, no JSON round trip.
// Rows come back as `pg` parses them (int4 and float8 as numbers, int8 as text, arrays as arrays), so
// these statements select epoch milliseconds rather than timestamps.
import pg from 'pg';

export interface Sql {
  /** The rows of one parameterized statement ($1, $2, ... bound to `values`). */
  rows<Row>(text: string, values: readonly unknown[]): Promise<Row[]>;
}

export function sqlOver(pool: pg.Pool): Sql {
  return {
    async rows<Row>(text: string, values: readonly unknown[]) {
      const result = await pool.query(text, values as unknown[]);
      return result.rows as Row[];
    },
  };
}
