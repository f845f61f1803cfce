// The `zulip-js` npm package (it ships no type declarations): just the part the tests use.
import { createRequire } from 'node:module';
import type { World, WorldUserName } from './world.js';

export interface ZulipClient {
  callEndpoint(endpoint: string, method?: string, params?: Record<string, unknown>): Promise<any>;
  emojis: { retrieve(params?: Record<string, unknown>): Promise<any> };
  users: { me: { getProfile(): Promise<any> } };
  server: { settings(params?: Record<string, unknown>): Promise<any> };
  queues: { register(params?: Record<string, unknown>): Promise<any>; deregister(params: Record<string, unknown>): Promise<any> };
  events: { retrieve(params: Record<string, unknown>): Promise<any> };
  callOnEachEvent(callback: (event: any) => void, eventTypes?: string[] | null): Promise<never>;
}

export interface ZulipConfig {
  realm: string;
  username: string;
  /** Without it, zulip-js first posts username and password to /fetch_api_key and keeps the api_key it reads. */
  apiKey?: string;
  password?: string;
  /** Set by zulip-js from the realm; every call reads it anew. */
  apiURL?: string;
}

type ZulipInit = (config: ZulipConfig) => Promise<ZulipClient>;
const zulipInit = createRequire(import.meta.url)('zulip-js') as ZulipInit;

export const zulipClient = (serverUrl: string, username: string, apiKey: string) => zulipInit({ realm: serverUrl, username, apiKey });

/** A client and the configuration it reads at each call (to send its endless event loop elsewhere). */
export async function zulipClientWithConfig(config: ZulipConfig): Promise<ZulipClient> {
  return zulipInit(config);
}

/** A zulip-js client logged in as one of the world's users, as a real deployment would configure it. */
export const zulipClientFor = (serverUrl: string, world: World, who: WorldUserName) =>
  zulipClient(serverUrl, world.users[who].email, world.users[who].apiKey);

// zulip-js hands back only the parsed body; the tests check the body against the status the server
// actually answered, observed here on the fetch zulip-js calls.
const helper = createRequire(import.meta.url)('zulip-js/lib/helper') as { fetch: (...args: unknown[]) => Promise<{ status: number }> };
let lastStatus: number | undefined;
const zulipFetch = helper.fetch;
helper.fetch = async (...args) => {
  const response = await zulipFetch(...args);
  lastStatus = response.status;
  return response;
};

/** The HTTP status of the last response zulip-js received. */
export function lastZulipStatus(): number {
  if (lastStatus === undefined) throw new Error('zulip-js has not received a response yet');
  return lastStatus;
}
