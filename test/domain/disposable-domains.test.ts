// The disposable-domain list held as text and offsets answers exactly as a Set of the package's entries.
import { createRequire } from 'node:module';
import { describe, expect, test } from 'vitest';
import { DomainList, disposableDomains } from '../../src/domain/invitations/disposable-domains.js';

const packageDomains = createRequire(import.meta.url)('disposable-email-domains') as string[];

describe('disposable domains', () => {
  test('every entry of the package is found, and nothing else', () => {
    expect(disposableDomains.size).toBe(packageDomains.length);
    expect(packageDomains.filter((domain) => !disposableDomains.has(domain))).toEqual([]);
    const near = ['mailinator.co', 'mailinator.comm', 'xmailinator.com', 'ailinator.com', 'MAILINATOR.COM', ''];
    const real = ['gmail.com', 'example.com', 'zulip.com', 'a', 'zzzzzzzz.zz', '00000.com'];
    const absent = [...near, ...real].filter((domain) => !packageDomains.includes(domain));
    expect(absent.length).toBeGreaterThan(10);
    expect(absent.filter((domain) => disposableDomains.has(domain))).toEqual([]);
    expect(disposableDomains.has('mailinator.com')).toBe(true);
  });

  test('the first and last entries and their neighbours', () => {
    const first = packageDomains[0]!;
    const last = packageDomains.at(-1)!;
    expect([first, last].map((domain) => disposableDomains.has(domain))).toEqual([true, true]);
    expect([` ${first}`, `${last}z`].map((domain) => disposableDomains.has(domain))).toEqual([false, false]);
  });

  test('an unsorted list is sorted first; escapes and an unclosed entry are refused', () => {
    const list = new DomainList('["c.example", "a.example", "b.example"]');
    expect(['a.example', 'b.example', 'c.example', 'd.example', 'a'].map((domain) => list.has(domain))).toEqual([
      true,
      true,
      true,
      false,
      false,
    ]);
    expect(new DomainList('[]').has('a.example')).toBe(false);
    expect(() => new DomainList('["a\\u0041.example"]')).toThrow('escaped');
    expect(() => new DomainList('["a.example", "b.exa')).toThrow('ends inside an entry');
  });
});
