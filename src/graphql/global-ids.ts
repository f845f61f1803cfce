// Relay global ids (docs/contract/additions/node.graphql), as @pothos/plugin-relay writes and reads
// them for this schema: the base64 of "<type name>:<row id>", as Relay's own helpers write them.
// Reading one is strict: anything but exactly such a text is a BAD_USER_INPUT error.
import type { GraphQLInterfaceType, GraphQLSchema } from 'graphql';
import { createGraphQLError } from 'graphql-yoga';

/** The most ids one `nodes` field takes (a connection's largest page). */
export const MAX_NODES = 100;

/** Longer than any global id this server writes (a type name, a colon and ten digits, in base64). */
const MAX_GLOBAL_ID_LENGTH = 100;

/** The largest row id (PostgreSQL's integer). */
const MAX_ROW_ID = 2 ** 31 - 1;

const GLOBAL_ID_TEXT = /^([A-Za-z_][A-Za-z0-9_]*):([1-9][0-9]*)$/;

export interface GlobalId {
  typename: string;
  id: unknown;
}

export const badUserInput = (message: string) => createGraphQLError(message, { extensions: { code: 'BAD_USER_INPUT' } });

export const encodeGlobalId = (typename: string, id: bigint | number | string) => Buffer.from(`${typename}:${id}`).toString('base64');

/**
 * The type name and row id (its digits) a global id names. Throws BAD_USER_INPUT unless it is exactly
 * what encodeGlobalId writes for some type name and positive integer (canonical base64, no other
 * spelling of a number).
 */
export function decodeGlobalId(globalId: string): { typename: string; id: string } {
  const text = globalId.length <= MAX_GLOBAL_ID_LENGTH ? Buffer.from(globalId, 'base64').toString('latin1') : '';
  const match = GLOBAL_ID_TEXT.exec(text);
  // Node's decoder skips what is not base64: only the canonical spelling of the text counts.
  if (!match || Buffer.from(text, 'latin1').toString('base64') !== globalId) {
    throw badUserInput('Not a global id: expected the base64 of "<type name>:<id>", as globalId gives it');
  }
  return { typename: match[1]!, id: match[2]! };
}

/** Whether a decoded global id may name an object: its type implements Node and its id fits a row. */
export function mayNameNode(schema: GraphQLSchema, { typename, id }: GlobalId): boolean {
  const node = schema.getType('Node') as GraphQLInterfaceType;
  return Number(id) <= MAX_ROW_ID && schema.getPossibleTypes(node).some((type) => type.name === typename);
}
