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

builder.scalarType('File', {
  description: 'A file sent with the GraphQL multipart request specification (multipart/form-data).',
  serialize: () => {
    throw new GraphQLError('File is an input type only');
  },
  parseValue: (value) => {
    // Duck-typed: Yoga's fetch implementation may bring its own File class.
    const file = value as File;
    if (typeof file !== 'object' || file === null || typeof file.stream !== 'function' || typeof file.name !== 'string') {
      throw new GraphQLError('File must be a file part of a multipart request');
    }
    return file;
  },
});
