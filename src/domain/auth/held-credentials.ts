// A long-lived request (a waiting poll, a subscription) keeps the credentials it started with. When
// the authentication cache hears that they may have changed (a deactivation, a key reset, a password
// change, a session's end, any change of the user's row, made through any process), they are checked
// again: a refusal ends the request, and otherwise it goes on as the user now is (a new role, a new name).
import type { AppContext } from '../../app-context.js';
import type { Actor } from './actor.js';
import { hashApiKey } from '../users/api-keys.js';
import { authenticate, parseBasicAuthorization, sessionRequired } from './authenticate.js';
import { readSession } from './sessions.js';

/** What a request authenticated with: a Basic Authorization header, or a browser session's token. */
export type Credentials = { authorization: string } | { sessionToken: string; sessionId: number; apiKeyHash: string };

export interface HeldCredentials {
  /** Whether an invalidation the authentication cache heard (a key hash, `session:<id>`, '*') may concern them. */
  concernedBy(invalidation: string): boolean;
  /** The user as the credentials authenticate them now; throws the refusal when they no longer hold. */
  recheck(): Promise<Actor>;
}

const EVERY_KEY = '*';

/** Credentials that authenticated already. */
export function heldCredentials(app: AppContext, credentials: Credentials): HeldCredentials {
  if ('authorization' in credentials) {
    const apiKeyHash = hashApiKey(parseBasicAuthorization(credentials.authorization).apiKey);
    return {
      concernedBy: (invalidation) => invalidation === EVERY_KEY || invalidation === apiKeyHash,
      recheck: () => authenticate({ prisma: app.prisma }, credentials.authorization),
    };
  }
  // The user's row changes are announced under their key hash as it was: a regenerated key is followed.
  let { apiKeyHash } = credentials;
  const ended = `session:${credentials.sessionId}`;
  return {
    concernedBy: (invalidation) => invalidation === EVERY_KEY || invalidation === ended || invalidation === apiKeyHash,
    recheck: async () => {
      const session = await readSession(app, credentials.sessionToken);
      if (!session) throw sessionRequired();
      apiKeyHash = session.apiKeyHash;
      return session.actor;
    },
  };
}

/** What a watched request is told after its credentials were checked again. */
export interface CredentialOutcomes {
  refused: (error: unknown) => void;
  /** The user as the credentials authenticate them now. */
  renewed?: (actor: Actor) => void;
}

/** The long-lived requests of one kind in a process, each told when its credentials are checked again. */
export class CredentialWatch {
  private readonly watched = new Map<object, { credentials: HeldCredentials; outcomes: CredentialOutcomes }>();

  constructor(app: AppContext) {
    app.authCache?.events.on('invalidated', (invalidation: string) => this.changed(invalidation));
  }

  /** Returns the end of the watch. */
  watch(credentials: HeldCredentials, outcomes: CredentialOutcomes): () => void {
    const key = {};
    this.watched.set(key, { credentials, outcomes });
    return () => this.watched.delete(key);
  }

  private changed(invalidation: string): void {
    for (const { credentials, outcomes } of this.watched.values()) {
      if (credentials.concernedBy(invalidation)) credentials.recheck().then(outcomes.renewed, outcomes.refused);
    }
  }
}
