/**
 * The analysts' read path on the real database: every filter the console and GraphQL offer gives
 * exactly the events it names, newest first, page after page, whichever access path serves it
 * (on the embedded database: an index, the event keys, or time with the rest checked on each
 * candidate; docs/state.md). Pages stay stable while events arrive; a search that reads its
 * bound of candidates stops and says where; events recorded before the keys began are found
 * all the same; another environment sees none of them.
 */
import { randomUUID } from 'node:crypto';
import type { EnvId, StoredEvent } from '../../src/core/model';
import type { EventStore } from '../../src/core/ports';
import { EVENTS, toEventDoc } from '../../src/store/events';
import { embeddedIndexName, serverKind } from '../../src/store/server-kind';
import { call, startTestApp, type TestApp } from '../support/app';
import { eventWriter } from '../support/stored';
import { storedEvent, TEST_UA as UA } from '../support/events';

/** Small, so that sparse filters stop early and go on from where they stopped. */
const MAX_EXAMINED = 60;
const NOW = Date.parse('2026-11-26T12:00:00.000Z');

let app: TestApp;
let env: EnvId;
let writer: Promise<EventStore> | undefined;
/** The event write path (events, keys, rollups) for events this test seeds. */
const seeder = () => (writer ??= eventWriter(app.database.db, app.built.state));
const sent: StoredEvent[] = [];

/** A deterministic pseudo-random sequence. */
function rng(seed: number): () => number {
  let s = seed;
  return () => (s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
}

function eventOf(r: () => number, i: number, at: number, envId: EnvId = env): StoredEvent {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)] as T;
  const user = `u${Math.floor(r() * 12)}`;
  const ip = `${pick(['81.2.69', '81.2.70', '5.9.1'])}.${1 + Math.floor(r() * 3)}`;
  const action = pick(['allow', 'allow', 'challenge', 'deny', null] as const);
  const signals = ['new_device', 'proxy_ip', 'rare_signal'].filter(
    (s) => r() < (s === 'rare_signal' ? 0.05 : 0.4),
  );
  return storedEvent({
    id: `e-${String(i).padStart(4, '0')}-${randomUUID().slice(0, 8)}`,
    envId,
    name: action === null ? '$login.failed' : pick(['$login', '$registration']),
    endpoint: action === null ? 'track' : 'risk',
    userId: action === null ? null : user,
    email: `${user}@${pick(['example.com', 'Example.COM'])}`,
    deviceToken: action === null ? null : `dev-${user}-${Math.floor(r() * 2)}`,
    ip,
    country: pick(['US', 'DE', 'FR']),
    asn: pick([3320, 24940, 7922]),
    action,
    risk: action === null ? null : r(),
    signals,
    policy:
      action === 'deny' || action === 'challenge'
        ? { id: pick(['pol-a', 'pol-b']), revision: 'r1', name: 'P', action }
        : null,
    occurredAt: new Date(at),
  });
}

beforeAll(async () => {
  app = await startTestApp({
    grpc: false,
    clock: { now: () => new Date(NOW) },
    analystMaxExamined: MAX_EXAMINED,
    // As an earlier version left it: an index of the same name (on FerretDB, one no read used).
    beforeBuild: async (db) =>
      void (await db
        .collection('events')
        .createIndex({ envId: 1, occurredAt: -1, _id: -1 }, { name: 'q_env_time' })),
  });
  env = app.env.id as EnvId;
  const r = rng(31);
  // 400 events over the last three hours; some share a millisecond (the id breaks the tie).
  for (let i = 0; i < 400; i++) {
    const at = NOW - 3 * 3_600_000 + Math.floor(r() * 3 * 3_600_000);
    const e = eventOf(
      r,
      i,
      i % 10 === 0 && sent.length > 0 ? (sent[sent.length - 1] as StoredEvent).occurredAt.getTime() : at,
    );
    sent.push(e);
    await (await seeder()).append(e);
  }
  await app.built.state.flush();
  // A bound for a hang only: 400 events written one by one take minutes on a busy machine.
}, 600_000);
afterAll(async () => {
  await app?.close();
});

interface Answer {
  data?: {
    events: {
      edges: { node: { id: string } }[];
      pageInfo: { hasNextPage: boolean; endCursor: string | null };
    };
  };
  errors?: { message: string; extensions?: { code?: string } }[];
}

async function page(
  filter: Record<string, unknown>,
  first: number,
  after: string | null,
  secret = app.secret,
): Promise<Answer> {
  const query =
    'query($f: EventFilter, $first: Int, $after: String) { events(filter: $f, first: $first, after: $after) { edges { node { id } } pageInfo { hasNextPage endCursor } } }';
  return (await call(app, 'POST', '/graphql', { query, variables: { f: filter, first, after } }, { secret }))
    .body as Answer;
}

/** Every page of a filter: the ids in order, and how many pages came back short yet not last. */
async function walk(
  filter: Record<string, unknown>,
  first = 7,
): Promise<{ ids: string[]; shortPages: number }> {
  const ids: string[] = [];
  let after: string | null = null;
  let shortPages = 0;
  for (let n = 0; n < 500; n++) {
    const a = await page(filter, first, after);
    expect(a.errors).toBeUndefined();
    const p = a.data?.events;
    if (!p) throw new Error('no page');
    ids.push(...p.edges.map((e) => e.node.id));
    if (!p.pageInfo.hasNextPage) return { ids, shortPages };
    if (p.edges.length < first) shortPages += 1;
    after = p.pageInfo.endCursor;
  }
  throw new Error('more than 500 pages');
}

const newestFirst = (a: StoredEvent, b: StoredEvent) =>
  b.occurredAt.getTime() - a.occurredAt.getTime() || (a.id < b.id ? 1 : -1);
const expected = (keep: (e: StoredEvent) => boolean) =>
  sent
    .filter(keep)
    .sort(newestFirst)
    .map((e) => e.id);
const inRange = (e: StoredEvent, from: number, to: number) =>
  e.occurredAt.getTime() >= from && e.occurredAt.getTime() < to;
const FROM = NOW - 2 * 3_600_000 + 17_000;
const TO = NOW - 3_600_000 + 5_500;

it.each<[string, Record<string, unknown>, (e: StoredEvent) => boolean]>([
  ['nothing: the latest events', {}, () => true],
  ['a user', { userId: 'u3' }, (e) => e.userId === 'u3'],
  ['a device', { deviceToken: 'dev-u5-1' }, (e) => e.deviceToken === 'dev-u5-1'],
  [
    'an e-mail, in another case',
    { email: 'U4@EXAMPLE.COM' },
    (e) =>
      e.email?.toLowerCase() === 'u4@example.com' &&
      (e.email === 'U4@EXAMPLE.COM' || e.email === 'u4@example.com'),
  ],
  [
    'an e-mail as sent',
    { email: 'u4@Example.COM' },
    (e) => e.email === 'u4@Example.COM' || e.email === 'u4@example.com',
  ],
  ['an address', { ip: '81.2.70.2' }, (e) => e.ip === '81.2.70.2'],
  ['a /24', { network: '81.2.69.0/24' }, (e) => e.ip?.startsWith('81.2.69.') === true],
  ['a signal', { signal: 'proxy_ip' }, (e) => e.signals.includes('proxy_ip')],
  ['a rare signal', { signal: 'rare_signal' }, (e) => e.signals.includes('rare_signal')],
  ['an action', { action: 'DENY' }, (e) => e.action === 'deny'],
  ['a country', { country: 'DE' }, (e) => e.country === 'DE'],
  ['an ASN', { asn: 24940 }, (e) => e.asn === 24940],
  ['a policy', { policyId: 'pol-b' }, (e) => e.policy?.id === 'pol-b'],
  ['an event name', { name: '$login.failed' }, (e) => e.name === '$login.failed'],
  [
    'a time range',
    { from: new Date(FROM).toISOString(), to: new Date(TO).toISOString() },
    (e) => inRange(e, FROM, TO),
  ],
  [
    'a signal and a country',
    { signal: 'new_device', country: 'FR' },
    (e) => e.signals.includes('new_device') && e.country === 'FR',
  ],
  [
    'a user, an action and a range',
    { userId: 'u7', action: 'ALLOW', from: new Date(FROM).toISOString() },
    (e) => e.userId === 'u7' && e.action === 'allow' && e.occurredAt.getTime() >= FROM,
  ],
  [
    'a /16 with an action',
    { network: '81.2.0.0/16', action: 'CHALLENGE' },
    (e) => e.ip?.startsWith('81.2.') === true && e.action === 'challenge',
  ],
  [
    'a rare signal in a range',
    { signal: 'rare_signal', from: new Date(FROM).toISOString(), to: new Date(TO).toISOString() },
    (e) => e.signals.includes('rare_signal') && inRange(e, FROM, TO),
  ],
  ['nothing matches', { userId: 'nobody' }, () => false],
])('by %s: exactly its events, newest first, over every page', async (_what, filter, keep) => {
  const want = expected(keep);
  expect((await walk(filter)).ids).toEqual(want);
});

it('a search that reads its bound of candidates stops there, and the next page goes on', async () => {
  // u1's allowed events from one country: few among the many allowed ones the keys give.
  const filter = { action: 'ALLOW', country: 'US', asn: 7922, name: '$registration' };
  const want = expected(
    (e) => e.action === 'allow' && e.country === 'US' && e.asn === 7922 && e.name === '$registration',
  );
  const { ids, shortPages } = await walk(filter, 20);
  expect(ids).toEqual(want);
  if ((await serverKind(app.database.db)).indexPushdown) expect(shortPages).toBeGreaterThan(0);
});

it('keeps a page stable while newer events arrive', async () => {
  const first = await page({}, 5, null);
  const r = rng(99);
  const newer = Array.from({ length: 8 }, (_, i) => eventOf(r, 1000 + i, NOW - 1_000 + i));
  for (const e of newer) await (await seeder()).append(e);
  await app.built.state.flush();
  const second = await page({}, 5, first.data?.events.pageInfo.endCursor ?? null);
  const all = expected(() => true);
  expect(first.data?.events.edges.map((e) => e.node.id)).toEqual(all.slice(0, 5));
  expect(second.data?.events.edges.map((e) => e.node.id)).toEqual(all.slice(5, 10));
  // The newer ones lead a fresh first page.
  sent.push(...newer);
  expect((await page({}, 3, null)).data?.events.edges.map((e) => e.node.id)).toEqual(
    expected(() => true).slice(0, 3),
  );
});

it('finds events recorded before the keys began, by every filter', async () => {
  const other = await app.newEnvironment('before-keys');
  const otherEnv = other.env.id as EnvId;
  // An environment an older version created: not every event of it has keys.
  await app.database.db
    .collection<{ _id: string }>('event_keys')
    .deleteOne({ _id: `${otherEnv}:keys-complete` });
  const r = rng(5);
  // Written as an older version wrote them: events only, no keys.
  const old = Array.from({ length: 30 }, (_, i) =>
    eventOf(r, 2000 + i, NOW - 10 * 3_600_000 + i * 60_000, otherEnv),
  );
  await app.database.db.collection(EVENTS).insertMany(old.map(toEventDoc) as never[]);
  // Then this version records a few: keys begin now.
  const recent = Array.from({ length: 10 }, (_, i) => eventOf(r, 3000 + i, NOW - 60_000 + i, otherEnv));
  for (const e of recent) await (await seeder()).append(e);
  await app.built.state.flush();
  const both = [...old, ...recent].sort(newestFirst);
  const ids = async (filter: Record<string, unknown>) => {
    const out: string[] = [];
    let after: string | null = null;
    for (;;) {
      const a = await page(filter, 10, after, other.secret);
      expect(a.errors).toBeUndefined();
      out.push(...(a.data?.events.edges ?? []).map((e) => e.node.id));
      if (!a.data?.events.pageInfo.hasNextPage) return out;
      after = a.data.events.pageInfo.endCursor;
    }
  };
  expect(await ids({ signal: 'proxy_ip' })).toEqual(
    both.filter((e) => e.signals.includes('proxy_ip')).map((e) => e.id),
  );
  expect(await ids({ country: 'US' })).toEqual(both.filter((e) => e.country === 'US').map((e) => e.id));
  // And the first environment's filters never reach them, nor the reverse.
  expect((await walk({ country: 'US' })).ids.some((id) => both.some((e) => e.id === id))).toBe(false);
  expect((await ids({ userId: 'u3' })).some((id) => sent.some((e) => e.id === id))).toBe(false);
});

it('answers a filter few events match, or none, from its keys: every match in one page, whatever the events around them', async () => {
  const sparse = await app.newEnvironment('sparse');
  const sparseEnv = sparse.env.id as EnvId;
  // Activity without a verdict (no signal, no action, no policy): more than a search examines,
  // received now (the keys' first minute) with times of the last hour.
  const plain = Array.from({ length: MAX_EXAMINED * 4 }, (_, i) =>
    storedEvent({
      id: `plain-${String(i).padStart(4, '0')}`,
      envId: sparseEnv,
      name: '$logout',
      endpoint: 'track',
      userId: `p${i % 7}`,
      action: null,
      risk: null,
      country: 'DE',
      occurredAt: new Date(NOW - 3_600_000 + i * 1000),
      receivedAt: new Date(NOW),
    }),
  );
  for (const e of plain) await (await seeder()).append(e);
  // Then three events that happened hours earlier, sent late (a backfill): the only bot ones.
  const bots = Array.from({ length: 3 }, (_, i) =>
    storedEvent({
      id: `bot-${i}`,
      envId: sparseEnv,
      userId: `b${i}`,
      signals: ['bot_behavior'],
      action: 'deny',
      policy: { id: 'pol-bots', revision: 'r1', name: 'Bots', action: 'deny' },
      occurredAt: new Date(NOW - 6 * 3_600_000 + i * 60_000),
      receivedAt: new Date(NOW),
    }),
  );
  for (const e of bots) await (await seeder()).append(e);
  await app.built.state.flush();
  const first = (filter: Record<string, unknown>) => page(filter, 20, null, sparse.secret);
  const newestBots = bots.map((e) => e.id).reverse();
  for (const f of [{ signal: 'bot_behavior' }, { action: 'DENY' }, { policyId: 'pol-bots' }]) {
    const a = await first(f);
    expect(a.errors).toBeUndefined();
    expect({
      f,
      ids: a.data?.events.edges.map((e) => e.node.id),
      more: a.data?.events.pageInfo.hasNextPage,
    }).toEqual({ f, ids: newestBots, more: false });
  }
  for (const f of [
    { signal: 'impossible_travel' },
    { action: 'CHALLENGE' },
    { policyId: 'pol-none' },
    { country: 'BR' },
    { asn: 64512 },
    { name: '$registration' },
  ]) {
    const a = await first(f);
    expect(a.errors).toBeUndefined();
    expect({
      f,
      ids: a.data?.events.edges.map((e) => e.node.id),
      more: a.data?.events.pageInfo.hasNextPage,
    }).toEqual({ f, ids: [], more: false });
  }
  // With a time range as well, and the rest of the filter checked on each match.
  const ranged = await first({
    signal: 'bot_behavior',
    from: new Date(NOW - 6 * 3_600_000 + 30_000).toISOString(),
  });
  expect(ranged.data?.events.edges.map((e) => e.node.id)).toEqual(newestBots.slice(0, 2));
  expect((await first({ signal: 'bot_behavior', country: 'DE' })).data?.events.edges).toEqual([]);
  // And the sandbox's filters never reach them.
  expect((await walk({ signal: 'bot_behavior' })).ids).toEqual([]);
}, 600_000);

it('creates the access paths the embedded database serves, and only those', async () => {
  const kind = await serverKind(app.database.db);
  const names = (await app.database.db.collection(EVENTS).listIndexes().toArray()).map((i) => String(i.name));
  if (kind.indexPushdown) {
    expect(names).toEqual(
      expect.arrayContaining(
        [
          'q_env_time',
          'q_env_user_time',
          'q_env_device_time',
          'q_env_ip_time',
          'q_env_email_time',
          'q_env_net_time',
        ].map(embeddedIndexName),
      ),
    );
    expect(names.filter((n) => /signal|country|asn|action|policy/.test(n))).toEqual([]);
    // An earlier version's index of the same key is gone: it served nothing and cost every write.
    expect(names).not.toContain('q_env_time');
    // The values shared by many events are found through their keys, written behind.
    const keys = await app.database.db
      .collection<{ _id: string }>('event_keys')
      .find({ _id: { $in: [`${env}:keys-since`] } })
      .toArray();
    expect(keys).toHaveLength(1);
  } else if (!kind.ferretdb) {
    expect(names).toEqual(expect.arrayContaining(['q_env_signal_time', 'q_env_country_time']));
  }
});

it('answers an analysis the rollups cannot through the same paths, and refuses one past its bound', async () => {
  const query = `query($f: EventFilter) { analytics(filter: $f) { total actions { action count } signals(first: 5) { signal count }
    top(dimension: COUNTRY, first: 3) { distinct entries { key count } } } }`;
  const ask = async (f: Record<string, unknown>) =>
    (await call(app, 'POST', '/graphql', { query, variables: { f } })).body as {
      data?: {
        analytics: {
          total: number;
          actions: { action: string | null; count: number }[];
          top: { distinct: number };
        };
      };
      errors?: { message: string; extensions?: { code?: string } }[];
    };
  const mine = sent.filter((e) => e.userId === 'u3');
  const a = await ask({ userId: 'u3' });
  expect(a.errors).toBeUndefined();
  expect(a.data?.analytics.total).toBe(mine.length);
  expect(a.data?.analytics.top.distinct).toBe(new Set(mine.map((e) => e.country)).size);
  expect(a.data?.analytics.actions.reduce((n, x) => n + x.count, 0)).toBe(mine.length);
  if ((await serverKind(app.database.db)).indexPushdown) {
    // Every event, with no range the rollups serve: more than 5 pages' worth of candidates.
    const all = await ask({});
    expect(all.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    expect(all.errors?.[0]?.message).toContain('rollups');
  }
});

it("counts a heavy user's newest events only, and says so", async () => {
  const track = (user: string) =>
    call(app, 'POST', '/v1/track', {
      event: '$login.failed',
      user_id: user,
      context: { ip: '81.2.69.9', headers: { 'User-Agent': UA } },
    });
  const MAX_ACTIVITY = Math.ceil(MAX_EXAMINED / 4);
  for (let i = 0; i < MAX_ACTIVITY + 5; i++) expect((await track('heavy')).status).toBe(204);
  for (let i = 0; i < 3; i++) expect((await track('light')).status).toBe(204);
  await app.built.services.track.drain(false);
  await app.built.state.flush();
  const summary = async (id: string) =>
    (
      (
        await call(app, 'POST', '/graphql', {
          query: 'query($id: ID!) { user(id: $id) { riskSummary { eventCount countsPartial } } }',
          variables: { id },
        })
      ).body as { data: { user: { riskSummary: unknown } } }
    ).data.user.riskSummary;
  const embedded = (await serverKind(app.database.db)).indexPushdown;
  expect(await summary('heavy')).toEqual(
    embedded
      ? { eventCount: MAX_ACTIVITY, countsPartial: true }
      : { eventCount: MAX_ACTIVITY + 5, countsPartial: false },
  );
  expect(await summary('light')).toEqual({ eventCount: 3, countsPartial: false });
});

it('answers the user page and a device search through the same paths', async () => {
  const query = `query($id: ID!) { user(id: $id) { riskSummary { eventCount actions { action count } } events(first: 5) { edges { node { id } } } }
    devices(filter: { userId: $id }, first: 5) { edges { node { token } } } }`;
  const a = (await call(app, 'POST', '/graphql', { query, variables: { id: 'u2' } })).body as {
    data?: {
      user: { riskSummary: { eventCount: number }; events: { edges: { node: { id: string } }[] } } | null;
    };
    errors?: unknown;
  };
  expect(a.errors).toBeUndefined();
  // The user exists only through events appended straight to the store: no user state, so null.
  if (a.data?.user) {
    expect(a.data.user.riskSummary.eventCount).toBe(sent.filter((e) => e.userId === 'u2').length);
    expect(a.data.user.events.edges.map((e) => e.node.id)).toEqual(
      expected((e) => e.userId === 'u2').slice(0, 5),
    );
  }
});
