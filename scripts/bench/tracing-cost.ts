// What tracing costs: the build with traces on (every request exported over OTLP/HTTP to a receiver
// in this process that takes and drops them) beside the same build without and the floor, in
// alternating rounds by compare-builds. A figure, not a target (docs/guide/performance.md).
//   npm run build && npx tsx scripts/bench/tracing-cost.ts <kind>... (after compare-builds' setup; ROUNDS=n, 5 by default)
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

const SECONDS = 6;
const ROUNDS = Number(process.env.ROUNDS ?? 5);

const kinds = process.argv.slice(2);
if (kinds.length === 0) {
  console.error('usage: tracing-cost.ts <kind>... (compare-builds kinds: emoji, inv, rest, list, page, invite, invite100)');
  process.exit(2);
}
let exported = 0;
const receiver = createServer((request, response) => {
  request.on('data', (chunk: Buffer) => (exported += chunk.length));
  request.on('end', () => response.writeHead(200, { 'Content-Type': 'application/json' }).end('{}'));
});
receiver.listen(0, '127.0.0.1');
await once(receiver, 'listening');
const endpoint = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
for (const kind of kinds) {
  const targets = ['floor', 'dist', `dist+OTEL_EXPORTER_OTLP_ENDPOINT=${endpoint}`];
  const run = spawn(
    process.execPath,
    ['--import', 'tsx', 'scripts/bench/compare-builds.ts', kind, String(SECONDS), String(ROUNDS), ...targets],
    {
      stdio: 'inherit',
      env: { ...process.env, WARM_UP_SECONDS: process.env.WARM_UP_SECONDS ?? '3' },
    },
  );
  const [code] = await once(run, 'exit');
  if (code !== 0) process.exitCode = 1;
}
console.log(`The receiver took ${(exported / 1024 / 1024).toFixed(1)} MiB of traces.`);
receiver.close();
