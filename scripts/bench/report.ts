// The benchmark's report: machine facts, and a Markdown table per database mode.
import { cpus, loadavg, totalmem } from 'node:os';
import pg from 'pg';
import type { Round } from './load.js';

/** CPU ms per request of each counted round, per side. */
interface CpuRounds {
  real: number[];
  floor: number[];
  unprepared?: number[];
  baseline?: number[];
  /** The server in fresh processes (scripts/bench/fresh-processes.ts), beside the baseline build's. */
  fresh?: number[];
}

export interface ScenarioResult {
  name: string;
  real: Round;
  floor: Round;
  /** The same build with DATABASE_PREPARED_STATEMENTS=off (its median round), for the scenarios with a prepared target. */
  unprepared?: Round;
  /** The build of `--baseline` (its median round, of its fresh processes' rounds), on the same scenarios. */
  baseline?: Round;
  /** The server's and the floor's own CPU per request, round by round. */
  cpuRounds?: CpuRounds;
  /** PostgreSQL's CPU per request under each side, round by round. */
  postgresCpuRounds?: CpuRounds;
  /** PostgreSQL's CPU under the server at most this fraction of its CPU under the unprepared server (and the baseline build). */
  preparedTarget?: number;
  /** The server's resident memory at its highest during this scenario's rounds (bytes). */
  serverPeakRss: number;
  /** The list's statement alone through `pg`, statements per second (the median of its rounds): the database-bound limit. */
  databaseLimit?: number;
  /** PostgreSQL's CPU per statement alone (the median of its rounds). */
  databaseAlonePostgresCpuMs?: number;
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

/** The median of some figures (of an even number, the lower of the two middle ones). */
const medianOf = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor((values.length - 1) / 2)]!;
const spread = (values: number[] | undefined) =>
  values?.length ? `${fixed(Math.min(...values), 2)}-${fixed(Math.max(...values), 2)}` : 'n/a';
const ratio = (a: number | undefined, b: number | undefined) => (a === undefined || !b ? 'n/a' : fixed(a / b, 2));

type Side = keyof CpuRounds;
const SIDES = { real: 'real', floor: 'floor', unprepared: 'unprepared', baseline: 'baseline', fresh: 'fresh' } as const;
/** What the server's prepared targets are judged against. */
export type Comparison = typeof SIDES.unprepared | typeof SIDES.baseline;
export const COMPARISON_NAMES: Record<Comparison, string> = { unprepared: 'unprepared server', baseline: 'baseline build' };
const hasBaseline = (scenarios: ScenarioResult[]) => scenarios.some((s) => s.baseline);
/** The sides whose PostgreSQL CPU the tables show, the baseline build's when it ran. */
/** The sides the tables have a column for (the server's fresh processes show only in the baseline's targets). */
type ColumnSide = Exclude<Side, typeof SIDES.fresh>;
const postgresSides = (scenarios: ScenarioResult[]): ColumnSide[] =>
  hasBaseline(scenarios) ? [SIDES.real, SIDES.unprepared, SIDES.baseline, SIDES.floor] : [SIDES.real, SIDES.unprepared, SIDES.floor];
const sideHeaders = (sides: ColumnSide[], prefix: string) =>
  sides.map((side) =>
    side === SIDES.real ? `${prefix}server` : side === SIDES.floor ? `${prefix}floor` : `${prefix}${COMPARISON_NAMES[side]}`,
  );

/**
 * A side's CPU ms per request (its own, or PostgreSQL's under it): the median of its rounds' figures,
 * or the median round's where the rounds' figures were not kept; undefined for a side not measured.
 */
function cpuMedian(s: ScenarioResult, side: Side, of: 'own' | 'postgres'): number | undefined {
  const rounds = (of === 'own' ? s.cpuRounds : s.postgresCpuRounds)?.[side];
  if (rounds?.length) return medianOf(rounds);
  const round = side === SIDES.fresh ? undefined : s[side];
  return of === 'own' ? round?.cpuMsPerRequest : round?.postgresCpuMsPerRequest;
}

// Results written before a figure existed, and sides not measured, have none.
const ms = (value: number | undefined) => (value === undefined ? '-' : fixed(value, 2));

/** Each process's CPU per request, and PostgreSQL's under each (the medians of each side's rounds). */
function cpuTable(scenarios: ScenarioResult[]): string[] {
  const sides = postgresSides(scenarios);
  const [first, ...others] = sideHeaders(sides, 'under ');
  const lines = [
    '',
    "CPU ms per request (user + system, from /proc; the medians of each side's rounds): the server's and the floor's own " +
      "process, and PostgreSQL's processes (its cluster only) under each; the unprepared server is the same build with " +
      'DATABASE_PREPARED_STATEMENTS=off, on the scenarios with a prepared target' +
      (hasBaseline(scenarios) ? ', as is the baseline build (`--baseline`, its fresh processes):' : ':'),
    '',
    `| Scenario | server | floor | server / floor | PostgreSQL ${first} | ${others.join(' | ')} |`,
    `|---|---:|---:|---:|${sides.map(() => '---:').join('|')}|`,
  ];
  for (const s of scenarios) {
    const [server, floor] = [cpuMedian(s, SIDES.real, 'own'), cpuMedian(s, SIDES.floor, 'own')];
    const postgres = sides.map((side) => ms(cpuMedian(s, side, 'postgres')));
    lines.push(`| ${s.name} | ${ms(server)} | ${ms(floor)} | ${ratio(server, floor)} | ${postgres.join(' | ')} |`);
  }
  return lines;
}

/** The server's figures a comparison is judged against: its fresh processes' beside the baseline build's fresh ones. */
const serverSideAgainst = (s: ScenarioResult, against: Comparison): Side =>
  against === SIDES.baseline && s.cpuRounds?.fresh?.length ? SIDES.fresh : SIDES.real;

interface PreparedTargetResult {
  name: string;
  target: number;
  postgres: { prepared: number; compared: number; ratio: number; met: boolean };
  server: { prepared: number; compared: number; met: boolean };
}

/**
 * The prepared statements' targets of a mode's scenarios, from the medians of each side's rounds:
 * PostgreSQL's CPU per request under the server at most `preparedTarget` of its CPU under the
 * comparison (the unprepared server, or the baseline build), and the server's own CPU per request
 * not above the comparison's.
 */
function preparedTargets(scenarios: ScenarioResult[], against: Comparison): PreparedTargetResult[] {
  return scenarios.flatMap((s) => {
    if (s.preparedTarget === undefined || !s.postgresCpuRounds?.[against]?.length || !s.cpuRounds?.[against]?.length) return [];
    const real = serverSideAgainst(s, against);
    const [prepared, compared] = [cpuMedian(s, real, 'postgres')!, cpuMedian(s, against, 'postgres')!];
    const server = { prepared: cpuMedian(s, real, 'own')!, compared: cpuMedian(s, against, 'own')! };
    return [
      {
        name: s.name,
        target: s.preparedTarget,
        postgres: { prepared, compared, ratio: prepared / compared, met: prepared <= s.preparedTarget * compared },
        server: { ...server, met: server.prepared <= server.compared },
      },
    ];
  });
}

const metOrMissed = (met: boolean) => (met ? 'met' : '**missed**');

function preparedTargetsTable(scenarios: ScenarioResult[], against: Comparison): string[] {
  const results = preparedTargets(scenarios, against);
  if (results.length === 0) return [];
  const name = COMPARISON_NAMES[against];
  const fresh = scenarios.some((s) => serverSideAgainst(s, against) === SIDES.fresh);
  const lines = [
    '',
    `Prepared statements' targets against the ${name} (the medians of each side's rounds, their spread in parentheses): ` +
      `PostgreSQL's CPU per request under the server at most the target's fraction of its CPU under the ${name}; the server's ` +
      `own CPU per request not above the ${name}'s.` +
      (fresh
        ? ` Both sides in fresh processes, several a side, each started for one scenario alone, their counted rounds pooled (the server's ` +
          'figures here are not those of the long-lived server above).'
        : ''),
    '',
    `| Scenario | PostgreSQL ms, server | ${name} | ratio | target | | server CPU ms, server | ${name} | |`,
    '|---|---:|---:|---:|---:|---|---:|---:|---|',
  ];
  for (const r of results) {
    const s = scenarios.find((one) => one.name === r.name)!;
    const withSpread = (value: number, rounds: number[] | undefined) => `${fixed(value, 2)} (${spread(rounds)})`;
    const real = serverSideAgainst(s, against);
    const postgres = [
      withSpread(r.postgres.prepared, s.postgresCpuRounds?.[real]),
      withSpread(r.postgres.compared, s.postgresCpuRounds?.[against]),
      fixed(r.postgres.ratio, 2),
      `<= ${r.target}`,
      metOrMissed(r.postgres.met),
    ];
    const server = [withSpread(r.server.prepared, s.cpuRounds?.[real]), withSpread(r.server.compared, s.cpuRounds?.[against])];
    lines.push(`| ${r.name} | ${postgres.join(' | ')} | ${server.join(' | ')} | ${metOrMissed(r.server.met)} |`);
  }
  return lines;
}

/** List requests one PostgreSQL core can serve a second: 1000 / PostgreSQL's CPU ms per request. */
const perCore = (ms: number | undefined) => (ms === undefined ? '-' : ms > 0 ? fixed(1000 / ms, 0) : 'n/a');

function fleetTable(lists: ScenarioResult[]): string[] {
  const sides = postgresSides(lists);
  const lines = [
    '',
    "Fleet projection: list requests one PostgreSQL core can serve a second (1000 / PostgreSQL's median CPU ms per request), " +
      'whatever the number of server processes in front of it; the statement alone is the list with no server at all:',
    '',
    `| Scenario | ${sideHeaders(sides, '').join(' | ')} | statement alone |`,
    `|---|${sides.map(() => '---:').join('|')}|---:|`,
  ];
  for (const s of lists) {
    const perSide = sides.map((side) => perCore(cpuMedian(s, side, 'postgres')));
    lines.push(`| ${s.name} | ${perSide.join(' | ')} | ${perCore(s.databaseAlonePostgresCpuMs)} |`);
  }
  return lines;
}

const warmUp = (rounds: number) => (rounds === 1 ? 'a warm-up round' : `${rounds} warm-up rounds`);

export function markdownReport(report: {
  quick: boolean;
  /** The server ran unprepared too (`--a-a`). */
  aa: boolean;
  /** The commit of the baseline build (`--baseline`), when one ran. */
  baseline?: string;
  date: string;
  machine: Awaited<ReturnType<typeof machineFacts>>;
  load: {
    connections: number;
    seconds: number;
    rounds: number;
    warmUpRounds: number;
    targetRounds: number;
    targetWarmUpRounds: number;
    /** Results written before the baseline build ran in fresh processes have none. */
    freshProcesses?: number;
    freshRounds?: number;
  };
  modes: ModeResult[];
}): string {
  const m = report.machine;
  const lines = [
    `# Benchmark${report.quick ? ' (--quick)' : ''}, ${report.date}`,
    '',
    `Machine: ${m.cpu}, ${m.memoryGiB} GiB, load average ${m.loadAverage} at the end; Node ${m.node}; external PostgreSQL ${m.externalPostgres}.`,
    `Load: autocannon, ${report.load.connections} connections, ${report.load.seconds} s per round, the median of ${report.load.rounds} round${report.load.rounds > 1 ? 's' : ''} for each side after ${warmUp(report.load.warmUpRounds)} (${report.load.targetRounds} after ${warmUp(report.load.targetWarmUpRounds)} for the scenarios with a prepared target), floor and server alternately.`,
    ...(report.aa
      ? [
          '',
          'A/A run (`--a-a`): the server too ran with DATABASE_PREPARED_STATEMENTS=off, so "prepared" and "unprepared" below are two identical processes.',
        ]
      : []),
    ...(report.baseline
      ? [
          '',
          `Baseline build (\`--baseline\`): ${report.baseline}, started as its own \`npm start\` starts it, on the same data` +
            (report.load.freshProcesses
              ? `, in ${report.load.freshProcesses} fresh processes per scenario with a prepared target, each beside a fresh process of the server ` +
                `(${warmUp(report.load.targetWarmUpRounds)}, then ${report.load.freshRounds} counted round${report.load.freshRounds === 1 ? '' : 's'} each, alternately).`
              : '.'),
        ]
      : []),
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
      '| Scenario | server req/s | floor req/s | server / floor | p50 ms (server / floor) | p99 ms (server / floor) | SQL per request (server / floor) | server peak RSS |',
    );
    lines.push('|---|---:|---:|---:|---:|---:|---:|---:|');
    for (const s of mode.scenarios) {
      lines.push(
        `| ${s.name} | ${fixed(s.real.requestsPerSecond)} | ${fixed(s.floor.requestsPerSecond)} | ${s.floor.requestsPerSecond ? fixed(s.real.requestsPerSecond / s.floor.requestsPerSecond, 2) : 'n/a'} | ` +
          `${s.real.p50Ms} / ${s.floor.p50Ms} | ${s.real.p99Ms} / ${s.floor.p99Ms} | ${fixed(s.real.sqlPerRequest)} / ${fixed(s.floor.sqlPerRequest)} | ${mib(s.serverPeakRss)} |`,
      );
    }
    lines.push(
      ...cpuTable(mode.scenarios),
      ...preparedTargetsTable(mode.scenarios, SIDES.unprepared),
      ...preparedTargetsTable(mode.scenarios, SIDES.baseline),
    );
    const limited = mode.scenarios.filter((x) => x.databaseLimit);
    if (limited.length > 0) {
      lines.push(
        '',
        "Database-bound limit: the server's own statement of each list sent alone through `pg` (no HTTP, prepared as the server " +
          `prepares it), by ${report.load.connections} clients for a round's time, after each set of rounds (the median of its rounds):`,
        '',
      );
      lines.push('| Scenario | statement alone per s | server / it | floor / it |', '|---|---:|---:|---:|');
      for (const s of limited) {
        lines.push(
          `| ${s.name} | ${fixed(s.databaseLimit!)} | ${fixed(s.real.requestsPerSecond / s.databaseLimit!, 2)} | ${fixed(s.floor.requestsPerSecond / s.databaseLimit!, 2)} |`,
        );
      }
      lines.push(...fleetTable(limited));
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
