// GraphQL Code Generator: typed documents for the tests and for the frontend examples, from the
// printed schema, each with the manifest of its hashes (persisted-documents.json, sha256) that
// GRAPHQL_TRUSTED_DOCUMENTS loads.
import type { CodegenConfig } from '@graphql-codegen/cli';

const typed = { scalars: { SafeInt: 'number', File: 'File' }, enumsAsTypes: true, useTypeImports: true };

const config: CodegenConfig = {
  schema: 'schema.graphql',
  ignoreNoDocuments: true,
  emitLegacyCommonJSImports: false,
  generates: {
    'test/generated/': {
      documents: ['test/**/*.ts', '!test/generated/**'],
      preset: 'client',
      config: typed,
      presetConfig: { fragmentMasking: false, persistedDocuments: true },
    },
    // The README's examples for frontend authors, with a manifest of their own (a frontend's).
    'docs/examples/frontend/gql/': {
      documents: ['docs/examples/frontend/*.ts'],
      preset: 'client',
      config: typed,
      presetConfig: { fragmentMasking: false, persistedDocuments: true },
    },
  },
};

export default config;
