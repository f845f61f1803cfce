/** Whether a number can be a row id at all: ids are PostgreSQL `integer`s (1 .. 2^31 - 1). Anything
 * else names nothing, and must answer like an unknown id instead of failing in the database. */
export const isRowId = (id: number) => Number.isSafeInteger(id) && id > 0 && id <= 2 ** 31 - 1;

/** The distinct ids of a list that can name rows: a request may repeat or invent any number of them. */
export const distinctRowIds = (ids: number[]) => [...new Set(ids.filter(isRowId))];
