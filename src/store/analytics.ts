/**
 * Signal analytics on MongoDB/FerretDB: grouped counts by aggregation (only `$match`, `$group`
 * with `$sum`, `$sort`, `$limit` and `$count`, which FerretDB 1.24 supports), and slim projected
 * points for time series, which the core buckets. Indexes are those of the event searches
 * (src/store/queries.ts): every filter field leads an index after the environment.
 */
import type { Db, Document } from 'mongodb';
import type { Action, EnvId } from '../core/model';
import type { EventFilter } from '../core/queries/model';
import type {
  AnalyticsStore,
  CountField,
  DecisionPoint,
  EventPoint,
  GroupCount,
  SeriesCounts,
} from '../core/analytics/ports';
import type { IndexSpec } from './database';
import type { EventDoc } from './events';
import { eventMatch } from './queries';
import type { AnalystGate, AnalystLimits } from './analyst-gate';
import type { RollupReader, RollupDimension } from './rollups';
import type { EmbeddedEventSearch } from './embedded-search';
import { InvalidParameters } from '../core/errors';
import type { StoreDeps } from './deps';

/**
 * Events one analysis reads at most on the embedded database (when rollups do not answer it),
 * as a multiple of the candidates one search page reads (2,000 by default: 10,000 events),
 * through the filter's access path, never the whole collection.
 */
export const ANALYSIS_PAGES = 5;
const analysisMax = (e: EmbeddedEventSearch): number => e.maxExamined * ANALYSIS_PAGES;

/** Analytics reads the event collection through the query indexes; it declares none of its own. */
export const analyticsIndexes: IndexSpec[] = [];

const keyText = (v: unknown): string | null => (v === null || v === undefined ? null : String(v));

/** The fields rollups count by, and where they keep them. */
const ROLLED_UP_FIELDS: Partial<Record<CountField, RollupDimension | 'action' | 'signal'>> = {
  action: 'action',
  signal: 'signal',
  ip: 'ip',
  asn: 'asn',
  country: 'country',
};

/** Whether a filter says nothing but a time range. */
const rangeOnly = (f: EventFilter): boolean =>
  Object.entries(f).every(([k, v]) => v === undefined || k === 'from' || k === 'to');

/** Whether a filter says nothing but a time range and a verdict (rollups count dimensions per verdict too). */
const rangeAndAction = (f: EventFilter): f is EventFilter & { action: Action } =>
  f.action !== undefined &&
  Object.entries(f).every(([k, v]) => v === undefined || k === 'from' || k === 'to' || k === 'action');

/** A stored verdict as the dry run reads it. */
function decisionOf(
  d: Pick<
    EventDoc,
    | '_id'
    | 'name'
    | 'occurredAt'
    | 'action'
    | 'risk'
    | 'signals'
    | 'country'
    | 'userId'
    | 'deviceToken'
    | 'ip'
    | 'email'
    | 'asn'
  > & { policy?: { name?: string } | null },
): DecisionPoint {
  return {
    id: d._id,
    name: d.name,
    at: d.occurredAt,
    action: d.action as NonNullable<EventDoc['action']>,
    risk: d.risk ?? 0,
    signals: d.signals ?? [],
    country: d.country ?? null,
    userId: d.userId ?? null,
    deviceToken: d.deviceToken ?? null,
    ip: d.ip ?? null,
    email: d.email ?? null,
    asn: d.asn ?? null,
    policyName: d.policy?.name ?? null,
  };
}

/** Counts by one field of events read whole, as the aggregation answers them. */
function groupDocs(
  docs: readonly EventDoc[],
  field: CountField,
  limit: number,
  skipNull: boolean,
): { groups: GroupCount[]; distinct: number } {
  const counts = new Map<string | null, number>();
  const add = (k: string | null) => counts.set(k, (counts.get(k) ?? 0) + 1);
  for (const d of docs) {
    if (field === 'signal') for (const s of new Set(d.signals ?? [])) add(s);
    else {
      const k = keyText(d[field]);
      if (!(skipNull && k === null)) add(k);
    }
  }
  return ranked(counts, field, limit);
}

/**
 * The `limit` largest counts, ties in the aggregation's order (its `$sort` on `_id`): ASNs as
 * numbers, the rest as text, no value last; `distinct`: how many values there were.
 */
function ranked(
  counts: ReadonlyMap<string | null, number>,
  field: CountField,
  limit: number,
): { groups: GroupCount[]; distinct: number } {
  const tie =
    field === 'asn'
      ? (a: string | null, b: string | null) => (a === null ? 1 : b === null ? -1 : Number(a) - Number(b))
      : (a: string | null, b: string | null) => (a ?? '~').localeCompare(b ?? '~');
  const groups = [...counts]
    .sort((a, b) => b[1] - a[1] || tie(a[0], b[0]))
    .slice(0, limit)
    .map(([key, count]) => ({ key, count }));
  return { groups, distinct: counts.size };
}

export interface AnalyticsStoreDeps extends StoreDeps {
  /** Every read goes through the analysts' gate and stops at `maxTimeMS` in the database (code 50). */
  limits: AnalystLimits;
  /** The overview's rollups (src/store/rollups.ts): what a filter of a time range alone, or with an action, reads. */
  rollups?: RollupReader;
  /**
   * On Rampart's FerretDB build: other filters read their events through the searches' access
   * paths, a bounded number of them (aggregations would read the whole collection).
   */
  embedded?: EmbeddedEventSearch;
}

export class MongoAnalyticsStore implements AnalyticsStore {
  private readonly maxTimeMS: number;
  private readonly gate: AnalystGate;
  private readonly db: Db;
  private readonly rollups?: RollupReader;
  private readonly embedded?: EmbeddedEventSearch;
  constructor(deps: AnalyticsStoreDeps) {
    this.db = deps.db;
    this.rollups = deps.rollups;
    this.embedded = deps.embedded;
    this.maxTimeMS = deps.limits.maxTimeMS;
    this.gate = deps.limits.gate;
  }

  /** The rollups' sums when `filter` is a time range alone and rollups cover it exactly; else null. */
  private async rolledUp(env: EnvId, filter: EventFilter, withDimensions = false) {
    if (!this.rollups || !filter.from || !filter.to || !rangeOnly(filter)) return null;
    return this.rollups.totals(env, filter.from, filter.to, withDimensions);
  }

  /** The rollups' sums for one verdict when `filter` is a time range and an action and rollups cover it exactly; else null. */
  private async rolledUpOf(env: EnvId, filter: EventFilter, withDimensions = false) {
    if (!this.rollups || !filter.from || !filter.to || !rangeAndAction(filter)) return null;
    return this.rollups.totalsOf(env, filter.action, filter.from, filter.to, withDimensions);
  }

  /** A series filtered by action is not read from rollups: they count no signals per verdict. */
  async series(env: EnvId, filter: EventFilter, bucketMs: number): Promise<SeriesCounts[] | null> {
    if (!this.rollups || !filter.from || !filter.to || !rangeOnly(filter)) return null;
    const buckets = await this.rollups.series(env, filter.from, filter.to, bucketMs);
    return (
      buckets &&
      buckets.map((b) => ({
        start: b.start,
        total: b.total,
        actions: [...b.actions].map(([action, count]) => ({ action, count })),
        signals: [...b.signals].map(([signal, count]) => ({ signal, count })),
      }))
    );
  }
  private get events() {
    return this.db.collection<EventDoc>('events');
  }

  /** Every event of the filter through its access path, or a refusal past the bound. */
  private async allEmbedded(
    embedded: EmbeddedEventSearch,
    env: EnvId,
    filter: EventFilter,
  ): Promise<EventDoc[]> {
    const max = analysisMax(embedded);
    const { docs, complete } = await embedded.collect(env, filter, max, max * 2);
    if (complete) return docs;
    throw new InvalidParameters([
      {
        field: 'filter',
        message: `on the embedded database an analysis reads at most ${max} events, and this filter matches more: give a time range on whole minutes, alone or with an action (answered from rollups), or narrow the filter (docs/state.md)`,
      },
    ]);
  }

  async count(env: EnvId, filter: EventFilter): Promise<number> {
    const rolled = (await this.rolledUp(env, filter)) ?? (await this.rolledUpOf(env, filter));
    if (rolled) return rolled.total;
    if (this.embedded) return (await this.allEmbedded(this.embedded, env, filter)).length;
    return this.gate.run(() =>
      this.events.countDocuments(eventMatch(env, filter), { maxTimeMS: this.maxTimeMS }),
    );
  }

  async countBy(
    env: EnvId,
    filter: EventFilter,
    field: CountField,
    limit: number,
    skipNull: boolean,
  ): Promise<{ groups: GroupCount[]; distinct: number }> {
    const dimension = ROLLED_UP_FIELDS[field];
    if (dimension) {
      let counts: Map<string | null, number> | null = null;
      const byDimension = dimension !== 'action' && dimension !== 'signal';
      const rolled = await this.rolledUp(env, filter, byDimension);
      if (rolled) {
        counts =
          dimension === 'action'
            ? new Map([...rolled.actions].filter(([k]) => !(skipNull && k === null)))
            : dimension === 'signal'
              ? rolled.signals
              : rolled.byDimension[dimension];
      } else if (dimension !== 'signal' && rangeAndAction(filter)) {
        // One verdict's events: by address, ASN or country from its own counts; by action, itself.
        const of = await this.rolledUpOf(env, filter, byDimension);
        if (of)
          counts =
            dimension === 'action'
              ? new Map(of.total > 0 ? [[filter.action, of.total]] : [])
              : of.byDimension[dimension];
      }
      if (counts) return ranked(counts, field, limit);
    }
    if (this.embedded)
      return groupDocs(await this.allEmbedded(this.embedded, env, filter), field, limit, skipNull);
    const match: Document = eventMatch(env, filter);
    if (field === 'signal') return this.countSignals(match, limit);
    if (skipNull && match[field] === undefined) match[field] = { $ne: null };
    const grouped = [{ $match: match }, { $group: { _id: `$${field}`, n: { $sum: 1 } } }];
    const [top, distinct] = await Promise.all([
      this.gate.run(() =>
        this.events
          .aggregate<{ _id: unknown; n: number }>(
            [...grouped, { $sort: { n: -1, _id: 1 } }, { $limit: limit }],
            { maxTimeMS: this.maxTimeMS },
          )
          .toArray(),
      ),
      this.gate.run(() =>
        this.events
          .aggregate<{ n: number }>([...grouped, { $count: 'n' }], { maxTimeMS: this.maxTimeMS })
          .toArray(),
      ),
    ]);
    return { groups: top.map((g) => ({ key: keyText(g._id), count: g.n })), distinct: distinct[0]?.n ?? 0 };
  }

  /**
   * Signals are grouped by whole signal set and exploded here: FerretDB's `$unwind` drops the
   * other fields, and the number of distinct sets stays small.
   */
  private async countSignals(
    match: Document,
    limit: number,
  ): Promise<{ groups: GroupCount[]; distinct: number }> {
    const rows = await this.gate.run(() =>
      this.events
        .aggregate<{ _id: string[] | null; n: number }>(
          [{ $match: match }, { $group: { _id: '$signals', n: { $sum: 1 } } }],
          { maxTimeMS: this.maxTimeMS },
        )
        .toArray(),
    );
    const counts = new Map<string | null, number>();
    for (const r of rows) for (const s of r._id ?? []) counts.set(s, (counts.get(s) ?? 0) + r.n);
    return ranked(counts, 'signal', limit);
  }

  async points(
    env: EnvId,
    filter: EventFilter,
    cap: number,
  ): Promise<{ points: EventPoint[]; truncated: boolean }> {
    if (this.embedded) {
      const n = Math.min(cap, analysisMax(this.embedded));
      const { docs, complete } = await this.embedded.collect(env, filter, n, n * 2);
      return {
        points: docs.map((d) => ({ at: d.occurredAt, action: d.action ?? null, signals: d.signals ?? [] })),
        truncated: !complete,
      };
    }
    const docs = await this.gate.run(() =>
      this.events
        .find(eventMatch(env, filter), { projection: { _id: 0, occurredAt: 1, action: 1, signals: 1 } })
        .limit(cap + 1)
        .batchSize(1000)
        .maxTimeMS(this.maxTimeMS)
        .toArray(),
    );
    const points = docs
      .slice(0, cap)
      .map((d) => ({ at: d.occurredAt, action: d.action ?? null, signals: d.signals ?? [] }));
    return { points, truncated: docs.length > cap };
  }

  async decisions(
    env: EnvId,
    filter: EventFilter,
    cap: number,
  ): Promise<{ points: DecisionPoint[]; truncated: boolean }> {
    if (this.embedded) {
      // Verdicts only: through the action's keys when it is given, else through time, the rest checked.
      const { docs, complete } = await this.embedded.collect(
        env,
        filter,
        cap + 1,
        (cap + 1) * 2,
        (d) => d.action !== null,
      );
      return { points: docs.slice(0, cap).map(decisionOf), truncated: !complete || docs.length > cap };
    }
    const match: Document = {
      ...eventMatch(env, filter),
      action: filter.action ?? { $in: ['allow', 'challenge', 'deny'] },
    };
    const projection = {
      _id: 1,
      name: 1,
      occurredAt: 1,
      action: 1,
      risk: 1,
      signals: 1,
      country: 1,
      userId: 1,
      deviceToken: 1,
      ip: 1,
      email: 1,
      asn: 1,
      'policy.name': 1,
    };
    const docs = await this.gate.run(() =>
      this.events
        .find(match, { projection })
        .sort({ occurredAt: -1, _id: -1 })
        .limit(cap + 1)
        .batchSize(1000)
        .maxTimeMS(this.maxTimeMS)
        .toArray(),
    );
    return {
      points: docs
        .slice(0, cap)
        .filter((d) => d.action)
        .map(decisionOf),
      truncated: docs.length > cap,
    };
  }

  async reviewedDevices(
    env: EnvId,
    cap: number,
  ): Promise<{ token: string; state: 'approved' | 'reported' }[]> {
    const docs = await this.gate.run(() =>
      this.db
        .collection<{ _id: string; envId: string; token: string; feedback: string | null; lastSeenAt: Date }>(
          'devices',
        )
        .find(
          { envId: env, feedback: { $in: ['approved', 'reported'] } },
          { projection: { _id: 0, token: 1, feedback: 1 } },
        )
        .sort({ lastSeenAt: -1 })
        .limit(cap)
        .batchSize(1000)
        .maxTimeMS(this.maxTimeMS)
        .toArray(),
    );
    return docs.map((d) => ({ token: d.token, state: d.feedback === 'reported' ? 'reported' : 'approved' }));
  }
}
