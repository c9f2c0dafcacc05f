/**
 * Jest transpiles TypeScript with ts-jest, without type-checking (`npm run typecheck` does that).
 *
 * Tests run in tiers, as parallel projects: `unit` (the core with in-memory fakes of its ports,
 * no database, no sleeps: `npm run test:unit`), `integration` (the store and the runtime on a
 * real database), `e2e` (each door over loopback) and `compat` (Castle's own SDKs). The one
 * FerretDB that global-setup starts serves every worker; each test file makes a database of its own.
 */
const transform = { '^.+\\.ts$': ['ts-jest', { isolatedModules: true, diagnostics: false }] };
const tier = (name) => ({
  displayName: name,
  testEnvironment: 'node',
  roots: [`<rootDir>/test/${name}`],
  testMatch: ['**/*.test.ts'],
  transform,
});

module.exports = {
  projects: [tier('unit'), tier('integration'), tier('e2e'), tier('compat')],
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
  testTimeout: 60000,
  // Files wait mostly on the database and the network: two workers on two cores.
  maxWorkers: 2,
};
