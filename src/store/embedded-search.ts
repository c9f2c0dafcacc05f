/**
 * Dashboard searches on Rampart's FerretDB build (patch 0009), where a non-unique index serves a
 * filter only when it is an equality on its leading fields, then a range, with the sort the index
 * keeps (docs/state.md, "The analysts' read path").
 *
 * Each search is planned once: one access path, chosen from the filter, reads candidates in the
 * keyset order (event time desc, id desc); the rest of the filter is checked here, on each
 * candidate. The access paths, most selective first:
 *
 * | filter                         | read through                                        |
 * |--------------------------------|-----------------------------------------------------|
 * | userId, deviceToken, e-mail, ip | the events' (env, field, time, _id) index         |
 * | a /24 network                  | the events' (env, net, time, _id) index             |
 * | policy, signal, ASN, country, name, action | the event keys (event-keys.ts), events by `_id` lists |
 * | a time range, or nothing       | the events' (env, time, _id) index                  |
 *
 * (Many users' or devices' newest events are one `$in` read on their index: queries.ts.)
 *
 * A search reads at most MAX_EXAMINED candidates: when the rest of the filter rejects that many,
 * it stops and says where (Found.stoppedAt), and the next page continues from there. A filter no
 * access path serves (a /16 or /8 network alone) is refused with the filters that are.
 */
import type { Collection, Db, Document, Filter } from 'mongodb';
import type { EnvId, StoredEvent } from '../core/model';
import type { EventFilter, Found, SortKey } from '../core/queries/model';
import type { UserActivity } from '../core/queries/ports';
import { InvalidParameters } from '../core/errors';
import { ipv4Network } from '../core/queries/validate';
import type { AnalystGate } from './analyst-gate';
import { fromEventDoc, type EventDoc } from './events';
import type { EventKeyReader, KeyDimension } from './event-keys';
import type { StoreDeps } from './deps';

/** Candidates one search reads at most before it stops and says where. */
export const MAX_EXAMINED = 2_000;
/** Ids fetched per `_id: {$in}` read. */
const IDS_PER_READ = 500;

/** The filters an access path serves, as the refusal names them. */
export const SERVED_FILTERS =
  'userId, deviceToken, email, ip, a /24 network, policyId, signal, asn, country, name, action, or a time range alone';

type Path =
  | { kind: 'index'; field: 'userId' | 'deviceToken' | 'email' | 'ip' | 'net'; values: string[] }
  | { kind: 'keys'; dim: KeyDimension; value: string }
  | { kind: 'time' };

/** The first /24 of a network prefix ("81.2.69."), or null for a /16 or /8. */
const net24 = (prefix: string | null): string | null =>
  prefix !== null && prefix.split('.').length === 4 ? prefix : null;

/** The access path of a filter, or a refusal. */
export function accessPath(f: EventFilter): Path {
  if (f.userId !== undefined) return { kind: 'index', field: 'userId', values: [f.userId] };
  if (f.deviceToken !== undefined) return { kind: 'index', field: 'deviceToken', values: [f.deviceToken] };
  if (f.email !== undefined)
    return { kind: 'index', field: 'email', values: [...new Set([f.email, f.email.toLowerCase()])] };
  if (f.ip !== undefined) return { kind: 'index', field: 'ip', values: [f.ip] };
  const prefix = f.network === undefined ? null : ipv4Network(f.network);
  const net = net24(prefix);
  if (net !== null) return { kind: 'index', field: 'net', values: [net] };
  if (f.policyId !== undefined) return { kind: 'keys', dim: 'policy', value: f.policyId };
  if (f.signal !== undefined) return { kind: 'keys', dim: 'signal', value: f.signal };
  if (f.asn !== undefined) return { kind: 'keys', dim: 'asn', value: String(f.asn) };
  if (f.country !== undefined) return { kind: 'keys', dim: 'country', value: f.country };
  if (f.name !== undefined) return { kind: 'keys', dim: 'name', value: f.name };
  if (f.action !== undefined) return { kind: 'keys', dim: 'action', value: f.action };
  if (f.network !== undefined) {
    throw new InvalidParameters([
      {
        field: 'filter.network',
        message: `a /16 or /8 network is searched only together with another filter an index serves (${SERVED_FILTERS}); search one of its /24 networks instead`,
      },
    ]);
  }
  return { kind: 'time' };
}

/** Whether a stored event matches every condition of the filter (what the access path left). */
export function matchesEvent(d: EventDoc, f: EventFilter): boolean {
  const prefix = f.network === undefined ? null : ipv4Network(f.network);
  const t = d.occurredAt.getTime();
  return (
    (f.name === undefined || d.name === f.name) &&
    (f.action === undefined || d.action === f.action) &&
    (f.signal === undefined || (d.signals ?? []).includes(f.signal)) &&
    (f.userId === undefined || d.userId === f.userId) &&
    (f.deviceToken === undefined || d.deviceToken === f.deviceToken) &&
    (f.ip === undefined || d.ip === f.ip) &&
    (prefix === null || (d.ip ?? '').startsWith(prefix)) &&
    (f.email === undefined || d.email === f.email || d.email === f.email.toLowerCase()) &&
    (f.policyId === undefined || d.policy?.id === f.policyId) &&
    (f.asn === undefined || d.asn === f.asn) &&
    (f.country === undefined || d.country === f.country) &&
    (f.from === undefined || t >= f.from.getTime()) &&
    (f.to === undefined || t < f.to.getTime())
  );
}

/** Documents strictly after `key` in (time desc, _id desc) order. */
export function afterKey(timeField: string, at: Date, id: string): Document {
  return { $or: [{ [timeField]: { $lt: at } }, { [timeField]: at, _id: { $lt: id } }] };
}

/** (time desc, id desc): whether a comes first. */
const before = (a: EventDoc, b: EventDoc): boolean =>
  a.occurredAt.getTime() > b.occurredAt.getTime() ||
  (a.occurredAt.getTime() === b.occurredAt.getTime() && a._id > b._id);

type Source = AsyncGenerator<EventDoc>;

/** The newest-first merge of sources that are each newest first. */
async function* merged(sources: Source[]): Source {
  const heads = await Promise.all(sources.map(async (s) => ({ s, r: await s.next() })));
  for (;;) {
    let best: (typeof heads)[number] | null = null;
    for (const h of heads)
      if (!h.r.done && (best === null || before(h.r.value, best.r.value as EventDoc))) best = h;
    if (best === null || best.r.done) return;
    yield best.r.value;
    best.r = await best.s.next();
  }
}

export interface EmbeddedLimits {
  gate: AnalystGate;
  maxTimeMS: number;
}

export interface EmbeddedSearchDeps extends StoreDeps {
  /** The analysts' gate and time limit every read goes through. */
  limits: EmbeddedLimits;
  /** The event keys, for the filters shared by many events. */
  keys: EventKeyReader;
  /** Candidates one search reads at most (default MAX_EXAMINED). */
  maxExamined?: number;
}

/** A user's activity reads this share of a search's candidates at most (one in 4). */
const ACTIVITY_SHARE = 4;

export class EmbeddedEventSearch {
  /** Candidates one search reads at most (default MAX_EXAMINED). */
  readonly maxExamined: number;
  /** A user's newest events a risk summary counts at most: `maxExamined` / ACTIVITY_SHARE (500). */
  readonly maxActivity: number;
  private readonly db: Db;
  private readonly limits: EmbeddedLimits;
  private readonly keys: EventKeyReader;
  constructor(deps: EmbeddedSearchDeps) {
    this.db = deps.db;
    this.limits = deps.limits;
    this.keys = deps.keys;
    this.maxExamined = deps.maxExamined ?? MAX_EXAMINED;
    this.maxActivity = Math.ceil(this.maxExamined / ACTIVITY_SHARE);
  }

  private get events(): Collection<EventDoc> {
    return this.db.collection<EventDoc>('events');
  }

  private read(filter: Filter<EventDoc>, limit: number): Promise<EventDoc[]> {
    const { gate, maxTimeMS } = this.limits;
    return gate.run(() =>
      this.events
        .find(filter)
        .sort({ occurredAt: -1, _id: -1 })
        .limit(limit)
        .batchSize(limit)
        .maxTimeMS(maxTimeMS)
        .toArray(),
    );
  }

  /** Events through one (env, [field,] time, _id) index, newest first, in batches of `batch`. */
  private async *indexed(
    env: EnvId,
    eq: Record<string, string>,
    range: { from?: Date; to?: Date },
    after: SortKey | null,
    batch: number,
  ): Source {
    const time: { $gte?: Date; $lt?: Date } = {};
    if (range.from) time.$gte = range.from;
    if (range.to) time.$lt = range.to;
    let cursor = after;
    for (;;) {
      const q = {
        envId: env,
        ...eq,
        ...(Object.keys(time).length > 0 ? { occurredAt: time } : {}),
        ...(cursor ? afterKey('occurredAt', cursor.at, cursor.id) : {}),
      } as Filter<EventDoc>;
      const docs = await this.read(q, batch);
      yield* docs;
      if (docs.length < batch) return;
      const last = docs[docs.length - 1] as EventDoc;
      cursor = { at: last.occurredAt, id: last._id };
    }
  }

  /**
   * Events through their keys (newest minute first), fetched by `_id` lists; then, before keys
   * began, by time. An environment whose every event has keys (`complete`) is read from its keys
   * alone: a value few events have, or none, costs a few key documents.
   */
  private async *keyed(
    env: EnvId,
    dim: KeyDimension,
    value: string,
    range: { from?: Date; to?: Date },
    after: SortKey | null,
    batch: number,
  ): Source {
    const { since: keysSince, complete } = await this.keys.coverage(env);
    const since = complete ? new Date(-8.64e15) : keysSince;
    if (since !== null && (!range.to || range.to.getTime() > since.getTime())) {
      const from =
        range.from && range.from.getTime() > since.getTime() ? range.from : complete ? undefined : since;
      for await (const minute of this.keys.events(
        env,
        dim,
        value,
        { ...(from ? { from } : {}), ...(range.to ? { to: range.to } : {}) },
        after,
      )) {
        for (let i = 0; i < minute.length; i += IDS_PER_READ) {
          const ids = minute.slice(i, i + IDS_PER_READ).map((e) => e.id);
          const { gate, maxTimeMS } = this.limits;
          const docs = await gate.run(() =>
            this.events
              .find({ _id: { $in: ids } })
              .maxTimeMS(maxTimeMS)
              .toArray(),
          );
          const byId = new Map(docs.map((d) => [d._id, d]));
          for (const id of ids) {
            const d = byId.get(id);
            // A purged or expired event is gone; one of another environment cannot share a key.
            if (d && d.envId === env) yield d;
          }
        }
      }
    }
    // Events before keys began (since: null, never) are read by time; the filter is checked on each.
    if (!complete && (since === null || !range.from || range.from.getTime() < since.getTime())) {
      const to = since !== null && (!range.to || range.to.getTime() > since.getTime()) ? since : range.to;
      yield* this.indexed(
        env,
        {},
        { ...(range.from ? { from: range.from } : {}), ...(to ? { to } : {}) },
        after,
        batch,
      );
    }
  }

  private source(env: EnvId, f: EventFilter, path: Path, after: SortKey | null, batch: number): Source {
    const range = { ...(f.from ? { from: f.from } : {}), ...(f.to ? { to: f.to } : {}) };
    switch (path.kind) {
      case 'index': {
        const sources = path.values.map((v) => this.indexed(env, { [path.field]: v }, range, after, batch));
        return sources.length === 1 ? (sources[0] as Source) : merged(sources);
      }
      case 'keys':
        return this.keyed(env, path.dim, path.value, range, after, batch);
      case 'time':
        return this.indexed(env, {}, range, after, batch);
    }
  }

  async search(
    env: EnvId,
    f: EventFilter,
    limit: number,
    after: SortKey | null,
  ): Promise<Found<StoredEvent>> {
    const path = accessPath(f);
    // With nothing left to check, a batch of `limit` is the page; else read wider batches.
    // The access path serves one condition (and the time range): are others left to check?
    const conditions = Object.entries(f).filter(
      ([k, v]) => v !== undefined && k !== 'from' && k !== 'to',
    ).length;
    const residual = conditions > (path.kind === 'time' ? 0 : 1);
    const batch = residual ? Math.max(limit, 200) : limit;
    const source = this.source(env, f, path, after, batch);
    const rows: StoredEvent[] = [];
    let examined = 0;
    try {
      for await (const d of source) {
        examined += 1;
        if (matchesEvent(d, f)) {
          rows.push(fromEventDoc(d));
          if (rows.length >= limit) return { rows };
        }
        if (examined >= this.maxExamined) return { rows, stoppedAt: { at: d.occurredAt, id: d._id } };
      }
    } finally {
      await source.return(undefined);
    }
    return { rows };
  }

  /**
   * The matching events (that pass `also` too), newest first, through the filter's access path:
   * at most `maxMatches` of them, reading at most `maxRead` candidates; `complete` when none are
   * left unread.
   */
  async collect(
    env: EnvId,
    f: EventFilter,
    maxMatches: number,
    maxRead: number,
    also: (d: EventDoc) => boolean = () => true,
  ): Promise<{ docs: EventDoc[]; complete: boolean }> {
    const source = this.source(env, f, accessPath(f), null, 1000);
    const docs: EventDoc[] = [];
    let read = 0;
    try {
      for await (const d of source) {
        if (read >= maxRead || docs.length >= maxMatches) return { docs, complete: false };
        read += 1;
        if (matchesEvent(d, f) && also(d)) docs.push(d);
      }
    } finally {
      await source.return(undefined);
    }
    return { docs, complete: true };
  }

  /** Counts of each user's events by verdict and signal: of the newest `maxActivity`, through the user index. */
  async activity(env: EnvId, userIds: readonly string[]): Promise<Map<string, UserActivity>> {
    const out = new Map<string, UserActivity>();
    const { gate, maxTimeMS } = this.limits;
    for (const u of new Set(userIds)) {
      const docs = await gate.run(() =>
        this.events
          .find({ envId: env, userId: u }, { projection: { _id: 0, action: 1, signals: 1 } })
          .sort({ occurredAt: -1, _id: -1 })
          .limit(this.maxActivity + 1)
          .batchSize(this.maxActivity + 1)
          .maxTimeMS(maxTimeMS)
          .toArray(),
      );
      const partial = docs.length > this.maxActivity;
      out.set(u, { ...activityOf(docs.slice(0, this.maxActivity)), ...(partial ? { partial } : {}) });
    }
    return out;
  }
}

/** A user's activity from its counts by verdict and by signal, each most frequent first. */
export function userActivity(
  total: number,
  actions: ReadonlyMap<EventDoc['action'], number>,
  signals: ReadonlyMap<string, number>,
): UserActivity {
  const byCount = <K>(m: ReadonlyMap<K, number>) =>
    [...m].sort((x, y) => y[1] - x[1] || String(x[0]).localeCompare(String(y[0])));
  return {
    total,
    actions: byCount(actions).map(([action, count]) => ({ action, count })),
    signals: byCount(signals).map(([signal, count]) => ({ signal, count })),
  };
}

/** Counts by verdict and by signal of events read whole. */
export function activityOf(docs: readonly Pick<EventDoc, 'action' | 'signals'>[]): UserActivity {
  const actions = new Map<EventDoc['action'], number>();
  const signals = new Map<string, number>();
  for (const d of docs) {
    actions.set(d.action ?? null, (actions.get(d.action ?? null) ?? 0) + 1);
    for (const s of new Set(d.signals ?? [])) signals.set(s, (signals.get(s) ?? 0) + 1);
  }
  return userActivity(docs.length, actions, signals);
}
