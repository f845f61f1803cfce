// Per-request GraphQL context: the application, the authenticated actor and the request's loaders.
import type { ServerContext } from '../server-context.js';
import type { Actor } from '../domain/auth/authenticate.js';
import { notLoggedIn } from '../domain/auth/authenticate.js';
import type { Credentials } from '../domain/auth/held-credentials.js';
import type { DomainError } from '../domain/errors.js';
import type { RateLimitReport } from '../domain/auth/rate-limit.js';
import { Loaders } from './loaders.js';
import type { AnswerReservations } from '../http/memory-budget.js';
import type { Logger } from '../logging.js';

/** Who calls, as known before the document is parsed. */
export interface Caller {
  /** Null when the request carried no (valid) credentials; data fields then fail with 401. */
  actor: Actor | null;
  authError: DomainError | null;
  /** The credentials the actor authenticated with (a subscription checks them again as they change). */
  credentials: Credentials | null;
}

export interface GraphQLContext extends Caller {
  app: ServerContext;
  loaders: Loaders;
  /** The request's logger (its id on every line). */
  log: Logger;
  /** The HTTP answer's memory reservations (src/http/memory-budget.ts); none for a subscription's events. */
  answer?: AnswerReservations;
  /** Over HTTP only (a WebSocket's operations have no answer headers). */
  budget?: RequestBudget;
}

/**
 * What an HTTP request's answer knows of its limits: the limiters that ran (its X-RateLimit-*
 * headers), whether the request was counted yet, and its document's cost (src/graphql/limits.ts).
 */
export interface RequestBudget {
  rateLimits: RateLimitReport;
  counted: boolean;
  /** Null until the document is validated. */
  cost: number | null;
  /** The largest cost a document may have for this caller. */
  maxCost: number;
}

export const anonymousCaller = (): Caller => ({ actor: null, authError: null, credentials: null });

export function newContext(
  app: ServerContext,
  caller: Caller,
  log: Logger,
  answer?: AnswerReservations,
  budget?: RequestBudget,
): GraphQLContext {
  return { app, ...caller, loaders: new Loaders(app, () => actorOf(caller)), log, answer, budget };
}

/** The authenticated actor; resolvers reached without one are refused by the auth plugin already. */
export function actorOf(context: Caller): Actor {
  if (!context.actor) throw context.authError ?? notLoggedIn();
  return context.actor;
}

/** A subscription's next payload is a new answer: its loaders start empty (no user as it was an hour ago). */
export function freshLoadersForNextPayload(context: GraphQLContext): void {
  context.loaders = new Loaders(context.app, () => actorOf(context));
}
