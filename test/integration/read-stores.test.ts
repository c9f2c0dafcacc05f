/**
 * The dashboards' read ports on the real database hold their contract
 * (test/support/contracts/read-stores.ts), as the in-memory fakes do
 * (test/unit/store/read-stores-fake.spec.ts): the MongoDB stores as production builds them on this
 * server (rollups; on Rampart's FerretDB build the embedded searches, with a small bound so that
 * sparse filters stop early and go on), and with no rollups or embedded searches (every filter
 * one query, as MongoDB's indexes serve them).
 */
import { testDatabase, type TestDatabase } from '../support/db';
import { eventWriter } from '../support/stored';
import { READ_STORE_DATA, readStoreContract, T0 } from '../support/contracts/read-stores';
import { ALL_INDEXES } from '../../src/app/build';
import { applyIndexes } from '../../src/store/database';
import { indexesFor, serverKind } from '../../src/store/server-kind';
import { StateLayer } from '../../src/store/state/layer';
import { MongoDebuggerStore } from '../../src/store/events';
import { DEVICES, deviceToDoc } from '../../src/store/user-state';
import { AnalystGate } from '../../src/store/analyst-gate';
import { MongoQueryStore } from '../../src/store/queries';
import { MongoAnalyticsStore } from '../../src/store/analytics';
import { EmbeddedEventSearch } from '../../src/store/embedded-search';
import { EventKeyReader } from '../../src/store/event-keys';
import { RollupReader } from '../../src/store/rollups';

/**
 * Candidates one embedded search reads: few, so that device searches stop early and go on (a
 * quarter of it for devices), and enough for a user's whole activity (a quarter of it: 4).
 */
const MAX_EXAMINED = 16;

let database: TestDatabase | undefined;
let seeded: Promise<TestDatabase> | undefined;

/** One database for both runs: the data written as production writes it. */
function seed(): Promise<TestDatabase> {
  seeded ??= (async () => {
    database = await testDatabase();
    const db = database.db;
    await applyIndexes(db, indexesFor(await serverKind(db), ALL_INDEXES));
    const state = new StateLayer(db, {
      flushIntervalMs: 5,
      onError: (err) => {
        throw err;
      },
    });
    const events = await eventWriter(db, state);
    const rejected = new MongoDebuggerStore({ db, state });
    // Oldest first, as they arrive: the rollups then count from the first event's minute on.
    const byTime = [...READ_STORE_DATA.events].sort(
      (a, b) => a.occurredAt.getTime() - b.occurredAt.getTime(),
    );
    const written = [
      ...byTime.map((e) => events.append(e)),
      ...READ_STORE_DATA.rejected.map((r) => rejected.append(r)),
    ];
    await state.flush();
    await Promise.all(written);
    await state.close(60_000);
    // The devices' dashboard copy, as the user store writes it.
    await db.collection(DEVICES).insertMany(READ_STORE_DATA.devices.map((d) => deviceToDoc(d)) as never[]);
    return database;
  })();
  return seeded;
}

afterAll(async () => {
  await database?.drop();
});

const limits = () => ({
  maxTimeMS: 30_000,
  gate: new AnalystGate({ waitMs: 60_000, concurrency: 2, share: 1 }),
});

readStoreContract('the MongoDB stores as built for this server', async () => {
  const { db } = await seed();
  const kind = await serverKind(db);
  const analyst = limits();
  const embedded = kind.indexPushdown
    ? new EmbeddedEventSearch({
        db,
        limits: analyst,
        keys: new EventKeyReader({ db, gate: analyst.gate, maxTimeMS: analyst.maxTimeMS }),
        maxExamined: MAX_EXAMINED,
      })
    : undefined;
  const rollups = new RollupReader({
    db,
    gate: analyst.gate,
    maxTimeMS: analyst.maxTimeMS,
    now: () => T0,
    indexed: kind.indexPushdown || !kind.ferretdb,
  });
  return {
    queries: new MongoQueryStore({ db, limits: analyst, embedded }),
    analytics: new MongoAnalyticsStore({ db, limits: analyst, rollups, embedded }),
  };
});

readStoreContract('the MongoDB stores, every filter one query', async () => {
  const { db } = await seed();
  const analyst = limits();
  return {
    queries: new MongoQueryStore({ db, limits: analyst }),
    analytics: new MongoAnalyticsStore({ db, limits: analyst }),
  };
});
