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

/** The fields in which two shapes differ, with each side's value. */
function fieldDifferences(floor: string, real: string): string {
  const [a, b] = [JSON.parse(floor), JSON.parse(real)] as Record<string, unknown>[];
  const keys = [...new Set([...Object.keys(a!), ...Object.keys(b!)])];
  const differ = keys.filter((key) => JSON.stringify(a![key]) !== JSON.stringify(b![key]));
  // A field one side lacks has no JSON (undefined).
  const shown = (value: unknown) => excerpt(JSON.stringify(value) ?? 'nothing');
  return differ.map((key) => `${key}: floor ${shown(a![key])}, server ${shown(b![key])}`).join('; ');
}

/** Why the rows two sides wrote differ, or undefined when they are alike. */
function differentWrites(floor: WrittenRows | undefined, real: WrittenRows | undefined): string | undefined {
  if (!floor || !real) return undefined;
  if (floor.shapes.length === 0 || real.shapes.length === 0)
    return `no rows written (floor: ${floor.shapes.length} shapes, server: ${real.shapes.length})`;
  const onlyFloor = floor.shapes.filter((shape) => !real.shapes.includes(shape));
  const onlyReal = real.shapes.filter((shape) => !floor.shapes.includes(shape));
  if (onlyFloor.length === 0 && onlyReal.length === 0) return undefined;
  const [a, b] = [onlyFloor[0] ?? floor.shapes[0]!, onlyReal[0] ?? real.shapes[0]!];
  return `the rows written differ (${onlyFloor.length} shapes only the floor wrote, ${onlyReal.length} only the server): ${fieldDifferences(a, b)}`;
}

/** The answer both give to the scenario's request (the same bytes); throws when they differ. */
export async function agreedAnswer(scenario: Scenario, { floor, real }: Pair): Promise<Answer> {
  // The state the rounds start from (e.g. the invitations a list shows).
  await scenario.reset?.();
  const [a, b] = [await answerOnce(scenario, floor), await answerOnce(scenario, real)];
  if (a.status !== b.status || !a.body.equals(b.body)) {
    throw new Error(
      `${scenario.name}: the floor answered ${a.status} ${excerpt(a.body.toString())}\nthe server answered ${b.status} ${excerpt(b.body.toString())}`,
    );
  }
  const rows = [differentWrites(a.writes, b.writes), ...(a.writes?.problems ?? []), ...(b.writes?.problems ?? [])].filter(Boolean);
  if (rows.length > 0) throw new Error(`${scenario.name}: ${rows.join('; ')}`);
  return { status: b.status, body: b.body.toString() };
}

function answerMismatches(side: string, rounds: Round[], expected: Answer): string[] {
  return rounds.flatMap((round, i) => {
    if (round.mismatches === 0) return [];
    return [
      `${side}, round ${i + 1}: ${round.mismatches} answers differ from the agreed ${expected.status} answer; e.g. ${round.mismatchSamples.join(' | ')}`,
    ];
  });
}

/** Every request answered with success must have written its rows, and they must be whole. */
function badWrites(side: string, round: Round, i: number): string[] {
  if (!round.writes) return [];
  const unwritten =
    round.writes.requests < round.requests
      ? [`${round.requests} requests answered, the rows of only ${round.writes.requests} written`]
      : [];
  return [...unwritten, ...round.writes.problems].map((problem) => `${side}, round ${i + 1}: ${problem}`);
}

/** Where one side's rounds answered other than agreed, or left rows unwritten or broken. */
export const sideMismatches = (side: string, rounds: Round[], expected: Answer): string[] => [
  ...answerMismatches(side, rounds, expected),
  ...rounds.flatMap((round, i) => badWrites(side, round, i)),
];

/** What differed between the sides' rounds (answers, rows written); empty when they agree. */
export function roundMismatches(floor: Round[], real: Round[], expected: Answer): string[] {
  const rows = floor.flatMap((round, i) => {
    const difference = differentWrites(round.writes, real[i]!.writes);
    return difference ? [`round ${i + 1}: ${difference}`] : [];
  });
  return [...sideMismatches('floor', floor, expected), ...sideMismatches('server', real, expected), ...rows];
}
