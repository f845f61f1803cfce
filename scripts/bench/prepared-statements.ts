// PostgreSQL's and the driver's CPU per statement for the lists' own statements, sent unnamed (as
// the server, the floor and the database-bound limit send them) and named (prepared once per
// connection), alternately, by 4 clients: the measurement behind docs/guide/performance.md's
// "Prepared statements". Runs on compare-builds' database (`compare-builds.ts setup` first).
//   npx tsx scripts/bench/prepared-statements.ts
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { SQL_TYPE_PARSERS } from '../../src/db/sql.js';
import { ownAttachmentsListStatement } from '../../src/domain/attachments/statements.js';
import { pendingInvitationsStatement } from '../../src/domain/invitations/statements.js';
import { postgresCpuSince } from './load.js';

const CLIENTS = 4;
const org = JSON.parse(readFileSync('bench/compare-organization.json', 'utf8')) as { databaseUrl: string; id: number };

const first = new pg.Client({ connectionString: org.databaseUrl });
await first.connect();
const {
  rows: [user],
} = await first.query('SELECT id, "organizationId", role FROM user_account WHERE "organizationId" = $1 ORDER BY id LIMIT 1', [org.id]);
await first.end();
if (!user) throw new Error(`no user in organization ${org.id} of ${org.databaseUrl}: run compare-builds.ts setup first`);

const statements = {
  'invitation list': { statement: pendingInvitationsStatement(user), times: 2000 },
  'attachment page': { statement: ownAttachmentsListStatement(user, true, 51), times: 1000 },
  'REST list': { statement: ownAttachmentsListStatement(user, false), times: 400 },
  'GraphQL list': { statement: ownAttachmentsListStatement(user, true), times: 400 },
};
const clients = Array.from({ length: CLIENTS }, () => new pg.Client({ connectionString: org.databaseUrl, types: SQL_TYPE_PARSERS }));
await Promise.all(clients.map((client) => client.connect()));
try {
  for (const [label, { statement, times }] of Object.entries(statements)) {
    for (const named of [false, true, false, true]) {
      const query = named ? { name: `prepared ${label}`, ...statement } : statement;
      let left = times;
      const before = { database: postgresCpuSince(), own: process.cpuUsage() };
      await Promise.all(
        clients.map(async (client) => {
          while (left-- > 0) await client.query(query);
        }),
      );
      const own = process.cpuUsage(before.own);
      const perStatement = (ms: number) => (ms / times).toFixed(3);
      console.log(
        `${label}, ${named ? 'prepared' : 'unnamed'}: PostgreSQL ${perStatement(before.database())} ms, driver ${perStatement((own.user + own.system) / 1000)} ms per statement`,
      );
    }
  }
} finally {
  await Promise.all(clients.map((client) => client.end()));
}
