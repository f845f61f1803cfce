import { defineConfig } from 'vitest/config';

export default defineConfig({
  // graphql ships CommonJS and ESM builds without an exports map; Node (and so graphql-yoga) loads the
  // CommonJS one. The tests must load the same copy, or errors of one copy look foreign to the other.
  resolve: { alias: { graphql: 'graphql/index.js' } },
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    // The servers the tests run in-process log as LOG_LEVEL says, like any server: quiet unless asked.
    env: { LOG_LEVEL: process.env.LOG_LEVEL || 'silent' },
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // The machines have 2 cores; each worker runs servers and (for some files) child processes.
    maxWorkers: 2,
  },
});
