// A page of a long list: GraphQL `attachmentPage(first: 50)` of a user who owns 60,000
// files against the whole `attachments` list of a user who owns 50, the same fields for each file;
// p50 latency, requests one at a time, the kinds in turn. Target: the page within 1.5 times the list.
import { performance } from 'node:perf_hooks';
import type pg from 'pg';
import { addFiles } from './hostile.js';
import { ATTACHMENTS_QUERY } from './organization.js';
import type { BenchProcess } from './processes.js';

export const PAGES_SCENARIO = 'pages: attachmentPage(first: 50) of a 60,000-file user against the whole list of a 50-file user';

export const PAGE_FILES = 60_000;
const TARGET_RATIO = 1.5;
/** The fields of ATTACHMENTS_QUERY's files. */
const FILE_FIELDS = /attachments \{ (id .*) \} \} \}$/.exec(ATTACHMENTS_QUERY)![1]!;

const KINDS = {
  list: { label: "the whole `attachments` list of a 50-file user (the bench's GraphQL request)", query: ATTACHMENTS_QUERY, files: 50 },
  page: {
    label: `\`attachmentPage(first: 50) { nodes pageInfo }\` of a ${PAGE_FILES.toLocaleString('en')}-file user`,
    query: `{ me { attachmentPage(first: 50) { nodes { ${FILE_FIELDS} } pageInfo { endCursor hasNextPage } } } }`,
    files: PAGE_FILES,
  },
  counted: {
    label: `the same page with \`totalCount\``,
    query: `{ me { attachmentPage(first: 50) { nodes { ${FILE_FIELDS} } pageInfo { endCursor hasNextPage } totalCount } } }`,
    files: PAGE_FILES,
  },
} as const;

type Kind = keyof typeof KINDS;

export interface PagesOrganization {
  id: number;
  /** The 50-file user's Authorization header, then another user's (who is given the 60,000 files). */
  authorizations: string[];
}

export interface PagesResult {
  requests: number;
  p50Ms: Record<Kind, number>;
  bytes: Record<Kind, number>;
}

/** One request's latency until the whole body has arrived; checks the answer holds its 50 files. */
async function timed(server: BenchProcess, kind: Kind, authorization: string): Promise<{ ms: number; bytes: number }> {
  const started = performance.now();
  const response = await fetch(`${server.url}/graphql`, {
    method: 'POST',
    headers: { authorization, 'content-type': 'application/json' },
    body: JSON.stringify({ query: KINDS[kind].query }),
  });
  const text = await response.text();
  const ms = performance.now() - started;
  const body = JSON.parse(text);
  const files = kind === 'list' ? body.data?.attachments?.attachments : body.data?.me?.attachmentPage?.nodes;
  if (response.status !== 200 || body.errors || files?.length !== 50)
    throw new Error(`pages, ${kind}: ${response.status} ${text.slice(0, 300)}`);
  if (kind === 'counted' && body.data.me.attachmentPage.totalCount !== KINDS[kind].files)
    throw new Error(`pages: totalCount ${body.data.me.attachmentPage.totalCount}`);
  return { ms, bytes: text.length };
}

export async function runPages(server: BenchProcess, db: pg.Pool, org: PagesOrganization, rounds: number): Promise<PagesResult> {
  const [fifty, many] = org.authorizations as [string, string];
  await addFiles(db, org.id, many, PAGE_FILES);
  const callers: Record<Kind, string> = { list: fifty, page: many, counted: many };
  const kinds = Object.keys(KINDS) as Kind[];
  const latencies: Record<Kind, number[]> = { list: [], page: [], counted: [] };
  const bytes = { list: 0, page: 0, counted: 0 };
  const perRound = 40;
  // The first round warms up (compiled documents, plans, caches) and is not counted.
  for (let round = 0; round <= rounds; round++) {
    for (const kind of kinds) {
      for (let i = 0; i < perRound; i++) {
        const answer = await timed(server, kind, callers[kind]);
        if (round > 0) latencies[kind].push(answer.ms);
        bytes[kind] = answer.bytes;
      }
    }
  }
  const p50 = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor((values.length - 1) / 2)]!;
  const result = {
    requests: rounds * perRound,
    p50Ms: { list: p50(latencies.list), page: p50(latencies.page), counted: p50(latencies.counted) },
    bytes,
  };
  console.error(`${PAGES_SCENARIO}: ${JSON.stringify(result)}`);
  return result;
}

export function pagesMarkdown(modes: { mode: string; pages?: PagesResult }[]): string {
  const lines: string[] = [];
  for (const { mode, pages: p } of modes) {
    if (!p) continue;
    const ratio = p.p50Ms.page / p.p50Ms.list;
    lines.push(
      '',
      `### Pages of a long list (${mode}): ${p.requests} requests of each kind, one at a time, the kinds in turn (after a round of warm-up)`,
      '',
      '| GraphQL request | p50 ms | answer bytes |',
      '|---|---:|---:|',
      ...(Object.keys(KINDS) as Kind[]).map((kind) => `| ${KINDS[kind].label} | ${p.p50Ms[kind].toFixed(1)} | ${p.bytes[kind]} |`),
      '',
      `The page within ${TARGET_RATIO} times the whole list (p50): ${ratio.toFixed(2)}, ${ratio <= TARGET_RATIO ? 'met' : '**not met**'}` +
        ` (with \`totalCount\`, which counts the 60,000 rows: ${(p.p50Ms.counted / p.p50Ms.list).toFixed(2)}).`,
    );
  }
  return lines.length ? `${lines.join('\n')}\n` : '';
}
