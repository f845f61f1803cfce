// Query.rateLimit (rate-limits.md Decision 6): the caller's per-user budget as this answer's
// X-RateLimit-* headers state it, and what the document costs against the largest cost allowed
// (src/graphql/limits.ts). A dry run (dryRun: true) runs no other root field and is not counted
// (src/graphql/yoga.ts).
import { Kind, type DocumentNode, type GraphQLResolveInfo } from 'graphql';
import { builder } from '../builder.js';
import { actorOf, type GraphQLContext } from '../context.js';
import { documentCost } from '../limits.js';

interface RateLimitShape {
  limit: number | null;
  remaining: number | null;
  used: number | null;
  resetAt: number | null;
  cost: number;
  maxCost: number;
}

const RateLimit = builder.objectRef<RateLimitShape>('RateLimit').implement({
  description:
    "The per-user rate limit (one counter for REST and GraphQL: the X-RateLimit-* headers of the same\nanswer) and this document's cost." +
    ' limit, remaining, used and resetAt are null when no per-user\nlimit applies.',
  fields: (t) => ({
    limit: t.exposeInt('limit', { nullable: true, description: 'Requests allowed in the window (X-RateLimit-Limit).' }),
    remaining: t.exposeInt('remaining', {
      nullable: true,
      description: 'Requests left in the window after this one (X-RateLimit-Remaining).',
    }),
    used: t.exposeInt('used', { nullable: true, description: 'Requests counted in the window: limit - remaining.' }),
    resetAt: t.expose('resetAt', {
      type: 'SafeInt',
      nullable: true,
      description: 'UNIX time in seconds when the window ends (X-RateLimit-Reset).',
    }),
    cost: t.exposeInt('cost', { description: "This document's computed cost (list fields count 10 times)." }),
    maxCost: t.exposeInt('maxCost', { description: 'The largest cost a document may have for this caller.' }),
  }),
});

/** Over a WebSocket there is no answer to share the cost with: the operation's own. */
function operationCost(info: GraphQLResolveInfo): number {
  const document: DocumentNode = { kind: Kind.DOCUMENT, definitions: [info.operation, ...Object.values(info.fragments)] };
  return documentCost(info.schema, document, info.variableValues);
}

function rateLimitOf(context: GraphQLContext, info: GraphQLResolveInfo): RateLimitShape {
  actorOf(context);
  const { budget } = context;
  const summary = budget?.rateLimits.summary() ?? null;
  return {
    limit: summary?.limit ?? null,
    remaining: summary?.remaining ?? null,
    used: summary ? summary.limit - summary.remaining : null,
    resetAt: summary?.reset ?? null,
    cost: budget?.cost ?? operationCost(info),
    maxCost: budget?.maxCost ?? context.app.config.graphqlLimits.authenticated.cost,
  };
}

builder.queryField('rateLimit', (t) =>
  t.field({
    type: RateLimit,
    description:
      "Your rate limit and this document's cost. dryRun: price the document without running its other\n" +
      'root fields, and without counting it against the rate limit.',
    args: { dryRun: t.arg.boolean({ defaultValue: false }) },
    resolve: (_root, _args, context, info) => rateLimitOf(context, info),
  }),
);
