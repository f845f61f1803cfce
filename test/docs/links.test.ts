// Every relative link of README.md and docs/**/*.md leads somewhere: its file (or folder) exists, and
// an anchor names a heading of the file it points to, as GitHub makes heading anchors.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { expect, test } from 'vitest';

function markdownFiles(directory: string): string[] {
  return readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    const path = join(directory, entry.name);
    if (entry.isDirectory()) return entry.name === 'node_modules' || entry.name === 'gql' ? [] : markdownFiles(path);
    return path.endsWith('.md') ? [path] : [];
  });
}

/** The text outside fenced code blocks and inline code spans, where links and headings are. */
function prose(markdown: string): string {
  return markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '').replace(/`[^`\n]*`/g, '');
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  const withoutFences = markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');
  for (const [, heading] of withoutFences.matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = heading!
      .replace(/`/g, '')
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}

interface Link {
  file: string;
  target: string;
}

function relativeLinks(file: string, markdown: string): Link[] {
  const links: Link[] = [];
  for (const [, target] of prose(markdown).matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target!)) continue;
    links.push({ file, target: target! });
  }
  return links;
}

/** What is wrong with a link, or undefined when it leads somewhere. */
function brokenReason({ file, target }: Link): string | undefined {
  const [pathPart, anchor] = target.split('#', 2) as [string, string | undefined];
  const path = pathPart === '' ? file : normalize(join(dirname(file), decodeURIComponent(pathPart)));
  if (!existsSync(path)) return `${path} does not exist`;
  if (anchor === undefined || anchor === '') return undefined;
  if (statSync(path).isDirectory() || !path.endsWith('.md')) return `#${anchor} points into ${path}, which has no headings`;
  if (!anchorsOf(readFileSync(path, 'utf8')).has(anchor)) return `${path} has no heading #${anchor}`;
  return undefined;
}

const files = ['README.md', ...markdownFiles('docs')];

test('every relative link of the README and docs/ resolves, anchors included', () => {
  const links = files.flatMap((file) => relativeLinks(file, readFileSync(file, 'utf8')));
  expect(links.length).toBeGreaterThan(30);
  const broken = links.flatMap((link) => {
    const reason = brokenReason(link);
    return reason ? [`${link.file}: (${link.target}) ${reason}`] : [];
  });
  expect(broken).toEqual([]);
});

test('the checker tells good links from broken ones', () => {
  const here = 'docs/guide/operations.md';
  expect(anchorsOf('# A `b` c\n## Proxies and the client address\n## Same\n## Same\n```\n# not a heading\n```')).toEqual(
    new Set(['a-b-c', 'proxies-and-the-client-address', 'same', 'same-1']),
  );
  expect(relativeLinks(here, 'see [x](a.md) and `[y](b.md)` and [z](https://example.com) [w](#top)').map((link) => link.target)).toEqual([
    'a.md',
    '#top',
  ]);
  expect(brokenReason({ file: here, target: 'security.md#memory' })).toBeUndefined();
  expect(brokenReason({ file: here, target: '../reference/' })).toBeUndefined();
  expect(brokenReason({ file: here, target: 'no-such-guide.md' })).toMatch(/does not exist/);
  expect(brokenReason({ file: here, target: 'security.md#no-such-heading' })).toMatch(/no heading/);
  expect(brokenReason({ file: here, target: '#configuration' })).toBeUndefined();
});
