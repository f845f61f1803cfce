// The judgement of the server against the baseline build: fresh processes of each, several a side,
// each started for one scenario and stopped after it, their rounds pooled (as JMH's forks are for
// the JVM). A process that runs a whole mode carries its history (the heap V8 sized through the
// import and the scenarios before) from scenario to scenario: two processes of one build have
// differed twice over in their own CPU per request for a whole run.
import { join } from 'node:path';
import { agreedAnswer, sideMismatches } from './compare.js';
import { runRound, type Round, type Scenario } from './load.js';
import { startProcess, type BenchProcess } from './processes.js';

/** How a side's process starts. */
export interface FreshSide {
  name: string;
  command: string[];
  env: Record<string, string | undefined>;
}

export interface FreshLoad {
  connections: number;
  seconds: number;
  postmaster?: number;
  /** Processes per side. */
  processes: number;
  /** Warm-up rounds of each process, not counted. */
  warmUpRounds: number;
  /** Counted rounds of each process. */
  rounds: number;
}

export interface FreshRounds {
  /** Every counted round of the server's processes, process after process. */
  real: Round[];
  /** The same of the compared build's. */
  compared: Round[];
  /** Answers that differed from the floor's, rows unwritten or broken: the run fails. */
  mismatches: string[];
}

/**
 * `load.processes` pairs of fresh processes, one after the other; within a pair the sides' rounds
 * alternate, and which side starts alternates from pair to pair. Each process must first answer
 * as the floor does.
 */
export async function freshRounds(
  scenario: Scenario,
  floor: BenchProcess,
  sides: { real: FreshSide; compared: FreshSide },
  workDir: string,
  load: FreshLoad,
): Promise<FreshRounds> {
  const rounds: FreshRounds = { real: [], compared: [], mismatches: [] };
  for (let pair = 0; pair < load.processes; pair++) {
    const order = pair % 2 === 0 ? (['real', 'compared'] as const) : (['compared', 'real'] as const);
    const started: Partial<Record<keyof typeof sides, BenchProcess>> = {};
    try {
      for (const side of order)
        started[side] = await startProcess(
          `${sides[side].name}, fresh process ${pair + 1}`,
          sides[side].command,
          sides[side].env,
          join(workDir, `fresh-${side}-${pair + 1}`),
        );
      const answers = {
        real: await agreedAnswer(scenario, { floor, real: started.real! }),
        compared: await agreedAnswer(scenario, { floor, real: started.compared! }),
      };
      for (let i = 0; i < load.warmUpRounds; i++) for (const side of order) await runRound(scenario, started[side]!, answers[side], load);
      const counted = { real: [] as Round[], compared: [] as Round[] };
      for (let i = 0; i < load.rounds; i++)
        for (const side of order) counted[side].push(await runRound(scenario, started[side]!, answers[side], load));
      for (const side of order) {
        rounds[side].push(...counted[side]);
        rounds.mismatches.push(...sideMismatches(started[side]!.name, counted[side], answers[side]));
      }
    } finally {
      for (const side of order) await started[side]?.stop();
    }
  }
  return rounds;
}
