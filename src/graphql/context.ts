// Per-request GraphQL context: the application, the authenticated actor and the request's loaders.
import type { AppContext } from '../app-context.js';
import type { Actor } from '../domain/auth/authenticate.js';
import { notLoggedIn } from '../domain/auth/authenticate.js';
import type { DomainError } from '../domain/errors.js';
import { createLoaders, type Loaders } from './loaders.js';

export interface GraphQLContext {
  app: AppContext;
  /** Null when the request carried no (valid) credentials; data fields then fail with 401. */
  actor: Actor | null;
  authError: DomainError | null;
  loaders: Loaders;
}

export function newContext(app: AppContext, actor: Actor | null, authError: DomainError | null): GraphQLContext {
  return { app, actor, authError, loaders: createLoaders(app) };
}

/** The authenticated actor; resolvers reached without one are refused by the auth plugin already. */
export function actorOf(context: GraphQLContext): Actor {
  if (!context.actor) throw context.authError ?? notLoggedIn();
  return context.actor;
}
