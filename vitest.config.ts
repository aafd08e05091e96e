import { configDefaults, defineConfig } from 'vitest/config';

/**
 * Files whose outcome does not depend on the database engine: they open no database, or only an
 * embedded one whatever the run (a data directory's lock). They run in the PGlite pass (`npm
 * test`) only; the PostgreSQL pass (TEST_DATABASE_URL) would repeat them unchanged, ≈ 60 s of
 * CI's CPU. A file that opens the database of the run does not belong here.
 */
const ENGINE_FREE = [
  'test/unit/address-guard.test.ts',
  'test/unit/beneficiary-match.test.ts',
  'test/unit/bounded-caches.test.ts',
  'test/unit/bounded-worker.test.ts',
  'test/unit/config-readme.test.ts',
  'test/unit/csv.test.ts',
  'test/unit/data-dir-lock.test.ts',
  'test/unit/document-screening-edges.test.ts',
  'test/unit/document-screening.test.ts',
  'test/unit/error-codes.test.ts',
  'test/unit/guarded-request.test.ts',
  'test/unit/http-rails-answers.test.ts',
  'test/unit/ids-money.test.ts',
  'test/unit/json-depth.test.ts',
  'test/unit/jwks-fetch.test.ts',
  'test/unit/log-backpressure.test.ts',
  'test/unit/logger.test.ts',
  'test/unit/oidc-key-sets.test.ts',
  'test/unit/pricing.test.ts',
  'test/unit/pricing-fee-split.test.ts',
  'test/unit/rails-catalogue.test.ts',
  'test/unit/regex-safety.test.ts',
  'test/unit/transaction-status-edges.test.ts',
  'test/unit/uma-address.test.ts',
  'test/unit/uma-amount-edges.test.ts',
  'test/unit/uma-amounts.test.ts',
  'test/unit/uma-cert-chain.test.ts',
  'test/unit/validation.test.ts',
  'test/unit/wallet-crypto.test.ts',
  'test/http/metrics-scrapes.test.ts',
  'test/process/data-dir-lock.test.ts',
];

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: [...configDefaults.exclude, ...(process.env.TEST_DATABASE_URL ? ENGINE_FREE : [])],
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
    // `npm run test:coverage` (on PostgreSQL too, with TEST_DATABASE_URL): which lines and
    // branches of src/ no test reaches. Code that runs only in a child process (cli.ts, the
    // server's start-up, test/process) is not counted; each engine reaches its own db/ files.
    coverage: { provider: 'v8', include: ['src/**'], reporter: ['text-summary', 'json', 'html'], reportsDirectory: 'coverage' },
  },
});
