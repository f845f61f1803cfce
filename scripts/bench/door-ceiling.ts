// How much the HTTP door costs, measured from above: a copy of the build whose REST requests go
// straight to the REST dispatch and whose GraphQL POSTs go straight to Yoga, past hono's routing and
// every middleware (request id and log line, body limits, compression, cross-origin rules, the
// database's state) and the memory budget's hold on GraphQL answers, compared with the build itself
// and the floor by compare-builds. No door of our own could cost less than none, so the copy's
// ratio to the floor is the most replacing hono could give (the measurement behind
// docs/guide/performance.md's "Where the remaining gap is").
//   npm run build && npx tsx scripts/bench/door-ceiling.ts <kind>... (after compare-builds' setup)
import { execFileSync } from 'node:child_process';
import { cpSync, readFileSync, rmSync, writeFileSync } from 'node:fs';

const COPY = 'bench/dist-without-door';
const SECONDS = 6;
const ROUNDS = 5;

/** The line of dist/server.js that hands every request to the HTTP application. */
const HANDOFF = 'handle = (request, env) => http.fetch(request, env);';
const STRAIGHT = [
  'handle = (request, env) => {',
  '  const { pathname } = new URL(request.url);',
  "  if (request.method === 'POST' && pathname === '/graphql') return graphql.handle(request, { clientAddress: '', log: processLogger });",
  "  if (pathname.startsWith('/api/v1/')) return dispatchRest(restRoutes, request, app, { clientAddress: '', log: processLogger, database: databaseStatus });",
  '  return http.fetch(request, env);',
  '};',
].join('\n');
const IMPORTS = "import { dispatchRest } from './rest/dispatch.js';\nimport { restRoutes } from './rest/routes.js';\n";

function copyWithoutDoor(): void {
  rmSync(COPY, { recursive: true, force: true });
  cpSync('dist', COPY, { recursive: true });
  const server = readFileSync(`${COPY}/server.js`, 'utf8');
  if (!server.includes(HANDOFF)) throw new Error(`dist/server.js no longer hands requests over with "${HANDOFF}": update ${COPY}'s patch`);
  writeFileSync(`${COPY}/server.js`, IMPORTS + server.replace(HANDOFF, STRAIGHT));
}

const kinds = process.argv.slice(2);
if (kinds.length === 0) {
  console.error('usage: door-ceiling.ts <kind>... (compare-builds kinds: emoji, inv, rest, list, page, invite, invite100)');
  process.exit(2);
}
copyWithoutDoor();
for (const kind of kinds) {
  execFileSync(
    process.execPath,
    ['--import', 'tsx', 'scripts/bench/compare-builds.ts', kind, String(SECONDS), String(ROUNDS), 'floor', 'dist', COPY],
    {
      stdio: 'inherit',
      env: { ...process.env, WARM_UP_SECONDS: process.env.WARM_UP_SECONDS ?? '3' },
    },
  );
}
