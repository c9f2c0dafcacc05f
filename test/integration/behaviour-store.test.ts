/**
 * The behavioural profile and the velocity windows as repositories on the real (embedded)
 * database: what one process writes as deltas, another reads back cold, decoded; tables stay
 * bounded; pending challenges are remembered and forgotten; two instances' windows add up.
 */
import { randomBytes } from 'node:crypto';
import { testDatabase, type TestDatabase } from '../support/db';
import { StateLayer } from '../../src/store/state/layer';
import { StateUserStore, USER_KEYED, USERS } from '../../src/store/user-state';
import { COUNTERS, StateCounterStore } from '../../src/store/counters';
import { idOf } from '../../src/store/ids';
import type { DeviceContext } from '../../src/core/model';
import { asEnvId } from '../../src/core/model';
import { atTime, TABLE_CAPS, PENDING_CAP } from '../../src/core/scoring/behaviour';
import { readWindow, counterBumps, NO_SNAPSHOTS, type Outcome } from '../../src/core/scoring/population';
import { extractFeatures } from '../../src/core/scoring/features';
import { validateEvent, type ParseOptions } from '../../src/core/events/parse';
import type { Endpoint } from '../../src/core/model';
import { eventCommand } from '../../src/rest/event-command';
import { deviceKey } from '../../src/core/devices/service';
import { lookupIp, parseUserAgent } from '../../src/intel';

/** A Castle JSON body validated as the REST door validates it. */
const parseEvent = (endpoint: Endpoint, body: unknown, opts: ParseOptions) =>
  validateEvent(endpoint, eventCommand(body), opts);

const DAY = 86_400_000;
const T0 = Date.parse('2026-11-01T10:00:00Z');
const env = asEnvId(`env-${randomBytes(4).toString('hex')}`);

let database: TestDatabase;
const layers: StateLayer[] = [];
const layer = (writeMode: 'deltas' | 'snapshots' = 'deltas', keyed = false) => {
  const l = new StateLayer(database.db, {
    writeMode,
    ...(keyed ? { keyed: { [USERS]: USER_KEYED } } : {}),
    flushIntervalMs: 5,
    onError: (err) => {
      throw err;
    },
  });
  layers.push(l);
  return l;
};

beforeAll(async () => {
  database = await testDatabase();
});
afterAll(async () => {
  await Promise.all(layers.map((l) => l.flush()));
  await database?.drop();
});

describe('behavioural profile', () => {
  it('is written as deltas and read back cold, with event-time counts, bounded tables and the last legitimate place', async () => {
    const writer = layer();
    const users = new StateUserStore({ db: database.db, state: writer });
    await users.load(env, 'bob');
    // 30 addresses: more than the table keeps. The first one is used most and must survive.
    for (let k = 0; k < 30; k++) {
      const ip = k % 3 === 0 ? '81.2.69.1' : `81.2.69.${10 + k}`;
      users.record(env, 'bob', {
        behaviour: {
          legit: {
            values: { ip, cc: 'GB' },
            weight: 1,
            at: T0 + k * DAY,
            location: { at: T0 + k * DAY, lat: 51.5, lon: -0.1, cc: 'GB' },
          },
        },
      });
      // Each change lands in its own flush, as a stream of requests would.
      await writer.flush();
    }
    users.record(env, 'bob', {
      behaviour: { hostile: { values: { ip: '52.95.110.1' }, weight: 1, at: T0 + 31 * DAY } },
    });
    await writer.flush();

    const reader = new StateUserStore({ db: database.db, state: layer() });
    const b = (await reader.load(env, 'bob'))!.behaviour;
    const now = T0 + 30 * DAY;
    // Thirty legitimate events, decayed by at most 30 days of a 120-day half-life.
    expect(atTime(b.n, now)).toBeGreaterThan(25);
    expect(atTime(b.n, now)).toBeLessThan(30);
    expect(Object.keys(b.tables.ip!).length).toBeLessThanOrEqual(TABLE_CAPS.ip);
    expect(b.tables.ip!['81.2.69.1']).toBeDefined();
    expect(atTime(b.tables.cc!.GB!.c, now)).toBeCloseTo(atTime(b.n, now), 6);
    expect(b.lastLegit).toMatchObject({ at: T0 + 29 * DAY, cc: 'GB' });
    expect(b.hostile.ip?.['52.95.110.1']).toBeDefined();
  });

  it('remembers a challenge until it is answered, and only the latest few', async () => {
    const l = layer();
    const users = new StateUserStore({ db: database.db, state: l });
    await users.load(env, 'carol');
    for (let k = 0; k < PENDING_CAP + 2; k++) {
      users.record(env, 'carol', {
        behaviour: {
          pend: {
            id: `ev.${k}`,
            challenge: {
              at: T0 + k * 60_000,
              values: { ip: '81.2.69.9', asn: 'AS2856' },
              tentative: 0.3,
              operator: k === PENDING_CAP + 1,
              ...(k === PENDING_CAP + 1 ? { client: { app: true, release: 'CFNetwork|ShopApp/304' } } : {}),
              ...(k === PENDING_CAP ? { client: { app: false, release: null } } : {}),
            },
          },
        },
      });
      await l.flush();
    }
    let b = (await new StateUserStore({ db: database.db, state: layer() }).load(env, 'carol'))!.behaviour;
    expect(Object.keys(b.pending)).toHaveLength(PENDING_CAP);
    expect(b.pending['ev.0']).toBeUndefined();
    expect(b.pending[`ev.${PENDING_CAP + 1}`]).toMatchObject({
      values: { ip: '81.2.69.9', asn: 'AS2856' },
      tentative: 0.3,
    });
    // Whether the operator was taught tentatively comes back, so that a failed answer takes it back.
    expect(b.pending[`ev.${PENDING_CAP + 1}`]?.operator).toBe(true);
    expect(b.pending[`ev.${PENDING_CAP}`]?.operator).toBeUndefined();
    // So does what the login was (an app's stack, its release): a passed challenge teaches the token habit.
    expect(b.pending[`ev.${PENDING_CAP + 1}`]?.client).toEqual({
      app: true,
      release: 'CFNetwork|ShopApp/304',
    });
    expect(b.pending[`ev.${PENDING_CAP}`]?.client).toEqual({ app: false, release: null });
    expect(b.pending[`ev.${PENDING_CAP - 1}`]?.client).toBeUndefined();
    users.record(env, 'carol', {
      behaviour: {
        resolve: `ev.${PENDING_CAP + 1}`,
        legit: { values: { ip: '81.2.69.9' }, weight: 1, at: T0, location: null },
      },
    });
    await l.flush();
    b = (await new StateUserStore({ db: database.db, state: layer() }).load(env, 'carol'))!.behaviour;
    expect(b.pending[`ev.${PENDING_CAP + 1}`]).toBeUndefined();
    expect(b.tables.ip?.['81.2.69.9']).toBeDefined();
  });
});

describe('velocity windows', () => {
  it('two instances counting the same address add up, and the distinct accounts are the union', async () => {
    const event = (user: string) =>
      parseEvent(
        'risk',
        {
          event: '$login',
          user: { id: user },
          context: { ip: '81.2.69.200', headers: { 'User-Agent': 'curl/8.4.0' } },
          timestamp: new Date(T0).toISOString(),
        },
        { sandbox: false, now: new Date(T0 + 1000) },
      );
    const a = new StateCounterStore({ db: database.db, state: layer(), now: () => new Date(T0) });
    const b = new StateCounterStore({ db: database.db, state: layer(), now: () => new Date(T0) });
    const outcome = (account: string): Outcome => ({
      attempt: true,
      failure: true,
      success: false,
      registration: false,
      unknownAccount: true,
      stopped: false,
      challengeFeedback: false,
      account,
    });
    for (let k = 0; k < 40; k++) {
      const user = `victim-${k % 8}`;
      const e = event(user);
      const f = extractFeatures(
        e,
        lookupIp('81.2.69.200'),
        parseUserAgent(e.context.userAgent),
        deviceKey(e),
      );
      (k % 2 === 0 ? a : b).bump(
        env,
        counterBumps(f, outcome(user), NO_SNAPSHOTS, T0, {
          acceptLanguage: false,
          secFetch: false,
          clientHints: false,
        }),
      );
    }
    await Promise.all(layers.map((l) => l.flush()));
    const e = event('victim-x');
    const f = extractFeatures(e, lookupIp('81.2.69.200'), parseUserAgent(e.context.userAgent), deviceKey(e));
    const fresh = new StateCounterStore({ db: database.db, state: layer(), now: () => new Date(T0) });
    const key = `w:ip:81.2.69.200:${f.hourBucket}`;
    const snaps = await fresh.read(env, [key]);
    const w = readWindow(snaps ?? NO_SNAPSHOTS, f, 'ip');
    expect(w).toMatchObject({ attempts: 40, failures: 40, unknown: 40, accounts: 8, failedAccounts: 8 });
    // The environment-wide window's five-minute slots add up too, and read back as the last minutes.
    const envKeys = [`w:env:*:${f.hourBucket}`, `w:env:*:${f.hourBucket - 1}`];
    const envWindow = readWindow((await fresh.read(env, envKeys)) ?? NO_SNAPSHOTS, f, 'env');
    expect(envWindow?.recent).toMatchObject({ attempts: 40, unknown: 40, failures: 40, registrations: 0 });
  });
});

describe('documents changed in place', () => {
  // Where the layer writes whole documents (the embedded database), the stores change the cached
  // document in place instead of building deltas: the stored documents must be the same.
  it('store what the same changes written as deltas store: users, devices and windows', async () => {
    const context = (ip: string, country: string): DeviceContext => ({
      ip,
      location: {
        country_code: country,
        country: null,
        region: null,
        region_code: null,
        city: null,
        lat: 51.5,
        lon: -0.1,
      },
      userAgent: parseUserAgent('Mozilla/5.0 (X11; Linux x86_64; rv:124.0) Gecko/20100101 Firefox/124.0'),
      type: 'desktop',
      properties: { plan: 'pro' },
    });
    const stored = async (mode: 'deltas' | 'snapshots') => {
      const modeEnv = asEnvId(`${env}-${mode}`);
      const l = layer(mode);
      const users = new StateUserStore({ db: database.db, state: l });
      const counters = new StateCounterStore({ db: database.db, state: l, now: () => new Date(T0) });
      await users.load(modeEnv, 'dora');
      for (let k = 0; k < 30; k++) {
        const at = new Date(T0 + k * 3_600_000);
        const ip = k % 4 === 0 ? '81.2.69.1' : `81.2.69.${10 + k}`;
        users.record(modeEnv, 'dora', {
          profile: {
            seenAt: at,
            firstSeenAt: at,
            email: 'dora@example.com',
            traits: { plan: k % 2 ? 'pro' : 'free', 'a.b': k },
            location: { lat: 51.5, lon: -0.1, country: k % 5 ? 'GB' : 'FR', at },
            country: k % 5 ? 'GB' : 'FR',
          },
          devices: [
            {
              key: `fp.${k % 3}`,
              ...(k < 3
                ? { create: { token: `tok-${mode}-${k}`, identity: 'fingerprint' as const, at } }
                : {}),
              seen: { at, context: context(ip, k % 5 ? 'GB' : 'FR') },
              eventRisk: (k % 10) / 10,
              ...(k === 7 ? { review: { state: 'reported' as const, at } } : {}),
              ...(k === 9 ? { link: 'fp.other' } : {}),
              ...(k % 3 === 0 ? { machine: `mk${k % 2}` } : {}),
            },
          ],
          behaviour: {
            legit: {
              values: { ip, cc: k % 5 ? 'GB' : 'FR', dev: `fp.${k % 3}` },
              weight: k % 6 === 5 ? -0.5 : 1,
              at: at.getTime(),
              location: { at: at.getTime(), lat: 51.5, lon: -0.1, cc: 'GB' },
            },
            ...(k % 7 === 3
              ? { hostile: { values: { ip: `52.95.110.${k}` }, weight: 1, at: at.getTime() } }
              : {}),
            ...(k % 4 === 1
              ? { pend: { id: `ev.${k}`, challenge: { at: at.getTime(), values: { ip }, tentative: 0.3 } } }
              : {}),
            ...(k % 4 === 2 ? { resolve: `ev.${k - 1}` } : {}),
          },
        });
        const keys = [`w:ip:${ip}:1`, 'w:env:*:1', 'p:*'];
        await counters.read(modeEnv, keys);
        counters.bump(modeEnv, [
          { key: keys[0] as string, inc: { a: 1, f: k % 2 }, add: { u: `u${k % 5}` }, keepMs: 3_600_000 + k },
          { key: 'w:env:*:1', inc: { a: 1, [`a${k % 12}`]: 1 }, late: true },
          {
            key: 'p:*',
            inc: { c: 0.5 },
            min: { first: T0 - k },
            ...(k === 20 ? { replaceSet: { u: ['x', 'y'] } } : {}),
            late: 'population',
          },
        ]);
        if (k % 5 === 4) await l.flush();
      }
      await l.flush();
      const reader = layer();
      const user = await reader.read(USERS, idOf(modeEnv, 'dora'));
      const windows = await reader.readAll(
        COUNTERS,
        ['w:ip:81.2.69.1:1', 'w:ip:81.2.69.39:1', 'w:env:*:1', 'p:*'].map((k) => idOf(modeEnv, k)),
      );
      // Written whole, the device tokens are the mode's own: name them alike. Deltas add a flush's
      // increments together before adding them to the stored count, so sums may differ in the
      // last bits: counts are compared to twelve digits.
      const text = JSON.stringify({ user, windows })
        .replaceAll(`${env}-${mode}`, 'ENV')
        .replaceAll(`-${mode}-`, '-');
      return JSON.parse(text, (_k, v: unknown) =>
        typeof v === 'number' && !Number.isInteger(v) ? Number(v.toPrecision(12)) : v,
      ) as { user: { p: { t: { ip: unknown } } }; windows: unknown[] };
    };
    const asDeltas = await stored('deltas');
    const inPlace = await stored('snapshots');
    expect(asDeltas.user.p.t.ip).toBeDefined();
    expect(asDeltas.windows).toHaveLength(4);
    expect(inPlace).toEqual(asDeltas);
  });

  it('keep the decoded profile between changes exactly as a cold read decodes it', async () => {
    // A verdict's view of its user is not decoded again after its own change: the model decoded
    // once is changed with the document. After every change it must equal what another process
    // decodes from the stored document, in the same order (sums over a table follow it).
    const l = layer('snapshots');
    const users = new StateUserStore({ db: database.db, state: l });
    const reader = layer();
    const cold = new StateUserStore({ db: database.db, state: reader });
    const modeEnv = asEnvId(`${env}-kept`);
    await users.load(modeEnv, 'erin');
    let kept = 0;
    for (let k = 0; k < 60; k++) {
      const at = T0 + k * 3_600_000;
      // 40 addresses (more than the table keeps: evictions), some added tentatively and taken
      // back (a count of zero is left out of the model, and may come back later).
      const ip = `81.2.70.${k % 40}`;
      const before = (await users.load(modeEnv, 'erin'))?.behaviour;
      users.record(modeEnv, 'erin', {
        profile: { seenAt: new Date(at), firstSeenAt: new Date(at) },
        behaviour: {
          legit: {
            values: { ip, cc: k % 5 ? 'GB' : 'FR', dev: `fp.${k % 3}` },
            weight: k % 10 === 7 ? -0.5 : k % 10 === 6 ? 0.5 : 1,
            at,
            location: k % 3 ? { at, lat: 51.5 + k, lon: -0.1, cc: 'GB' } : null,
          },
          ...(k % 7 === 3 ? { hostile: { values: { ip: `52.95.110.${k}` }, weight: 1, at } } : {}),
          ...(k % 4 === 1
            ? { pend: { id: `ev.${k}`, challenge: { at, values: { ip }, tentative: 0.3 } } }
            : {}),
          ...(k % 4 === 2 ? { resolve: `ev.${k - 1}` } : {}),
        },
      });
      const now = (await users.load(modeEnv, 'erin'))!.behaviour;
      if (now === before) kept++;
      await l.flush();
      reader.invalidate(() => true);
      const decoded = (await cold.load(modeEnv, 'erin'))!.behaviour;
      expect(JSON.stringify(now)).toBe(JSON.stringify(decoded));
    }
    // Most changes kept the model (those that bring back a count left out decode it again).
    expect(kept).toBeGreaterThan(40);
  });
});

describe('objects keyed by data', () => {
  // A user document's devices, behaviour tables and pending challenges are keyed by data: V8 keeps
  // such objects as hash tables only when they have no prototype (state/delta.ts, dict).
  it.each(['snapshots', 'deltas'] as const)(
    'are hash tables in a user document changed (%s) and read back cold; its other objects are not',
    async (mode) => {
      const modeEnv = asEnvId(`${env}-keyed-${mode}`);
      const l = layer(mode, true);
      const users = new StateUserStore({ db: database.db, state: l });
      await users.load(modeEnv, 'erin');
      for (let k = 0; k < 3; k++) {
        const at = T0 + k * 3_600_000;
        users.record(modeEnv, 'erin', {
          profile: { seenAt: new Date(at), firstSeenAt: new Date(at) },
          devices: [
            {
              key: `fp.${k}`,
              create: { token: `tok-keyed-${mode}-${k}`, identity: 'fingerprint', at: new Date(at) },
              seen: { at: new Date(at), context: null },
            },
          ],
          behaviour: {
            legit: { values: { ip: `81.2.69.${k}`, bf: 'constructor' }, weight: 1, at, location: null },
            hostile: { values: { ip: `52.95.110.${k}` }, weight: 1, at },
            pend: { id: `ev.${k}`, challenge: { at, values: { ip: `81.2.69.${k}` }, tentative: 0.3 } },
          },
        });
      }
      await l.flush();
      const kinds = (doc: unknown) => {
        const d = doc as {
          d: Record<string, object>;
          p: { t: Record<string, Record<string, object>>; h: Record<string, object>; pd: object };
        };
        const proto = (o: object | undefined) => (o && Object.getPrototypeOf(o) === null ? 'dict' : 'object');
        return {
          devices: proto(d.d),
          device: proto(d.d['fp%2E0']),
          model: proto(d.p),
          tables: proto(d.p.t),
          ip: proto(d.p.t.ip),
          bf: proto(d.p.t.bf),
          entry: proto(d.p.t.ip?.['81%2E2%2E69%2E0']),
          hostile: proto(d.p.h.ip),
          pending: proto(d.p.pd),
        };
      };
      const expected = {
        devices: 'dict',
        device: 'object',
        model: 'object',
        tables: 'object',
        ip: 'dict',
        bf: 'dict',
        entry: 'object',
        hostile: 'dict',
        pending: 'dict',
      };
      const id = idOf(modeEnv, 'erin');
      expect(kinds(l.peek(USERS, id))).toEqual(expected);
      expect(kinds(await layer(mode, true).read(USERS, id))).toEqual(expected);
      // The value named like Object's constructor was counted as any other.
      const b = (await new StateUserStore({ db: database.db, state: layer(mode, true) }).load(
        modeEnv,
        'erin',
      ))!.behaviour;
      expect(Object.keys(b.tables.bf ?? {})).toEqual(['constructor']);
      const named: string = 'constructor';
      expect(b.tables.bf?.[named]?.c).toBeGreaterThan(0);
      expect(Object.keys(b.tables.ip ?? {})).toHaveLength(3);
      // The decoded model holds the stored entries themselves, not copies: held in memory between
      // verdicts (in place) and decoded from a read alike.
      const entryIn = (state: StateLayer) =>
        (state.peek(USERS, id) as { p: { t: Record<string, Record<string, object>> } }).p.t.ip?.[
          '81%2E2%2E69%2E1'
        ];
      const held = (await users.load(modeEnv, 'erin'))!.behaviour;
      expect(held.tables.ip?.['81.2.69.1']).toBe(entryIn(l));
      const coldLayer = layer(mode, true);
      const cold = (await new StateUserStore({ db: database.db, state: coldLayer }).load(modeEnv, 'erin'))!
        .behaviour;
      expect(cold.tables.ip?.['81.2.69.1']).toBe(entryIn(coldLayer));
      expect(cold.tables.ip?.['81.2.69.1']).toMatchObject({ c: expect.any(Number), l: T0 + 3_600_000 });
    },
  );
});
