/**
 * The state layer on the real database: both write modes store what the deltas say (whole
 * replacements included), the embedded mode packs what it is told to and reads both forms, a
 * change to a document never read is written without losing what is stored, packed documents are
 * made plain for a Rampart that writes deltas, admission refuses new work once the oldest
 * unwritten change is a second old (and holds it back past half that), and durable() answers once
 * what was queued before it is written.
 */
import { testDatabase, type TestDatabase } from '../support/db';
import { StateLayer, type StateOptions } from '../../src/store/state/layer';
import { delta, replacement } from '../../src/store/state/delta';
import { PACKED } from '../../src/store/state/pack';
import { unpackStored } from '../../src/store/migrations';
import { Unavailable } from '../../src/core/errors';

const embeddedOnly = process.env.RAMPART_TEST_EMBEDDED === '1' ? describe : describe.skip;
const at = new Date('2026-11-23T10:00:00.000Z');
const later = new Date('2026-11-23T11:00:00.000Z');

let database: TestDatabase;
const errors: unknown[] = [];
const layer = (o: Partial<StateOptions> = {}) =>
  new StateLayer(database.db, { flushIntervalMs: 5, onError: (err) => errors.push(err), ...o });

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
      expect(await database.db.collection(col).findOne({ _id: 'x' as never })).toMatchObject({
        n: 11,
        at: later,
      });
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
      expect(await database.db.collection(col).findOne({ _id: 'y' as never })).toEqual({
        _id: 'y',
        kept: 'yes',
        n: 6,
      });
    });
  });
});

embeddedOnly('packed documents (embedded database)', () => {
  it('stores the rest of a document in one string beside the query fields, and reads it back', async () => {
    const a = layer({ writeMode: 'snapshots', packed: { people: ['envId', 'email'] } });
    await a.read('people', 'p1');
    a.apply(
      'people',
      'p1',
      delta()
        .set(['envId'], 'e1')
        .set(['email'], 'ada@example.com')
        .max(['seen'], at)
        .inc(['d', 'k', 'n'], 1),
    );
    await a.flush();
    const stored = await database.db.collection('people').findOne({ _id: 'p1' as never });
    expect(Object.keys(stored ?? {}).sort()).toEqual([PACKED, '_id', 'email', 'envId'].sort());
    // Queries still filter on the kept fields.
    expect(
      await database.db.collection('people').countDocuments({ envId: 'e1', email: 'ada@example.com' }),
    ).toBe(1);
    expect(await layer({ writeMode: 'snapshots' }).read('people', 'p1')).toEqual({
      envId: 'e1',
      email: 'ada@example.com',
      seen: at,
      d: { k: { n: 1 } },
    });
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
    expect(await database.db.collection('plain').findOne({ _id: 'q' as never })).toEqual({
      _id: 'q',
      envId: 'e1',
      n: 5,
    });
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
      await watched.db
        .collection('lookups')
        .insertMany(Array.from({ length: 30 }, (_, i) => ({ _id: `d${i}` as never, n: i })));
      const a = new StateLayer(watched.db, { onError: (err) => errors.push(err) });
      // One miss per turn of the event loop: before, each turn sent its own look-up.
      const reads: Promise<unknown>[] = [];
      for (let i = 0; i < 30; i++) {
        reads.push(a.read('lookups', i % 10 === 9 ? `missing${i}` : `d${i}`));
        await new Promise((r) => setImmediate(r));
      }
      expect(await Promise.all(reads)).toEqual(
        Array.from({ length: 30 }, (_, i) => (i % 10 === 9 ? null : { n: i })),
      );
      expect(finds.flat().sort()).toEqual(
        Array.from({ length: 30 }, (_, i) => (i % 10 === 9 ? `missing${i}` : `d${i}`)).sort(),
      );
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
      await watched.db.collection('many').insertMany([
        { _id: 'a' as never, n: 1 },
        { _id: 'b' as never, n: 2 },
      ]);
      const a = new StateLayer(watched.db, { onError: (err) => errors.push(err) });
      a.put('many', 'c', { n: 3 });
      await a.flush();
      expect(await a.readAll('many', ['b', 'c', 'none', 'a'])).toEqual([{ n: 2 }, { n: 3 }, null, { n: 1 }]);
      // 'c' was known (written by this layer): one look-up for the three others.
      expect(finds).toEqual([['b', 'none', 'a']]);
      // All cached now: no look-up at all.
      expect(await a.readAll('many', ['a', 'none'], Date.now() + 60_000)).toEqual([{ n: 1 }, null]);
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

describe('admission by age, and durability', () => {
  it('refuses new work once the oldest unwritten change is maxUnwrittenMs old, and admits it again once written', async () => {
    const clock = { t: Date.now() };
    const a = layer({ flushIntervalMs: 60_000, maxUnwrittenMs: 1000, now: () => clock.t });
    a.apply('age', 'k', delta().inc(['n'], 1));
    expect(a.oldestUnwrittenMs()).toBe(0);
    clock.t += 999;
    expect(a.pressure).toBe('behind');
    expect(() => a.check()).not.toThrow();
    clock.t += 1;
    expect(a.oldestUnwrittenMs()).toBe(1000);
    expect(a.pressure).toBe('full');
    await expect(a.admit(clock.t)).rejects.toBeInstanceOf(Unavailable);
    await expect(a.admit()).rejects.toThrow(/a change waits to be written for 1000 ms/);
    expect(() => a.check()).toThrow(Unavailable);
    await a.flush();
    expect(a.oldestUnwrittenMs()).toBe(0);
    expect(a.pressure).toBe('ok');
    await expect(a.admit(clock.t + 60_000)).resolves.toBeUndefined();
    // Statistics held back on purpose (late changes) do not age the backlog.
    a.apply('age', 'stat', delta().inc(['n'], 1), true);
    clock.t += 5_000;
    expect(a.oldestUnwrittenMs()).toBe(0);
    expect(a.pressure).toBe('ok');
    await a.flush();
    expect(await database.db.collection('age').countDocuments({})).toBe(2);
  });

  it('holds new work back past half the bound until a flush brings the age down', async () => {
    const clock = { t: Date.now() };
    const a = layer({ flushIntervalMs: 60_000, maxUnwrittenMs: 1000, now: () => clock.t });
    a.insert('held', { _id: 'one' });
    clock.t += 600;
    let admitted = false;
    const held = a.admit(Date.now() + 60_000).then(() => {
      admitted = true;
    });
    await new Promise((r) => setImmediate(r));
    expect(admitted).toBe(false);
    await a.flush();
    await held;
    expect(admitted).toBe(true);
  });

  // Its deadline passing while the database hangs: state-watchdog.test.ts.
  it('durable() starts a flush at once, and resolves once what was queued before it is written (one flush for all)', async () => {
    let flushes = 0;
    // A minute between flushes: a caller waiting for its changes does not wait it out.
    const a = layer({
      flushIntervalMs: 60_000,
      observer: { read: () => undefined, flushed: () => flushes++ },
    });
    await expect(a.durable()).resolves.toBeUndefined();
    expect(flushes).toBe(0);
    a.insert('durable', { _id: 'first' });
    a.apply('durable', 'doc', delta().inc(['n'], 1));
    await Promise.all([a.durable(), a.durable()]);
    expect(flushes).toBe(1);
    expect(await database.db.collection('durable').countDocuments({})).toBe(2);
    // What is queued after a durable() call is not waited for by it.
    const b = layer({ flushIntervalMs: 5 });
    b.insert('durable2', { _id: 'a' });
    const first = b.durable();
    b.insert('durable2', { _id: 'b' });
    await first;
    expect(await database.db.collection('durable2').findOne({ _id: 'a' as never })).not.toBeNull();
    await b.flush();
  });

  it('refuses work when the queue is full, whatever the age', async () => {
    const a = layer({ flushIntervalMs: 60_000, queueLimit: 3 });
    for (let i = 0; i < 3; i++) a.apply('full', `k${i}`, delta().inc(['n'], 1));
    expect(a.pressure).toBe('full');
    await expect(a.admit()).rejects.toThrow(/write queue is full \(3 writes waiting\)/);
    await a.flush();
    expect(a.pressure).toBe('ok');
  });
});

it('replacement() is a whole document, as put() writes it', () => {
  expect(replacement({ a: 1 })).toEqual([{ op: 'replace', path: [], value: { a: 1 } }]);
});
