/**
 * A fresh database per test file, on the server global-setup provided. Its name always contains
 * `test`, so a test can never touch a database that is not a test database.
 */
import { randomBytes } from 'node:crypto';
import type { Db } from 'mongodb';
import { connect, type Database } from '../../src/store/database';
import type { CommandStartedEvent } from 'mongodb';

export interface TestDatabase {
  db: Db;
  uri: string;
  name: string;
  connection: Database;
  drop(): Promise<void>;
}

export async function testDatabase(
  opts: { monitorCommands?: (e: CommandStartedEvent) => void } = {},
): Promise<TestDatabase> {
  const uri = process.env.MONGODB_URI;
  if (!uri)
    throw new Error('MONGODB_URI is not set: run the tests through jest (global-setup starts the database)');
  const name = `rampart_test_${randomBytes(6).toString('hex')}`;
  const connection = await connect(uri, name, opts);
  return {
    db: connection.db,
    uri,
    name,
    connection,
    drop: async () => {
      await connection.db.dropDatabase().catch(() => undefined);
      await connection.close();
    },
  };
}
