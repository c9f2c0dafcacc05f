/**
 * The behavioural profile and the velocity windows as repositories on the real (embedded)
 * database: what one process writes as deltas, another reads back cold, decoded; tables stay
 * bounded; pending challenges are remembered and forgotten; two instances' windows add up.
 */
import { randomBytes } from 'node:crypto';
import { testDatabase, type TestDatabase } from '../support/db';
import { StateLayer } from '../../src/store/state/layer';
import { StateUserStore } from '../../src/store/user-state';
import { StateCounterStore } from '../../src/store/counters';
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
const layer = () => {
  const l = new StateLayer(database.db, {
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
    const users = new StateUserStore(database.db, writer);
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

    const reader = new StateUserStore(database.db, layer());
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
    const users = new StateUserStore(database.db, l);
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
            },
          },
        },
      });
      await l.flush();
    }
    let b = (await new StateUserStore(database.db, layer()).load(env, 'carol'))!.behaviour;
    expect(Object.keys(b.pending)).toHaveLength(PENDING_CAP);
    expect(b.pending['ev.0']).toBeUndefined();
    expect(b.pending[`ev.${PENDING_CAP + 1}`]).toMatchObject({
      values: { ip: '81.2.69.9', asn: 'AS2856' },
      tentative: 0.3,
    });
    // Whether the operator was taught tentatively comes back, so that a failed answer takes it back.
    expect(b.pending[`ev.${PENDING_CAP + 1}`]?.operator).toBe(true);
    expect(b.pending[`ev.${PENDING_CAP}`]?.operator).toBeUndefined();
    users.record(env, 'carol', {
      behaviour: {
        resolve: `ev.${PENDING_CAP + 1}`,
        legit: { values: { ip: '81.2.69.9' }, weight: 1, at: T0, location: null },
      },
    });
    await l.flush();
    b = (await new StateUserStore(database.db, layer()).load(env, 'carol'))!.behaviour;
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
    const a = new StateCounterStore(database.db, layer(), () => new Date(T0));
    const b = new StateCounterStore(database.db, layer(), () => new Date(T0));
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
    const fresh = new StateCounterStore(database.db, layer(), () => new Date(T0));
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
