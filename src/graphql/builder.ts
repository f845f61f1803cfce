// Sets up the Pothos schema builder; types and their root fields live under schema/.
// Relay global object identification (docs/contract/additions/node.graphql) is @pothos/plugin-relay's:
// the Node interface, Query.node and Query.nodes. Every type keeps the contract's `id: Int!`, so the
// global id is the field `globalId` (a Relay client sets its compiler's schemaConfig.nodeInterfaceIdField
// and its store's getDataID to it); its encoding is global-ids.ts's. Which types are nodes, and how each
// is read: schema/node.ts. The hand-written connections (schema/connection.ts) are not the plugin's.
import SchemaBuilder from '@pothos/core';
import RelayPlugin, { resolveNodes } from '@pothos/plugin-relay';
import type { GraphQLResolveInfo } from 'graphql';
import type { GraphQLContext } from './context.js';
import { badUserInput, decodeGlobalId, encodeGlobalId, mayNameNode, MAX_NODES, type GlobalId } from './global-ids.js';

export const builder = new SchemaBuilder<{
  Context: GraphQLContext;
  Scalars: { SafeInt: { Input: number; Output: number | bigint }; File: { Input: File; Output: never } };
  DefaultFieldNullability: false;
  DefaultInputFieldRequiredness: false;
}>({
  plugins: [RelayPlugin],
  defaultFieldNullability: false,
  relay: {
    idFieldName: 'globalId',
    idFieldOptions: { description: 'Unique across every type, unlike `id`; opaque. Relay clients use it as the Node id field.' },
    nodeTypeOptions: { description: 'An object a client can refetch by its global id, with Query.node or Query.nodes.' },
    encodeGlobalID: encodeGlobalId,
    decodeGlobalID: decodeGlobalId,
    nodeQueryOptions: {
      description:
        'The object with this global id, when a list it comes from shows it to the caller; null otherwise\n' +
        '(also for an id of no type of ours). An id that is not a global id is a BAD_USER_INPUT error.',
      resolve: async (_root, { id }, context, info) => (await loadNodes(context, info, [id]))[0],
    },
    nodesQueryOptions: {
      description:
        'The objects with these global ids, in the order given, each as node answers it (null where it would be).\n' +
        `At most ${MAX_NODES} ids; one that is not a global id fails the whole field.`,
      resolve: (_root, { ids }, context, info) => {
        if (ids.length > MAX_NODES) throw badUserInput(`At most ${MAX_NODES} ids`);
        return loadNodes(context, info, ids);
      },
    },
  },
});

/** The objects some decoded global ids name, each read by its type's loader (schema/node.ts); null where none may be. */
function loadNodes(context: GraphQLContext, info: GraphQLResolveInfo, ids: GlobalId[]): Promise<unknown[]> {
  return resolveNodes(
    builder,
    context,
    info,
    ids.map((id) => (mayNameNode(info.schema, id) ? id : null)),
  );
}

builder.queryType({});
builder.mutationType({});
