import { GraphQLError } from 'graphql';

/** Placeholder resolver for contract fields whose issue has not landed yet. */
export const notImplemented = (): never => {
  throw new GraphQLError('Not implemented yet', { extensions: { code: 'NOT_IMPLEMENTED' } });
};
