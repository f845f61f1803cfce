// The configuration table of docs/guide/operations.md lists exactly the environment variables the
// server reads: every variable loadConfig asks for (recorded by handing it an environment that notes
// each name it is asked), and every `process.env.NAME` / `env.NAME` written anywhere under src/.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, test } from 'vitest';
import { loadConfig } from '../../src/config.js';

const GUIDE = 'docs/guide/operations.md';

/** The first column's `NAMES` of the first table under the "## Configuration" heading. */
function variablesOfTable(markdown: string): Set<string> {
  const section = markdown.split(/^## /m).find((part) => part.startsWith('Configuration'));
  if (!section) throw new Error(`${GUIDE} has no "## Configuration" section`);
  const rows = section.split('\n').filter((line) => line.startsWith('|'));
  const names = new Set<string>();
  for (const row of rows.slice(2)) {
    const firstCell = row.split('|')[1] ?? '';
    for (const match of firstCell.matchAll(/`([A-Z][A-Z0-9_]*)`/g)) names.add(match[1]!);
  }
  return names;
}

/** Every name loadConfig reads from the environment it is given, S3 settings included. */
function variablesLoadConfigReads(): Set<string> {
  const read = new Set<string>();
  const recording = (values: Record<string, string>) =>
    new Proxy(values, {
      get(target, key) {
        if (typeof key === 'string') read.add(key);
        return target[key as string];
      },
    });
  loadConfig(recording({}));
  loadConfig(recording({ S3_BUCKET: 'bucket' }));
  return read;
}

function sourceFiles(directory: string): string[] {
  return readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    const path = join(directory, entry.name);
    if (entry.isDirectory()) return entry.name === 'generated' ? [] : sourceFiles(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

/** `process.env.NAME`, `process.env['NAME']`, `env.NAME` and `env['NAME']` anywhere under src/. */
function variablesNamedInSource(sources: string[]): Set<string> {
  const names = new Set<string>();
  const pattern = /\benv(?:\.([A-Z][A-Z0-9_]*)\b|\[\s*['"]([A-Z][A-Z0-9_]*)['"]\s*\])/g;
  for (const source of sources) {
    for (const match of source.matchAll(pattern)) names.add((match[1] ?? match[2])!);
  }
  return names;
}

const sorted = (names: Iterable<string>) => [...names].sort();

test('the table lists every variable the server reads, and no other', () => {
  const table = variablesOfTable(readFileSync(GUIDE, 'utf8'));
  const sources = sourceFiles('src').map((file) => readFileSync(file, 'utf8'));
  const read = new Set([...variablesLoadConfigReads(), ...variablesNamedInSource(sources)]);

  expect(read.size).toBeGreaterThan(40);
  expect(sorted([...read].filter((name) => !table.has(name))), 'read by src/ but missing from the table').toEqual([]);
  expect(sorted([...table].filter((name) => !read.has(name))), 'in the table but read nowhere in src/').toEqual([]);
});

test('the readers find what they are meant to find', () => {
  const table = variablesOfTable('## Configuration\n\n| variable | d |\n|---|---|\n| `A_B` / `C` | x `NOT_ME` |\n\n## Next\n| `D` |');
  expect(sorted(table)).toEqual(['A_B', 'C']);
  const named = variablesNamedInSource(["process.env.ONE; env['TWO']; env.three; environment.FOUR; env[name]"]);
  expect(sorted(named)).toEqual(['ONE', 'TWO']);
});
