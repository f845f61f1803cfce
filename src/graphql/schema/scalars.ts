import { GraphQLError, Kind } from 'graphql';
import { builder } from '../builder.js';

function toSafeInt(value: unknown): number {
  const number = typeof value === 'bigint' ? Number(value) : value;
  if (typeof number !== 'number' || !Number.isSafeInteger(number)) {
    throw new GraphQLError(`SafeInt cannot represent ${String(value)}`);
  }
  return number;
}

builder.scalarType('SafeInt', {
  description:
    "An integer in the range a JavaScript number holds exactly (+-(2^53 - 1)). Byte counts and UNIX\ntimes use it, because GraphQL's Int is 32-bit and an organization's upload space passes 2 GiB.",
  serialize: toSafeInt,
  parseValue: toSafeInt,
  parseLiteral: (ast) => {
    if (ast.kind !== Kind.INT) throw new GraphQLError('SafeInt must be an integer literal');
    return toSafeInt(Number(ast.value));
  },
});

export { unixSeconds } from '../../domain/time.js';
