// Floor and server must answer alike, or the comparison means nothing: one request of the scenario
// to each before the load (the same bytes, and the same rows written), then every answer of every
// round against that agreed answer, and each round's rows against the other side's.
import { firstRequest, type Answer, type Round, type Scenario, type WrittenRows } from './load.js';
import type { BenchProcess } from './processes.js';

export interface Pair {
  floor: BenchProcess;
  real: BenchProcess;
}

const excerpt = (text: string) => text.slice(0, 300);

async function answerOnce(scenario: Scenario, server: BenchProcess) {
  const written = await scenario.recordWrites?.();
  const request = firstRequest(scenario);
  const response = await fetch(server.url + request.path, { method: scenario.method, headers: request.headers, body: request.body });
  const body = Buffer.from(await response.arrayBuffer());
  return { status: response.status, body, writes: await written?.() };
}

/** Why the rows two sides wrote differ, or undefined when they are alike. */
function differentWrites(floor: WrittenRows | undefined, real: WrittenRows | undefined): string | undefined {
  if (!floor || !real) return undefined;
  if (floor.shapes.length === 0 || real.shapes.length === 0) return `no rows written (floor: ${floor.shapes.length} shapes, server: ${real.shapes.length})`;
  const [a, b] = [floor.shapes.toSorted(), real.shapes.toSorted()];
  const onlyFloor = a.find((shape) => !b.includes(shape));
  const onlyReal = b.find((shape) => !a.includes(shape));
  if (onlyFloor === undefined && onlyReal === undefined) return undefined;
  return `the rows written differ:\n  floor:  ${onlyFloor ?? a[0]}\n  server: ${onlyReal ?? b[0]}`;
}

/** The answer both give to the scenario's request (the same bytes); throws when they differ. */
export async function agreedAnswer(scenario: Scenario, { floor, real }: Pair): Promise<Answer> {
  const [a, b] = [await answerOnce(scenario, floor), await answerOnce(scenario, real)];
  if (a.status !== b.status || !a.body.equals(b.body)) {
    throw new Error(`${scenario.name}: the floor answered ${a.status} ${excerpt(a.body.toString())}\nthe server answered ${b.status} ${excerpt(b.body.toString())}`);
  }
  const rows = differentWrites(a.writes, b.writes);
  if (rows) throw new Error(`${scenario.name}: ${rows}`);
  return { status: b.status, body: b.body.toString() };
}

function answerMismatches(side: string, rounds: Round[], expected: Answer): string[] {
  return rounds.flatMap((round, i) => {
    if (round.mismatches === 0) return [];
    const samples = round.mismatchSamples.map((answer) => `${answer.status} ${answer.body}`).join(' | ');
    return [`${side}, round ${i + 1}: ${round.mismatches} answers differ from the agreed ${expected.status} ${excerpt(expected.body)}; e.g. ${samples}`];
  });
}

/** Every request answered with success must have written its rows. */
function unwrittenRequests(side: string, round: Round, i: number): string[] {
  if (!round.writes || round.writes.requests >= round.requests) return [];
  return [`${side}, round ${i + 1}: ${round.requests} requests answered, the rows of only ${round.writes.requests} written`];
}

/** What differed between the sides' rounds (answers, rows written); empty when they agree. */
export function roundMismatches(floor: Round[], real: Round[], expected: Answer): string[] {
  const rows = floor.flatMap((round, i) => {
    const difference = differentWrites(round.writes, real[i]!.writes);
    return [...(difference ? [`round ${i + 1}: ${difference}`] : []), ...unwrittenRequests('floor', round, i), ...unwrittenRequests('server', real[i]!, i)];
  });
  return [...answerMismatches('floor', floor, expected), ...answerMismatches('server', real, expected), ...rows];
}
