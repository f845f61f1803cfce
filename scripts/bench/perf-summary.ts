// Summarizes a Linux `perf record -g` of one process (node started with --perf-basic-prof, so its
// JavaScript frames have names): on-CPU milliseconds per request by what the sample was doing,
// every thread and the kernel included. V8's own profiler (profile-summary.ts) samples wall-clock
// time, so a socket write the scheduler preempts shows there as busy; perf counts only the CPU.
//   perf record -F 999 -g -p <pid> -o perf.data -- sleep 6     (while the load runs)
//   npx tsx scripts/bench/perf-summary.ts perf.data <requests served while recording>
import { execFileSync } from 'node:child_process';

/** What a sample was doing: the first category one of its stack's frames matches, in this order. */
const CATEGORIES: [string, RegExp][] = [
  ['garbage collection', /Scaveng|MarkCompact|Heap::|GarbageCollect|ConcurrentMarking|Sweeper/],
  ['JSON.stringify', /JsonStringif|Builtin_JsonStringify/],
  ['pg: parsing rows', /parseDataRowMessage|_handleDataRow|parseRow|pg-types|postgres-array|\/db\/sql\.(js|ts)/],
  ['pg: protocol, pool', /pg-protocol|\/pg\/lib|pg-pool/],
  ['kernel: socket writes', /do_writev|tcp_sendmsg|sock_write_iter/],
  ['kernel: socket reads', /tcp_recvmsg|sock_read_iter|ksys_read/],
  ['kernel: other', /\[kernel/],
  ['graphql-jit (compiled queries)', /graphql-jit|MapItemHandler|Resolver|Serializer/],
  ['yoga, envelop, @whatwg-node', /graphql-yoga|@envelop|@whatwg-node|\/graphql\//],
  ['hono', /hono/],
  ['this project', /\/(dist|src)\//],
  ['node:http', /_http_|llhttp|http_parser/],
  ['node streams, net', /internal\/streams|stream_base|node:net|LibuvStream/],
  ['other', /./],
];

function categoryOf(sample: string): string {
  return CATEGORIES.find(([, pattern]) => pattern.test(sample))![0];
}

function summarize(file: string, requests: number, hertz: number) {
  const script = execFileSync('perf', ['script', '-i', file, '-F', 'ip,sym,dso'], {
    encoding: 'utf8',
    maxBuffer: 1 << 30,
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const samples = script.split(/\n\s*\n/).filter((block) => block.trim() !== '');
  const counts = new Map<string, number>();
  for (const sample of samples) {
    const category = categoryOf(sample);
    counts.set(category, (counts.get(category) ?? 0) + 1);
  }
  const msPerRequest = (count: number) => ((count / hertz) * 1000) / requests;
  const rows = [...counts]
    .sort((a, b) => b[1] - a[1])
    .map(([name, count]) => `| ${name} | ${msPerRequest(count).toFixed(3)} | ${((100 * count) / samples.length).toFixed(1)} |`);
  console.log(
    [
      '| category | on-CPU ms per request | % |',
      '|---|---:|---:|',
      ...rows,
      `| total | ${msPerRequest(samples.length).toFixed(3)} | 100 |`,
    ].join('\n'),
  );
}

const [file, requests, hertz = '999'] = process.argv.slice(2);
if (!file || !Number(requests)) {
  console.error('usage: npx tsx scripts/bench/perf-summary.ts <perf.data> <requests> [sampling hertz, 999]');
  process.exit(2);
}
summarize(file, Number(requests), Number(hertz));
