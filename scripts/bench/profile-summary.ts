// Summarizes V8 CPU profiles (`node --cpu-prof`, see BENCH_CPU_PROF in scripts/bench/processes.ts):
// the busy samples' self time by function and by package, and each sample's phase of a request,
// decided by the frames on its stack.
//   npx tsx scripts/bench/profile-summary.ts <file.cpuprofile>... [--top 25] [--phase <a phase's name: its functions>]
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** Where a frame's code comes from: a package, node's own library, this project's file, or V8's pseudo-frames. */
function origin({ url, functionName, lineNumber }: CallFrame): string {
  if (!url) return functionName.startsWith('(') ? functionName : lineNumber > 0 ? '(compiled by graphql-jit)' : '(native)';
  const inPackage = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (inPackage) return inPackage[1]!;
  if (url.startsWith('node:')) return url;
  const own = /\/(dist|src|scripts)\/(.*)$/.exec(url);
  return own ? `${own[1]}/${own[2]}` : url;
}

/** Phases of a request, the first whose test matches any frame of a sample's stack. */
const PHASES: [string, (frame: CallFrame, where: string) => boolean][] = [
  ['garbage collection', (f) => f.functionName === '(garbage collector)'],
  ['pg driver (protocol, parsing rows)', (_f, where) => /^pg(-protocol|-types|-pool)?$|^postgres-array$/.test(where)],
  ['compression', (f, where) => where === 'node:zlib' || /compress/i.test(f.functionName)],
  [
    'serialize (JSON.stringify of the result)',
    (f, where) =>
      /stringify/i.test(f.functionName) ||
      (where.startsWith('graphql-yoga') && /processRegularResult|jsonStringifyResult|processResult/.test(f.functionName)),
  ],
  [
    'parse, validate, document caches, limits',
    (f, where) =>
      /graphql\/(language|validation)/.test(where + f.functionName) ||
      /graphql\/(limits|persisted-documents|trusted-documents)/.test(where),
  ],
  [
    'execute (graphql-jit, resolvers, domain)',
    (_f, where) =>
      where === 'graphql-jit' ||
      where === '(compiled by graphql-jit)' ||
      /graphql\/(execution|jsutils)/.test(where) ||
      /\/(graphql\/schema|domain)\//.test(where) ||
      where.startsWith('dist/graphql/schema') ||
      where.startsWith('dist/domain') ||
      where.startsWith('dist/db'),
  ],
  [
    'GraphQL server plumbing (yoga, envelop, plugins)',
    (_f, where) => /^(graphql-yoga|@envelop|@graphql-yoga|@whatwg-node|@graphql-tools)/.test(where) || where.startsWith('dist/graphql'),
  ],
  [
    'HTTP (hono, node:http, sockets)',
    (f, where) =>
      f.functionName === 'writev' ||
      f.functionName === 'writeUtf8String' ||
      /^(hono|@hono)/.test(where) ||
      /^node:(_http|http|net|stream|internal\/(http|stream|streams|net))/.test(where) ||
      where.startsWith('dist/http') ||
      where.startsWith('dist/rest'),
  ],
  ['logging, metrics', (_f, where) => /^(pino|prom-client)/.test(where) || /dist\/(logging|metrics)/.test(where)],
];

function summarize(files: string[], top: number, only?: string) {
  const inPhase = new Map<string, number>();
  const self = new Map<string, number>();
  const byOrigin = new Map<string, number>();
  const byPhase = new Map<string, number>();
  let busy = 0;
  let idle = 0;
  const add = (map: Map<string, number>, key: string, ms: number) => map.set(key, (map.get(key) ?? 0) + ms);
  for (const file of files) {
    const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
    const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
    const parent = new Map<number, number>();
    for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
    const phaseOf = new Map<number, string>();
    const phase = (id: number): string => {
      const known = phaseOf.get(id);
      if (known) return known;
      const stack: CallFrame[] = [];
      for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) stack.push(nodes.get(at)!.callFrame);
      const found = PHASES.find(([, test]) => stack.some((frame) => test(frame, origin(frame))))?.[0] ?? 'other';
      phaseOf.set(id, found);
      return found;
    };
    profile.samples.forEach((id, i) => {
      const ms = (profile.timeDeltas[i + 1] ?? 0) / 1000;
      const frame = nodes.get(id)!.callFrame;
      if (frame.functionName === '(idle)') return void (idle += ms);
      busy += ms;
      add(self, `${frame.functionName || '(anonymous)'} ${origin(frame)}:${frame.lineNumber + 1}`, ms);
      add(byOrigin, origin(frame), ms);
      add(byPhase, phase(id), ms);
      if (phase(id) === only) add(inPhase, `${frame.functionName || '(anonymous)'} ${origin(frame)}:${frame.lineNumber + 1}`, ms);
    });
  }
  const table = (title: string, map: Map<string, number>, rows: number) => {
    const sorted = [...map].sort((a, b) => b[1] - a[1]).slice(0, rows);
    return [
      `| ${title} | ms | % of busy |`,
      '|---|---:|---:|',
      ...sorted.map(([key, ms]) => `| ${key} | ${ms.toFixed(0)} | ${((100 * ms) / busy).toFixed(1)} |`),
    ].join('\n');
  };
  console.log(`Busy ${busy.toFixed(0)} ms, idle ${idle.toFixed(0)} ms, over ${files.length} profile(s).\n`);
  console.log(`${table('phase (inclusive: the first phase matching a frame of the stack)', byPhase, PHASES.length + 1)}\n`);
  console.log(`${table('self time by package or file', byOrigin, top)}\n`);
  console.log(table('self time by function', self, top));
  if (only) console.log(`\n${table(`self time by function in the phase "${only}"`, inPhase, top)}`);
}

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { top: { type: 'string', default: '25' }, phase: { type: 'string' } },
});
summarize(positionals, Number(values.top), values.phase);
