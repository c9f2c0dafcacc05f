/**
 * The state layer's cache on the real database, alone (no flusher: the test plays its part on an
 * entry's pending and in-flight deltas): a copy is fresh until `maxAgeMs` unless it has unwritten
 * changes, misses share batched look-ups, a look-up waits for the flush of its document and adds
 * the changes still pending, a read past its deadline leaves its look-up filling the cache, and
 * invalidate() drops what it can and forgets the rest's copy.
 */
import { testDatabase, type TestDatabase } from '../support/db';
import { StateCache, type CacheOptions } from '../../src/store/state/cache';
import { delta } from '../../src/store/state/delta';

let database: TestDatabase;
/** The `_id` list of every find, per collection. */
const finds = new Map<string, string[][]>();
const findsOf = (collection: string): string[][] => finds.get(collection) ?? [];

beforeAll(async () => {
  database = await testDatabase({
    monitorCommands: (e) => {
      if (e.commandName !== 'find') return;
      const list = finds.get(String(e.command.find)) ?? [];
      list.push((e.command as { filter?: { _id?: { $in?: string[] } } }).filter?._id?.$in ?? []);
      finds.set(String(e.command.find), list);
    },
  });
});
afterAll(async () => {
  await database?.drop();
});

/** A cache on the test database with a clock the test moves, counting reads by outcome. */
function cacheOf(o: Partial<CacheOptions> = {}, inflight: () => Promise<void> | null = () => null) {
  const clock = { now: 1_000_000 };
  const reads: string[] = [];
  const cache = new StateCache(
    database.db,
    {
      maxEntries: 1000,
      maxAgeMs: null,
      readTimeoutMs: 10_000,
      now: () => clock.now,
      observer: { read: (_, outcome) => reads.push(outcome) },
      ...o,
    },
    inflight,
  );
  return { cache, clock, reads };
}

it('answers from a fresh copy until it is older than maxAgeMs, then reads it again', async () => {
  await database.db.collection('aged').insertOne({ _id: 'a' as never, n: 1 });
  const { cache, clock, reads } = cacheOf({ maxAgeMs: 2000 });
  expect(cache.cached('aged', 'a')).toBeUndefined();
  expect(await cache.read('aged', 'a')).toEqual({ n: 1 });
  await database.db.collection('aged').updateOne({ _id: 'a' as never }, { $set: { n: 2 } });
  clock.now += 2000;
  expect(cache.cached('aged', 'a')).toEqual({ n: 1 });
  expect(await cache.read('aged', 'a')).toEqual({ n: 1 });
  clock.now += 1;
  expect(cache.cached('aged', 'a')).toBeUndefined();
  expect(await cache.read('aged', 'a')).toEqual({ n: 2 });
  expect(reads).toEqual(['miss', 'hit', 'hit', 'stale']);
  // peek() and view() neither count a read nor look anything up.
  clock.now += 10_000;
  expect(cache.peek('aged', 'a')).toEqual({ n: 2 });
  expect(reads).toHaveLength(4);
  expect(findsOf('aged')).toHaveLength(2);
});

it('keeps a copy with unwritten changes fresh at any age, and a look-up adds the changes still pending to what it read', async () => {
  await database.db.collection('pending').insertOne({ _id: 'p' as never, n: 5, kept: true });
  const { cache, clock } = cacheOf({ maxAgeMs: 10 });
  // A change to a document never read (as the flusher queues it): the cache knows only the delta.
  const ops = delta().inc(['n'], 1).ops;
  const e = cache.change('pending', 'p', ops);
  // Queued as the write-behind queue does (an entry's empty queue is shared: never pushed to).
  e.pending = [ops];
  expect(cache.peek('pending', 'p')).toBeUndefined();
  expect(await cache.read('pending', 'p')).toEqual({ n: 6, kept: true });
  clock.now += 60_000;
  expect(cache.cached('pending', 'p')).toEqual({ n: 6, kept: true });
  // Written: the copy ages again.
  e.pending = [];
  expect(cache.cached('pending', 'p')).toBeUndefined();
});

it('looks the misses of one turn up together, at most 500 ids a look-up and each document once', async () => {
  await database.db
    .collection('batched')
    .insertMany(Array.from({ length: 600 }, (_, i) => ({ _id: `d${i}` as never, n: i })));
  const { cache } = cacheOf();
  const ids = Array.from({ length: 600 }, (_, i) => `d${i}`);
  // The same document read twice in one turn: one look-up.
  const [docs, again] = await Promise.all([
    cache.readMany('batched', [...ids, 'd1', 'none']),
    cache.read('batched', 'd1'),
  ]);
  expect(again).toEqual({ n: 1 });
  expect(docs.size).toBe(601);
  expect(docs.get('d599')).toEqual({ n: 599 });
  expect(docs.get('none')).toBeNull();
  expect(findsOf('batched').map((f) => f.length)).toEqual([500, 101]);
  expect(cache.cachedIds('batched', 'd59').sort()).toEqual(
    ['d59', ...Array.from({ length: 10 }, (_, i) => `d59${i}`)].sort(),
  );
});

it('does not look a document up while its changes are in flight: it waits for that flush', async () => {
  await database.db.collection('inflight').insertOne({ _id: 'f' as never, n: 1 });
  let flushed!: () => void;
  const flush = new Promise<void>((resolve) => {
    flushed = resolve;
  });
  const { cache } = cacheOf({}, () => flush);
  const ops = delta().inc(['n'], 1).ops;
  const e = cache.change('inflight', 'f', ops);
  e.inflight = [ops];
  const read = cache.read('inflight', 'f');
  await new Promise((r) => setImmediate(r));
  expect(findsOf('inflight')).toEqual([]);
  // The flush wrote it: the look-up goes now, and finds the document with the change.
  await database.db.collection('inflight').updateOne({ _id: 'f' as never }, { $inc: { n: 1 } });
  e.inflight = null;
  flushed();
  expect(await read).toEqual({ n: 2 });
  expect(findsOf('inflight')).toEqual([['f']]);
});

it('answers undefined past a deadline, and its look-up goes on to fill the cache', async () => {
  await database.db.collection('late').insertOne({ _id: 'l' as never, n: 1 });
  const { cache, clock } = cacheOf();
  expect(await cache.read('late', 'l', clock.now - 1)).toBeUndefined();
  expect(await cache.readAll('late', ['l', 'm'], clock.now)).toBeUndefined();
  // A read without a deadline joins the look-ups under way rather than starting new ones.
  expect(await cache.readAll('late', ['l', 'm'])).toEqual([{ n: 1 }, null]);
  expect(findsOf('late').flat().sort()).toEqual(['l', 'm']);
});

it('invalidate() drops unchanged copies and forgets the copy of a changed one, keeping its changes', async () => {
  await database.db.collection('purged').insertMany([
    { _id: 'x' as never, n: 1 },
    { _id: 'y' as never, n: 1 },
    { _id: 'z' as never, n: 1 },
  ]);
  const { cache } = cacheOf();
  await cache.readAll('purged', ['x', 'y', 'z']);
  const ops = delta().inc(['n'], 10).ops;
  cache.change('purged', 'y', ops).pending = [ops];
  let made = 0;
  const view = () => cache.view('purged', 'y', (doc) => ({ made: ++made, n: doc?.n }));
  expect(view()).toEqual({ made: 1, n: 11 });
  expect(view()).toEqual({ made: 1, n: 11 });
  // The purge deleted y in the database: it is read again, with the change not yet written.
  await database.db.collection('purged').deleteOne({ _id: 'y' as never });
  const size = cache.size;
  cache.invalidate((_, id) => id !== 'z');
  expect(cache.size).toBe(size - 1);
  expect(cache.peek('purged', 'x')).toBeUndefined();
  expect(cache.peek('purged', 'y')).toBeUndefined();
  expect(view()).toBeUndefined();
  expect(cache.cached('purged', 'z')).toEqual({ n: 1 });
  expect(await cache.read('purged', 'y')).toEqual({ n: 10 });
  expect(view()).toEqual({ made: 2, n: 10 });
});

it('answers an aged copy when its look-up is late, and nothing for a document it never had', async () => {
  await database.db.collection('late-read').insertMany([
    { _id: 'held' as never, n: 1 },
    { _id: 'new' as never, n: 9 },
  ]);
  const { cache, clock } = cacheOf({ maxAgeMs: 2000 });
  expect(await cache.read('late-read', 'held')).toEqual({ n: 1 });
  clock.now += 5000;
  // A deadline already past: the look-up cannot answer in time (a failover, a slow database).
  expect(await cache.read('late-read', 'held', clock.now)).toEqual({ n: 1 });
  expect(await cache.read('late-read', 'new', clock.now)).toBeUndefined();
  expect(await cache.readAll('late-read', ['held'], clock.now)).toEqual([{ n: 1 }]);
  expect(await cache.readAll('late-read', ['held', 'never'], clock.now)).toBeUndefined();
  // The look-ups went on and filled the cache.
  expect(await cache.read('late-read', 'new')).toEqual({ n: 9 });
});
