/**
 * Jest transpiles TypeScript with ts-jest, without type-checking (`npm run typecheck` does that).
 *
 * Tests run in tiers, as parallel projects: `unit` (the core with in-memory fakes of its ports,
 * no database, no sleeps: `npm run test:unit`), `integration` (the store and the runtime on a
 * real database), `e2e` (each door over loopback) and `compat` (Castle's own SDKs). The one
 * FerretDB that global-setup starts serves every worker; each test file makes a database of its own.
 *
 * `npm run test:quick` (RAMPART_TEST_QUICK=1) runs every tier but the files below, for feedback
 * in under a minute; `npm test` runs them all, as CI does.
 */
const transform = { '^.+\\.ts$': ['ts-jest', { isolatedModules: true, diagnostics: false }] };

/** Left out of the quick run: each drives another program, or waits out real time on purpose. */
const SLOW = [
  'test/compat/', // Castle's SDKs in Python and Java, and the Go SDK's requests
  'test/e2e/openapi.test.ts', // schemathesis fuzzes every operation (~100 s)
  'test/e2e/browser.test.ts', // Chromium runs the browser client
  'test/e2e/console.test.ts', // Chromium drives the console
  'test/integration/react-native-pack.test.ts', // npm pack of the React Native package
  'test/integration/fault.test.ts', // the database killed and hung under load
  'test/integration/metrics-outage.test.ts', // the database hung while /metrics is scraped
  'test/integration/shutdown.test.ts', // Rampart stopped mid-stream on its own database
  'test/integration/purge-erases.test.ts', // Rampart on its own database, raw files read
  'test/integration/webhooks.test.ts', // retries, outages and leases in real time
  'test/e2e/grpc-deadlines.test.ts', // deadlines waited out
];
const quick = process.env.RAMPART_TEST_QUICK === '1';

const tier = (name) => ({
  displayName: name,
  testEnvironment: 'node',
  roots: [`<rootDir>/test/${name}`],
  testMatch: ['**/*.test.ts'],
  testPathIgnorePatterns: ['/node_modules/', ...(quick ? SLOW.map((p) => `<rootDir>/${p}`) : [])],
  transform,
});

module.exports = {
  projects: [tier('unit'), tier('integration'), tier('e2e'), ...(quick ? [] : [tier('compat')])],
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
  testTimeout: 60000,
  // Files wait mostly on the database and the network: two workers on two cores.
  maxWorkers: 2,
};
