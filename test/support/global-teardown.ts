/** Stops the test database that global-setup started, if it started one. */
export default async function globalTeardown(): Promise<void> {
  await globalThis.__RAMPART_TEST_DB_STOP__?.();
}
