/**
 * Starts the test database once for the whole run: MONGODB_URI when given, otherwise a local
 * FerretDB on a free loopback port with its files under .data/test-db (removed afterwards).
 * It is the global setup of the tiers on the database (jest.config.js), so jest runs it only when
 * a file of theirs runs: the unit tier alone (`npm run test:unit`) starts no database.
 */
import { rmSync } from 'node:fs';
import path from 'node:path';

declare global {
  var __RAMPART_TEST_DB_STOP__: (() => Promise<void>) | undefined;
}

export default async function globalSetup(): Promise<void> {
  if (process.env.MONGODB_URI) return;
  const { startEmbedded } = await import('../../src/store/embedded');
  const dir = path.resolve(__dirname, '..', '..', '.data', `test-db-${process.pid}`);
  rmSync(dir, { recursive: true, force: true });
  const embedded = await startEmbedded(dir);
  process.env.MONGODB_URI = embedded.uri;
  process.env.RAMPART_TEST_EMBEDDED = '1';
  globalThis.__RAMPART_TEST_DB_STOP__ = async () => {
    await embedded.stop();
    rmSync(dir, { recursive: true, force: true });
  };
}
