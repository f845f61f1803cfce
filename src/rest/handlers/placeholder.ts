// Temporary: answers for routes whose handler has not landed yet. Delete once no handler uses it.
import { DomainError } from '../../domain/errors.js';
import type { PublicRestHandler, RestHandler } from '../request.js';

export const notImplementedYet: RestHandler & PublicRestHandler = async () => {
  throw new DomainError('Not implemented yet', { status: 501 });
};
