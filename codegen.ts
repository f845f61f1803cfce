// GraphQL Code Generator: typed documents for the tests, from the printed schema.
import type { CodegenConfig } from '@graphql-codegen/cli';

const config: CodegenConfig = {
  schema: 'schema.graphql',
  documents: ['test/**/*.ts', '!test/generated/**'],
  ignoreNoDocuments: true,
  emitLegacyCommonJSImports: false,
  generates: {
    'test/generated/': {
      preset: 'client',
      config: { scalars: { SafeInt: 'number', File: 'File' }, enumsAsTypes: true, useTypeImports: true },
      presetConfig: { fragmentMasking: false },
    },
  },
};

export default config;
