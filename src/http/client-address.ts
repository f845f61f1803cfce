// The client's address, which the failed-login limit counts and the request log shows. By default
// the TCP peer's. With TRUSTED_PROXIES, a request from one of those peers names its client in
// X-Forwarded-For or Forwarded (RFC 7239 `for=`): the nearest address not in the list, as Express's
// proxy-addr reads it. From any other peer those headers are ignored: anyone can write them.
import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import parseForwarded from 'forwarded-parse';
import proxyaddr from 'proxy-addr';
import { StartupError } from '../startup-error.js';

type Trust = (address: string, hop: number) => boolean;

/** `10.0.0.0/8, 192.168.1.10, 2001:db8::/32` (proxy-addr's `loopback`, `linklocal` and `uniquelocal` too). */
export function parseTrustedProxies(value: string | undefined): string[] {
  const entries = (value ?? '').split(',').map((entry) => entry.trim()).filter(Boolean);
  for (const entry of entries) {
    try {
      proxyaddr.compile(entry);
    } catch {
      throw new StartupError(`TRUSTED_PROXIES: ${JSON.stringify(entry)} is not an IP address or CIDR range (e.g. 10.0.0.0/8, 192.168.1.10, 2001:db8::/32)`);
    }
  }
  return entries;
}

export type ClientAddressOf = (incoming: IncomingMessage) => string;

export function clientAddressOf(trustedProxies: string[]): ClientAddressOf {
  const peer = (incoming: IncomingMessage) => incoming.socket.remoteAddress ?? '';
  if (trustedProxies.length === 0) return peer;
  const trust: Trust = proxyaddr.compile(trustedProxies);
  return (incoming) => {
    // X-Forwarded-For first: the proxies that append Forwarded are few, and most pass a client's
    // own Forwarded through untouched (README: a proxy that sets only Forwarded must drop it).
    if (incoming.headers['x-forwarded-for'] !== undefined) return proxyaddr(incoming, trust);
    const forwarded = incoming.headers.forwarded;
    return forwarded ? nearestUntrusted(peer(incoming), forwardedFor(forwarded), trust) : peer(incoming);
  };
}

/** Walks from the peer towards the client while the hop is trusted (proxy-addr's rule). */
function nearestUntrusted(peer: string, nearestFirst: string[], trust: Trust): string {
  let address = peer;
  for (let hop = 0; hop < nearestFirst.length && trust(address, hop); hop++) address = nearestFirst[hop]!;
  return address;
}

/**
 * The `for=` addresses of a Forwarded header, nearest first, up to the first element that names no
 * IP address (`unknown`, an obfuscated name, a malformed element): a proxy that cannot name its
 * client ends the chain. Elements are parsed one by one, so a client's malformed text beyond the
 * proxies' own elements does not void theirs.
 */
function forwardedFor(header: string): string[] {
  const addresses: string[] = [];
  for (const element of splitElements(header).reverse()) {
    const address = addressOf(element);
    if (!address) break;
    addresses.push(address);
  }
  return addresses;
}

function addressOf(element: string): string | undefined {
  let value: string | undefined;
  try {
    value = parseForwarded(element)[0]?.for;
  } catch {
    return undefined;
  }
  // `"[2001:db8::17]:4711"`, `192.0.2.43:47011`: the port is not part of the address.
  const address = value?.replace(/^\[([^\]]*)\](?::\d+)?$/, '$1').replace(/^(\d+\.\d+\.\d+\.\d+):\d+$/, '$1');
  return address && isIP(address) ? address : undefined;
}

/** The comma-separated elements of a Forwarded header (commas inside quoted strings are text). */
function splitElements(header: string): string[] {
  const elements: string[] = [];
  let current = '';
  let quoted = false;
  for (let i = 0; i < header.length; i++) {
    const char = header[i]!;
    if (char === ',' && !quoted) {
      elements.push(current);
      current = '';
      continue;
    }
    if (char === '"') quoted = !quoted;
    else if (char === '\\' && quoted) current += header[i++] ?? '';
    current += header[i] ?? '';
  }
  elements.push(current);
  return elements.map((element) => element.trim());
}
