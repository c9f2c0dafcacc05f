/**
 * The overview reads rollups: events sent over REST at known times (a manual clock) are counted
 * into hour and minute rollups, and GraphQL's `analytics` for a time range alone answers from
 * them exactly what a scan of the events answers: totals, verdicts, signals, top addresses and
 * countries, and the hourly series, over a range with partial hours at both ends. With the events
 * themselves deleted, the range is still answered (from the rollups), while a range that rollups
 * do not cover exactly (not on a minute boundary) is answered by scanning the events. The same
 * holds for a time range and an action (the "denied from" and "challenged" panels), for each
 * verdict; and a range that begins before rollups counted per verdict is answered from the events.
 */
import type { Filter } from 'mongodb';
import { call, startTestApp, type TestApp } from '../support/app';

import { fieldName } from '../../src/store/state/delta';
import { PACKED, unpackAs } from '../../src/store/state/pack';
import { SOURCES } from '../../src/console/ui/queries';

const UA =
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/121.0.0.0 Safari/537.36';
const T0 = Date.parse('2026-03-02T00:00:30Z');
const at = (iso: string) => Date.parse(`2026-03-02T${iso}Z`);

let now = T0;
let app: TestApp;

beforeAll(async () => {
  app = await startTestApp({ grpc: false, clock: { now: () => new Date(now) }, rollupPushEveryMs: 1 });
});
afterAll(async () => {
  await app?.close();
});

const QUERY = `query Overview($filter: EventFilter) {
  analytics(filter: $filter) {
    total
    actions { action count }
    signals(first: 20) { signal count }
    ips: top(dimension: IP, first: 5) { distinct entries { key count } }
    countries: top(dimension: COUNTRY, first: 5) { distinct entries { key count } }
    timeSeries(bucket: HOUR) { buckets { start total actions { action count } } }
  }
}`;

/** A rollup document as the tests below reshape it. */
interface RollupShape {
  _id: string;
  envId?: string;
  ip?: object;
  asn?: object;
  cc?: object;
  o?: object;
  x?: Record<string, object>;
  xo?: Record<string, object>;
}

/**
 * Rewrite the stored rollups `filter` matches as `change` leaves them, with every field as a
 * field: as an older version stored them (the embedded Rampart now stores them packed).
 */
async function rewrite(filter: Filter<RollupShape>, change: (doc: RollupShape) => void): Promise<void> {
  const rollups = app.database.db.collection<RollupShape>('rollups');
  for (const stored of await rollups.find(filter).toArray()) {
    const doc = unpackAs(stored);
    change(doc);
    await rollups.replaceOne({ _id: doc._id }, doc);
  }
}

async function overview(from: number, to: number): Promise<unknown> {
  const r = await call(app, 'POST', '/graphql', {
    query: QUERY,
    variables: { filter: { from: new Date(from).toISOString(), to: new Date(to).toISOString() } },
  });
  expect(r.body.errors).toBeUndefined();
  return r.body.data.analytics;
}

it('answers a time range from the rollups exactly as from the events', async () => {
  // The first event starts the rollups at the next minute (00:01).
  expect(
    (
      await call(app, 'POST', '/v1/track', {
        event: '$login.failed',
        user_id: 'early',
        context: { ip: '81.2.69.1', headers: { 'User-Agent': UA } },
      })
    ).status,
  ).toBe(204);
  const sends: [string, string, string][] = [
    ['00:05:00', '81.2.69.160', '$login.failed'],
    ['00:59:59', '81.2.69.160', '$login'],
    ['01:00:00', '2.125.160.216', '$login'],
    ['01:30:00', '81.2.69.160', '$login'],
    ['02:10:00', '175.16.199.1', '$login'],
    ['03:45:10', '2.125.160.216', '$login.failed'],
    ['03:59:00', '89.160.20.112', '$login'],
  ];
  for (const [i, [time, ip, event]] of sends.entries()) {
    now = at(time);
    const context = { ip, headers: { 'User-Agent': UA } };
    const r =
      event === '$login'
        ? await call(app, 'POST', '/v1/risk', {
            event,
            status: '$succeeded',
            user: { id: `u${i % 3}` },
            context,
            request_token: `test|device:d${i}`,
          })
        : await call(app, 'POST', '/v1/track', { event, user_id: `u${i % 3}`, context });
    expect(r.status).toBeLessThan(300);
  }
  // Every event written, and the rollups with them: an explicit flush first takes what the
  // rollup writer has gathered (a gatherer of the state layer), without waiting for its push timer.
  await app.built.services.track.drain(false);
  await app.built.state.flush();

  // The embedded Rampart stores them packed, only the fields queries filter on as fields: an
  // hour's thousands of addresses are one string for the database, not a field each.
  const stored = await app.database.db
    .collection<RollupShape>('rollups')
    .findOne({ _id: `${app.env.id}:h:${at('00:00:00')}:d:all` });
  expect(stored).not.toBeNull();
  if (app.built.state.wholeDocuments) {
    expect(Object.keys(stored ?? {}).sort()).toEqual([PACKED, '_id', 'at', 'envId', 'n'].sort());
  } else expect(stored).toHaveProperty('ip');
  expect(Object.keys(unpackAs(stored as RollupShape).ip ?? {}).sort()).toEqual(
    ['81.2.69.1', '81.2.69.160'].map(fieldName).sort(),
  );

  // 00:02 to 03:50: partial hours at both ends, whole hours between.
  const from = at('00:02:00');
  const to = at('03:50:00');
  const fromRollups = (await overview(from, to)) as { total: number };
  // One millisecond later is not a minute boundary: answered by scanning the events.
  const fromEvents = await overview(from + 1, to);
  expect(fromRollups.total).toBe(6);
  expect(fromRollups).toEqual(fromEvents);

  // With the events gone, the rollups still answer; the scan finds nothing.
  await app.database.db.collection('events').deleteMany({ envId: app.env.id });
  expect(((await overview(from, to)) as { total: number }).total).toBe(6);
  expect(((await overview(from + 1, to)) as { total: number }).total).toBe(0);
  // A range that begins before the rollups did (00:00) is answered from the events.
  expect(((await overview(at('00:00:00'), to)) as { total: number }).total).toBe(0);
});

/**
 * The overview's "denied from" and "challenged" panels: a time range and an action. Rollups count
 * addresses, ASNs and countries per verdict as well, so these read rollups too (on another day,
 * after the range above).
 */
describe('a time range and an action', () => {
  const day = (iso: string) => Date.parse(`2026-03-03T${iso}Z`);
  const PANELS = `query Panels($filter: EventFilter) {
    analytics(filter: $filter) {
      total
      actions { action count }
      ips: top(dimension: IP, first: 8) { distinct entries { key count } }
      asns: top(dimension: ASN, first: 8) { distinct entries { key count } }
      countries: top(dimension: COUNTRY, first: 8) { distinct entries { key count } }
    }
  }`;
  type Panels = {
    total: number;
    ips: { entries: unknown[] };
    asns: { entries: unknown[] };
    countries: { entries: unknown[] };
  };
  const panels = async (from: number, to: number, action: string): Promise<Panels> => {
    const r = await call(app, 'POST', '/graphql', {
      query: PANELS,
      variables: {
        filter: {
          from: new Date(from).toISOString(),
          to: new Date(to).toISOString(),
          action: action.toUpperCase(),
        },
      },
    });
    expect(r.body.errors).toBeUndefined();
    return r.body.data.analytics;
  };
  const events = () => app.database.db.collection('events');
  /** Runs `check` with the environment's events deleted (then put back): what it reads then comes from the rollups. */
  const withoutEvents = async (check: () => Promise<void>) => {
    const saved = await events().find({ envId: app.env.id }).toArray();
    await events().deleteMany({ envId: app.env.id });
    try {
      await check();
    } finally {
      if (saved.length) await events().insertMany(saved);
    }
  };
  const from = day('00:02:00');
  const to = day('03:50:00');

  beforeAll(async () => {
    // Starts the rollups (at 00:01) when this runs alone; else they started the day before.
    now = day('00:00:30');
    expect(
      (
        await call(app, 'POST', '/v1/track', {
          event: '$login.failed',
          user_id: 'early',
          context: { ip: '81.2.69.1', headers: { 'User-Agent': UA } },
        })
      ).status,
    ).toBe(204);
    // [time, address, verdict (null: a tracked event, which has none)]
    const sends: [string, string, string | null][] = [
      ['00:05:00', '81.2.69.160', 'deny'],
      ['00:20:00', '81.2.69.160', 'deny'],
      ['00:40:00', '175.16.199.1', 'challenge'],
      ['00:59:59', '2.125.160.216', 'allow'],
      ['01:00:00', '89.160.20.112', 'deny'],
      ['01:10:00', '81.2.69.160', null],
      ['01:35:00', '8.8.8.8', 'deny'],
      ['01:45:00', '89.160.20.112', 'challenge'],
      ['02:10:00', '175.16.199.1', 'deny'],
      ['02:30:00', '1.1.1.1', 'allow'],
      ['02:50:00', '2.125.160.216', 'challenge'],
      ['03:10:00', '81.2.69.160', 'allow'],
      ['03:45:10', '89.160.20.112', 'deny'],
      ['03:49:59', '175.16.199.1', 'challenge'],
      ['03:55:00', '8.8.8.8', 'deny'],
    ];
    for (const [i, [time, ip, action]] of sends.entries()) {
      now = day(time);
      const context = { ip, headers: { 'User-Agent': UA } };
      const r = action
        ? await call(app, 'POST', '/v1/risk', {
            event: '$login',
            status: '$succeeded',
            user: { id: `v${i % 4}` },
            context,
            request_token: `test|device:e${i}|policy.action:${action}`,
          })
        : await call(app, 'POST', '/v1/track', { event: '$login.failed', user_id: `v${i % 4}`, context });
      expect(r.status).toBeLessThan(300);
    }
    await app.built.services.track.drain(false);
    await app.built.state.flush();
  });

  it.each([
    ['allow', 3],
    ['challenge', 4],
    ['deny', 6],
  ])(
    '%s: the total and the top addresses, ASNs and countries come from the rollups, as the events say',
    async (action, total) => {
      // One millisecond later is not a minute boundary: answered by scanning the events.
      const fromEvents = await panels(from + 1, to, action);
      expect(fromEvents.total).toBe(total);
      expect(fromEvents.ips.entries.length).toBeGreaterThan(0);
      expect(await panels(from, to, action)).toEqual(fromEvents);
      // With the events gone, the rollups still answer; the scan finds nothing.
      await withoutEvents(async () => {
        expect(await panels(from, to, action)).toEqual(fromEvents);
        expect((await panels(from + 1, to, action)).total).toBe(0);
      });
    },
  );

  it("reads rollups of the earlier shape, with a verdict's addresses inside the rollup itself", async () => {
    const fromEvents = await panels(from + 1, to, 'deny');
    const rollups = app.database.db.collection<RollupShape>('rollups');
    // As a version before the dimensions were kept apart wrote them: `x.deny`, `xo.deny` in the rollup.
    const parts = (await rollups.find({ envId: app.env.id }).toArray())
      .filter((d) => d._id.endsWith(':d:deny'))
      .map((d) => unpackAs(d));
    expect(parts.length).toBeGreaterThan(0);
    for (const d of parts) {
      await rewrite({ _id: d._id.slice(0, -':d:deny'.length) }, (owner) => {
        owner.x = {
          ...owner.x,
          deny: {
            ...(d.ip ? { ip: d.ip } : {}),
            ...(d.asn ? { asn: d.asn } : {}),
            ...(d.cc ? { cc: d.cc } : {}),
          },
        };
        if (d.o) owner.xo = { ...owner.xo, deny: d.o };
      });
      await rollups.deleteOne({ _id: d._id });
    }
    expect(await panels(from, to, 'deny')).toEqual(fromEvents);
  });

  it('a range that begins before the rollups counted per verdict is answered from the events', async () => {
    // As an older version leaves them: rollups without per-verdict counts before 01:30, when
    // this version began counting them (the hour from 01:00 lacks them too, so it must not be read).
    const since2 = day('01:30:00');
    const rollups = app.database.db.collection<{ _id: string }>('rollups');
    await rewrite({ envId: app.env.id, at: { $lt: new Date(since2) }, n: { $exists: true } }, (d) => {
      delete d.x;
      delete d.xo;
    });
    const early = (
      await rollups.find({ envId: app.env.id, at: { $lt: new Date(since2) } } as never).toArray()
    ).filter((d) => /:d:(allow|challenge|deny)$/.test(d._id));
    await rollups.deleteMany({ _id: { $in: early.map((d) => d._id) } });
    await rollups.updateOne({ _id: `${app.env.id}:since2` }, { $set: { at: new Date(since2) } });

    for (const action of ['allow', 'challenge', 'deny']) {
      const early = await panels(from + 1, to, action);
      const late = await panels(since2 + 1, to, action);
      expect(late.total).toBeGreaterThan(0);
      // From 00:02 the events answer, and so correctly; from 01:30 the rollups do.
      expect(await panels(from, to, action)).toEqual(early);
      expect(await panels(since2, to, action)).toEqual(late);
      await withoutEvents(async () => {
        expect((await panels(from, to, action)).total).toBe(0);
        expect(await panels(since2, to, action)).toEqual(late);
      });
    }
  });
});

describe('the reader keeps settled rollups in memory', () => {
  let cached: TestApp;
  let clock = Date.parse('2026-03-05T00:00:30Z');
  beforeAll(async () => {
    cached = await startTestApp({
      grpc: false,
      clock: { now: () => new Date(clock) },
      rollupPushEveryMs: 1,
      rollupCacheMs: 60_000,
    });
  });
  afterAll(async () => {
    await cached?.close();
  });
  const total = async (from: number, to: number) => {
    const r = await call(cached, 'POST', '/graphql', {
      query: 'query($f: EventFilter) { analytics(filter: $f) { total } }',
      variables: { f: { from: new Date(from).toISOString(), to: new Date(to).toISOString() } },
    });
    expect(r.body.errors).toBeUndefined();
    return r.body.data.analytics.total as number;
  };

  it('answers a settled hour from memory until the cache time passes; an open minute always from the database', async () => {
    const send = async (iso: string) => {
      clock = Date.parse(`2026-03-05T${iso}Z`);
      expect(
        (
          await call(cached, 'POST', '/v1/track', {
            event: '$login.failed',
            user_id: 'c',
            context: { ip: '81.2.69.1', headers: { 'User-Agent': UA } },
          })
        ).status,
      ).toBe(204);
    };
    await send('00:00:40'); // starts the rollups at 00:01
    await send('00:10:00');
    await send('00:20:00');
    await send('02:00:10');
    await cached.built.services.track.drain(false);
    await cached.built.state.flush();
    const from = Date.parse('2026-03-05T00:01:00Z');
    const to = Date.parse('2026-03-05T02:01:00Z');
    expect(await total(from, to)).toBe(3);
    // Written behind the cache's back: every rollup loses its counts.
    await cached.database.db
      .collection<{ _id: string }>('rollups')
      .deleteMany({ _id: { $in: [`${cached.env.id}:h:${Date.parse('2026-03-05T01:00:00Z')}`] } });
    await cached.database.db
      .collection<{ _id: string }>('rollups')
      .updateMany({ n: { $exists: true } }, { $set: { n: 0 } });
    // Within two seconds the same sum is reused (the fields of one query ask for it again).
    expect(await total(from, to)).toBe(3);
    clock += 3_000;
    // The minutes of 00:xx (settled, cached) still count 2; 02:00 is open (now is 02:00:13): read again, 0.
    expect(await total(from, to)).toBe(2);
    clock += 61_000;
    expect(await total(from, to)).toBe(0);
  });
});

it("answers a range that begins before a new environment's first event from the rollups", async () => {
  const young = await app.newEnvironment('young');
  now = at('05:10:20');
  expect(
    (
      await call({ baseUrl: app.baseUrl, secret: young.secret }, 'POST', '/v1/track', {
        event: '$login.failed',
        user_id: 'y',
        context: { ip: '81.2.69.1', headers: { 'User-Agent': UA } },
      })
    ).status,
  ).toBe(204);
  now = at('05:40:00');
  expect(
    (
      await call({ baseUrl: app.baseUrl, secret: young.secret }, 'POST', '/v1/track', {
        event: '$login.failed',
        user_id: 'y',
        context: { ip: '81.2.69.2', headers: { 'User-Agent': UA } },
      })
    ).status,
  ).toBe(204);
  await app.built.services.track.drain(false);
  await app.built.state.flush();
  const total = async (from: number, to: number) => {
    const r = await call({ baseUrl: app.baseUrl, secret: young.secret }, 'POST', '/graphql', {
      query: 'query($f: EventFilter) { analytics(filter: $f) { total } }',
      variables: { f: { from: new Date(from).toISOString(), to: new Date(to).toISOString() } },
    });
    expect(r.body.errors).toBeUndefined();
    return r.body.data.analytics.total as number;
  };
  // A 30-day view of an environment one hour old: both events, its first minute (05:10) included.
  const thirtyDays = at('06:00:00') - 30 * 86_400_000;
  expect(await total(thirtyDays, at('06:00:00'))).toBe(2);
  // From the rollups: with the events gone, they still answer (a scan would find none).
  await app.database.db.collection<{ envId: string }>('events').deleteMany({ envId: young.env.id });
  expect(await total(thirtyDays, at('06:00:00'))).toBe(2);
  expect(await total(thirtyDays, at('05:00:00'))).toBe(0);
});

/**
 * Settled hours and whole days are packed (store/rollup-compactor.ts): the overview then reads
 * one field per dimension instead of one per address, and answers exactly as before; a late event
 * in a packed hour is counted at once (the copy no longer matches, so the hour is read from its
 * own documents) and packed again on the next run; a day's copy keeps the top values only.
 */
describe('settled rollups are packed', () => {
  let packed: TestApp;
  let clock = Date.parse('2026-03-10T00:00:30Z');
  const t = (iso: string) => Date.parse(`2026-03-${iso}Z`);
  const ask = async (query: string, from: number, to: number, action?: string) => {
    const filter = {
      from: new Date(from).toISOString(),
      to: new Date(to).toISOString(),
      ...(action ? { action: action.toUpperCase() } : {}),
    };
    const r = await call(packed, 'POST', '/graphql', { query, variables: { filter } });
    expect(r.body.errors).toBeUndefined();
    return r.body.data.analytics as {
      total: number;
      ips: { distinct: number; entries: { key: string; count: number }[] };
    };
  };
  // The console's own "denied from" / "challenged" panel.
  const PANELS = SOURCES;
  const rollups = () =>
    packed.database.db.collection<{ _id: string; n?: number; k?: number; p?: Record<string, string> }>(
      'rollups',
    );
  const send = async (iso: string, ip: string, action: string, timestamp?: string) => {
    clock = timestamp ? clock : t(iso);
    const context = { ip, headers: { 'User-Agent': UA } };
    const r = await call(packed, 'POST', '/v1/risk', {
      event: '$login',
      status: '$succeeded',
      user: { id: `p${ip}` },
      context,
      request_token: `test|device:d${ip.replaceAll('.', '')}|policy.action:${action}`,
      ...(timestamp ? { timestamp } : {}),
    });
    expect(r.status).toBe(201);
  };
  const settle = async () => {
    await packed.built.services.track.drain(false);
    await packed.built.state.flush();
  };
  const from = t('10T00:02:00');
  const to = t('12T11:00:00');

  beforeAll(async () => {
    packed = await startTestApp({ grpc: false, clock: { now: () => new Date(clock) }, rollupPushEveryMs: 1 });
    await send('10T00:00:30', '81.2.69.1', 'allow'); // starts the rollups at 00:01
    const ips = ['81.2.69.160', '175.16.199.1', '2.125.160.216', '89.160.20.112', '8.8.8.8', '1.1.1.1'];
    const actions = ['allow', 'challenge', 'deny'];
    let i = 0;
    for (const day of ['10', '11', '12']) {
      for (const hour of ['01', '05', '09', '13', '17', '21']) {
        if (day === '12' && hour > '09') break;
        for (const minute of ['07', '31']) {
          await send(`${day}T${hour}:${minute}:00`, ips[i % ips.length], actions[i % 3]);
          i += 1;
        }
      }
    }
    await settle();
    clock = t('12T12:00:00');
  });
  afterAll(async () => {
    await packed?.close();
  });

  const everyPart = [undefined, 'allow', 'challenge', 'deny'];

  it('packs every settled hour and whole day once, and answers as the events do', async () => {
    const before = await Promise.all(everyPart.map((a) => ask(PANELS, from + 1, to, a)));
    expect(before[0].total).toBe(30);
    const first = await packed.built.rollupCompactor.run();
    expect(first.written).toBeGreaterThan(0);
    expect(await packed.built.rollupCompactor.run()).toEqual({ written: 0, current: 0 });
    const ids = (await rollups().find({}).toArray())
      .map((d) => d._id)
      .filter((id) => id.startsWith(`${packed.env.id}:`) && id.includes(':p:'));
    // Whole days: the 10th (from the hour of the event that started the rollups) and the 11th; the 12th is not over.
    expect(ids.filter((id) => id.includes(':D:')).sort()).toEqual(
      ['all', 'allow', 'challenge', 'deny']
        .flatMap((p) => [
          `${packed.env.id}:D:${t('10T00:00:00')}:p:${p}`,
          `${packed.env.id}:D:${t('11T00:00:00')}:p:${p}`,
        ])
        .sort(),
    );
    for (const [k, action] of everyPart.entries())
      expect(await ask(PANELS, from, to, action)).toEqual(before[k]);
  });

  it('counts a late event in a packed hour at once, and packs that hour and its day again', async () => {
    await send('', '9.9.9.9', 'deny', new Date(t('11T13:20:00')).toISOString());
    await settle();
    const deny = await ask(PANELS, from, to, 'deny');
    expect(deny.ips.entries).toContainEqual({ key: '9.9.9.9', count: 1 });
    expect(deny).toEqual(await ask(PANELS, from + 1, to, 'deny'));
    // The hour and the day, of all events and of the deny verdict.
    expect((await packed.built.rollupCompactor.run()).written).toBe(4);
    expect(await ask(PANELS, from, to, 'deny')).toEqual(deny);
  });

  it("reads the packed copies: with every hour's own dimensions gone, the answers stay", async () => {
    const before = await Promise.all(everyPart.map((a) => ask(PANELS, from + 1, to, a)));
    await rollups().deleteMany({
      _id: {
        $in: (await rollups().find({}).toArray()).map((d) => d._id).filter((id) => /:h:\d+:d:/.test(id)),
      },
    });
    for (const [k, action] of everyPart.entries())
      expect(await ask(PANELS, from, to, action)).toEqual(before[k]);
  });
});
