/**
 * The dashboards' read ports' contract (QueryStore, AnalyticsStore), as cases run alike against
 * the MongoDB stores on a real database (test/integration/read-stores.test.ts) and the in-memory
 * fakes (test/unit/store/read-stores-fake.spec.ts), so that the fakes the unit tests read through
 * cannot drift from the stores. Only what the ports promise is checked: filters, the keyset order
 * and its cursors (a search may stop early and say where), tenants apart, counts and groups.
 *
 * The data is small and written out here, and so is every expected answer.
 */
import { InvalidParameters } from '../../../src/core/errors';
import {
  unknownDeviceContext,
  type Device,
  type EnvId,
  type RejectedPayload,
  type StoredEvent,
} from '../../../src/core/model';
import type {
  DeviceFilter,
  EventFilter,
  Found,
  RejectedFilter,
  SortKey,
} from '../../../src/core/queries/model';
import type { QueryStore } from '../../../src/core/queries/ports';
import type { AnalyticsStore, CountField } from '../../../src/core/analytics/ports';
import { storedEvent } from '../events';

export const ENV = 'contract-env-a' as EnvId;
export const OTHER_ENV = 'contract-env-b' as EnvId;
/** Whole minutes: a range of them is one the overview's rollups can answer. */
export const T0 = Date.parse('2026-11-20T12:00:00.000Z');
const ago = (minutes: number) => new Date(T0 - minutes * 60_000);

interface Row {
  id: string;
  min: number;
  user: string | null;
  device: string | null;
  ip: string;
  email: string | null;
  country: string;
  asn: number;
  action: 'allow' | 'challenge' | 'deny' | null;
  signals: string[];
  policy: string | null;
  name?: string;
}

// prettier-ignore
const ROWS: Row[] = [
  { id: 'e01', min: 1, user: 'u1', device: 'd1', ip: '81.2.69.10', email: 'u1@example.com', country: 'US', asn: 3320, action: 'allow', signals: ['new_device'], policy: null },
  { id: 'e02', min: 2, user: 'u2', device: 'd2', ip: '81.2.70.5', email: 'u2@example.com', country: 'DE', asn: 24940, action: 'deny', signals: ['proxy_ip', 'new_device'], policy: 'pol-a' },
  { id: 'e03', min: 3, user: 'u1', device: 'd1', ip: '81.2.69.10', email: 'U1@Example.com', country: 'US', asn: 3320, action: 'challenge', signals: ['proxy_ip'], policy: 'pol-b' },
  // The same millisecond as e03: the id orders them (e04 first).
  { id: 'e04', min: 3, user: 'u3', device: 'd3', ip: '5.9.1.1', email: 'u3@example.com', country: 'FR', asn: 7922, action: 'allow', signals: [], policy: null, name: '$registration' },
  { id: 'e05', min: 5, user: null, device: null, ip: '81.2.69.12', email: null, country: 'US', asn: 3320, action: null, signals: [], policy: null, name: '$login.failed' },
  { id: 'e06', min: 6, user: 'u2', device: 'd2', ip: '81.2.70.5', email: 'u2@example.com', country: 'DE', asn: 24940, action: 'deny', signals: ['proxy_ip'], policy: 'pol-a' },
  { id: 'e07', min: 8, user: 'u1', device: 'd4', ip: '81.2.69.10', email: 'u1@example.com', country: 'US', asn: 3320, action: 'allow', signals: ['new_device'], policy: null },
  { id: 'e08', min: 9, user: 'u3', device: 'd3', ip: '5.9.1.1', email: 'u3@example.com', country: 'FR', asn: 7922, action: 'challenge', signals: ['new_device'], policy: 'pol-b' },
  { id: 'e09', min: 61, user: 'u1', device: 'd1', ip: '81.2.69.10', email: 'u1@example.com', country: 'US', asn: 3320, action: 'allow', signals: [], policy: null },
];

function eventOf(r: Row, envId: EnvId): StoredEvent {
  return storedEvent({
    id: envId === ENV ? r.id : `${r.id}-b`,
    envId,
    occurredAt: ago(r.min),
    name: r.name ?? '$login',
    endpoint: r.action === null ? 'track' : 'risk',
    userId: r.user,
    email: r.email,
    deviceToken: r.device,
    ip: r.ip,
    country: r.country,
    asn: r.asn,
    action: r.action,
    risk: r.action === null ? null : r.action === 'deny' ? 0.95 : r.action === 'challenge' ? 0.7 : 0.1,
    signals: r.signals,
    policy:
      r.policy && r.action
        ? { id: r.policy, revision: 'r1', name: `Policy ${r.policy}`, action: r.action }
        : null,
  });
}

function deviceOf(
  token: string,
  envId: EnvId,
  userId: string,
  seenMin: number,
  o: { country: string; risk: number; feedback?: 'approved' | 'reported'; removed?: boolean },
): Device {
  return {
    token,
    envId,
    userId,
    identity: 'fingerprint',
    fingerprintKey: `fp-${token}`,
    createdAt: ago(120),
    lastSeenAt: ago(seenMin),
    approvedAt: o.feedback === 'approved' ? ago(seenMin) : null,
    escalatedAt: o.feedback === 'reported' ? ago(seenMin) : null,
    mitigatedAt: null,
    removedAt: o.removed ? ago(seenMin) : null,
    riskScore: o.risk,
    feedback: o.feedback ?? null,
    context: {
      ...unknownDeviceContext(),
      location: {
        country_code: o.country,
        country: null,
        region: null,
        region_code: null,
        city: null,
        lat: null,
        lon: null,
      },
    },
    lastEventRisk: o.risk / 100,
    sightings: 1,
    machine: null,
    linkedKeys: [],
  };
}

function rejectedOf(id: string, envId: EnvId, userId: string | null, min: number): RejectedPayload {
  return {
    id,
    envId,
    endpoint: 'track',
    reason: 'invalid_parameters',
    fields: [{ field: 'event', message: 'is required' }],
    payload: '{}',
    userId,
    receivedAt: ago(min),
  };
}

/** What both stores are given before the cases run: the same records, written their own way. */
export interface ReadStoreData {
  events: StoredEvent[];
  rejected: RejectedPayload[];
  devices: Device[];
}

export const READ_STORE_DATA: ReadStoreData = {
  events: [...ROWS.map((r) => eventOf(r, ENV)), eventOf(ROWS[1] as Row, OTHER_ENV)],
  rejected: [
    rejectedOf('r1', ENV, 'u1', 1),
    rejectedOf('r2', ENV, null, 2),
    rejectedOf('r3', ENV, 'u1', 30),
    rejectedOf('r1-b', OTHER_ENV, 'u1', 1),
  ],
  devices: [
    deviceOf('d1', ENV, 'u1', 1, { country: 'US', risk: 10 }),
    deviceOf('d2', ENV, 'u2', 2, { country: 'DE', risk: 100, feedback: 'reported' }),
    deviceOf('d3', ENV, 'u3', 3, { country: 'FR', risk: 45, removed: true }),
    deviceOf('d4', ENV, 'u1', 8, { country: 'US', risk: 0, feedback: 'approved' }),
    deviceOf('d1', OTHER_ENV, 'u1', 1, { country: 'US', risk: 100, feedback: 'reported' }),
  ],
};

export interface ReadStores {
  queries: QueryStore;
  analytics: AnalyticsStore;
}

const ALL = ['e01', 'e02', 'e04', 'e03', 'e05', 'e06', 'e07', 'e08', 'e09'];

/** Event filters and the ids each matches in ENV, newest first. */
export const EVENT_CASES: [string, EventFilter, string[]][] = [
  ['no filter', {}, ALL],
  ['userId', { userId: 'u1' }, ['e01', 'e03', 'e07', 'e09']],
  ['deviceToken', { deviceToken: 'd2' }, ['e02', 'e06']],
  ['ip', { ip: '81.2.69.10' }, ['e01', 'e03', 'e07', 'e09']],
  ['a /24 network', { network: '81.2.69.0/24' }, ['e01', 'e03', 'e05', 'e07', 'e09']],
  ['a /16 network with a user', { network: '81.2.0.0/16', userId: 'u2' }, ['e02', 'e06']],
  ['email in lower case', { email: 'u1@example.com' }, ['e01', 'e07', 'e09']],
  ['email as sent, or in lower case', { email: 'U1@Example.com' }, ['e01', 'e03', 'e07', 'e09']],
  ['policyId', { policyId: 'pol-a' }, ['e02', 'e06']],
  ['signal', { signal: 'proxy_ip' }, ['e02', 'e03', 'e06']],
  ['asn', { asn: 7922 }, ['e04', 'e08']],
  ['country', { country: 'DE' }, ['e02', 'e06']],
  ['name', { name: '$registration' }, ['e04']],
  ['action', { action: 'deny' }, ['e02', 'e06']],
  ['action and signal', { action: 'allow', signal: 'new_device' }, ['e01', 'e07']],
  ['a time range (from in, to out)', { from: ago(10), to: ago(3) }, ['e05', 'e06', 'e07', 'e08']],
  ['a user in a time range', { userId: 'u1', from: ago(61), to: ago(60) }, ['e09']],
  ['a signal no event has', { signal: 'tor_exit' }, []],
  ['a user with no events', { userId: 'nobody' }, []],
];

/**
 * Every page of a search, `limit` at a time, each from where the last stopped (after its last row,
 * or where it says it stopped early): the keys of the rows, in order.
 */
async function walkPages<T>(
  search: (after: SortKey | null) => Promise<Found<T>>,
  keyOf: (row: T) => SortKey,
  limit: number,
): Promise<string[]> {
  const ids: string[] = [];
  let after: SortKey | null = null;
  for (let pages = 0; pages < 100; pages++) {
    const found = await search(after);
    ids.push(...found.rows.map((r) => keyOf(r).id));
    const last = found.rows[found.rows.length - 1];
    if (found.rows.length === limit && last) after = keyOf(last);
    else if (found.stoppedAt) after = found.stoppedAt;
    else return ids;
  }
  throw new Error('a search that never ends');
}

/** Every page of an event search: the ids. */
const walk = (store: QueryStore, env: EnvId, filter: EventFilter, limit: number) =>
  walkPages(
    (after) => store.searchEvents(env, filter, limit, after),
    (e) => ({ at: e.occurredAt, id: e.id }),
    limit,
  );

/** Every page of a device search in ENV: the tokens. */
const walkDevices = (store: QueryStore, filter: DeviceFilter, limit: number) =>
  walkPages(
    async (after) => {
      const found = await store.searchDevices(ENV, filter, limit, after);
      expect(found.rows.every((d) => d.envId === ENV)).toBe(true);
      return found;
    },
    (d) => ({ at: d.lastSeenAt, id: d.token }),
    limit,
  );

/** Device filters and the tokens each matches in ENV, most recently seen first. */
export const DEVICE_CASES: [string, DeviceFilter, string[]][] = [
  ['no filter (removed left out)', {}, ['d1', 'd2', 'd4']],
  ['removed too', { includeRemoved: true }, ['d1', 'd2', 'd3', 'd4']],
  ['userId', { userId: 'u1' }, ['d1', 'd4']],
  ['approved', { reviewState: 'approved' }, ['d4']],
  ['reported', { reviewState: 'reported' }, ['d2']],
  ['unreviewed', { reviewState: 'unreviewed', includeRemoved: true }, ['d1', 'd3']],
  ['country', { country: 'DE' }, ['d2']],
  ['minRiskScore', { minRiskScore: 50 }, ['d2']],
  ['maxRiskScore', { maxRiskScore: 10 }, ['d1', 'd4']],
  ['last seen in a range', { lastSeenFrom: ago(8), lastSeenTo: ago(1) }, ['d2', 'd4']],
];

export const REJECTED_CASES: [string, RejectedFilter, string[]][] = [
  ['no filter', {}, ['r1', 'r2', 'r3']],
  ['userId', { userId: 'u1' }, ['r1', 'r3']],
  ['a time range', { from: ago(10), to: ago(1) }, ['r2']],
];

/** Grouped counts: filter, field, limit, skipNull, the groups and how many values there are. */
export const GROUP_CASES: [
  string,
  EventFilter,
  CountField,
  number,
  boolean,
  [string | null, number][],
  number,
][] = [
  [
    'by action, none kept',
    {},
    'action',
    10,
    false,
    [
      ['allow', 4],
      ['challenge', 2],
      ['deny', 2],
      [null, 1],
    ],
    4,
  ],
  [
    'by signal',
    {},
    'signal',
    10,
    true,
    [
      ['new_device', 4],
      ['proxy_ip', 3],
    ],
    2,
  ],
  [
    'by country, the top two',
    {},
    'country',
    2,
    true,
    [
      ['US', 5],
      ['DE', 2],
    ],
    3,
  ],
  [
    'by ASN (ties in number order)',
    {},
    'asn',
    10,
    true,
    [
      ['3320', 5],
      ['7922', 2],
      ['24940', 2],
    ],
    3,
  ],
  [
    'by user, none left out',
    {},
    'userId',
    10,
    true,
    [
      ['u1', 4],
      ['u2', 2],
      ['u3', 2],
    ],
    3,
  ],
  [
    'by user, none kept',
    {},
    'userId',
    10,
    false,
    [
      ['u1', 4],
      ['u2', 2],
      ['u3', 2],
      [null, 1],
    ],
    4,
  ],
  ['by device of a user', { userId: 'u1' }, 'deviceToken', 1, true, [['d1', 3]], 2],
  [
    'by address in a country',
    { country: 'US' },
    'ip',
    10,
    true,
    [
      ['81.2.69.10', 4],
      ['81.2.69.12', 1],
    ],
    2,
  ],
  [
    'by action in a time range',
    { from: ago(10), to: ago(0) },
    'action',
    10,
    false,
    [
      ['allow', 3],
      ['challenge', 2],
      ['deny', 2],
      [null, 1],
    ],
    4,
  ],
  [
    'by country of a verdict in a time range',
    { action: 'deny', from: ago(10), to: ago(0) },
    'country',
    10,
    true,
    [['DE', 2]],
    1,
  ],
];

/**
 * The contract, as `describe` blocks. `open` gives the stores under test with READ_STORE_DATA in
 * them (called once, before the cases); `close` ends what it opened.
 */
export function readStoreContract(
  name: string,
  open: () => Promise<ReadStores>,
  close: () => Promise<void> = async () => {},
): void {
  describe(`the read ports' contract: ${name}`, () => {
    let s: ReadStores;
    beforeAll(async () => {
      s = await open();
    }, 300_000);
    afterAll(() => close());

    describe('QueryStore.searchEvents', () => {
      it.each(EVENT_CASES)(
        '%s: the matching events, newest first, page after page',
        async (_, filter, ids) => {
          expect(await walk(s.queries, ENV, filter, 2)).toEqual(ids);
          expect(await walk(s.queries, ENV, filter, 100)).toEqual(ids);
        },
      );

      it('answers a page of at most the limit, strictly after the key given', async () => {
        const found = await s.queries.searchEvents(ENV, {}, 3, { at: ago(3), id: 'e04' });
        expect(found.rows.map((e) => e.id)).toEqual(['e03', 'e05', 'e06']);
      });

      it("keeps environments apart: another environment's events are not found", async () => {
        expect(await walk(s.queries, OTHER_ENV, {}, 5)).toEqual(['e02-b']);
        expect(await walk(s.queries, OTHER_ENV, { userId: 'u1' }, 5)).toEqual([]);
      });

      it('answers a /16 network alone, or refuses it naming the filters it serves', async () => {
        const answer = await walk(s.queries, ENV, { network: '81.2.0.0/16' }, 5).catch((e: unknown) => e);
        if (answer instanceof InvalidParameters)
          expect(answer.fields[0]?.message).toMatch(/userId, deviceToken, email, ip/);
        else expect(answer).toEqual(['e01', 'e02', 'e03', 'e05', 'e06', 'e07', 'e09']);
      });
    });

    describe('QueryStore.eventById', () => {
      it('answers the stored event as it was appended', async () => {
        const e = READ_STORE_DATA.events.find((x) => x.id === 'e02');
        expect(await s.queries.eventById(ENV, 'e02')).toEqual(e);
      });
      it("answers null for an unknown id and for another environment's event", async () => {
        expect(await s.queries.eventById(ENV, 'nope')).toBeNull();
        expect(await s.queries.eventById(ENV, 'e02-b')).toBeNull();
      });
    });

    describe('QueryStore.searchDevices', () => {
      it.each(DEVICE_CASES)('%s: the matching devices, page after page', async (_, filter, tokens) => {
        expect(await walkDevices(s.queries, filter, 2)).toEqual(tokens);
        expect(await walkDevices(s.queries, filter, 100)).toEqual(tokens);
      });
      it('pages by (last seen, token): strictly after the key given', async () => {
        const first = await s.queries.searchDevices(ENV, { includeRemoved: true }, 2, null);
        expect(first.rows.map((d) => d.token)).toEqual(['d1', 'd2']);
        const last = first.rows[1] as Device;
        const next = await s.queries.searchDevices(ENV, { includeRemoved: true }, 2, {
          at: last.lastSeenAt,
          id: last.token,
        });
        expect(next.rows.map((d) => d.token)).toEqual(['d3', 'd4']);
      });
      it('answers a device with its score and review as stored', async () => {
        const [d] = (await s.queries.searchDevices(ENV, { reviewState: 'reported' }, 1, null)).rows;
        expect(d).toMatchObject({ token: 'd2', userId: 'u2', riskScore: 100, feedback: 'reported' });
      });
    });

    describe('QueryStore.searchRejected', () => {
      it.each(REJECTED_CASES)('%s', async (_, filter, ids) => {
        expect((await s.queries.searchRejected(ENV, filter, 100, null)).map((r) => r.id)).toEqual(ids);
      });
      it('pages strictly after the key given, and keeps environments apart', async () => {
        const page = await s.queries.searchRejected(ENV, {}, 1, { at: ago(1), id: 'r1' });
        expect(page.map((r) => r.id)).toEqual(['r2']);
        expect(page[0]).toEqual(READ_STORE_DATA.rejected[1]);
        expect((await s.queries.searchRejected(OTHER_ENV, {}, 100, null)).map((r) => r.id)).toEqual(['r1-b']);
      });
    });

    describe('QueryStore.latestEvents', () => {
      it("answers each user's newest events, every key asked (none: empty)", async () => {
        const found = await s.queries.latestEvents(ENV, 'userId', ['u1', 'u2', 'nobody'], 2);
        expect(new Map([...found].map(([k, es]) => [k, es.map((e) => e.id)]))).toEqual(
          new Map([
            ['u1', ['e01', 'e03']],
            ['u2', ['e02', 'e06']],
            ['nobody', []],
          ]),
        );
      });
      it("answers each device's newest events", async () => {
        const found = await s.queries.latestEvents(ENV, 'deviceToken', ['d1', 'd3'], 1);
        expect(new Map([...found].map(([k, es]) => [k, es.map((e) => e.id)]))).toEqual(
          new Map([
            ['d1', ['e01']],
            ['d3', ['e04']],
          ]),
        );
      });
    });

    describe('QueryStore.activityOfUsers', () => {
      it("counts each user's events by verdict and by signal, most frequent first", async () => {
        const found = await s.queries.activityOfUsers(ENV, ['u1', 'u2', 'nobody']);
        expect(found.get('u1')).toEqual({
          total: 4,
          actions: [
            { action: 'allow', count: 3 },
            { action: 'challenge', count: 1 },
          ],
          signals: [
            { signal: 'new_device', count: 2 },
            { signal: 'proxy_ip', count: 1 },
          ],
        });
        expect(found.get('u2')).toEqual({
          total: 2,
          actions: [{ action: 'deny', count: 2 }],
          signals: [
            { signal: 'proxy_ip', count: 2 },
            { signal: 'new_device', count: 1 },
          ],
        });
        expect(found.get('nobody')).toEqual({ total: 0, actions: [], signals: [] });
      });
    });

    describe('AnalyticsStore.count', () => {
      it.each(EVENT_CASES.filter(([, f]) => f.network === undefined))(
        '%s: as many as the search finds',
        async (_, filter, ids) => {
          expect(await s.analytics.count(ENV, filter)).toBe(ids.length);
        },
      );
      it('counts a range of whole minutes, alone or with a verdict', async () => {
        expect(await s.analytics.count(ENV, { from: ago(10), to: ago(0) })).toBe(8);
        expect(await s.analytics.count(ENV, { action: 'allow', from: ago(10), to: ago(0) })).toBe(3);
        expect(await s.analytics.count(OTHER_ENV, { from: ago(10), to: ago(0) })).toBe(1);
      });
    });

    describe('AnalyticsStore.countBy', () => {
      it.each(GROUP_CASES)(
        '%s: the largest groups (ties by key) and how many values',
        async (_, filter, field, limit, skipNull, groups, distinct) => {
          expect(await s.analytics.countBy(ENV, filter, field, limit, skipNull)).toEqual({
            groups: groups.map(([key, count]) => ({ key, count })),
            distinct,
          });
        },
      );
    });

    describe('AnalyticsStore.points', () => {
      it("answers each matching event's time, verdict and signals", async () => {
        const { points, truncated } = await s.analytics.points(ENV, { userId: 'u2' }, 100);
        expect(truncated).toBe(false);
        expect([...points].sort((a, b) => b.at.getTime() - a.at.getTime())).toEqual([
          { at: ago(2), action: 'deny', signals: ['proxy_ip', 'new_device'] },
          { at: ago(6), action: 'deny', signals: ['proxy_ip'] },
        ]);
      });
      it('answers at most the cap, and says when there were more', async () => {
        const { points, truncated } = await s.analytics.points(ENV, {}, 4);
        expect(points).toHaveLength(4);
        expect(truncated).toBe(true);
        expect((await s.analytics.points(ENV, {}, 9)).truncated).toBe(false);
      });
    });

    describe('AnalyticsStore.decisions', () => {
      it('answers the stored verdicts (events with an action), newest first', async () => {
        const { points, truncated } = await s.analytics.decisions(ENV, {}, 100);
        expect(points.map((p) => p.id)).toEqual(ALL.filter((id) => id !== 'e05'));
        expect(truncated).toBe(false);
        expect(points[1]).toEqual({
          id: 'e02',
          name: '$login',
          at: ago(2),
          action: 'deny',
          risk: 0.95,
          signals: ['proxy_ip', 'new_device'],
          country: 'DE',
          userId: 'u2',
          deviceToken: 'd2',
          ip: '81.2.70.5',
          email: 'u2@example.com',
          asn: 24940,
          policyName: 'Policy pol-a',
        });
      });
      it('answers at most the cap, the newest, and says when there were more', async () => {
        const { points, truncated } = await s.analytics.decisions(ENV, { from: ago(10), to: ago(0) }, 3);
        expect(points.map((p) => p.id)).toEqual(['e01', 'e02', 'e04']);
        expect(truncated).toBe(true);
      });
      it('answers the verdicts of a filter', async () => {
        const { points } = await s.analytics.decisions(ENV, { action: 'challenge' }, 100);
        expect(points.map((p) => p.id)).toEqual(['e03', 'e08']);
      });
    });

    describe('AnalyticsStore.reviewedDevices', () => {
      it('answers the devices with feedback, most recently seen first, at most the cap', async () => {
        expect(await s.analytics.reviewedDevices(ENV, 10)).toEqual([
          { token: 'd2', state: 'reported' },
          { token: 'd4', state: 'approved' },
        ]);
        expect(await s.analytics.reviewedDevices(ENV, 1)).toEqual([{ token: 'd2', state: 'reported' }]);
        expect(await s.analytics.reviewedDevices(OTHER_ENV, 10)).toEqual([
          { token: 'd1', state: 'reported' },
        ]);
      });
    });
  });
}
