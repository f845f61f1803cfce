// Sets up the Pothos schema builder; types and their root fields live under schema/.
import SchemaBuilder from '@pothos/core';
import type { GraphQLContext } from './context.js';

export const builder = new SchemaBuilder<{
  Context: GraphQLContext;
  Scalars: { SafeInt: { Input: number; Output: number | bigint }; File: { Input: File; Output: never } };
  DefaultFieldNullability: false;
  DefaultInputFieldRequiredness: false;
}>({ defaultFieldNullability: false });

builder.queryType({});
builder.mutationType({});
