/**
 * In-memory fakes of the dashboards' read ports: QueryStore (core/queries/ports.ts: event, device
 * and debugger searches with keyset pages, batched look-ups) and AnalyticsStore
 * (core/analytics/ports.ts: counts, groups, points, the dry run's stored verdicts). They read
 * what the other fakes hold (the event and debugger stores, the devices' dashboard copy in the
 * state layer), through `sources`, and answer every filter with no bound: they never stop early
 * and refuse no filter, which the port allows.
 *
 * test/support/contracts/read-stores.ts runs the same cases against these and the MongoDB stores
 * (test/unit/store/read-stores-fake.spec.ts, test/integration/read-stores.test.ts).
 */
import type { Action, Device, EnvId, RejectedPayload, StoredEvent } from '../../../src/core/model';
import type { DeviceFilter, EventFilter, RejectedFilter, SortKey } from '../../../src/core/queries/model';
import type { QueryStore, UserActivity } from '../../../src/core/queries/ports';
import type {
  AnalyticsStore,
  CountField,
  DecisionPoint,
  GroupCount,
} from '../../../src/core/analytics/ports';
import { ipv4Network } from '../../../src/core/queries/validate';

/** What the read fakes read: every stored event, rejected payload and device copy, of every environment. */
export interface FakeReadSources {
  events(): readonly StoredEvent[];
  rejected(): readonly RejectedPayload[];
  devices(): readonly Device[];
}

const copy = <T>(v: T): T => structuredClone(v);

/** Newest first by (time, id), the keyset order of every search. */
const newestFirst =
  <T>(key: (x: T) => SortKey) =>
  (a: T, b: T): number => {
    const ka = key(a);
    const kb = key(b);
    return kb.at.getTime() - ka.at.getTime() || (ka.id < kb.id ? 1 : ka.id > kb.id ? -1 : 0);
  };

/** Strictly after `after` in that order. */
const isAfter = (k: SortKey, after: SortKey | null): boolean =>
  after === null ||
  k.at.getTime() < after.at.getTime() ||
  (k.at.getTime() === after.at.getTime() && k.id < after.id);

const within = (d: Date, from: Date | undefined, to: Date | undefined): boolean =>
  (from === undefined || d.getTime() >= from.getTime()) && (to === undefined || d.getTime() < to.getTime());

const eventKey = (e: StoredEvent): SortKey => ({ at: e.occurredAt, id: e.id });

/** Whether an event holds every condition of the filter. */
export function eventMatches(e: StoredEvent, f: EventFilter): boolean {
  const prefix = f.network === undefined ? null : ipv4Network(f.network);
  return (
    (f.name === undefined || e.name === f.name) &&
    (f.action === undefined || e.action === f.action) &&
    (f.signal === undefined || e.signals.includes(f.signal)) &&
    (f.userId === undefined || e.userId === f.userId) &&
    (f.deviceToken === undefined || e.deviceToken === f.deviceToken) &&
    (f.ip === undefined || e.ip === f.ip) &&
    (f.ip !== undefined || prefix === null || (e.ip ?? '').startsWith(prefix)) &&
    (f.email === undefined || e.email === f.email || e.email === f.email.toLowerCase()) &&
    (f.policyId === undefined || e.policy?.id === f.policyId) &&
    (f.asn === undefined || e.asn === f.asn) &&
    (f.country === undefined || e.country === f.country) &&
    within(e.occurredAt, f.from, f.to)
  );
}

function deviceMatches(d: Device, f: DeviceFilter): boolean {
  return (
    (f.userId === undefined || d.userId === f.userId) &&
    (f.reviewState === undefined || d.feedback === (f.reviewState === 'unreviewed' ? null : f.reviewState)) &&
    (f.country === undefined || d.context.location?.country_code === f.country) &&
    (f.minRiskScore === undefined || d.riskScore >= f.minRiskScore) &&
    (f.maxRiskScore === undefined || d.riskScore <= f.maxRiskScore) &&
    within(d.lastSeenAt, f.lastSeenFrom, f.lastSeenTo) &&
    (f.includeRemoved === true || d.removedAt === null)
  );
}

/** Counts most frequent first, ties by key. */
function byCount<K>(counts: ReadonlyMap<K, number>): [K, number][] {
  return [...counts].sort((a, b) => b[1] - a[1] || String(a[0]).localeCompare(String(b[0])));
}

export function createFakeQueryStore(sources: FakeReadSources): QueryStore {
  const events = (env: EnvId) => sources.events().filter((e) => e.envId === env);
  return {
    async searchEvents(env, filter, limit, after) {
      const rows = events(env)
        .filter((e) => eventMatches(e, filter) && isAfter(eventKey(e), after))
        .sort(newestFirst(eventKey))
        .slice(0, limit);
      return { rows: copy(rows) };
    },
    eventById: async (env, id) => copy(events(env).find((e) => e.id === id) ?? null),
    async searchDevices(env, filter, limit, after) {
      const key = (d: Device): SortKey => ({ at: d.lastSeenAt, id: d.token });
      const rows = sources
        .devices()
        .filter((d) => d.envId === env && deviceMatches(d, filter) && isAfter(key(d), after))
        .sort(newestFirst(key))
        .slice(0, limit);
      return { rows: copy(rows) };
    },
    async searchRejected(env, f: RejectedFilter, limit, after) {
      const key = (r: RejectedPayload): SortKey => ({ at: r.receivedAt, id: r.id });
      return copy(
        sources
          .rejected()
          .filter(
            (r) =>
              r.envId === env &&
              (f.userId === undefined || r.userId === f.userId) &&
              within(r.receivedAt, f.from, f.to) &&
              isAfter(key(r), after),
          )
          .sort(newestFirst(key))
          .slice(0, limit),
      );
    },
    async latestEvents(env, by, keys, perKey) {
      const all = events(env).sort(newestFirst(eventKey));
      return new Map(keys.map((k) => [k, copy(all.filter((e) => e[by] === k).slice(0, perKey))]));
    },
    async activityOfUsers(env, userIds) {
      const out = new Map<string, UserActivity>();
      for (const u of new Set(userIds)) {
        const actions = new Map<Action | null, number>();
        const signals = new Map<string, number>();
        const mine = events(env).filter((e) => e.userId === u);
        for (const e of mine) {
          actions.set(e.action, (actions.get(e.action) ?? 0) + 1);
          for (const s of new Set(e.signals)) signals.set(s, (signals.get(s) ?? 0) + 1);
        }
        out.set(u, {
          total: mine.length,
          actions: byCount(actions).map(([action, count]) => ({ action, count })),
          signals: byCount(signals).map(([signal, count]) => ({ signal, count })),
        });
      }
      return out;
    },
  };
}

/** A group's key: the field's value as text, null for none. */
const keyOf = (e: StoredEvent, field: Exclude<CountField, 'signal'>): string | null => {
  const v = e[field];
  return v === null || v === undefined ? null : String(v);
};

/** Ties by key: AS numbers as numbers, the rest as text; no value last. */
function tieOrder(field: CountField): (a: string | null, b: string | null) => number {
  return (a, b) => {
    if (a === null || b === null) return (a === null ? 1 : 0) - (b === null ? 1 : 0);
    if (field === 'asn') return Number(a) - Number(b);
    return a < b ? -1 : a > b ? 1 : 0;
  };
}

export function createFakeAnalyticsStore(sources: FakeReadSources): AnalyticsStore {
  const matching = (env: EnvId, f: EventFilter) =>
    sources.events().filter((e) => e.envId === env && eventMatches(e, f));
  return {
    count: async (env, filter) => matching(env, filter).length,
    async countBy(env, filter, field, limit, skipNull) {
      const counts = new Map<string | null, number>();
      const add = (k: string | null) => counts.set(k, (counts.get(k) ?? 0) + 1);
      for (const e of matching(env, filter)) {
        if (field === 'signal') for (const s of new Set(e.signals)) add(s);
        else {
          const k = keyOf(e, field);
          if (!(skipNull && k === null)) add(k);
        }
      }
      const tie = tieOrder(field);
      const groups: GroupCount[] = [...counts]
        .sort((a, b) => b[1] - a[1] || tie(a[0], b[0]))
        .slice(0, limit)
        .map(([key, count]) => ({ key, count }));
      return { groups, distinct: counts.size };
    },
    async points(env, filter, cap) {
      const all = matching(env, filter).sort(newestFirst(eventKey));
      return {
        points: all
          .slice(0, cap)
          .map((e) => ({ at: e.occurredAt, action: e.action, signals: [...e.signals] })),
        truncated: all.length > cap,
      };
    },
    async reviewedDevices(env, cap) {
      return sources
        .devices()
        .filter((d) => d.envId === env && d.feedback !== null)
        .sort((a, b) => b.lastSeenAt.getTime() - a.lastSeenAt.getTime())
        .slice(0, cap)
        .map((d) => ({ token: d.token, state: d.feedback === 'reported' ? 'reported' : 'approved' }));
    },
    async decisions(env, filter, cap) {
      const verdicts = matching(env, filter)
        .filter((e) => e.action !== null)
        .sort(newestFirst(eventKey));
      const points: DecisionPoint[] = verdicts.slice(0, cap).map((e) => ({
        id: e.id,
        name: e.name,
        at: e.occurredAt,
        action: e.action as Action,
        risk: e.risk ?? 0,
        signals: [...e.signals],
        country: e.country,
        userId: e.userId,
        deviceToken: e.deviceToken,
        ip: e.ip,
        email: e.email,
        asn: e.asn,
        policyName: e.policy?.name ?? null,
      }));
      return { points, truncated: verdicts.length > cap };
    },
  };
}
