/**
 * The read side on MongoDB/FerretDB: keyset searches over events, devices and the debugger, and
 * batched look-ups that answer many parents (users, devices) with one query each. FerretDB pushes
 * only `_id` equality down to storage, so these are dashboard queries, not hot paths; on MongoDB
 * the indexes below serve them, each ending in `_id` so that the (time, _id) keyset order comes
 * straight from the index.
 */
import type { Collection, Db, Document, Filter } from 'mongodb';
import type { Action, Device, EnvId, RejectedPayload, StoredEvent } from '../core/model';
import type { DeviceFilter, EventFilter, RejectedFilter, SortKey } from '../core/queries/model';
import type { QueryStore, UserActivity } from '../core/queries/ports';
import type { IndexSpec } from './database';
import { fromEventDoc, rejectedFromDoc, type DebugDoc, type EventDoc } from './events';
import { deviceFromDoc, type DeviceDoc } from './user-state';
import { escapeRegex, idOf } from './ids';
import { ipv4Network } from '../core/queries/validate';
import type { AnalystGate, AnalystLimits } from './analyst-gate';

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
  },
  {
    collection: 'devices',
    indexes: [
      { key: { envId: 1, lastSeenAt: -1, _id: -1 }, name: 'q_env_seen' },
      { key: { envId: 1, userId: 1, lastSeenAt: -1, _id: -1 }, name: 'q_env_user_seen' },
      { key: { envId: 1, feedback: 1, lastSeenAt: -1, _id: -1 }, name: 'q_env_feedback_seen' },
      { key: { envId: 1, 'context.location.country_code': 1, lastSeenAt: -1, _id: -1 }, name: 'q_env_country_seen' },
    ],
  },
  {
    collection: 'debugger',
    indexes: [
      { key: { envId: 1, receivedAt: -1, _id: -1 }, name: 'q_env_time' },
      { key: { envId: 1, userId: 1, receivedAt: -1, _id: -1 }, name: 'q_env_user_time' },
    ],
  },
];

/** Largest batch one round of a batched look-up reads. */
const MAX_BATCH = 5000;
/** Rounds of a batched look-up before the few keys still short are read one by one. */
const MAX_ROUNDS = 3;

/** Documents strictly after `key` in (time desc, _id desc) order. */
function afterKey(timeField: string, at: Date, id: string): Document {
  return { $or: [{ [timeField]: { $lt: at } }, { [timeField]: at, _id: { $lt: id } }] };
}

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

function deviceMatch(env: EnvId, f: DeviceFilter): Filter<DeviceDoc> {
  const q: Filter<DeviceDoc> = { envId: env };
  if (f.userId !== undefined) q.userId = f.userId;
  if (f.reviewState !== undefined) q.feedback = f.reviewState === 'unreviewed' ? null : f.reviewState;
  if (f.country !== undefined) q['context.location.country_code'] = f.country;
  if (f.minRiskScore !== undefined || f.maxRiskScore !== undefined) {
    q.risk = { ...(f.minRiskScore !== undefined ? { $gte: f.minRiskScore } : {}), ...(f.maxRiskScore !== undefined ? { $lte: f.maxRiskScore } : {}) };
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
    const filter = { ...base, [field]: { $in: pending }, ...(cut ? afterKey(timeField, cut.at, cut.id) : {}) } as Filter<D>;
    const docs = (await col.find(filter).sort(sort).limit(limit).batchSize(limit).maxTimeMS(maxTimeMS).toArray()) as D[];
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
      const filter = { ...base, [field]: k, ...(from ? afterKey(timeField, from.at, from.id) : {}) } as Filter<D>;
      list.push(...((await col.find(filter).sort(sort).limit(perKey - list.length).maxTimeMS(maxTimeMS).toArray()) as D[]));
    }),
  );
  return out;
}

export class MongoQueryStore implements QueryStore {
  private readonly maxTimeMS: number;
  private readonly gate: AnalystGate;
  /** Every read goes through the analysts' gate and stops at `maxTimeMS` in the database (code 50). */
  constructor(private readonly db: Db, limits: AnalystLimits) {
    this.maxTimeMS = limits.maxTimeMS;
    this.gate = limits.gate;
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

  async searchEvents(env: EnvId, filter: EventFilter, limit: number, after: SortKey | null): Promise<StoredEvent[]> {
    const q = { ...eventMatch(env, filter), ...(after ? afterKey('occurredAt', after.at, after.id) : {}) } as Filter<EventDoc>;
    const docs = await this.gate.run(() => this.events.find(q).sort({ occurredAt: -1, _id: -1 }).limit(limit).batchSize(limit).maxTimeMS(this.maxTimeMS).toArray());
    return docs.map(fromEventDoc);
  }

  async eventById(env: EnvId, id: string): Promise<StoredEvent | null> {
    const d = await this.gate.run(() => this.events.findOne({ _id: id }, { maxTimeMS: this.maxTimeMS }));
    return d && d.envId === env ? fromEventDoc(d) : null;
  }

  async searchDevices(env: EnvId, filter: DeviceFilter, limit: number, after: SortKey | null): Promise<Device[]> {
    const q = { ...deviceMatch(env, filter), ...(after ? afterKey('lastSeenAt', after.at, idOf(env, after.id)) : {}) } as Filter<DeviceDoc>;
    const docs = await this.gate.run(() => this.devices.find(q).sort({ lastSeenAt: -1, _id: -1 }).limit(limit).batchSize(limit).maxTimeMS(this.maxTimeMS).toArray());
    return docs.map(deviceFromDoc);
  }

  async searchRejected(env: EnvId, f: RejectedFilter, limit: number, after: SortKey | null): Promise<RejectedPayload[]> {
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

  async latestEvents(env: EnvId, by: 'deviceToken' | 'userId', keys: readonly string[], perKey: number): Promise<Map<string, StoredEvent[]>> {
    const found = await this.gate.run(() => newestPerKey(this.events, { envId: env }, by, 'occurredAt', keys, perKey, (d) => d[by], (d) => d.occurredAt, this.maxTimeMS));
    return new Map([...found].map(([k, docs]) => [k, docs.map(fromEventDoc)]));
  }

  /**
   * One aggregation grouped by (user, action, signal set): FerretDB's `$unwind` keeps only the
   * unwound field, so signal sets are exploded here rather than in the pipeline.
   */
  async activityOfUsers(env: EnvId, userIds: readonly string[]): Promise<Map<string, UserActivity>> {
    const out = new Map<string, { total: number; actions: Map<Action | null, number>; signals: Map<string, number> }>();
    for (const u of userIds) out.set(u, { total: 0, actions: new Map(), signals: new Map() });
    if (userIds.length > 0) {
      const rows = await this.gate.run(() =>
        this.events
          .aggregate<{ _id: { u?: string | null; a?: Action | null; s?: string[] | null }; n: number }>(
            [{ $match: { envId: env, userId: { $in: [...new Set(userIds)] } } }, { $group: { _id: { u: '$userId', a: '$action', s: '$signals' }, n: { $sum: 1 } } }],
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
    const byCount = <K>(m: Map<K, number>) => [...m].sort((x, y) => y[1] - x[1] || String(x[0]).localeCompare(String(y[0])));
    return new Map(
      [...out].map(([u, acc]) => [
        u,
        {
          total: acc.total,
          actions: byCount(acc.actions).map(([action, count]) => ({ action, count })),
          signals: byCount(acc.signals).map(([signal, count]) => ({ signal, count })),
        },
      ]),
    );
  }
}
