// The disposable e-mail domains of the `disposable-email-domains` package, held as the package's own
// JSON text and the offsets of its entries, searched by bisection. As a Set of its 121,000 strings
// the list held 7.4 MiB of every process's heap (and its parse raised the start's RSS by 16 MiB);
// this way it holds the text's 2.4 MiB and half a MiB of offsets.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

export class DomainList {
  /** Where each entry starts in `text`; it ends at the next double quote. */
  private readonly starts: Uint32Array;

  /** `text`: a JSON array of plain strings (no escapes), as the package's index.json. */
  constructor(private readonly text: string) {
    if (text.includes('\\')) throw new Error('the domain list holds escaped characters');
    const starts: number[] = [];
    for (let open = text.indexOf('"'); open !== -1; ) {
      const close = text.indexOf('"', open + 1);
      if (close === -1) throw new Error('the domain list ends inside an entry');
      starts.push(open + 1);
      open = text.indexOf('"', close + 1);
    }
    const entry = (start: number) => this.entryAt(start);
    const sorted = starts.every((start, i) => i === 0 || entry(starts[i - 1]!) < entry(start));
    this.starts = Uint32Array.from(sorted ? starts : starts.sort((a, b) => (entry(a) < entry(b) ? -1 : entry(a) > entry(b) ? 1 : 0)));
  }

  get size(): number {
    return this.starts.length;
  }

  has(domain: string): boolean {
    let low = 0;
    let high = this.starts.length - 1;
    while (low <= high) {
      const middle = (low + high) >>> 1;
      const entry = this.entryAt(this.starts[middle]!);
      if (entry === domain) return true;
      if (entry < domain) low = middle + 1;
      else high = middle - 1;
    }
    return false;
  }

  private entryAt(start: number): string {
    return this.text.slice(start, this.text.indexOf('"', start));
  }
}

export const disposableDomains = new DomainList(readFileSync(createRequire(import.meta.url).resolve('disposable-email-domains'), 'utf8'));
