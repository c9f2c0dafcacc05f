/**
 * The state layer on the real database: both write modes store what the deltas say (whole
 * replacements included), the embedded mode packs what it is told to and reads both forms, a
 * change to a document never read is written without losing what is stored, packed documents are
 * made plain for a Rampart that writes deltas, and admission holds work back while writes are
 * behind and refuses it when the queue is full.
 */
import { testDatabase, type TestDatabase } from '../support/db';
import { StateLayer, type StateOptions } from '../../src/store/state/layer';
import { delta, replacement } from '../../src/store/state/delta';
import { PACKED } from '../../src/store/state/pack';
import { unpackStored } from '../../src/store/migrations';
import { Unavailable } from '../../src/core/errors';
import { MongoClient } from 'mongodb';

const embeddedOnly = process.env.RAMPART_TEST_EMBEDDED === '1' ? describe : describe.skip;
const at = new Date('2026-11-23T10:00:00.000Z');
const later = new Date('2026-11-23T11:00:00.000Z');

let database: TestDatabase;
const errors: unknown[] = [];
const layer = (o: Partial<StateOptions> = {}) => new StateLayer(database.db, { flushIntervalMs: 5, onError: (err) => errors.push(err), ...o });

beforeAll(async () => {
  database = await testDatabase();
});
afterAll(async () => {
  await database?.drop();
});
afterEach(() => {
  expect(errors).toEqual([]);
});

describe.each(['deltas', 'snapshots'] as const)('%s mode', (writeMode) => {
  const modes = writeMode === 'snapshots' ? embeddedOnly : describe;
  modes('writes', () => {
    it('stores deltas, and a replacement overwrites what was stored before it', async () => {
      const col = `replace_${writeMode}`;
      const a = layer({ writeMode });
      await a.read(col, 'x');
      a.apply(col, 'x', delta().inc(['n'], 2).set(['old'], true));
      await a.flush();
      a.put(col, 'x', { n: 10, at });
      a.apply(col, 'x', delta().inc(['n'], 1).max(['at'], later));
      await a.flush();
      expect(await database.db.collection(col).findOne({ _id: 'x' as never })).toMatchObject({ n: 11, at: later });
      expect(await database.db.collection(col).findOne({ _id: 'x' as never })).not.toHaveProperty('old');
      // A fresh layer (another process) reads the same document.
      expect(await layer({ writeMode }).read(col, 'x')).toEqual({ n: 11, at: later });
    });

    it('writes a change to a document it never read without losing what is stored', async () => {
      const col = `blind_${writeMode}`;
      await database.db.collection(col).insertOne({ _id: 'y' as never, kept: 'yes', n: 5 });
      const a = layer({ writeMode });
      a.apply(col, 'y', delta().inc(['n'], 1));
      await a.flush();
      expect(await database.db.collection(col).findOne({ _id: 'y' as never })).toEqual({ _id: 'y', kept: 'yes', n: 6 });
    });
  });
});

embeddedOnly('packed documents (embedded database)', () => {
  it('stores the rest of a document in one string beside the query fields, and reads it back', async () => {
    const a = layer({ writeMode: 'snapshots', packed: { people: ['envId', 'email'] } });
    await a.read('people', 'p1');
    a.apply('people', 'p1', delta().set(['envId'], 'e1').set(['email'], 'ada@example.com').max(['seen'], at).inc(['d', 'k', 'n'], 1));
    await a.flush();
    const stored = await database.db.collection('people').findOne({ _id: 'p1' as never });
    expect(Object.keys(stored ?? {}).sort()).toEqual([PACKED, '_id', 'email', 'envId'].sort());
    // Queries still filter on the kept fields.
    expect(await database.db.collection('people').countDocuments({ envId: 'e1', email: 'ada@example.com' })).toBe(1);
    expect(await layer({ writeMode: 'snapshots' }).read('people', 'p1')).toEqual({ envId: 'e1', email: 'ada@example.com', seen: at, d: { k: { n: 1 } } });
  });

  it('are made plain again for a Rampart that writes deltas, which then apply to their fields', async () => {
    const a = layer({ writeMode: 'snapshots', packed: { plain: ['envId'] } });
    await a.read('plain', 'q');
    a.apply('plain', 'q', delta().set(['envId'], 'e1').inc(['n'], 4));
    await a.flush();
    expect(await unpackStored(database.db, ['plain'], { info: () => undefined })).toBe(1);
    const b = layer({ writeMode: 'deltas' });
    b.apply('plain', 'q', delta().inc(['n'], 1));
    await b.flush();
    expect(await database.db.collection('plain').findOne({ _id: 'q' as never })).toEqual({ _id: 'q', envId: 'e1', n: 5 });
  });
});

/** A test database that records the `_id` list of every find on `collection`. */
async function watchingFinds(collection: string): Promise<{ watched: TestDatabase; finds: string[][] }> {
  const finds: string[][] = [];
  const watched = await testDatabase({
    monitorCommands: (e) => {
      const filter = (e.command as { filter?: { _id?: { $in?: string[] } } }).filter;
      if (e.commandName === 'find' && e.command.find === collection) finds.push(filter?._id?.$in ?? []);
    },
  });
  return { watched, finds };
}

describe('look-ups', () => {
  it('go one at a time per collection: misses that arrive meanwhile share the next one, and each read gets its document', async () => {
    const { watched, finds } = await watchingFinds('lookups');
    try {
      await watched.db.collection('lookups').insertMany(Array.from({ length: 30 }, (_, i) => ({ _id: `d${i}` as never, n: i })));
      const a = new StateLayer(watched.db, { onError: (err) => errors.push(err) });
      // One miss per turn of the event loop: before, each turn sent its own look-up.
      const reads: Promise<unknown>[] = [];
      for (let i = 0; i < 30; i++) {
        reads.push(a.read('lookups', i % 10 === 9 ? `missing${i}` : `d${i}`));
        await new Promise((r) => setImmediate(r));
      }
      expect(await Promise.all(reads)).toEqual(Array.from({ length: 30 }, (_, i) => (i % 10 === 9 ? null : { n: i })));
      expect(finds.flat().sort()).toEqual(Array.from({ length: 30 }, (_, i) => (i % 10 === 9 ? `missing${i}` : `d${i}`)).sort());
      expect(finds.length).toBeLessThan(30);
      // Cached now: no more look-ups.
      expect(a.cached('lookups', 'd3')).toEqual({ n: 3 });
      expect(a.cached('lookups', 'missing9')).toBeNull();
      expect(a.cached('lookups', 'never-read')).toBeUndefined();
    } finally {
      await watched.drop();
    }
  });
});

describe('readAll', () => {
  it('reads cached, stored and missing documents in one look-up, in the order asked, or answers undefined past its deadline', async () => {
    const { watched, finds } = await watchingFinds('many');
    try {
      await watched.db.collection('many').insertMany([{ _id: 'a' as never, n: 1 }, { _id: 'b' as never, n: 2 }]);
      const a = new StateLayer(watched.db, { onError: (err) => errors.push(err) });
      a.put('many', 'c', { n: 3 });
      await a.flush();
      expect(await a.readAll('many', ['b', 'c', 'none', 'a'])).toEqual([{ n: 2 }, { n: 3 }, null, { n: 1 }]);
      // 'c' was known (written by this layer): one look-up for the three others.
      expect(finds).toEqual([['b', 'none', 'a']]);
      // All cached now: no look-up at all.
      expect(await a.readAll('many', ['a', 'none'], Date.now() + 1000)).toEqual([{ n: 1 }, null]);
      expect(finds).toHaveLength(1);
      // A deadline already past: not read in time (the look-up still fills the cache).
      expect(await a.readAll('many', ['a', 'late'], Date.now() - 1)).toBeUndefined();
      // The late look-up still fills the cache, when it comes back: a read without a deadline
      // joins it rather than starting another.
      expect(await a.read('many', 'late')).toBeNull();
      expect(a.cached('many', 'late')).toBeNull();
      expect(finds).toEqual([['b', 'none', 'a'], ['late']]);
    } finally {
      await watched.drop();
    }
  });
});

describe('admission', () => {
  it('holds new work back while writes are behind, lets it in once they are written, and refuses it when the queue is full', async () => {
    // Nothing is written until flush() is called.
    const a = layer({ flushIntervalMs: 60_000, backpressureAt: 3, queueLimit: 6 });
    await expect(a.admit(Date.now() + 60_000)).resolves.toBeUndefined();
    for (let i = 0; i < 3; i++) a.apply('admission', `k${i}`, delta().inc(['n'], 1));
    expect(a.pressure).toBe('behind');
    let admitted = false;
    const held = a.admit(Date.now() + 60_000).then(() => {
      admitted = true;
    });
    await new Promise((r) => setImmediate(r));
    expect(admitted).toBe(false);
    await a.flush();
    await held;
    expect(admitted).toBe(true);
    expect(a.pressure).toBe('ok');
    for (let i = 0; i < 6; i++) a.apply('admission', `k${i}`, delta().inc(['n'], 1));
    expect(a.pressure).toBe('full');
    await expect(a.admit(Date.now() + 60_000)).rejects.toBeInstanceOf(Unavailable);
    await a.flush();
    expect(await database.db.collection('admission').countDocuments({})).toBe(6);
  });

  it('refuses held work at its deadline while the database is writing but stays far behind (a crash would lose the backlog); lets it in while the database is down', async () => {
    // More work arriving than the database writes: past twice the mark at the deadline, 503.
    const a = layer({ flushIntervalMs: 60_000, backpressureAt: 2, queueLimit: 100 });
    for (let i = 0; i < 4; i++) a.apply('overload', `k${i}`, delta().inc(['n'], 1));
    await expect(a.admit(Date.now() + 20)).rejects.toThrow(/database is behind \(4 writes waiting\)/);
    await expect(a.admit(Date.now() - 1)).rejects.toBeInstanceOf(Unavailable);
    // Between the mark and twice it, held work still goes in at its deadline.
    await a.flush();
    for (let i = 0; i < 3; i++) a.apply('overload', `k${i}`, delta().inc(['n'], 1));
    await expect(a.admit(Date.now() + 20)).resolves.toBeUndefined();
    await a.flush();
    expect(await database.db.collection('overload').countDocuments({ n: { $gte: 1 } })).toBe(4);

    // A database that cannot be reached: its flush fails, and work goes in (up to queueLimit) so
    // that the outage is ridden out; nothing is dropped.
    const unreachable = new MongoClient('mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=100&connectTimeoutMS=100&directConnection=true');
    const down = new StateLayer(unreachable.db('down'), { flushIntervalMs: 60_000, backpressureAt: 2, queueLimit: 100, retryBaseMs: 60_000, retryMaxMs: 60_000, onError: () => undefined });
    try {
      for (let i = 0; i < 4; i++) down.apply('overload', `k${i}`, delta().inc(['n'], 1));
      await expect(down.flush(1_000)).rejects.toThrow();
      await expect(down.admit(Date.now() + 20)).resolves.toBeUndefined();
      expect(down.pressure).toBe('behind');
    } finally {
      await down.close(10).catch(() => undefined);
      await unreachable.close();
    }
  });

  it('lets held work in at its deadline even if the writes are still behind', async () => {
    const a = layer({ flushIntervalMs: 60_000, backpressureAt: 1, queueLimit: 100 });
    a.apply('deadline', 'k', delta().inc(['n'], 1));
    await expect(a.admit(Date.now() + 20)).resolves.toBeUndefined();
    expect(a.pressure).toBe('behind');
    await a.flush();
  });
});

it('replacement() is a whole document, as put() writes it', () => {
  expect(replacement({ a: 1 })).toEqual([{ op: 'replace', path: [], value: { a: 1 } }]);
});
