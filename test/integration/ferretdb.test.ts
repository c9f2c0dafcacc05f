/**
 * Rampart's FerretDB build keeps its promises (scripts/ferretdb/*.patch): `_id` look-ups, single
 * and batched (`$in`), use the `_id` index; concurrent updates of one document lose nothing; and
 * an insert marked "rampart:upsert" replaces documents. Each of these tests fails on an unpatched
 * FerretDB 1.24.2. (0004, which stops FerretDB's leak-hunting resource tracking, changes only
 * what a command costs; `npm run bench` shows it.)
 * They are about the embedded database, so they are skipped when MONGODB_URI points elsewhere.
 */
import { MongoClient } from 'mongodb';
import { testDatabase, type TestDatabase } from '../support/db';
import { UPSERT_COMMENT } from '../../src/store/state/layer';

const embeddedOnly = process.env.RAMPART_TEST_EMBEDDED === '1' ? describe : describe.skip;

embeddedOnly('the embedded FerretDB build', () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await testDatabase();
  });
  afterAll(async () => {
    await database?.drop();
  });

  it('finds by _id through the _id index, never by scanning (EXPLAIN QUERY PLAN)', async () => {
    const col = database.db.collection<{ _id: string; n: number }>('plans');
    await col.insertMany(Array.from({ length: 50 }, (_, i) => ({ _id: `k${i}`, n: i })));
    const explained = await database.db.command({ explain: { find: 'plans', filter: { _id: 'k7' } } });
    const plan = JSON.stringify(explained.queryPlanner);
    // Before the fix: "SCAN plans_…"; after: "SEARCH plans_… USING INDEX plans_…__id_ (<expr>=?)".
    expect(plan).toMatch(/SEARCH \S+ USING INDEX \S+__id_/);
    expect(plan).not.toMatch(/\bSCAN\b/);
    expect((await col.findOne({ _id: 'k7' }))?.n).toBe(7);
  });

  it('finds a batch of _ids ({$in}) through the _id index, and still applies the whole filter', async () => {
    const col = database.db.collection<{ _id: string; n: number }>('batches');
    await col.insertMany(Array.from({ length: 50 }, (_, i) => ({ _id: `k${i}`, n: i })));
    const ids = ['k3', 'k17', 'k42', 'missing'];
    const explained = await database.db.command({
      explain: { find: 'batches', filter: { _id: { $in: ids } } },
    });
    const plan = JSON.stringify(explained.queryPlanner);
    expect(plan).toMatch(/SEARCH \S+ USING INDEX \S+__id_/);
    expect(plan).not.toMatch(/\bSCAN\b/);
    const found = await col
      .find({ _id: { $in: ids } })
      .sort({ _id: 1 })
      .toArray();
    expect(found).toEqual([
      { _id: 'k17', n: 17 },
      { _id: 'k3', n: 3 },
      { _id: 'k42', n: 42 },
    ]);
    // Anything else than strings (or ObjectIds) in the list is not pushed down, and still right.
    await col.insertOne({ _id: 7 as unknown as string, n: 7 });
    expect(
      await col
        .find({ _id: { $in: [7 as unknown as string, 'k1'] } })
        .sort({ n: 1 })
        .toArray(),
    ).toEqual([
      { _id: 'k1', n: 1 },
      { _id: 7, n: 7 },
    ]);
  });

  it('loses no increment when 40 clients update one document at once, and never refuses an upsert', async () => {
    // Separate clients: separate connections, so the updates really run concurrently.
    const clients = await Promise.all(
      Array.from({ length: 8 }, () => new MongoClient(database.uri).connect()),
    );
    try {
      let acknowledged = 0;
      const refused: unknown[] = [];
      await Promise.all(
        Array.from({ length: 40 }, async (_, w) => {
          const col = (clients[w % clients.length] as MongoClient)
            .db(database.name)
            .collection<{ _id: string; n?: number }>('hot');
          for (let i = 0; i < 25; i++) {
            try {
              // A fresh document per round and the shared one: upserts race on a new _id too.
              await col.updateOne({ _id: `round-${i}` }, { $inc: { n: 1 } }, { upsert: true });
              await col.updateOne({ _id: 'shared' }, { $inc: { n: 1 } }, { upsert: true });
              acknowledged++;
            } catch (err) {
              refused.push(err);
            }
          }
        }),
      );
      expect(refused).toEqual([]);
      const col = database.db.collection<{ _id: string; n: number }>('hot');
      expect((await col.findOne({ _id: 'shared' }))?.n).toBe(acknowledged);
      const rounds = await col.find({ _id: { $ne: 'shared' } }).toArray();
      expect(rounds.reduce((sum, d) => sum + d.n, 0)).toBe(acknowledged);
    } finally {
      await Promise.all(clients.map((c) => c.close()));
    }
  });

  it('replaces whole documents in one insert marked rampart:upsert, and only then', async () => {
    const col = database.db.collection<{ _id: string; v: number }>('upserts');
    await col.insertMany([
      { _id: 'a', v: 1 },
      { _id: 'b', v: 1 },
    ]);
    await col.insertMany(
      [
        { _id: 'a', v: 2 },
        { _id: 'c', v: 2 },
      ],
      { comment: UPSERT_COMMENT, ordered: false },
    );
    expect(await col.find({}).sort({ _id: 1 }).toArray()).toEqual([
      { _id: 'a', v: 2 },
      { _id: 'b', v: 1 },
      { _id: 'c', v: 2 },
    ]);
    // Without the marker, an insert of an existing _id is still a duplicate-key error.
    await expect(col.insertOne({ _id: 'a', v: 3 })).rejects.toMatchObject({ code: 11000 });
  });
});
