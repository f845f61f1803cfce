// The anonymous-documents scenario: 300 distinct documents of 900 KB sent without
// credentials, each a comment and `{ __typename }` (a comment is one token: the token limit does not
// see it), 150 of them as automatic persisted query registrations. Every answer must be 200, 400 or
// 413, and the server's RSS must grow by less than 150 MiB. test/security/anonymous-documents.test.ts
// runs the same scenario.
import { createHash } from 'node:crypto';
import { rssOf, sampleRss } from './processes.js';
import { violation } from './violations.js';

export const ANONYMOUS_DOCUMENTS_SCENARIO = 'hostile: 300 anonymous 900 KB documents, 150 of them APQ registrations';

const DOCUMENTS = 300;
const REGISTRATIONS = 150;
const DOCUMENT_BYTES = 900_000;
const PARALLEL = 10;
export const ANSWERS_ALLOWED = ['200', '400', '413'];
export const MAX_RSS_GROWTH = 150 * 2 ** 20;

export interface AnonymousDocumentsResult {
  /** How many answers of each status (or `no answer: <error>`). */
  statuses: Record<string, number>;
  rssBefore: number;
  rssPeak: number;
  /** The scenario's broken promises; empty when it held. */
  violations: string[];
}

/** Document `index` of the run: distinct from every other one, `DOCUMENT_BYTES` long. */
function document(runId: string, index: number): string {
  const head = `# ${runId} ${index} `;
  const tail = '\n{ __typename }';
  return head + 'x'.repeat(DOCUMENT_BYTES - head.length - tail.length) + tail;
}

async function send(url: string, query: string, register: boolean): Promise<string> {
  const extensions = register
    ? { persistedQuery: { version: 1, sha256Hash: createHash('sha256').update(query).digest('hex') } }
    : undefined;
  try {
    const response = await fetch(`${url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query, ...(extensions && { extensions }) }),
    });
    await response.arrayBuffer();
    return String(response.status);
  } catch (error) {
    return `no answer: ${(error as Error).message}`;
  }
}

/** Sends the documents, `PARALLEL` at a time (every other one of the first 300 as a registration); the statuses counted. */
export async function sendAnonymousDocuments(url: string): Promise<Record<string, number>> {
  const runId = `${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;
  const statuses: Record<string, number> = {};
  let next = 0;
  const worker = async () => {
    for (let index = next++; index < DOCUMENTS; index = next++) {
      const status = await send(url, document(runId, index), index % 2 === 0 && index / 2 < REGISTRATIONS);
      statuses[status] = (statuses[status] ?? 0) + 1;
    }
  };
  await Promise.all(Array.from({ length: PARALLEL }, worker));
  return statuses;
}

/** The scenario against the server at `url`, whose process is `pid`. */
export async function runAnonymousDocuments(url: string, pid: number): Promise<AnonymousDocumentsResult> {
  const rssBefore = rssOf(pid);
  const rss = sampleRss(pid);
  const statuses = await sendAnonymousDocuments(url);
  const rssPeak = rss.stop().serverPeak;
  const violations: string[] = [];
  const others = Object.entries(statuses).filter(([status]) => !ANSWERS_ALLOWED.includes(status));
  if (others.length > 0) violations.push(`answers other than ${ANSWERS_ALLOWED.join(', ')}: ${JSON.stringify(Object.fromEntries(others))}`);
  if (rssPeak - rssBefore >= MAX_RSS_GROWTH)
    violations.push(
      `RSS grew by ${mib(rssPeak - rssBefore)} MiB (${mib(rssBefore)} -> ${mib(rssPeak)}), not less than ${mib(MAX_RSS_GROWTH)}`,
    );
  if (rssOf(pid) === 0) violations.push('the server process died');
  for (const reason of violations) violation(ANONYMOUS_DOCUMENTS_SCENARIO, reason);
  const result = { statuses, rssBefore, rssPeak, violations };
  console.error(`${ANONYMOUS_DOCUMENTS_SCENARIO}: ${JSON.stringify(result)}`);
  return result;
}

const mib = (bytes: number) => (bytes / 2 ** 20).toFixed(0);

/** The scenario's section of the report, for each database mode that ran it. */
export function anonymousDocumentsMarkdown(modes: { mode: string; anonymousDocuments?: AnonymousDocumentsResult }[]): string {
  const lines: string[] = [];
  for (const { mode, anonymousDocuments: a } of modes) {
    if (!a) continue;
    const met = (ok: boolean) => (ok ? 'met' : '**not met**');
    const answers = Object.entries(a.statuses)
      .map(([status, count]) => `${count} x ${status}`)
      .join(', ');
    lines.push(
      '',
      `### Anonymous documents (${mode}): ${DOCUMENTS} distinct 900 KB documents without credentials, ${REGISTRATIONS} of them APQ registrations`,
      '',
      `Answers: ${answers}; every one ${ANSWERS_ALLOWED.join(', ')}: ${met(!a.violations.some((v) => v.startsWith('answers')))}. ` +
        `Server RSS ${mib(a.rssBefore)} -> peak ${mib(a.rssPeak)} MiB, grown by less than ${mib(MAX_RSS_GROWTH)} MiB: ${met(a.rssPeak - a.rssBefore < MAX_RSS_GROWTH)}.`,
    );
  }
  return lines.length ? `${lines.join('\n')}\n` : '';
}
