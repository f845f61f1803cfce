// The names of the built-in (Unicode) emoji: every `short_names` entry of emoji-datasource, the
// npm package of iamcal/emoji-data, which is where the reference's emoji names come from too.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

let names: ReadonlySet<string> | undefined;

export function isBuiltInEmojiName(name: string): boolean {
  names ??= loadNames();
  return names.has(name);
}

function loadNames(): ReadonlySet<string> {
  const path = createRequire(import.meta.url).resolve('emoji-datasource/emoji.json');
  const emoji = JSON.parse(readFileSync(path, 'utf8')) as { short_names: string[] }[];
  return new Set(emoji.flatMap((e) => e.short_names));
}
