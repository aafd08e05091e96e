import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    pool: 'forks',
    maxWorkers: 2,
    // Test files share each worker's module graph instead of importing the whole app afresh:
    // the per-file import was about 2 s (258 s of each engine's run in CI, then 10 s); each file
    // still opens its own database and app, and no test mocks a module.
    isolate: false,
    testTimeout: 30_000,
    hookTimeout: 120_000,
    reporters: ['default'],
  },
});
