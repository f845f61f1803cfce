// A long-lived request (a waiting poll, a subscription) keeps the credentials it started with. When
// the authentication cache hears that they may have changed (a deactivation or a key reset, made
// through any process), they are checked again, and a refusal ends the request.
import type { AppContext } from '../../app-context.js';
import { hashApiKey } from '../users/api-keys.js';
import { authenticate, parseBasicAuthorization } from './authenticate.js';

export interface HeldCredentials {
  /** The hash of the request's API key, as the authentication cache's invalidations name it. */
  apiKeyHash: string;
  /** Throws the refusal when the credentials no longer hold. */
  recheck(): Promise<void>;
}

/** Credentials from an Authorization header that authenticated already. */
export function heldCredentials(app: AppContext, authorizationHeader: string): HeldCredentials {
  return {
    apiKeyHash: hashApiKey(parseBasicAuthorization(authorizationHeader).apiKey),
    recheck: async () => void (await authenticate(app.prisma, authorizationHeader)),
  };
}

const EVERY_KEY = '*';

/** The long-lived requests of one kind in a process, each told when its credentials are refused. */
export class CredentialWatch {
  private readonly watched = new Map<object, { credentials: HeldCredentials; refused: (error: unknown) => void }>();

  constructor(app: AppContext) {
    app.authCache?.events.on('invalidated', (apiKeyHash: string) => this.changed(apiKeyHash));
  }

  /** Returns the end of the watch. */
  watch(credentials: HeldCredentials, refused: (error: unknown) => void): () => void {
    const key = {};
    this.watched.set(key, { credentials, refused });
    return () => this.watched.delete(key);
  }

  private changed(apiKeyHash: string): void {
    for (const { credentials, refused } of this.watched.values()) {
      if (apiKeyHash === EVERY_KEY || credentials.apiKeyHash === apiKeyHash) credentials.recheck().catch(refused);
    }
  }
}
