// The benchmark's report: machine facts, and a Markdown table per database mode.
import { cpus, loadavg, totalmem } from 'node:os';
import pg from 'pg';
import type { Round } from './load.js';

export interface ScenarioResult {
  name: string;
  real: Round;
  floor: Round;
  /** The server's resident memory at its highest during this scenario's rounds (bytes). */
  serverPeakRss: number;
  /** The list's statement alone through `pg`, statements per second (the median of its rounds): the database-bound limit. */
  databaseLimit?: number;
  /** Where floor and server did not answer or write alike under load: the run fails. */
  mismatches: string[];
}

/** How long server and floor sit without requests before their idle memory is read. */
export const IDLE_SECONDS = 30;

export interface ModeResult {
  mode: 'external' | 'embedded';
  data: string;
  scenarios: ScenarioResult[];
  rss: {
    serverAfterStart: number;
    /** A second after the import, before the server has been idle long enough to give memory back. */
    serverAfterImport: number;
    /** After IDLE_SECONDS without requests. */
    serverIdle: number;
    serverPeak: number;
    /** The embedded PostgreSQL's processes together; undefined on an external server. */
    databasePeak?: number;
    /** With the floor's and the bench's own backends. */
    databaseAllPeak?: number;
    floorIdle: number;
    floorPeak: number;
  };
}

export async function machineFacts(externalUrl: string | undefined) {
  let external = 'none';
  if (externalUrl) {
    const client = new pg.Client({ connectionString: externalUrl });
    await client.connect();
    external = (await client.query('SHOW server_version')).rows[0].server_version;
    await client.end();
  }
  return {
    cpu: `${cpus().length} x ${cpus()[0]?.model ?? 'unknown CPU'}`,
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    loadAverage: loadavg()[0]!.toFixed(2),
    node: process.version,
    externalPostgres: external,
  };
}

const mib = (bytes: number | undefined) => (bytes === undefined ? 'n/a' : `${(bytes / 2 ** 20).toFixed(0)} MiB`);
const fixed = (n: number, digits = 1) => n.toFixed(digits);
// Results written before the column existed have no figure.
const cpu = (round: Round) => (round.cpuMsPerRequest === undefined ? 'n/a' : fixed(round.cpuMsPerRequest, 2));
const postgresCpu = (round: Round) => (round.postgresCpuMsPerRequest === undefined ? 'n/a' : fixed(round.postgresCpuMsPerRequest, 2));

export function markdownReport(report: {
  quick: boolean;
  date: string;
  machine: Awaited<ReturnType<typeof machineFacts>>;
  load: { connections: number; seconds: number; rounds: number };
  modes: ModeResult[];
}): string {
  const m = report.machine;
  const lines = [
    `# Benchmark${report.quick ? ' (--quick)' : ''}, ${report.date}`,
    '',
    `Machine: ${m.cpu}, ${m.memoryGiB} GiB, load average ${m.loadAverage} at the end; Node ${m.node}; external PostgreSQL ${m.externalPostgres}.`,
    `Load: autocannon, ${report.load.connections} connections, ${report.load.seconds} s per round, the median of ${report.load.rounds} round${report.load.rounds > 1 ? 's' : ''} for each side, floor and server alternately.`,
  ];
  const failed = report.modes.flatMap((mode) =>
    mode.scenarios.filter((s) => s.mismatches.length > 0).map((s) => `${mode.mode}: ${s.name}`),
  );
  if (failed.length > 0)
    lines.push(
      '',
      `**FAILED: floor and server did not do the same work (answers, rows written or rate counters; see MISMATCH below) in ${failed.join('; ')}; their figures compare nothing.**`,
    );
  for (const mode of report.modes) {
    lines.push(
      '',
      `## ${mode.mode === 'external' ? 'External PostgreSQL (DATABASE_URL)' : "Embedded PostgreSQL (the server's own, DATABASE_URL unset)"}`,
      '',
      `Data: ${mode.data}.`,
      '',
    );
    lines.push(
      '| Scenario | server req/s | floor req/s | server / floor | p50 ms (server / floor) | p99 ms (server / floor) | SQL per request (server / floor) | CPU ms per request (server / floor) | PostgreSQL CPU ms per request (server / floor) | server peak RSS |',
    );
    lines.push('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
    for (const s of mode.scenarios) {
      lines.push(
        `| ${s.name} | ${fixed(s.real.requestsPerSecond)} | ${fixed(s.floor.requestsPerSecond)} | ${s.floor.requestsPerSecond ? fixed(s.real.requestsPerSecond / s.floor.requestsPerSecond, 2) : 'n/a'} | ` +
          `${s.real.p50Ms} / ${s.floor.p50Ms} | ${s.real.p99Ms} / ${s.floor.p99Ms} | ${fixed(s.real.sqlPerRequest)} / ${fixed(s.floor.sqlPerRequest)} | ${cpu(s.real)} / ${cpu(s.floor)} | ` +
          `${postgresCpu(s.real)} / ${postgresCpu(s.floor)} | ${mib(s.serverPeakRss)} |`,
      );
    }
    const limited = mode.scenarios.filter((x) => x.databaseLimit);
    if (limited.length > 0) {
      lines.push(
        '',
        `Database-bound limit: the server's own statement of each list sent alone through \`pg\` (no HTTP), by ${report.load.connections} clients for a round's time, beside each round pair (the median of its rounds):`,
        '',
      );
      lines.push('| Scenario | statement alone per s | server / it | floor / it |', '|---|---:|---:|---:|');
      for (const s of limited) {
        lines.push(
          `| ${s.name} | ${fixed(s.databaseLimit!)} | ${fixed(s.real.requestsPerSecond / s.databaseLimit!, 2)} | ${fixed(s.floor.requestsPerSecond / s.databaseLimit!, 2)} |`,
        );
      }
    }
    for (const s of mode.scenarios.filter((x) => x.mismatches.length > 0)) {
      lines.push('', `**MISMATCH, ${s.name}:**`, '', ...s.mismatches.map((m) => `- ${m.replaceAll('\n', ' ')}`));
    }
    for (const s of mode.scenarios.filter((x) => x.real.failed + x.floor.failed > 0)) {
      lines.push(
        '',
        `**${s.name}: ${s.real.failed} failed answers from the server, ${s.floor.failed} from the floor** in the median rounds (see the run's log for their statuses).`,
      );
    }
    for (const s of mode.scenarios.filter((x) => x.real.probeMaxMs !== undefined)) {
      lines.push(
        '',
        `Another user's GET /api/v1/users/me every 50 ms during "${s.name}": worst ${s.real.probeMaxMs!.toFixed(0)} ms (floor: ${s.floor.probeMaxMs!.toFixed(0)} ms).`,
      );
    }
    const r = mode.rss;
    lines.push(
      '',
      `Server RSS: ${mib(r.serverAfterStart)} after start, ${mib(r.serverAfterImport)} right after the import, ${mib(r.serverIdle)} idle (${IDLE_SECONDS} s later, without requests), ${mib(r.serverPeak)} peak under load` +
        (r.databasePeak === undefined
          ? ''
          : `; embedded PostgreSQL's processes ${mib(r.databasePeak)} peak together (sum of PSS, without the backends of the floor's and the bench's connections; ` +
            `${r.databaseAllPeak === undefined ? '' : `${mib(r.databaseAllPeak)} with them; `}not counted while the rate-limited scenario's second server and floor use it)`) +
        `. Floor: ${mib(r.floorIdle)} idle, ${mib(r.floorPeak)} peak.`,
    );
  }
  return `${lines.join('\n')}\n`;
}
