/**
 * Sliding windows in event time, per address, /24 (/48), autonomous system, device, request
 * shape, e-mail domain, machine and the whole environment: attempts, failures, successes,
 * registrations, attempts on accounts Rampart does not know, and the distinct accounts involved.
 * A window is the current hour's document plus the previous hour's, weighted by how much of the
 * previous hour still falls within the last sixty minutes; the environment's also keeps
 * five-minute slots and whole days.
 *
 * Pure: reads snapshots of counter documents (counters.ts).
 */
import type { CounterSnapshot } from '../ports';
import { dayKey, dayOf, snap, windowKeys, type Snapshots, type WindowKind } from './counters';
import type { Features } from './features';
import { PREVIOUS_HOUR_SETS_FROM } from './weights';

/** One sliding window (the last sixty minutes of event time). */
export interface Window {
  attempts: number;
  failures: number;
  successes: number;
  registrations: number;
  unknown: number;
  /** Distinct accounts attempted, and those that failed. */
  accounts: number;
  failedAccounts: number;
  /** The environment-wide window only: the same counts over its last RECENT_SLOT_MINUTES slots. */
  recent?: RecentCounts;
  /** The environment-wide window only: attempts, unknown accounts, failures and sign-ups over the last 24 hours. */
  day?: DayCounts;
  /**
   * The environment-wide window only: sign-ups whose browser language is rare in their address's
   * country (`language_country_mismatch` fired), field `rl`: one team's phones or browsers, set to
   * one language, behind addresses in many countries.
   */
  foreignRegistrations?: number;
}

/**
 * The environment's last 24 hours of event time: today's document and yesterday's in proportion
 * to what is left of it. A campaign spread over days ("low and slow") keeps every hour, and every
 * five minutes, near their usual counts, but not the day's share of attempts on unknown accounts.
 */
export interface DayCounts {
  attempts: number;
  unknown: number;
  failures: number;
  registrations: number;
}

/** A sliding window's count: the current period's and the previous one's in proportion `w` (what is left of it). */
const sliding = (cur: CounterSnapshot, prev: CounterSnapshot, w: number, name: string) =>
  (cur.counts[name] ?? 0) + w * (prev.counts[name] ?? 0);

function dayCounts(s: Snapshots, f: Features): DayCounts {
  const cur = snap(s, dayKey(dayOf(f)));
  const prev = snap(s, dayKey(dayOf(f) - 1));
  const w = 1 - ((f.hourBucket % 24) + f.hourFraction) / 24;
  return {
    attempts: sliding(cur, prev, w, 'a'),
    unknown: sliding(cur, prev, w, 'x'),
    failures: sliding(cur, prev, w, 'f'),
    registrations: sliding(cur, prev, w, 'r'),
  };
}

/**
 * The environment-wide window also counts attempts, attempts on unknown accounts, failures and
 * registrations per slot of RECENT_SLOT_MINUTES (fields `a<slot>`, `x<slot>`, `f<slot>`, `r<slot>`
 * of the hour's document), so that a wave is seen in its first minutes rather than once an hour's
 * worth has gathered.
 */
export const RECENT_SLOT_MINUTES = 5;
const SLOTS_PER_HOUR = 60 / RECENT_SLOT_MINUTES;
export interface RecentCounts {
  attempts: number;
  unknown: number;
  failures: number;
  registrations: number;
  /** Minutes covered: the previous slot whole and the current one so far (5–10). */
  minutes: number;
  /**
   * Sign-ups over the last SIGNUP_RECENT_MINUTES exactly (the slot before the previous one in
   * proportion to what is left of it): a farm's first sign-ups come minutes apart, and a window
   * that starts at a slot's boundary can forget one made six minutes ago. Attempts and failures
   * come by the dozen in a wave, and keep the slots as they are.
   */
  signups: number;
}

export const slotOf = (f: Features) =>
  Math.min(SLOTS_PER_HOUR - 1, Math.floor(f.hourFraction * SLOTS_PER_HOUR));

/** The names of each count's slots (`a0`…`a11`), made once. */
const SLOT_NAMES: Readonly<Record<string, readonly string[]>> = Object.fromEntries(
  ['a', 'x', 'f', 'r'].map((name) => [name, Array.from({ length: SLOTS_PER_HOUR }, (_, i) => `${name}${i}`)]),
);
const slotName = (name: string, slot: number) => SLOT_NAMES[name]?.[slot] ?? `${name}${slot}`;

/** Minutes of sign-ups the environment's recent window reads (RecentCounts.signups). */
export const SIGNUP_RECENT_MINUTES = 2 * RECENT_SLOT_MINUTES;

function recentCounts(cur: CounterSnapshot, prev: CounterSnapshot, f: Features): RecentCounts {
  const slot = slotOf(f);
  // A slot `k` slots back, in this hour's document or the previous hour's.
  const back = (name: string, k: number) =>
    slot >= k
      ? (cur.counts[slotName(name, slot - k)] ?? 0)
      : (prev.counts[slotName(name, SLOTS_PER_HOUR + slot - k)] ?? 0);
  const n = (name: string) => back(name, 0) + back(name, 1);
  const minutes = RECENT_SLOT_MINUTES + (f.hourFraction * 60 - slot * RECENT_SLOT_MINUTES);
  // What is left of the slot before the previous one, so that the sign-ups cover ten minutes exactly.
  const left = (SIGNUP_RECENT_MINUTES - minutes) / RECENT_SLOT_MINUTES;
  return {
    attempts: n('a'),
    unknown: n('x'),
    failures: n('f'),
    registrations: n('r'),
    minutes,
    signups: n('r') + left * back('r', 2),
  };
}

/**
 * One window as it stands before this event. `account` (the account this event is about) counts
 * among the distinct accounts attempted: the event is one of them.
 */
export function readWindow(
  s: Snapshots,
  f: Features,
  kind: WindowKind,
  account: string | null = null,
): Window | null {
  const keys = windowKeys(f, kind);
  if (keys === null) return null;
  const cur = snap(s, keys[0]);
  const prev = snap(s, keys[1]);
  const w = 1 - f.hourFraction;
  const withPrevious = w > PREVIOUS_HOUR_SETS_FROM;
  const accounts = distinct(
    cur.sets.u,
    withPrevious ? prev.sets.u : undefined,
    account !== null && kind !== 'env' ? account : null,
  );
  const failedAccounts = distinct(cur.sets.uf, withPrevious ? prev.sets.uf : undefined, null);
  const window: Window = {
    attempts: sliding(cur, prev, w, 'a'),
    failures: sliding(cur, prev, w, 'f'),
    successes: sliding(cur, prev, w, 's'),
    registrations: sliding(cur, prev, w, 'r'),
    unknown: sliding(cur, prev, w, 'x'),
    accounts,
    failedAccounts,
  };
  if (kind === 'env') {
    window.recent = recentCounts(cur, prev, f);
    window.day = dayCounts(s, f);
    window.foreignRegistrations = sliding(cur, prev, w, 'rl');
  }
  return window;
}

/** The size of the union of two sets as last counted (see `distinct`). */
interface Union {
  b: readonly string[];
  aLength: number;
  bLength: number;
  size: number;
}
/**
 * Union sizes by their first set. A window's sets are read by every verdict that reads the window
 * (up to 80 members each, about seven windows a verdict) and only grow in place between reads
 * (a new array when one is replaced), so the size is counted again only from the members added
 * since it was last counted.
 */
const unions = new WeakMap<readonly string[], Union>();

function unionSize(x: readonly string[], y: readonly string[]): number {
  const u = unions.get(x);
  if (u && u.b === y && u.aLength <= x.length && u.bLength <= y.length) {
    if (u.aLength === x.length && u.bLength === y.length) return u.size;
    // Members added to one side only: each counts unless the other side has it.
    if (u.bLength === y.length) {
      for (let i = u.aLength; i < x.length; i++) if (!y.includes(x[i] as string)) u.size++;
      u.aLength = x.length;
      return u.size;
    }
    if (u.aLength === x.length) {
      for (let i = u.bLength; i < y.length; i++) if (!x.includes(y[i] as string)) u.size++;
      u.bLength = y.length;
      return u.size;
    }
  }
  let size = x.length;
  for (const m of y) if (!x.includes(m)) size++;
  unions.set(x, { b: y, aLength: x.length, bLength: y.length, size });
  return size;
}

const NONE: readonly string[] = [];

/** How many distinct members two sets and one more member make (each set without duplicates, as stored). */
function distinct(
  a: readonly string[] | undefined,
  b: readonly string[] | undefined,
  extra: string | null,
): number {
  const x = a ?? NONE;
  const y = b ?? NONE;
  if (y.length === 0 || x.length === 0) {
    const only = x.length === 0 ? y : x;
    return only.length + (extra !== null && !only.includes(extra) ? 1 : 0);
  }
  return unionSize(x, y) + (extra !== null && !x.includes(extra) && !y.includes(extra) ? 1 : 0);
}
