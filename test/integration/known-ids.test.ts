/**
 * Documents never seen are not looked up (state/known-ids.ts), on the real embedded database,
 * through the state layer as the embedded Rampart runs it (whole documents): a document the
 * collection held at start is found; once the start's scan ended, one neither held nor written
 * since is answered absent without a look-up, and its changes are written whole and counted
 * right; a document the layer wrote is found again after the cache dropped it; before the scan
 * ends, and for a collection too large to scan, everything is looked up as before.
 */
import { randomBytes } from 'node:crypto';
import type { CommandStartedEvent } from 'mongodb';
import { testDatabase, type TestDatabase } from '../support/db';
import { StateLayer } from '../../src/store/state/layer';
import { delta } from '../../src/store/state/delta';
import { knownIdsOf, type KnownIds } from '../../src/store/state/known-ids';

let database: TestDatabase;
let commands: CommandStartedEvent[] = [];
const layers: StateLayer[] = [];

beforeAll(async () => {
  database = await testDatabase({ monitorCommands: (e) => commands.push(e) });
});
afterAll(async () => {
  for (const l of layers) await l.close(5000);
  await database?.drop();
});

/** A new collection holding `ids` (each `{ n: 1 }`). */
async function collectionWith(ids: string[]): Promise<string> {
  const name = `known_${randomBytes(4).toString('hex')}`;
  if (ids.length)
    await database.db.collection<{ _id: string }>(name).insertMany(ids.map((_id) => ({ _id, n: 1 })));
  return name;
}

/** A process's state layer on the database, as the embedded Rampart makes it, counting reads by outcome. */
async function processOn(collection: string, maxIds = 1000) {
  const known = await knownIdsOf(database.db, [collection], maxIds);
  const reads: string[] = [];
  const state = new StateLayer(database.db, {
    flushIntervalMs: 5,
    writeMode: 'snapshots',
    known,
    observer: { read: (_, outcome) => reads.push(outcome), flushed: () => undefined },
    onError: (err) => {
      throw err;
    },
  });
  layers.push(state);
  return { state, known: known[collection], reads };
}

/** The ids of `collection` the commands sent while `f` ran looked up. */
async function lookedUp(collection: string, f: () => Promise<unknown>): Promise<string[]> {
  commands = [];
  await f();
  return commands
    .filter((c) => c.commandName === 'find' && c.command.find === collection)
    .flatMap((c) => (c.command.filter as { _id: { $in: string[] } })._id.$in);
}

it('looks up a document held at start and finds it; one never seen is absent without a look-up', async () => {
  const c = await collectionWith(['held-1', 'held-2']);
  const { state, known, reads } = await processOn(c);
  await (known as KnownIds).scan(database.db);
  expect(known?.complete).toBe(true);
  expect(await lookedUp(c, () => state.read(c, 'held-1'))).toEqual(['held-1']);
  expect(state.peek(c, 'held-1')).toEqual({ n: 1 });
  let docs: unknown;
  expect(
    await lookedUp(c, async () => {
      docs = await state.readAll(c, ['never-1', 'held-2', 'never-2']);
    }),
  ).toEqual(['held-2']);
  expect(docs).toEqual([null, { n: 1 }, null]);
  expect(reads).toEqual(['miss', 'absent', 'miss', 'absent']);
});

it('writes a document known absent whole, with every change counted', async () => {
  const c = await collectionWith(['held']);
  const { state, known } = await processOn(c);
  await known?.scan(database.db);
  // Changed before it was ever read (as a counter bump is): the flusher does not look it up either.
  expect(
    await lookedUp(c, async () => {
      state.apply(c, 'new', delta().inc(['n'], 2));
      state.apply(c, 'new', delta().inc(['n'], 3).set(['at'], 'x'));
      await state.flush();
    }),
  ).toEqual([]);
  expect(await database.db.collection(c).findOne({ _id: 'new' as never })).toEqual({
    _id: 'new',
    n: 5,
    at: 'x',
  });
});

it('finds again a document it wrote (changed, edited or put) once its cache dropped it', async () => {
  const c = await collectionWith([]);
  const { state, known } = await processOn(c);
  // Changed while the start's scan has not ended: noted all the same.
  state.apply(c, 'applied', delta().inc(['n'], 1));
  await known?.scan(database.db);
  expect(await state.read(c, 'edited')).toBeNull();
  const doc = state.edit(c, 'edited');
  if (!doc) throw new Error('a document known absent is editable');
  doc.n = 7;
  state.put(c, 'put', { n: 9 });
  await state.flush();
  state.invalidate(() => true);
  expect(
    await lookedUp(c, async () => {
      expect(await state.readAll(c, ['applied', 'edited', 'put', 'never'])).toEqual([
        { n: 1 },
        { n: 7 },
        { n: 9 },
        null,
      ]);
    }),
  ).toEqual(['applied', 'edited', 'put']);
});

it('looks everything up until the start scan ends, or when stopped', async () => {
  const c = await collectionWith(['held']);
  const { state, known } = await processOn(c);
  expect(known?.complete).toBe(false);
  expect(await lookedUp(c, () => state.readAll(c, ['held', 'never']))).toEqual(['held', 'never']);
  known?.stop();
  await known?.scan(database.db);
  expect(known?.complete).toBe(false);
  expect(await lookedUp(c, () => state.read(c, 'never-2'))).toEqual(['never-2']);
});

it('makes no filter for a collection larger than the bound: its documents are looked up', async () => {
  const c = await collectionWith(['a', 'b', 'c']);
  expect(Object.keys(await knownIdsOf(database.db, [c], 2))).toEqual([]);
  expect(Object.keys(await knownIdsOf(database.db, [c], 3))).toEqual([c]);
  const { state, known } = await processOn(c, 2);
  expect(known).toBeUndefined();
  expect(await lookedUp(c, () => state.read(c, 'never'))).toEqual(['never']);
});
