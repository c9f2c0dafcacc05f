/**
 * A user's behavioural record as data: bounded frequency tables, one per feature level, of
 * decayed counts in event time, a hostile record beside them, the challenges not answered yet,
 * and the change an event makes to all of it.
 *
 * A count is stored as the sum of 2^((t - T0)/H) over the events that added to it, so adding is
 * commutative (deltas from any number of requests or instances), the ratio of two counts needs no
 * decay at all, and the count at time t is the stored value times 2^(-(t - T0)/H). Importing 60
 * days of history gives the same tables as living through them.
 *
 * The entries keep the database's short keys (`c`, `l`, `f`): the store decodes a document into
 * these objects without renaming a field on the hot path. Code outside this module reads them
 * through `userCount`, `countAt`, `firstSeen` and `lastSeen`. How a full table makes room is the
 * eviction policy (behaviour-eviction.ts).
 *
 * Pure: no I/O.
 */
import type { FeatureValues, Level } from './features';
import {
  HOSTILE_CAP,
  NOVELTY_HALF_LIFE_MS,
  PENDING_CAP,
  TABLE_CAPS as CAPS,
  USER_HALF_LIFE_MS,
} from './weights';

export { HOSTILE_CAP, NOVELTY_HALF_LIFE_MS, PENDING_CAP, USER_HALF_LIFE_MS };

/** Reference time of the stored counts (part of how they are stored: do not change). The half-life is USER_HALF_LIFE_MS (weights.ts). */
export const EPOCH_MS = Date.UTC(2025, 0, 1);

/**
 * `2^((t - T0)/H)`: what one event at `t` adds to a decayed count. Scoring one event asks for the
 * same time and one of two half-lives dozens of times, so the last answer for each half-life is kept.
 */
const memo = { t1: NaN, h1: NaN, w1: 1, t2: NaN, h2: NaN, w2: 1 };
export const epochWeight = (t: number, halfLifeMs = USER_HALF_LIFE_MS): number => {
  if (t === memo.t1 && halfLifeMs === memo.h1) return memo.w1;
  if (t === memo.t2 && halfLifeMs === memo.h2) return memo.w2;
  const w = 2 ** ((t - EPOCH_MS) / halfLifeMs);
  if (halfLifeMs === memo.h1 || Number.isNaN(memo.h1)) {
    memo.t1 = t;
    memo.h1 = halfLifeMs;
    memo.w1 = w;
  } else {
    memo.t2 = t;
    memo.h2 = halfLifeMs;
    memo.w2 = w;
  }
  return w;
};
/** A stored decayed count as a count at time `t`. */
export const atTime = (stored: number, t: number, halfLifeMs = USER_HALF_LIFE_MS): number =>
  stored / epochWeight(t, halfLifeMs);

/** Most values kept per level (weights.ts); beyond it the least used value is forgotten (behaviour-eviction.ts). */
export const TABLE_CAPS: Readonly<Record<Level, number>> = CAPS;
/** Levels of the hostile record (what an attacker brings along from one attempt to the next). */
export const HOSTILE_LEVELS = ['ip', 'net', 'asn', 'dev', 'ua'] as const;
export type HostileLevel = (typeof HOSTILE_LEVELS)[number];

/**
 * One value of a user's table, as stored (the short keys are the database's: do not rename).
 * `c`: count, `l`: last seen, `f`: first seen. Read them with the accessors below.
 */
export interface TableEntry {
  /** Decayed count (epoch-scaled). */
  c: number;
  /** Last time seen (ms). */
  l: number;
  /** First time seen (ms), kept for the levels in FIRST_SEEN_LEVELS. */
  f?: number;
}

/**
 * Levels whose novelty is how many values the user showed for the first time lately, rather than
 * how many they ever showed: a user adds devices early and then rarely, so three devices set up
 * months ago do not make a fourth today as likely as three set up this week.
 */
export const FIRST_SEEN_LEVELS: ReadonlySet<Level> = new Set<Level>(['dev']);
/** A table: feature value → its entry. */
export type Table = Record<string, TableEntry>;

/** An entry's decayed count at `now`. */
export const countAt = (e: TableEntry, now: number): number => atTime(e.c, now);
/** When the value was last seen (ms). */
export const lastSeen = (e: TableEntry): number => e.l;
/** When the value was first seen (ms); undefined where its level keeps no first sighting, or the entry predates it. */
export const firstSeen = (e: TableEntry): number | undefined => e.f;

export interface PendingChallenge {
  at: number;
  values: Partial<FeatureValues>;
  /** What was added to the legitimate tables at once (0 when nothing was). */
  tentative: number;
  /** The operator (`asn`) was among what was added at once (see recurringOperator). */
  operator?: boolean;
  /**
   * The challenged login came from a native app's HTTP stack, and the app release its user agent
   * named (null: none): with `values.fp`, what a passed challenge teaches the environment's
   * client-token habit (counter-bumps.ts). Absent on challenges recorded before it was kept.
   */
  client?: { app: boolean; release: string | null };
}

/** A user's behavioural history, as the store decodes it. */
export interface Behaviour {
  /** Decayed number of legitimate events. */
  n: number;
  tables: Partial<Record<Level, Table>>;
  hostileN: number;
  hostile: Partial<Record<HostileLevel, Table>>;
  /** Challenges not answered yet, by event id. */
  pending: Record<string, PendingChallenge>;
  /** Where the user last really was (for impossible travel). */
  lastLegit: { at: number; lat: number; lon: number; cc: string | null } | null;
}

export const emptyBehaviour = (): Behaviour => ({
  n: 0,
  tables: {},
  hostileN: 0,
  hostile: {},
  pending: {},
  lastLegit: null,
});

/** The user's decayed count of `value` at `level`, at `now` (0: never shown). */
export const userCount = (b: Behaviour, level: Level, value: string, now: number): number =>
  atTime(b.tables[level]?.[value]?.c ?? 0, now);

/** A change to a user's behaviour, applied by the store as commutative deltas. */
export interface BehaviourChange {
  /** Add to the legitimate tables (negative to take back a tentative addition). */
  legit?: { values: Partial<FeatureValues>; weight: number; at: number; location: Behaviour['lastLegit'] };
  /** Add to the hostile record. */
  hostile?: { values: Partial<FeatureValues>; weight: number; at: number };
  /** Remember a challenge until its answer. */
  pend?: { id: string; challenge: PendingChallenge };
  /** Forget a challenge (answered). */
  resolve?: string;
}
