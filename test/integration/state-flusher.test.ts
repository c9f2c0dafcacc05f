/**
 * The state layer's write-behind flusher on the real database, alone (entries made by the test
 * stand for the cache's): each document's deltas coalesced and written in commands of at most
 * `maxUpdateBatch` statements, inserts written once (an `_id` already there is no error), a write
 * the database refuses dropped and counted while the rest is written, a flush that fails keeping
 * everything queued and counting failures until the database answers again, gatherers handed over
 * on an explicit flush, and (embedded database) documents never read filled first, then written whole.
 */
import { MongoClient, type Db } from 'mongodb';
import { testDatabase, type TestDatabase } from '../support/db';
import {
  WriteBehind,
  UPSERT_COMMENT,
  type FlushHooks,
  type FlushOptions,
} from '../../src/store/state/flusher';
import type { Entry } from '../../src/store/state/cache';
import { applyDelta, delta, type Delta, type Doc } from '../../src/store/state/delta';
import { DEFAULT_STATE_OPTIONS } from '../../src/store/state/layer';
import { waitFor } from '../support/wait';

const embeddedOnly = process.env.RAMPART_TEST_EMBEDDED === '1' ? describe : describe.skip;

let database: TestDatabase;
/** Per command name, what each command sent: its statements or documents, and its comment. */
const commands: { name: string; collection: string; n: number; comment?: unknown }[] = [];
const errors: { err: unknown; what: string }[] = [];

beforeAll(async () => {
  database = await testDatabase({
    monitorCommands: (e) => {
      const c = e.command as {
        update?: string;
        insert?: string;
        updates?: unknown[];
        documents?: unknown[];
        comment?: unknown;
      };
      if (e.commandName === 'update')
        commands.push({ name: 'update', collection: String(c.update), n: c.updates?.length ?? 0 });
      if (e.commandName === 'insert')
        commands.push({
          name: 'insert',
          collection: String(c.insert),
          n: c.documents?.length ?? 0,
          comment: c.comment,
        });
    },
  });
});
afterAll(async () => {
  await database?.drop();
});
beforeEach(() => {
  errors.length = 0;
});

/** The commands of `name` on `collection` sent since the `since`th command. */
const sent = (name: string, collection: string, since = 0) =>
  commands.slice(since).filter((c) => c.name === name && c.collection === collection);

/** A flusher that writes only when told to (flush()), with its hooks and what it reported. */
function flusherOf(db: Db, o: Partial<FlushOptions> = {}, hooks: Partial<FlushHooks> = {}) {
  const report = {
    flushes: [] as { updates: number; inserts: number; ok: boolean }[],
    dropped: [] as [string, number][],
    released: 0,
  };
  const flusher = new WriteBehind(
    db,
    {
      ...DEFAULT_STATE_OPTIONS,
      flushIntervalMs: 60_000,
      onError: (err, what) => errors.push({ err, what }),
      observer: {
        flushed: ({ updates, inserts, ok }) => report.flushes.push({ updates, inserts, ok }),
        dropped: (collection, n) => report.dropped.push([collection, n]),
      },
      ...o,
    },
    { fill: () => Promise.reject(new Error('not expected')), flushed: () => report.released++, ...hooks },
  );
  return { flusher, report };
}

/** A cache entry for a document (as cache.ts makes it), its copy `value` if known. */
const entry = (collection: string, id: string, value?: Doc | null): Entry => ({
  collection,
  id,
  value,
  noted: false,
  pending: [],
  inflight: null,
  loading: null,
  readAt: 0,
  version: 0,
});

/** Apply `d` to the entry's copy, as the cache does, and queue it. */
function change(flusher: WriteBehind, e: Entry, d: Delta): void {
  if (e.value !== undefined) e.value = applyDelta(e.value, d);
  flusher.enqueue(e, d.ops);
}

it("coalesces each document's deltas into one update, sends at most maxUpdateBatch a command, and inserts; the backlog counts them down", async () => {
  const { flusher, report } = flusherOf(database.db, { maxUpdateBatch: 2 });
  const at = new Date('2026-11-23T10:00:00.000Z');
  const entries = Array.from({ length: 5 }, (_, i) => entry('coalesced', `c${i}`));
  for (const e of entries)
    for (let k = 1; k <= 3; k++)
      change(
        flusher,
        e,
        delta()
          .inc(['n'], k)
          .max(['at'], new Date(at.getTime() - k)),
      );
  const done: boolean[] = [];
  for (let i = 0; i < 3; i++)
    flusher.insert('inserted', { _id: `i${i}` as never, i }, (inserted) => done.push(inserted));
  expect(flusher.backlog).toBe(18);
  await flusher.flush();
  expect(flusher.backlog).toBe(0);
  expect(sent('update', 'coalesced').map((c) => c.n)).toEqual([2, 2, 1]);
  expect(await database.db.collection('coalesced').find({}).sort({ _id: 1 }).toArray()).toEqual(
    entries.map((e) => ({ _id: e.id, n: 6, at: new Date(at.getTime() - 1) })),
  );
  expect(done).toEqual([true, true, true]);
  expect(await database.db.collection('inserted').countDocuments({})).toBe(3);
  expect(report.flushes).toEqual([{ updates: 5, inserts: 3, ok: true }]);
  expect(report.released).toBe(1);
  expect(entries.every((e) => e.pending.length === 0 && e.inflight === null)).toBe(true);
  expect(errors).toEqual([]);
});

it('writes a collection that waits (writeOrder) only after what it waits for, through a chain', async () => {
  // c waits for b, which waits for a; queued in the reverse order.
  const { flusher } = flusherOf(database.db, {
    writeOrder: { 'chain-b': ['chain-a'], 'chain-c': ['chain-b'] },
  });
  const since = commands.length;
  for (const name of ['chain-c', 'chain-b', 'chain-a', 'chain-free'])
    change(flusher, entry(name, `${name}-1`), delta().inc(['n'], 1));
  await flusher.flush();
  const order = commands
    .slice(since)
    .filter((c) => c.name === 'update')
    .map((c) => c.collection);
  expect(order.filter((c) => c !== 'chain-free')).toEqual(['chain-a', 'chain-b', 'chain-c']);
  expect(order).toContain('chain-free');
  for (const name of ['chain-a', 'chain-b', 'chain-c', 'chain-free'])
    expect(await database.db.collection(name).findOne({})).toEqual({ _id: `${name}-1`, n: 1 });
  expect(errors).toEqual([]);
});

it('finds an insert already there (not inserted, no error), and drops a write the database refuses while writing the rest', async () => {
  await database.db.collection('kept').insertOne({ _id: 'dup' as never, first: true });
  await database.db.collection('refusals').insertOne({ _id: 'r1' as never, s: 'text' });
  const { flusher, report } = flusherOf(database.db);
  const done: [string, boolean][] = [];
  for (const id of ['dup', 'new'])
    flusher.insert('kept', { _id: id as never }, (inserted) => done.push([id, inserted]));
  // Ordered: the refused update comes first, the one after it is still written.
  change(flusher, entry('refusals', 'r1'), delta().inc(['s'], 1));
  change(flusher, entry('refusals', 'r2'), delta().inc(['n'], 1));
  await flusher.flush();
  expect(done.sort()).toEqual([
    ['dup', false],
    ['new', true],
  ]);
  expect(await database.db.collection('kept').findOne({ _id: 'dup' as never })).toEqual({
    _id: 'dup',
    first: true,
  });
  expect(await database.db.collection('refusals').find({}).sort({ _id: 1 }).toArray()).toEqual([
    { _id: 'r1', s: 'text' },
    { _id: 'r2', n: 1 },
  ]);
  expect(errors.map((e) => e.what)).toEqual(['write refused by the database (refusals r1); change dropped']);
  expect(report.dropped).toEqual([['refusals', 1]]);
  expect(flusher.backlog).toBe(0);
  expect(flusher.failing).toBeNull();
});

it('keeps everything queued while flushes fail, says why, and writes it all, in order, once the database answers', async () => {
  // The same flusher on a server that cannot be reached, then on the test database.
  const unreachable = new MongoClient(
    'mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=100&connectTimeoutMS=100&directConnection=true',
  );
  const current = { db: unreachable.db('down') };
  const db = new Proxy({} as Db, { get: (_, key) => Reflect.get(current.db, key).bind(current.db) });
  const { flusher, report } = flusherOf(db, { retryBaseMs: 5, retryMaxMs: 20 });
  try {
    const e = entry('outage', 'o');
    change(flusher, e, delta().inc(['n'], 1));
    change(flusher, e, delta().set(['state'], 'first'));
    const done: boolean[] = [];
    flusher.insert('outage_events', { _id: 'ev' as never }, (inserted) => done.push(inserted));
    // A failed flush puts the document's two deltas back as the one update they coalesced into.
    await expect(flusher.flush(1000)).rejects.toThrow(/could not write 2 queued changes within 1000 ms/);
    expect(flusher.failing).toEqual(expect.any(String));
    expect(errors.length).toBeGreaterThan(0);
    expect(errors.every((x) => x.what === 'flush')).toBe(true);
    expect(report.flushes.every((f) => !f.ok)).toBe(true);
    expect(report.released).toBe(report.flushes.length);
    // The deltas taken by the failed flushes came back in front of newer ones, as (fewer) groups.
    change(flusher, e, delta().set(['state'], 'second'));
    expect(flusher.backlog).toBe(3);
    expect(done).toEqual([]);

    current.db = database.db;
    await flusher.flush();
    expect(flusher.failing).toBeNull();
    expect(flusher.backlog).toBe(0);
    expect(done).toEqual([true]);
    expect(await database.db.collection('outage').findOne({ _id: 'o' as never })).toEqual({
      _id: 'o',
      n: 1,
      state: 'second',
    });
    expect(await database.db.collection('outage_events').countDocuments({})).toBe(1);
  } finally {
    await flusher.close(1000);
    await unreachable.close();
  }
});

it('hands over what the gatherers hold on an explicit flush, and close() writes everything queued', async () => {
  const { flusher } = flusherOf(database.db);
  const held = ['g1', 'g2'];
  flusher.addGatherer(() => {
    for (const id of held.splice(0)) flusher.insert('gathered', { _id: id as never });
  });
  await flusher.flush();
  expect(await database.db.collection('gathered').countDocuments({})).toBe(2);
  held.push('g3');
  change(flusher, entry('gathered_state', 's'), delta().inc(['n'], 1));
  await flusher.close(1000);
  expect(await database.db.collection('gathered').countDocuments({})).toBe(3);
  expect(await database.db.collection('gathered_state').findOne({ _id: 's' as never })).toEqual({
    _id: 's',
    n: 1,
  });
  expect(flusher.backlog).toBe(0);
});

embeddedOnly('snapshots (embedded database)', () => {
  it('reads a document changed without being read first, then writes each document whole in insert-or-replace commands', async () => {
    await database.db.collection('whole').insertOne({ _id: 'blind' as never, kept: 'yes', n: 5 });
    const filled: string[] = [];
    const { flusher } = flusherOf(
      database.db,
      { writeMode: 'snapshots' },
      {
        fill: async (e) => {
          filled.push(e.id);
          const { _id, ...stored } =
            (await database.db.collection('whole').findOne({ _id: e.id as never })) ?? {};
          e.value = e.pending.reduce<Doc>((doc, ops) => applyDelta(doc, ops), stored);
        },
      },
    );
    const since = commands.length;
    change(flusher, entry('whole', 'blind'), delta().inc(['n'], 1));
    change(flusher, entry('whole', 'known', null), delta().set(['a'], 1));
    await flusher.flush();
    expect(filled).toEqual(['blind']);
    expect(sent('update', 'whole', since)).toEqual([]);
    expect(sent('insert', 'whole', since)).toEqual([
      { name: 'insert', collection: 'whole', n: 2, comment: UPSERT_COMMENT },
    ]);
    expect(await database.db.collection('whole').find({}).sort({ _id: 1 }).toArray()).toEqual([
      { _id: 'blind', kept: 'yes', n: 6 },
      { _id: 'known', a: 1 },
    ]);
    expect(errors).toEqual([]);
  });

  it('writes inserts in plain insert commands: an _id already there is found, a refused document dropped, a missing _id given', async () => {
    await database.db.collection('plain').insertOne({ _id: 'dup' as never, first: true });
    const { flusher, report } = flusherOf(database.db, { writeMode: 'snapshots' });
    const done: [string, boolean][] = [];
    const since = commands.length;
    flusher.insert('plain', { _id: 'dup' as never, first: false }, (ok) => done.push(['dup', ok]));
    flusher.insert('plain', { _id: 'new' as never, n: 1 }, (ok) => done.push(['new', ok]));
    // The database refuses an array as an _id.
    flusher.insert('plain', { _id: ['no'] as never }, (ok) => done.push(['array', ok]));
    const bare: { _id?: unknown; bare: boolean } = { bare: true };
    flusher.insert('plain', bare, (ok) => done.push(['bare', ok]));
    await flusher.flush();
    expect(sent('insert', 'plain', since)).toEqual([
      { name: 'insert', collection: 'plain', n: 4, comment: undefined },
    ]);
    expect(done.sort()).toEqual([
      ['array', false],
      ['bare', true],
      ['dup', false],
      ['new', true],
    ]);
    expect(
      await database.db
        .collection('plain')
        .find({ _id: { $in: ['dup', 'new'] as never[] } })
        .sort({ _id: 1 })
        .toArray(),
    ).toEqual([
      { _id: 'dup', first: true },
      { _id: 'new', n: 1 },
    ]);
    expect(await database.db.collection('plain').findOne({ bare: true })).toEqual({
      _id: bare._id,
      bare: true,
    });
    expect(errors.map((e) => e.what)).toEqual(['insert refused by the database (plain); document dropped']);
    expect(report.dropped).toEqual([['plain', 1]]);
    expect(flusher.backlog).toBe(0);
    expect(flusher.failing).toBeNull();
  });

  it('splits inserts too large for one command (16 MiB) into several, and writes them all', async () => {
    const { flusher } = flusherOf(database.db, { writeMode: 'snapshots' });
    const done: boolean[] = [];
    const since = commands.length;
    // Three documents of 6 MB: 18 MB would be one command the database must refuse.
    for (const id of ['b1', 'b2', 'b3'])
      flusher.insert('large', { _id: id as never, text: id.repeat(3_000_000) }, (ok) => done.push(ok));
    await flusher.flush();
    expect(done).toEqual([true, true, true]);
    expect(sent('insert', 'large', since).map((c) => c.n)).toEqual([1, 1, 1]);
    expect(await database.db.collection('large').countDocuments({})).toBe(3);
    expect(errors).toEqual([]);
    expect(flusher.backlog).toBe(0);
  });
});

it('waits for a look-up under way instead of spinning when its document is all that is queued (deltas)', async () => {
  // Before the fix, flush() looped on already-resolved promises while the only queued changes
  // belonged to a document being looked up, so the look-up's answer was never read and the
  // process hung. The observer breaks such a loop (a failed flush backs off on a timer) so that a
  // regression fails here instead of hanging the run.
  let calls = 0;
  const flushed = () => {
    if (++calls > 50) throw new Error('flush spun without writing');
  };
  const { flusher } = flusherOf(database.db, { writeMode: 'deltas', observer: { flushed } });
  await database.db.collection<{ _id: string; n: number }>('looked-up').insertOne({ _id: 'l1', n: 1 });
  const e = entry('looked-up', 'l1');
  e.loading = database.db
    .collection<{ _id: string; n: number }>('looked-up')
    .findOne({ _id: 'l1' })
    .then((doc) => {
      e.value = doc;
      e.loading = null;
    });
  change(flusher, e, delta().inc(['n'], 2));
  await flusher.flush();
  expect(calls).toBeLessThanOrEqual(2);
  expect(await database.db.collection('looked-up').findOne({ _id: 'l1' } as never)).toEqual({
    _id: 'l1',
    n: 3,
  });
});

describe('late changes (statistics many events touch)', () => {
  it('holds them from timed flushes for lateMs, writes them once after, and leaves them out of what is due', async () => {
    let t = 1_000_000;
    const { flusher, report } = flusherOf(database.db, {
      flushIntervalMs: 2,
      lateMs: 1000,
      now: () => t,
      writeMode: 'deltas',
    });
    const e = entry('late', 'l1', null);
    for (let i = 0; i < 40; i++) {
      e.value = applyDelta(e.value ?? null, delta().inc(['n'], 1));
      flusher.enqueue(e, delta().inc(['n'], 1).ops, true);
    }
    // Queued changes of one held document are merged as they pile up.
    expect(flusher.backlog).toBeLessThan(40);
    expect(flusher.due).toBe(0);
    const released = report.released;
    await waitFor(() => report.released >= released + 3, { what: 'three timed flushes' });
    expect(await database.db.collection('late').findOne({ _id: 'l1' } as never)).toBeNull();
    t += 1000;
    await waitFor(
      async () => (await database.db.collection('late').findOne({ _id: 'l1' } as never)) !== null,
      { what: 'the held document written after lateMs' },
    );
    expect(await database.db.collection('late').findOne({ _id: 'l1' } as never)).toEqual({
      _id: 'l1',
      n: 40,
    });
    expect(flusher.backlog).toBe(0);
    expect(report.flushes.filter((f) => f.updates > 0)).toHaveLength(1);
    await flusher.close(1000);
  });

  it('writes a held document with the next timed flush once a change that may not wait joins it', async () => {
    const t = 2_000_000;
    const { flusher } = flusherOf(database.db, {
      flushIntervalMs: 2,
      lateMs: 60_000,
      now: () => t,
      writeMode: 'deltas',
    });
    const e = entry('late', 'l2', null);
    flusher.enqueue(e, delta().inc(['n'], 1).ops, true);
    expect(flusher.due).toBe(0);
    flusher.enqueue(e, delta().inc(['m'], 1).ops);
    expect(flusher.due).toBe(2);
    await waitFor(
      async () => (await database.db.collection('late').findOne({ _id: 'l2' } as never)) !== null,
      { what: 'the document written' },
    );
    expect(await database.db.collection('late').findOne({ _id: 'l2' } as never)).toEqual({
      _id: 'l2',
      n: 1,
      m: 1,
    });
    await flusher.close(1000);
  });

  it('holds long late changes for longLateMs; a document held both ways is written at the earlier deadline', async () => {
    let t = 3_000_000;
    const { flusher, report } = flusherOf(database.db, {
      flushIntervalMs: 2,
      lateMs: 1000,
      longLateMs: 10_000,
      now: () => t,
      writeMode: 'deltas',
    });
    const written = async (id: string) => database.db.collection('late').findOne({ _id: id } as never);
    const long = entry('late', 'l4', null);
    flusher.enqueue(long, delta().inc(['n'], 1).ops, 'long');
    const both = entry('late', 'l5', null);
    flusher.enqueue(both, delta().inc(['n'], 1).ops, 'long');
    t += 5_000;
    // Five seconds on, a second-late change joins l5: it is due a second later, not at ten.
    flusher.enqueue(both, delta().inc(['m'], 1).ops, true);
    const released = report.released;
    await waitFor(() => report.released >= released + 3, { what: 'three timed flushes' });
    expect(await written('l4')).toBeNull();
    expect(await written('l5')).toBeNull();
    t += 1_000;
    await waitFor(async () => (await written('l5')) !== null, { what: 'l5 written at its earlier deadline' });
    expect(await written('l5')).toEqual({ _id: 'l5', n: 1, m: 1 });
    expect(await written('l4')).toBeNull();
    t += 4_000;
    await waitFor(async () => (await written('l4')) !== null, { what: 'l4 written after longLateMs' });
    expect(await written('l4')).toEqual({ _id: 'l4', n: 1 });
    await flusher.close(1000);
  });

  it('writes held documents at once on an explicit flush', async () => {
    const { flusher } = flusherOf(database.db, {
      flushIntervalMs: 60_000,
      lateMs: 60_000,
      writeMode: 'deltas',
    });
    const e = entry('late', 'l3', null);
    flusher.enqueue(e, delta().inc(['n'], 5).ops, true);
    await flusher.flush();
    expect(await database.db.collection('late').findOne({ _id: 'l3' } as never)).toEqual({ _id: 'l3', n: 5 });
  });
});
