/**
 * The read side on MongoDB/FerretDB: keyset searches over events, devices and the debugger, and
 * batched look-ups that answer many parents (users, devices) with one query each. FerretDB pushes
 * only `_id` equality down to storage, so these are dashboard queries, not hot paths; on MongoDB
 * the indexes below serve them, each ending in `_id` so that the (time, _id) keyset order comes
 * straight from the index.
 */
import type { Collection, Db, Filter } from 'mongodb';
import type { Action, Device, EnvId, RejectedPayload, StoredEvent } from '../core/model';
import type { DeviceFilter, EventFilter, Found, RejectedFilter, SortKey } from '../core/queries/model';
import type { QueryStore, UserActivity } from '../core/queries/ports';
import type { IndexSpec } from './database';
import { fromEventDoc, rejectedFromDoc, type DebugDoc, type EventDoc } from './events';
import { deviceFromDoc, storedDevice, type DeviceDoc } from './user-state';
import { escapeRegex, idOf } from './ids';
import { ipv4Network } from '../core/queries/validate';
import type { AnalystGate, AnalystLimits } from './analyst-gate';
import { afterKey, userActivity, type EmbeddedEventSearch } from './embedded-search';
import type { StoreDeps } from './deps';

export const queryIndexes: IndexSpec[] = [
  {
    collection: 'events',
    indexes: [
      { key: { envId: 1, occurredAt: -1, _id: -1 }, name: 'q_env_time' },
      { key: { envId: 1, userId: 1, occurredAt: -1, _id: -1 }, name: 'q_env_user_time' },
      { key: { envId: 1, deviceToken: 1, occurredAt: -1, _id: -1 }, name: 'q_env_device_time' },
      { key: { envId: 1, ip: 1, occurredAt: -1, _id: -1 }, name: 'q_env_ip_time' },
      { key: { envId: 1, email: 1, occurredAt: -1, _id: -1 }, name: 'q_env_email_time' },
      { key: { envId: 1, 'policy.id': 1, occurredAt: -1, _id: -1 }, name: 'q_env_policy_time' },
      { key: { envId: 1, action: 1, occurredAt: -1, _id: -1 }, name: 'q_env_action_time' },
      { key: { envId: 1, signals: 1, occurredAt: -1, _id: -1 }, name: 'q_env_signal_time' },
      { key: { envId: 1, country: 1, occurredAt: -1, _id: -1 }, name: 'q_env_country_time' },
      { key: { envId: 1, asn: 1, occurredAt: -1, _id: -1 }, name: 'q_env_asn_time' },
    ],
    // Rampart's FerretDB build: the high-cardinality filters only; the others go through the
    // event keys (event-keys.ts), which cost far less per event than an index each.
    servedOnEmbedded: [
      'q_env_time',
      'q_env_user_time',
      'q_env_device_time',
      'q_env_ip_time',
      'q_env_email_time',
    ],
    // A /24 by equality (MongoDB reads the address index's range for the prefix instead).
    embeddedOnly: [{ key: { envId: 1, net: 1, occurredAt: -1, _id: -1 }, name: 'q_env_net_time' }],
  },
  {
    collection: 'devices',
    indexes: [
      { key: { envId: 1, lastSeenAt: -1, _id: -1 }, name: 'q_env_seen' },
      { key: { envId: 1, userId: 1, lastSeenAt: -1, _id: -1 }, name: 'q_env_user_seen' },
      { key: { envId: 1, feedback: 1, lastSeenAt: -1, _id: -1 }, name: 'q_env_feedback_seen' },
      {
        key: { envId: 1, 'context.location.country_code': 1, lastSeenAt: -1, _id: -1 },
        name: 'q_env_country_seen',
      },
    ],
    servedOnEmbedded: ['q_env_seen', 'q_env_user_seen', 'q_env_feedback_seen'],
  },
  {
    collection: 'debugger',
    indexes: [
      { key: { envId: 1, receivedAt: -1, _id: -1 }, name: 'q_env_time' },
      { key: { envId: 1, userId: 1, receivedAt: -1, _id: -1 }, name: 'q_env_user_time' },
    ],
    servedOnEmbedded: ['q_env_time', 'q_env_user_time'],
  },
];

/**
 * A device document weighs about this many events (its context, user agent and location): a
 * device search reads that many times fewer candidates than an event search.
 */
const DEVICE_WEIGHT = 4;

/** Largest batch one round of a batched look-up reads. */
const MAX_BATCH = 5000;
/** Rounds of a batched look-up before the few keys still short are read one by one. */
const MAX_ROUNDS = 3;

function timeRange(from: Date | undefined, to: Date | undefined): { $gte?: Date; $lt?: Date } | undefined {
  if (!from && !to) return undefined;
  return { ...(from ? { $gte: from } : {}), ...(to ? { $lt: to } : {}) };
}

/** The match of an event filter, always scoped to the environment. */
export function eventMatch(env: EnvId, f: EventFilter): Filter<EventDoc> {
  const q: Filter<EventDoc> = { envId: env };
  if (f.name !== undefined) q.name = f.name;
  if (f.action !== undefined) q.action = f.action;
  if (f.signal !== undefined) q.signals = f.signal;
  if (f.userId !== undefined) q.userId = f.userId;
  if (f.deviceToken !== undefined) q.deviceToken = f.deviceToken;
  if (f.ip !== undefined) q.ip = f.ip;
  else if (f.network !== undefined) {
    const prefix = ipv4Network(f.network);
    // A prefix match (anchored): on MongoDB it reads the address index's range for the prefix.
    if (prefix) q.ip = { $regex: `^${escapeRegex(prefix)}` };
  }
  if (f.email !== undefined) q.email = { $in: [...new Set([f.email, f.email.toLowerCase()])] };
  if (f.policyId !== undefined) q['policy.id'] = f.policyId;
  if (f.asn !== undefined) q.asn = f.asn;
  if (f.country !== undefined) q.country = f.country;
  const t = timeRange(f.from, f.to);
  if (t) q.occurredAt = t;
  return q;
}

/** Whether a device matches every condition of the filter (what the embedded access path left). */
function deviceMatches(d: DeviceDoc, f: DeviceFilter): boolean {
  const seen = d.lastSeenAt.getTime();
  return (
    (f.userId === undefined || d.userId === f.userId) &&
    (f.reviewState === undefined ||
      (d.feedback ?? null) === (f.reviewState === 'unreviewed' ? null : f.reviewState)) &&
    (f.country === undefined || d.context?.location?.country_code === f.country) &&
    (f.minRiskScore === undefined || d.risk >= f.minRiskScore) &&
    (f.maxRiskScore === undefined || d.risk <= f.maxRiskScore) &&
    (f.lastSeenFrom === undefined || seen >= f.lastSeenFrom.getTime()) &&
    (f.lastSeenTo === undefined || seen < f.lastSeenTo.getTime()) &&
    (f.includeRemoved === true || !d.removedAt)
  );
}

function deviceMatch(env: EnvId, f: DeviceFilter): Filter<DeviceDoc> {
  const q: Filter<DeviceDoc> = { envId: env };
  if (f.userId !== undefined) q.userId = f.userId;
  if (f.reviewState !== undefined) q.feedback = f.reviewState === 'unreviewed' ? null : f.reviewState;
  if (f.country !== undefined) q['context.location.country_code'] = f.country;
  if (f.minRiskScore !== undefined || f.maxRiskScore !== undefined) {
    q.risk = {
      ...(f.minRiskScore !== undefined ? { $gte: f.minRiskScore } : {}),
      ...(f.maxRiskScore !== undefined ? { $lte: f.maxRiskScore } : {}),
    };
  }
  const t = timeRange(f.lastSeenFrom, f.lastSeenTo);
  if (t) q.lastSeenAt = t;
  if (!f.includeRemoved) q.removedAt = null;
  return q;
}

interface Keyed {
  _id: string;
}

/**
 * The newest `perKey` documents of each key, in a constant number of queries whatever the number
 * of keys: one query for every key at once, newest first, with a batch limit. Keys still short
 * after a full batch only lack documents older than its last one, so the next round asks for
 * those keys alone, from there. Only keys that stay short after MAX_ROUNDS full batches (a few
 * keys with bursts of millions) are then read one by one.
 */
async function newestPerKey<D extends Keyed>(
  col: Collection<D>,
  base: Filter<D>,
  field: string,
  timeField: string,
  keys: readonly string[],
  perKey: number,
  keyOf: (d: D) => string | null,
  timeOf: (d: D) => Date,
  maxTimeMS: number,
): Promise<Map<string, D[]>> {
  const out = new Map<string, D[]>(keys.map((k) => [k, []]));
  let pending = [...out.keys()];
  let cut: { at: Date; id: string } | null = null;
  const sort = { [timeField]: -1, _id: -1 } as const;
  for (let round = 0; pending.length > 0 && round < MAX_ROUNDS; round++) {
    const limit = Math.min(MAX_BATCH, Math.max(200, pending.length * perKey * 2));
    const filter = {
      ...base,
      [field]: { $in: pending },
      ...(cut ? afterKey(timeField, cut.at, cut.id) : {}),
    } as Filter<D>;
    const docs = (await col
      .find(filter)
      .sort(sort)
      .limit(limit)
      .batchSize(limit)
      .maxTimeMS(maxTimeMS)
      .toArray()) as D[];
    for (const d of docs) {
      const k = keyOf(d);
      const list = k === null ? undefined : out.get(k);
      if (list && list.length < perKey) list.push(d);
    }
    if (docs.length < limit) return out;
    const last = docs[docs.length - 1] as D;
    cut = { at: timeOf(last), id: last._id };
    pending = pending.filter((k) => (out.get(k)?.length ?? 0) < perKey);
  }
  const from = cut;
  await Promise.all(
    pending.map(async (k) => {
      const list = out.get(k) ?? [];
      const filter = {
        ...base,
        [field]: k,
        ...(from ? afterKey(timeField, from.at, from.id) : {}),
      } as Filter<D>;
      list.push(
        ...((await col
          .find(filter)
          .sort(sort)
          .limit(perKey - list.length)
          .maxTimeMS(maxTimeMS)
          .toArray()) as D[]),
      );
    }),
  );
  return out;
}

export class MongoQueryStore implements QueryStore {
  private readonly maxTimeMS: number;
  private readonly gate: AnalystGate;
  private readonly db: Db;
  private readonly embedded?: EmbeddedEventSearch;
  /**
   * Every read goes through the analysts' gate and stops at `maxTimeMS` in the database (code 50).
   * `embedded`: on Rampart's FerretDB build, the searches planned for its indexes and event keys
   * (embedded-search.ts); without it, every filter is one query, which MongoDB's indexes serve.
   */
  constructor(deps: StoreDeps & { limits: AnalystLimits; embedded?: EmbeddedEventSearch }) {
    this.db = deps.db;
    this.embedded = deps.embedded;
    this.maxTimeMS = deps.limits.maxTimeMS;
    this.gate = deps.limits.gate;
  }
  private get events() {
    return this.db.collection<EventDoc>('events');
  }
  private get devices() {
    return this.db.collection<DeviceDoc>('devices');
  }
  private get rejected() {
    return this.db.collection<DebugDoc>('debugger');
  }

  async searchEvents(
    env: EnvId,
    filter: EventFilter,
    limit: number,
    after: SortKey | null,
  ): Promise<Found<StoredEvent>> {
    if (this.embedded) return this.embedded.search(env, filter, limit, after);
    const q = {
      ...eventMatch(env, filter),
      ...(after ? afterKey('occurredAt', after.at, after.id) : {}),
    } as Filter<EventDoc>;
    const docs = await this.gate.run(() =>
      this.events
        .find(q)
        .sort({ occurredAt: -1, _id: -1 })
        .limit(limit)
        .batchSize(limit)
        .maxTimeMS(this.maxTimeMS)
        .toArray(),
    );
    return { rows: docs.map(fromEventDoc) };
  }

  async eventById(env: EnvId, id: string): Promise<StoredEvent | null> {
    const d = await this.gate.run(() => this.events.findOne({ _id: id }, { maxTimeMS: this.maxTimeMS }));
    return d && d.envId === env ? fromEventDoc(d) : null;
  }

  async searchDevices(
    env: EnvId,
    filter: DeviceFilter,
    limit: number,
    after: SortKey | null,
  ): Promise<Found<Device>> {
    if (this.embedded)
      return this.searchDevicesEmbedded(
        env,
        filter,
        limit,
        after,
        Math.ceil(this.embedded.maxExamined / DEVICE_WEIGHT),
      );
    const q = {
      ...deviceMatch(env, filter),
      ...(after ? afterKey('lastSeenAt', after.at, idOf(env, after.id)) : {}),
    } as Filter<DeviceDoc>;
    const docs = (
      await this.gate.run(() =>
        this.devices
          .find(q)
          .sort({ lastSeenAt: -1, _id: -1 })
          .limit(limit)
          .batchSize(limit)
          .maxTimeMS(this.maxTimeMS)
          .toArray(),
      )
    ).map(storedDevice);
    return { rows: docs.map(deviceFromDoc) };
  }

  /**
   * On Rampart's FerretDB build: the user's, or the reported or approved, devices through their
   * index (else every device, most recently seen first), the rest of the filter checked on each,
   * at most `maxExamined` of them per page.
   */
  private async searchDevicesEmbedded(
    env: EnvId,
    f: DeviceFilter,
    limit: number,
    after: SortKey | null,
    maxExamined: number,
  ): Promise<Found<Device>> {
    const eq: Record<string, string> = { envId: env };
    if (f.userId !== undefined) eq.userId = f.userId;
    else if (f.reviewState === 'approved' || f.reviewState === 'reported') eq.feedback = f.reviewState;
    const seen = timeRange(f.lastSeenFrom, f.lastSeenTo);
    const batch = Math.max(limit, 200);
    const rows: Device[] = [];
    let examined = 0;
    let cursor = after ? { at: after.at, id: idOf(env, after.id) } : null;
    for (;;) {
      const q = {
        ...eq,
        ...(seen ? { lastSeenAt: seen } : {}),
        ...(cursor ? afterKey('lastSeenAt', cursor.at, cursor.id) : {}),
      } as Filter<DeviceDoc>;
      const docs = (
        await this.gate.run(() =>
          this.devices
            .find(q)
            .sort({ lastSeenAt: -1, _id: -1 })
            .limit(batch)
            .batchSize(batch)
            .maxTimeMS(this.maxTimeMS)
            .toArray(),
        )
      ).map(storedDevice);
      for (const d of docs) {
        examined += 1;
        if (deviceMatches(d, f)) {
          rows.push(deviceFromDoc(d));
          if (rows.length >= limit) return { rows };
        }
        if (examined >= maxExamined) return { rows, stoppedAt: { at: d.lastSeenAt, id: d.token } };
      }
      if (docs.length < batch) return { rows };
      const last = docs[docs.length - 1] as DeviceDoc;
      cursor = { at: last.lastSeenAt, id: last._id };
    }
  }

  async searchRejected(
    env: EnvId,
    f: RejectedFilter,
    limit: number,
    after: SortKey | null,
  ): Promise<RejectedPayload[]> {
    const q: Filter<DebugDoc> = { envId: env };
    if (f.userId !== undefined) q.userId = f.userId;
    const t = timeRange(f.from, f.to);
    if (t) q.receivedAt = t;
    const docs = await this.gate.run(() =>
      this.rejected
        .find({ ...q, ...(after ? afterKey('receivedAt', after.at, after.id) : {}) } as Filter<DebugDoc>)
        .sort({ receivedAt: -1, _id: -1 })
        .limit(limit)
        .batchSize(limit)
        .maxTimeMS(this.maxTimeMS)
        .toArray(),
    );
    return docs.map(rejectedFromDoc);
  }

  async latestEvents(
    env: EnvId,
    by: 'deviceToken' | 'userId',
    keys: readonly string[],
    perKey: number,
  ): Promise<Map<string, StoredEvent[]>> {
    const found = await this.gate.run(() =>
      newestPerKey(
        this.events,
        { envId: env },
        by,
        'occurredAt',
        keys,
        perKey,
        (d) => d[by],
        (d) => d.occurredAt,
        this.maxTimeMS,
      ),
    );
    return new Map([...found].map(([k, docs]) => [k, docs.map(fromEventDoc)]));
  }

  /**
   * One aggregation grouped by (user, action, signal set): FerretDB's `$unwind` keeps only the
   * unwound field, so signal sets are exploded here rather than in the pipeline.
   */
  async activityOfUsers(env: EnvId, userIds: readonly string[]): Promise<Map<string, UserActivity>> {
    if (this.embedded) return this.embedded.activity(env, userIds);
    const out = new Map<
      string,
      { total: number; actions: Map<Action | null, number>; signals: Map<string, number> }
    >();
    for (const u of userIds) out.set(u, { total: 0, actions: new Map(), signals: new Map() });
    if (userIds.length > 0) {
      const rows = await this.gate.run(() =>
        this.events
          .aggregate<{ _id: { u?: string | null; a?: Action | null; s?: string[] | null }; n: number }>(
            [
              { $match: { envId: env, userId: { $in: [...new Set(userIds)] } } },
              { $group: { _id: { u: '$userId', a: '$action', s: '$signals' }, n: { $sum: 1 } } },
            ],
            { maxTimeMS: this.maxTimeMS },
          )
          .toArray(),
      );
      for (const r of rows) {
        const acc = r._id.u ? out.get(r._id.u) : undefined;
        if (!acc) continue;
        const a = r._id.a ?? null;
        acc.total += r.n;
        acc.actions.set(a, (acc.actions.get(a) ?? 0) + r.n);
        for (const s of r._id.s ?? []) acc.signals.set(s, (acc.signals.get(s) ?? 0) + r.n);
      }
    }
    return new Map([...out].map(([u, acc]) => [u, userActivity(acc.total, acc.actions, acc.signals)]));
  }
}
