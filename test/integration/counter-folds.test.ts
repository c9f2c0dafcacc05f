/**
 * An address's window kept in its network's window (core's addressWindowFold), on the embedded
 * database's write path (whole documents): one document written for both, read back as two
 * windows; a network with more addresses than a document keeps gives the others their own; a
 * read adds both places; a purge leaves no member in any part.
 */
import { randomBytes } from 'node:crypto';
import { testDatabase, type TestDatabase } from '../support/db';
import { StateLayer } from '../../src/store/state/layer';
import {
  COUNTER_QUERY_FIELDS,
  COUNTERS,
  MAX_FOLDED,
  pullCounterMember,
  StateCounterStore,
} from '../../src/store/counters';
import { addressWindowFold } from '../../src/core/scoring/counters';
import { asEnvId } from '../../src/core/model';
import { idOf } from '../../src/store/ids';
import { unpack } from '../../src/store/state/pack';

const env = asEnvId(`env-${randomBytes(4).toString('hex')}`);
const H = 498_801;
const ip = (host: string) => `w:ip:${host}:${H}`;
const NET = `w:net:81.2.69.0/24:${H}`;

let database: TestDatabase;
const layers: StateLayer[] = [];
function store(fold = true): { counters: StateCounterStore; state: StateLayer } {
  const state = new StateLayer(database.db, {
    flushIntervalMs: 5,
    writeMode: 'snapshots',
    packed: { [COUNTERS]: COUNTER_QUERY_FIELDS },
    onError: (err) => {
      throw err;
    },
  });
  layers.push(state);
  return {
    counters: new StateCounterStore({
      db: database.db,
      state,
      now: () => new Date(),
      fold: fold ? addressWindowFold : undefined,
    }),
    state,
  };
}
/** An attempt from `host` on `account`, as a verdict records it: read the windows, then bump both. */
async function attempt(counters: StateCounterStore, host: string, account: string): Promise<void> {
  await counters.read(env, [ip(host), NET]);
  counters.bump(env, [
    { key: ip(host), inc: { a: 1, f: 1 }, add: { u: account, uf: account } },
    { key: NET, inc: { a: 1, f: 1 }, add: { u: account, uf: account } },
  ]);
}
const stored = async (key: string) => {
  const d = await database.db.collection<{ _id: string }>(COUNTERS).findOne({ _id: idOf(env, key) });
  return d ? unpack(d) : null;
};

beforeAll(async () => {
  database = await testDatabase();
});
afterAll(async () => {
  await Promise.all(layers.map((l) => l.flush()));
  await database?.drop();
});

it('keeps an address window in its network window: one document, read back as both windows', async () => {
  const { counters, state } = store();
  await attempt(counters, '81.2.69.5', 'ada');
  await attempt(counters, '81.2.69.5', 'bob');
  await attempt(counters, '81.2.69.6', 'eve');
  await state.flush();
  expect(await stored(ip('81.2.69.5'))).toBeNull();
  expect(await stored(NET)).toMatchObject({
    c: { a: 3, f: 3, o5_a: 2, o5_f: 2, o6_a: 1 },
    s: { u: ['ada', 'bob', 'eve'], o5_u: ['ada', 'bob'], o6_uf: ['eve'] },
  });
  // Another process reads the address's window from the network's document.
  const cold = store().counters;
  const read = (await cold.read(env, [ip('81.2.69.5'), ip('81.2.69.6'), NET]))!;
  expect(read.get(ip('81.2.69.5'))).toEqual({
    counts: { a: 2, f: 2 },
    sets: { u: ['ada', 'bob'], uf: ['ada', 'bob'] },
  });
  expect(read.get(ip('81.2.69.6'))).toEqual({ counts: { a: 1, f: 1 }, sets: { u: ['eve'], uf: ['eve'] } });
  expect(read.get(NET)!.counts).toMatchObject({ a: 3, f: 3 });
});

it('answers from memory what it holds, folded windows merged as a read gives them; nothing of what it does not', async () => {
  const { counters } = store();
  await attempt(counters, '81.2.69.9', 'ada');
  await attempt(counters, '81.2.69.9', 'bob');
  const keys = [ip('81.2.69.9'), NET];
  const read = (await counters.read(env, keys))!;
  const held = counters.held(env, [...keys, `w:net:198.51.100.0/24:${H}`]);
  expect(held.get(ip('81.2.69.9'))).toEqual(read.get(ip('81.2.69.9')));
  expect(held.get(NET)).toEqual(read.get(NET));
  expect(held.get(ip('81.2.69.9'))?.sets.u).toEqual(expect.arrayContaining(['ada', 'bob']));
  // Never read nor written by this process: not held, whatever the database has.
  expect(held.has(`w:net:198.51.100.0/24:${H}`)).toBe(false);
  expect(store().counters.held(env, keys).size).toBe(0);
});

it(`gives addresses past ${MAX_FOLDED} per network their own documents, and adds both places on a read`, async () => {
  const { counters, state } = store();
  const NET2 = `w:net:10.9.8.0/24:${H}`;
  const host = (i: number) => `10.9.8.${i}`;
  for (let i = 1; i <= MAX_FOLDED + 2; i++) {
    await counters.read(env, [`w:ip:${host(i)}:${H}`, NET2]);
    counters.bump(env, [{ key: `w:ip:${host(i)}:${H}`, inc: { a: 1 }, add: { u: `acct-${i}` } }]);
  }
  await state.flush();
  expect(await stored(`w:ip:${host(1)}:${H}`)).toBeNull();
  expect(await stored(`w:ip:${host(MAX_FOLDED)}:${H}`)).toBeNull();
  expect(await stored(`w:ip:${host(MAX_FOLDED + 1)}:${H}`)).toMatchObject({ c: { a: 1 } });
  // An address held in both places (another instance wrote its own while this one folded it):
  // a process without folds writes its own document; a read adds both.
  const plain = store(false);
  await plain.counters.read(env, [`w:ip:${host(1)}:${H}`]);
  plain.counters.bump(env, [{ key: `w:ip:${host(1)}:${H}`, inc: { a: 4 }, add: { u: 'zed' } }]);
  await plain.state.flush();
  const read = (await store().counters.read(env, [`w:ip:${host(1)}:${H}`]))!;
  expect(read.get(`w:ip:${host(1)}:${H}`)).toEqual({ counts: { a: 5 }, sets: { u: ['zed', 'acct-1'] } });
});

it('keeps an IPv6 /64 in its /48, named by its fourth group', async () => {
  expect(addressWindowFold(`w:ip:2001:db8:85a3:8d3::/64:${H}`)).toEqual({
    doc: `w:net:2001:db8:85a3::/48:${H}`,
    part: 'h8d3',
  });
  const { counters, state } = store();
  const key = `w:ip:2001:db8:85a3:8d3::/64:${H}`;
  await counters.read(env, [key]);
  counters.bump(env, [{ key, inc: { a: 1 } }]);
  await state.flush();
  expect(await stored(`w:net:2001:db8:85a3::/48:${H}`)).toMatchObject({ c: { h8d3_a: 1 } });
});

it('a purge removes the member from every part of a network window', async () => {
  const { counters, state } = store();
  await attempt(counters, '81.2.69.7', 'purged-user');
  await state.flush();
  expect(await stored(NET)).toMatchObject({ s: { o7_u: ['purged-user'] } });
  const other = store();
  await pullCounterMember(database.db, other.state, env, 'purged-user', ['u', 'uf']);
  await other.state.flush();
  expect(JSON.stringify(await stored(NET))).not.toContain('purged-user');
});
