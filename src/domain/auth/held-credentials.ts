// A long-lived request (a waiting poll, a subscription) keeps the credentials it started with. When
// the authentication cache hears that they may have changed (a deactivation, a key reset, a password
// change, a session's end, any change of the user's row, made through any process), they are checked
// again: a refusal ends the request, and otherwise it goes on as the user now is (a new role, a new name).
// While a check is in flight, what the request delivers waits for its outcome.
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

/** A watched request's hold on its watch. */
export interface CredentialWatching {
  stop(): void;
  /**
   * While a check is in flight, resolves once its outcome is applied: what the request delivers after
   * it is delivered to the user as they now are (or not at all).
   */
  settled(): Promise<void> | undefined;
}

interface Watched {
  credentials: HeldCredentials;
  outcomes: CredentialOutcomes;
  /** Checks started; only the latest one's outcome applies. */
  checks: number;
  inFlight?: Promise<void>;
}

/** The long-lived requests of one kind in a process, each told when its credentials are checked again. */
export class CredentialWatch {
  private readonly watched = new Set<Watched>();

  constructor(app: AppContext) {
    app.authCache?.events.on('invalidated', (invalidation: string) => this.changed(invalidation));
  }

  watch(credentials: HeldCredentials, outcomes: CredentialOutcomes): CredentialWatching {
    const watched: Watched = { credentials, outcomes, checks: 0 };
    this.watched.add(watched);
    return { stop: () => this.watched.delete(watched), settled: () => (watched.inFlight ? noneInFlight(watched) : undefined) };
  }

  private changed(invalidation: string): void {
    for (const watched of this.watched) if (watched.credentials.concernedBy(invalidation)) recheck(watched);
  }
}

/**
 * Checks the credentials again. A check that finishes after a later one read an older row: its
 * outcome is dropped, so the user is never set back to what they were.
 */
function recheck(watched: Watched): void {
  const check = ++watched.checks;
  const latest = () => check === watched.checks;
  watched.inFlight = watched.credentials
    .recheck()
    .then(
      (actor) => {
        if (latest()) watched.outcomes.renewed?.(actor);
      },
      (error: unknown) => {
        if (latest()) watched.outcomes.refused(error);
      },
    )
    .finally(() => {
      if (latest()) watched.inFlight = undefined;
    });
}

/** Resolves once no check is in flight, a check started meanwhile included. */
async function noneInFlight(watched: Watched): Promise<void> {
  while (watched.inFlight) await watched.inFlight;
}
