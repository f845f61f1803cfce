// GraphQL Code Generator: typed documents for the tests, from the printed schema, and the manifest of
// their hashes (test/generated/persisted-documents.json, sha256) that GRAPHQL_TRUSTED_DOCUMENTS loads.
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
      presetConfig: { fragmentMasking: false, persistedDocuments: true },
    },
  },
};

export default config;
