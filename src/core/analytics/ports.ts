/**
 * What signal analytics needs from storage: counts grouped by one event field, and the slim
 * points a time series is bucketed from. No driver types; every method takes the EnvId first.
 */
import type { Action, EnvId } from '../model';
import type { EventFilter } from '../queries/model';

/** Event fields analytics can group by. `signal` counts each fired signal of an event once. */
export type CountField = 'action' | 'signal' | 'ip' | 'asn' | 'country' | 'deviceToken' | 'userId';

export interface GroupCount {
  /** The field's value as text; null groups events without one (e.g. feedback events' action). */
  key: string | null;
  count: number;
}

/** The part of an event a time series needs. */
export interface EventPoint {
  at: Date;
  action: Action | null;
  signals: string[];
}

/** The part of a stored verdict a policy dry run decides again. */
export interface DecisionPoint {
  id: string;
  name: string;
  at: Date;
  action: Action;
  risk: number;
  signals: string[];
  country: string | null;
  userId: string | null;
  deviceToken: string | null;
  /** The values lists are matched on in a dry run (absent in older stores: not matched). */
  ip?: string | null;
  email?: string | null;
  asn?: number | null;
  /** Name of the policy that decided it (a sandbox test token names itself). */
  policyName: string | null;
}

/** One bucket of a time series counted by storage. */
export interface SeriesCounts {
  start: Date;
  total: number;
  actions: { action: Action | null; count: number }[];
  signals: { signal: string; count: number }[];
}

export interface AnalyticsStore {
  /**
   * Buckets of `bucketMs` over the filter's range counted by storage (pre-aggregated), or null
   * when it cannot for this filter: the series is then built from `points`.
   */
  series?(env: EnvId, filter: EventFilter, bucketMs: number): Promise<SeriesCounts[] | null>;
  count(env: EnvId, filter: EventFilter): Promise<number>;
  /**
   * The `limit` largest groups of `field` (ties by key), and how many distinct values there are.
   * With `skipNull`, events without a value are left out of both.
   */
  countBy(
    env: EnvId,
    filter: EventFilter,
    field: CountField,
    limit: number,
    skipNull: boolean,
  ): Promise<{ groups: GroupCount[]; distinct: number }>;
  /** Points of the matching events, at most `cap` of them; `truncated` when there were more. */
  points(env: EnvId, filter: EventFilter, cap: number): Promise<{ points: EventPoint[]; truncated: boolean }>;
  /**
   * Devices that have feedback (approved or reported), most recently seen first, at most `cap`:
   * every other device is unreviewed.
   */
  reviewedDevices(env: EnvId, cap: number): Promise<{ token: string; state: 'approved' | 'reported' }[]>;
  /** Stored verdicts (events with an action) matching `filter`, newest first, at most `cap`; `truncated` when there were more. */
  decisions(
    env: EnvId,
    filter: EventFilter,
    cap: number,
  ): Promise<{ points: DecisionPoint[]; truncated: boolean }>;
}
