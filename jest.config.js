/**
 * Jest transpiles TypeScript with esbuild, a file at a time, without type-checking (`npm run
 * typecheck` does that): test/support/transform.js (ts-jest for a file that calls `jest.mock`).
 *
 * Tests run in tiers, as parallel projects: `unit` (the core with in-memory fakes of its ports,
 * no database, no sleeps: `npm run test:unit`), `integration` (the store and the runtime on a
 * real database), `e2e` (each door over loopback) and `compat` (Castle's own SDKs). The one
 * FerretDB that global-setup starts serves every worker; each test file makes a database of its own.
 * Only the tiers on the database have that global setup: the unit tier alone starts none.
 *
 * The unit tier's files are few: each directory of test/unit is one test file (`test/unit/core.test.ts`
 * runs `test/unit/core/*.spec.ts`, test/support/specs.ts), since jest loads the test framework and
 * the modules a file imports again for every file, and that was a large part of the tier's time.
 * `npx jest test/unit/core -t core/scoring` runs one spec.
 *
 * `npm run test:quick` (RAMPART_TEST_QUICK=1) runs the unit tier and the files below: each door
 * over loopback once, the state layer, the stores and the privacy path on the real database, for
 * feedback in under a minute. `npm test` runs every file, as CI does.
 */
const transform = { '^.+\\.ts$': '<rootDir>/test/support/transform.js' };

/** The quick run's files besides the unit tier (the rest drive other programs, or wait out real time). */
const QUICK = [
  'test/e2e/rest.test.ts',
  'test/e2e/grpc.test.ts',
  'test/e2e/graphql.test.ts',
  'test/e2e/lists.test.ts',
  'test/e2e/graphql-lists.test.ts',
  'test/e2e/hot-path.test.ts',
  'test/e2e/authentication.test.ts',
  'test/e2e/error-bodies.test.ts',
  'test/e2e/client.test.ts',
  'test/e2e/client-track-stream.test.ts',
  'test/e2e/mobile.test.ts',
  'test/e2e/device-states.test.ts',
  'test/e2e/first-sighting.test.ts',
  'test/e2e/stored-headers.test.ts',
  'test/e2e/retention.test.ts',
  'test/integration/state-layer.test.ts',
  'test/integration/state-cache.test.ts',
  'test/integration/state-flusher.test.ts',
  'test/integration/embedded.test.ts',
  'test/integration/ferretdb.test.ts',
  'test/integration/migration.test.ts',
  'test/integration/behaviour-store.test.ts',
  'test/integration/privacy.test.ts',
];
const quick = process.env.RAMPART_TEST_QUICK === '1';
// A file renamed or removed must not drop out of the quick run unnoticed.
for (const file of QUICK)
  if (!require('node:fs').existsSync(require('node:path').join(__dirname, file)))
    throw new Error(`jest.config.js: QUICK names ${file}, which does not exist`);

// A unit spec runs only through its directory's test file: none may sit where nothing runs it.
const fs = require('node:fs');
const path = require('node:path');
const UNIT = path.join(__dirname, 'test', 'unit');
for (const file of fs.readdirSync(UNIT, { recursive: true, encoding: 'utf8' })) {
  const [dir, ...rest] = file.split(path.sep);
  if (rest.length > 0 && file.endsWith('.test.ts'))
    throw new Error(
      `jest.config.js: test/unit/${file} would run alone; name it .spec.ts (test/support/specs.ts)`,
    );
  if (file.endsWith('.spec.ts') && (rest.length === 0 || !fs.existsSync(path.join(UNIT, `${dir}.test.ts`))))
    throw new Error(`jest.config.js: nothing runs test/unit/${file}; specs run from test/unit/<dir>.test.ts`);
}

const tier = (name) => ({
  displayName: name,
  // A project's global setup runs only when a file of that project runs: the database is started
  // for the tiers that use it, and a run of the unit tier alone (or of one unit file) starts none.
  ...(name === 'unit'
    ? {}
    : {
        globalSetup: '<rootDir>/test/support/global-setup.ts',
        globalTeardown: '<rootDir>/test/support/global-teardown.ts',
      }),
  testEnvironment: 'node',
  roots: [`<rootDir>/test/${name}`],
  testMatch:
    quick && name !== 'unit'
      ? QUICK.filter((p) => p.startsWith(`test/${name}/`)).map((p) => `<rootDir>/${p}`)
      : ['**/*.test.ts'],
  transform,
});

module.exports = {
  projects: [tier('unit'), tier('integration'), tier('e2e'), ...(quick ? [] : [tier('compat')])],
  testTimeout: 60000,
  // Files wait mostly on the database and the network: two workers on two cores.
  maxWorkers: 2,
  // No watchman on the machines that run these (jest would spawn it to find out, every run).
  watchman: false,
};
