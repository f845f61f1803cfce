// The client's address, which the failed-login limit counts and the request log shows. By default
// the TCP peer's. With TRUSTED_PROXIES, a request from one of those peers names its client in
// X-Forwarded-For or Forwarded (RFC 7239 `for=`): the nearest address not in the list, walked as
// Express's proxy-addr walks it (ports some proxies add are dropped, so they do not split a
// client). From any other peer those headers are ignored: anyone can write them (so is a traceparent:
// peerTrustedBy).
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import parseForwarded from 'forwarded-parse';
import proxyaddr from 'proxy-addr';
import { StartupError } from '../startup-error.js';
import type { Context } from 'hono';

type Trust = (address: string, hop: number) => boolean;

/** `10.0.0.0/8, 192.168.1.10, 2001:db8::/32` (proxy-addr's `loopback`, `linklocal` and `uniquelocal` too). */
export function parseTrustedProxies(value: string | undefined): string[] {
  const entries = (value ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean);
  for (const entry of entries) {
    try {
      proxyaddr.compile(entry);
    } catch {
      throw new StartupError(
        `TRUSTED_PROXIES: ${JSON.stringify(entry)} is not an IP address or CIDR range (e.g. 10.0.0.0/8, 192.168.1.10, 2001:db8::/32)`,
      );
    }
  }
  return entries;
}

export type ClientAddressOf = (incoming: IncomingMessage) => string;

export function clientAddressOf(trustedProxies: string[]): ClientAddressOf {
  const peer = (incoming: IncomingMessage) => incoming.socket.remoteAddress ?? '';
  if (trustedProxies.length === 0) return peer;
  const trust: Trust = proxyaddr.compile(trustedProxies);
  return (incoming) => nearestUntrusted(peer(incoming), forwardingChain(incoming.headers), trust);
}

/** Whether the TCP peer itself is a trusted proxy, whose word about the request is believed (a `traceparent`, say). */
export function peerTrustedBy(trustedProxies: string[]): (incoming: IncomingMessage) => boolean {
  if (trustedProxies.length === 0) return () => false;
  const trust: Trust = proxyaddr.compile(trustedProxies);
  return (incoming) => trust(incoming.socket.remoteAddress ?? '', 0);
}

/**
 * The addresses the proxies name, nearest first, up to the first entry that names no IP address
 * (`unknown`, an obfuscated name, a malformed element): a proxy that cannot name its client ends
 * the chain. X-Forwarded-For first: the proxies that append Forwarded are few, and most pass a
 * client's own Forwarded through untouched (docs/guide/operations.md: a proxy that sets only Forwarded must drop it).
 */
function forwardingChain(headers: IncomingHttpHeaders): string[] {
  const xForwardedFor = headers['x-forwarded-for'];
  if (xForwardedFor !== undefined) return usable([xForwardedFor].flat().join(',').split(',').reverse().map(ipAddress));
  const forwarded = headers.forwarded;
  // Element by element: a client's malformed text beyond the proxies' own elements does not void theirs.
  return forwarded ? usable(splitElements(forwarded).reverse().map(forAddress)) : [];
}

/** Walks from the peer towards the client while the hop is trusted (proxy-addr's rule). */
function nearestUntrusted(peer: string, nearestFirst: string[], trust: Trust): string {
  let address = peer;
  for (let hop = 0; hop < nearestFirst.length && trust(address, hop); hop++) address = nearestFirst[hop]!;
  return address;
}

function usable(entries: (string | undefined)[]): string[] {
  const end = entries.indexOf(undefined);
  return (end < 0 ? entries : entries.slice(0, end)) as string[];
}

/** `192.0.2.43`, or with a port (`192.0.2.43:47011`, `[2001:db8::17]:4711`, which some proxies write): the address. */
function ipAddress(entry: string): string | undefined {
  const address = entry
    .trim()
    .replace(/^\[([^\]]*)\](?::\d+)?$/, '$1')
    .replace(/^(\d+\.\d+\.\d+\.\d+):\d+$/, '$1');
  return isIP(address) ? address : undefined;
}

function forAddress(element: string): string | undefined {
  try {
    const value = parseForwarded(element)[0]?.for;
    return value === undefined ? undefined : ipAddress(value);
  } catch {
    return undefined;
  }
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

/**
 * The scheme a trusted proxy says the request arrived over (its `X-Forwarded-Proto`, the first value
 * as Express reads it): `https`, `http`, or undefined when the peer is no trusted proxy or says nothing usable.
 */
export function forwardedSchemeOf(trustedProxies: string[]): (incoming: IncomingMessage) => 'https' | 'http' | undefined {
  if (trustedProxies.length === 0) return () => undefined;
  const trust: Trust = proxyaddr.compile(trustedProxies);
  return (incoming) => {
    if (!trust(incoming.socket.remoteAddress ?? '', 0)) return undefined;
    const scheme = [incoming.headers['x-forwarded-proto']].flat()[0]?.split(',')[0]?.trim().toLowerCase();
    return scheme === 'https' || scheme === 'http' ? scheme : undefined;
  };
}

/** The client's address (the peer's, or as trusted proxies name it); empty when served in-process. */
export const clientAddress = (c: Context): string => c.get('clientAddress') ?? '';

/** Headers by which a proxy names its client, or the scheme the client reached it by. */
const FORWARDING_HEADERS = ['x-forwarded-for', 'forwarded', 'x-forwarded-proto'] as const;
/** A warning about untrusted forwarding headers is repeated at most this often. */
export const UNTRUSTED_FORWARDING_WARNING_INTERVAL_MS = 10 * 60 * 1000;

/** What a warning about forwarding headers from an untrusted peer names. */
export interface UntrustedForwarding {
  peer: string;
  headers: string[];
}

/**
 * Which requests deserve a warning, at most one per interval: those whose forwarding headers
 * arrive from a peer not in TRUSTED_PROXIES. Behind a proxy the setting does not name, every client
 * is the proxy's address, so the limits per address (failed logins, unauthenticated requests) hold
 * all of them together.
 */
export function untrustedForwardingWarning(
  trustedProxies: string[],
  now: () => number = Date.now,
): (incoming: IncomingMessage) => UntrustedForwarding | null {
  const trusted: Trust = trustedProxies.length > 0 ? proxyaddr.compile(trustedProxies) : () => false;
  let quietUntil = 0;
  return (incoming) => {
    const { headers } = incoming;
    const forwarded =
      headers['x-forwarded-for'] !== undefined || headers.forwarded !== undefined || headers['x-forwarded-proto'] !== undefined;
    if (!forwarded) return null;
    const peer = incoming.socket.remoteAddress ?? '';
    if (now() < quietUntil || trusted(peer, 0)) return null;
    quietUntil = now() + UNTRUSTED_FORWARDING_WARNING_INTERVAL_MS;
    return { peer, headers: FORWARDING_HEADERS.filter((name) => headers[name] !== undefined) };
  };
}
