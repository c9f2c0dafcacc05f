/**
 * Signal analytics: how many events, verdicts and signals a filter matches, over time buckets,
 * and the top IPs, ASNs, countries, devices and users behind them. Bucketing happens here, on
 * slim points, so that it works alike on MongoDB and on FerretDB (which has no date arithmetic
 * in aggregation).
 */
import { InvalidParameters } from '../errors';
import type { Action, EnvId } from '../model';
import type { Clock } from '../ports';
import type { EventFilter } from '../queries/model';
import { pageSize } from '../queries/pagination';
import { validateEventFilter } from '../queries/validate';
import type { AnalyticsStore, CountField } from './ports';

export type BucketSize = 'minute' | 'hour' | 'day';
export type Dimension = 'ip' | 'asn' | 'country' | 'device' | 'user';

export const BUCKET_MS: Readonly<Record<BucketSize, number>> = {
  minute: 60_000,
  hour: 3_600_000,
  day: 86_400_000,
};
/** Range of a time series whose filter gives no `from`. */
export const DEFAULT_RANGE_MS: Readonly<Record<BucketSize, number>> = {
  minute: 3_600_000,
  hour: 86_400_000,
  day: 30 * 86_400_000,
};
export const MAX_BUCKETS = 1000;
/** Most events one time series reads; beyond it the series says `truncated`. */
export const MAX_SCAN = 200_000;

const DIMENSION_FIELD: Readonly<Record<Dimension, CountField>> = {
  ip: 'ip',
  asn: 'asn',
  country: 'country',
  device: 'deviceToken',
  user: 'userId',
};

export interface ActionCount {
  action: Action | null;
  count: number;
}
export interface SignalCount {
  signal: string;
  count: number;
}
export interface SeriesBucket {
  start: Date;
  end: Date;
  total: number;
  actions: ActionCount[];
  signals: SignalCount[];
}
export interface TimeSeries {
  bucket: BucketSize;
  from: Date;
  to: Date;
  buckets: SeriesBucket[];
  scanned: number;
  truncated: boolean;
}
export interface TopList {
  dimension: Dimension;
  distinct: number;
  entries: { key: string; count: number }[];
}

const byCount =
  <T extends { count: number }>(key: (x: T) => string) =>
  (a: T, b: T) =>
    b.count - a.count || key(a).localeCompare(key(b));
const sortActions = (xs: ActionCount[]) => xs.sort(byCount((x) => x.action ?? '~'));
const sortSignals = (xs: SignalCount[]) => xs.sort(byCount((x) => x.signal));

export interface AnalyticsDeps {
  /** The analysts' counts and series of events. */
  store: AnalyticsStore;
  clock: Clock;
}

export class AnalyticsService {
  private readonly store: AnalyticsStore;
  private readonly clock: Clock;

  constructor(deps: AnalyticsDeps) {
    this.store = deps.store;
    this.clock = deps.clock;
  }

  /** Number of events matching `filter`. */
  total(env: EnvId, filter: EventFilter): Promise<number> {
    validateEventFilter(filter);
    return this.store.count(env, filter);
  }

  /** Matching events per verdict (null: feedback events), most frequent first. */
  async actions(env: EnvId, filter: EventFilter): Promise<ActionCount[]> {
    validateEventFilter(filter);
    const { groups } = await this.store.countBy(env, filter, 'action', 10, false);
    return sortActions(groups.map((g) => ({ action: g.key as Action | null, count: g.count })));
  }

  /** Signals fired on matching events, most frequent first, at most `first`. */
  async signals(env: EnvId, filter: EventFilter, first?: number | null): Promise<SignalCount[]> {
    validateEventFilter(filter);
    const n = pageSize(first, 20);
    const { groups } = await this.store.countBy(env, filter, 'signal', n, true);
    return sortSignals(groups.map((g) => ({ signal: g.key ?? '', count: g.count })));
  }

  /**
   * Counts per bucket (default hourly) over the filter's range (default: DEFAULT_RANGE_MS up to now). Buckets are
   * aligned to UTC boundaries of their size and cover the range; empty ones are included.
   */
  async timeSeries(env: EnvId, filter: EventFilter, size?: BucketSize | null): Promise<TimeSeries> {
    validateEventFilter(filter);
    const bucket = size ?? 'hour';
    const ms = BUCKET_MS[bucket];
    const to = filter.to ?? this.clock.now();
    const from = filter.from ?? new Date(to.getTime() - DEFAULT_RANGE_MS[bucket]);
    if (from.getTime() >= to.getTime())
      throw new InvalidParameters([{ field: 'filter.from', message: 'must be before to' }]);
    const start = Math.floor(from.getTime() / ms) * ms;
    const end = Math.ceil(to.getTime() / ms) * ms;
    const count = Math.max(1, (end - start) / ms);
    if (count > MAX_BUCKETS) {
      throw new InvalidParameters([
        {
          field: 'bucket',
          message: `the range holds ${count} buckets of this size; at most ${MAX_BUCKETS}: use a larger bucket or a shorter range`,
        },
      ]);
    }
    // A range alone (the overview's views) may be counted by storage already.
    const counted = ms >= BUCKET_MS.hour ? await this.store.series?.(env, { ...filter, from, to }, ms) : null;
    if (counted) {
      const byStart = new Map(counted.map((b) => [b.start.getTime(), b]));
      const total = counted.reduce((n, b) => n + b.total, 0);
      return {
        bucket,
        from: new Date(start),
        to: new Date(end),
        scanned: total,
        truncated: false,
        buckets: Array.from({ length: count }, (_, i) => {
          const b = byStart.get(start + i * ms);
          return {
            start: new Date(start + i * ms),
            end: new Date(start + (i + 1) * ms),
            total: b?.total ?? 0,
            actions: sortActions([...(b?.actions ?? [])]),
            signals: sortSignals([...(b?.signals ?? [])]),
          };
        }),
      };
    }
    const { points, truncated } = await this.store.points(env, { ...filter, from, to }, MAX_SCAN);
    const acc = Array.from({ length: count }, () => ({
      total: 0,
      actions: new Map<Action | null, number>(),
      signals: new Map<string, number>(),
    }));
    for (const p of points) {
      const b = acc[Math.floor((p.at.getTime() - start) / ms)];
      if (!b) continue;
      b.total++;
      b.actions.set(p.action, (b.actions.get(p.action) ?? 0) + 1);
      for (const s of p.signals) b.signals.set(s, (b.signals.get(s) ?? 0) + 1);
    }
    return {
      bucket,
      from: new Date(start),
      to: new Date(end),
      scanned: points.length,
      truncated,
      buckets: acc.map((b, i) => ({
        start: new Date(start + i * ms),
        end: new Date(start + (i + 1) * ms),
        total: b.total,
        actions: sortActions([...b.actions].map(([action, n]) => ({ action, count: n }))),
        signals: sortSignals([...b.signals].map(([signal, n]) => ({ signal, count: n }))),
      })),
    };
  }

  /** The `first` most frequent values of `dimension` among matching events. */
  async top(env: EnvId, dimension: Dimension, filter: EventFilter, first?: number | null): Promise<TopList> {
    validateEventFilter(filter);
    const n = pageSize(first, 10);
    const { groups, distinct } = await this.store.countBy(env, filter, DIMENSION_FIELD[dimension], n, true);
    return {
      dimension,
      distinct,
      entries: groups
        .filter((g): g is { key: string; count: number } => g.key !== null)
        .map((g) => ({ key: g.key, count: g.count })),
    };
  }
}
