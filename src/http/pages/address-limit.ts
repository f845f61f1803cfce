// The limit per client address (`api_by_ip`, rate-limits.md Decision 2) of the pages' forms that
// need no credentials: counted before the form is read, refused as a page with Retry-After.
import type { Context } from 'hono';
import type { AppContext } from '../../app-context.js';
import { DomainError } from '../../domain/errors.js';
import { errorPage } from './layout.js';

/** Null when the request may go on; otherwise its 429 page. */
export async function addressLimitRefusal(app: AppContext, c: Context): Promise<Response | null> {
  try {
    await app.rateLimiter.hitUnauthenticated(c.get('clientAddress') ?? '', c.get('rateLimits'));
    return null;
  } catch (error) {
    if (!(error instanceof DomainError && error.code === 'RATE_LIMIT_HIT')) throw error;
    const seconds = error.headers['Retry-After'] ?? '1';
    const response = errorPage('Too many requests', `You're making too many requests! Try again in ${seconds} seconds.`, 429);
    response.headers.set('Retry-After', seconds);
    return response;
  }
}
