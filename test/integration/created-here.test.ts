/**
 * Windows that cannot exist are not looked up (created-here.ts), on the real embedded database:
 * a process that alone wrote a new database reads none of the windows it never wrote, and counts
 * them right; a process started on a database written before reads the windows of the hours an
 * earlier run can have written, and finds their counts, but still skips later hours.
 */
import { randomBytes } from 'node:crypto';
import type { CommandStartedEvent } from 'mongodb';
import { testDatabase, type TestDatabase } from '../support/db';
import { StateLayer } from '../../src/store/state/layer';
import {
  COUNTER_QUERY_FIELDS,
  COUNTERS,
  lastBucketBefore,
  StateCounterStore,
} from '../../src/store/counters';
import { CreatedHere } from '../../src/store/created-here';
import { firstHourOf, windowHorizon } from '../../src/core/scoring/counters';
import { asEnvId } from '../../src/core/model';
import { idOf } from '../../src/store/ids';

const HOUR = 3_600_000;
const env = asEnvId(`env-${randomBytes(4).toString('hex')}`);
const now = Date.now();
const hour = Math.floor(now / HOUR);

let database: TestDatabase;
let commands: CommandStartedEvent[] = [];
const layers: StateLayer[] = [];

/** A process's counters on the database: snapshots, as on the embedded database, and its horizon. */
async function processOn(
  startedAt = now,
): Promise<{ counters: StateCounterStore; state: StateLayer; created: CreatedHere }> {
  const state = new StateLayer(database.db, {
    flushIntervalMs: 5,
    writeMode: 'snapshots',
    packed: { [COUNTERS]: COUNTER_QUERY_FIELDS },
    onError: (err) => {
      throw err;
    },
  });
  layers.push(state);
  const created = new CreatedHere(await lastBucketBefore(database.db, startedAt, windowHorizon), firstHourOf);
  return {
    counters: new StateCounterStore({ db: database.db, state, now: () => new Date(startedAt), created }),
    state,
    created,
  };
}

/** The counter ids the commands sent while `f` ran looked up. */
async function lookedUp(f: () => Promise<unknown>): Promise<string[]> {
  commands = [];
  await f();
  return commands
    .filter((c) => c.commandName === 'find' && c.command.find === COUNTERS)
    .flatMap((c) => (c.command.filter as { _id: { $in: string[] } })._id.$in);
}

beforeAll(async () => {
  database = await testDatabase({ monitorCommands: (e) => commands.push(e) });
});
afterAll(async () => {
  await Promise.all(layers.map((l) => l.flush()));
  await database?.drop();
});

it('a new database: windows never written are known empty without a look-up, and count from nothing', async () => {
  const first = await processOn();
  expect(first.created.horizon).toBe(Number.NEGATIVE_INFINITY);
  const keys = [`w:ip:81.2.69.1:${hour}`, `w:ip:81.2.69.1:${hour - 1}`, 'p:asn:AS3320'];
  let read: ReadonlyMap<string, unknown> = new Map();
  const ids = await lookedUp(async () => {
    read = (await first.counters.read(env, keys))!;
  });
  // Only the population entry, which has no hour, is asked for.
  expect(ids).toEqual([idOf(env, 'p:asn:AS3320')]);
  expect(read.get(keys[0])).toEqual({ counts: {}, sets: {} });
  first.counters.bump(env, [{ key: keys[0]!, inc: { a: 1 }, add: { u: 'ada' } }]);
  first.counters.bump(env, [{ key: keys[0]!, inc: { a: 1 }, add: { u: 'bob' } }]);
  expect(await lookedUp(() => first.counters.read(env, [keys[0]!]))).toEqual([]);
  expect((await first.counters.read(env, [keys[0]!]))!.get(keys[0])).toMatchObject({
    counts: { a: 2 },
    sets: { u: ['ada', 'bob'] },
  });
  await first.state.flush();
});

it('a database written before: the hours an earlier run can have written are looked up and found; later ones are not', async () => {
  const second = await processOn();
  expect(second.created.horizon).toBe(windowHorizon(now));
  const written = `w:ip:81.2.69.1:${hour}`;
  const later = `w:ip:81.2.69.1:${second.created.horizon + 1}`;
  let read: ReadonlyMap<string, unknown> = new Map();
  const ids = await lookedUp(async () => {
    read = (await second.counters.read(env, [written, later]))!;
  });
  expect(ids).toEqual([idOf(env, written)]);
  expect(read.get(written)).toMatchObject({ counts: { a: 2 }, sets: { u: ['ada', 'bob'] } });
  expect(read.get(later)).toEqual({ counts: {}, sets: {} });
  // A later hour this process writes (once its clock is in that hour) is found by the next run,
  // which starts later still.
  second.counters.bump(env, [{ key: later, inc: { a: 1 } }]);
  await second.state.flush();
  const third = await processOn(now + 2 * HOUR);
  expect(third.created.horizon).toBeGreaterThanOrEqual(second.created.horizon + 1);
  expect((await third.counters.read(env, [later]))!.get(later)).toMatchObject({ counts: { a: 1 } });
});
