// Relay cursor connections: PageInfo, and an edge and a connection type per node type. The pages
// themselves come from src/domain/connections.ts.
import type { ArgBuilder, ObjectRef } from '@pothos/core';
import type { GraphQLResolveInfo } from 'graphql';
import type { Connection, PageInfo as PageInfoShape } from '../../domain/connections.js';
import { builder } from '../builder.js';
import { selectsField } from '../selection.js';

type Types = typeof builder extends PothosSchemaTypes.SchemaBuilder<infer T> ? T : never;

export const PageInfo = builder.objectRef<PageInfoShape>('PageInfo').implement({
  description: 'Relay cursor-connection page information.',
  fields: (t) => ({
    hasNextPage: t.exposeBoolean('hasNextPage'),
    hasPreviousPage: t.exposeBoolean('hasPreviousPage'),
    startCursor: t.exposeString('startCursor', { nullable: true }),
    endCursor: t.exposeString('endCursor', { nullable: true }),
  }),
});

/** `<name>Edge` and `<name>Connection` over a node type. */
export function connectionType<Node>(name: string, node: ObjectRef<Types, Node>, totalCountDescription?: string) {
  const Edge = builder.objectRef<Connection<Node>['edges'][number]>(`${name}Edge`).implement({
    fields: (t) => ({
      cursor: t.exposeString('cursor'),
      // TypeScript cannot resolve Pothos's result type for a generic node: the cast is to that type.
      node: t.field({ type: node, resolve: (edge) => edge.node as never }),
    }),
  });
  return builder.objectRef<Connection<Node>>(`${name}Connection`).implement({
    fields: (t) => ({
      edges: t.field({ type: [Edge], resolve: (c) => c.edges }),
      nodes: t.field({ type: [node], resolve: (c) => c.edges.map((edge) => edge.node) }),
      pageInfo: t.field({ type: PageInfo, resolve: (c) => c.pageInfo }),
      totalCount: t.int({ description: totalCountDescription, resolve: (c) => c.totalCount() }),
    }),
  });
}

/** Whether the connection field being resolved selects `name` of its nodes, as `nodes` or as `edges { node }`. */
export const connectionSelects = (info: Pick<GraphQLResolveInfo, 'fieldNodes' | 'fragments'>, name: string) =>
  selectsField(info, name, ['nodes']) || selectsField(info, name, ['edges', 'node']);

/** The arguments of every connection field (their rules: src/domain/connections.ts). */
export const pageArguments = (arg: ArgBuilder<Types>) => ({ first: arg.int(), after: arg.string(), last: arg.int(), before: arg.string() });
