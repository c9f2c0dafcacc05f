/**
 * How a user's behavioural record stays bounded: the one eviction policy of its tables and of its
 * pending challenges. The store asks `planBehaviourEviction` what a change makes the record forget
 * and writes that; it decides nothing itself.
 *
 * The rule, whole:
 *  1. A legitimate table keeps at most TABLE_CAPS[level] values, a hostile one HOSTILE_CAP; only
 *     the levels each record keeps (LEVELS, HOSTILE_LEVELS) are looked at.
 *  2. Only an addition makes room: a positive weight, of a value the table does not hold. Taking
 *     back a tentative addition (a negative weight) never evicts, nor does a value already held.
 *  3. Room is made by forgetting one value: the least count, and among equal counts the one last
 *     seen earliest.
 *  4. The table is judged as stored, not as the model sees it: an entry whose count decayed or was
 *     taken back to zero (which the store no longer decodes) still takes a place, and, having the
 *     least count, is the first to go. An entry without a count takes a place but is never chosen.
 *  5. A new pending challenge, when PENDING_CAP are pending, makes the oldest go (stored without a
 *     time: as the oldest of all).
 *
 * Pure: no I/O. The record is read as the store holds it (`StoredRecord`), keyed as stored.
 */
import { LEVELS, type Level } from './features';
import {
  HOSTILE_CAP,
  HOSTILE_LEVELS,
  PENDING_CAP,
  TABLE_CAPS,
  type BehaviourChange,
  type HostileLevel,
} from './behaviour-tables';

/** A table entry as the database holds it: any field may be missing (`c`: count, `l`: last seen, `f`: first seen). */
export interface StoredEntry {
  readonly c?: number;
  readonly l?: number;
  readonly f?: number;
}
/** A table as stored: stored key of a value → its entry. */
export type StoredTable = Readonly<Record<string, StoredEntry>>;

/** What the store holds of a user's record, as far as eviction needs it (undefined parts: none stored). */
export interface StoredRecord {
  /** The legitimate tables, by level. */
  legit?: Readonly<Partial<Record<Level, StoredTable>>>;
  /** The hostile tables, by level. */
  hostile?: Readonly<Partial<Record<HostileLevel, StoredTable>>>;
  /** The pending challenges, by stored key, with the time of each. */
  pending?: Readonly<Record<string, { readonly at?: number }>>;
}

/** What a change makes the record forget, as stored keys. */
export interface EvictionPlan {
  /** Per level, the value the legitimate table forgets to make room. */
  legit: Partial<Record<Level, string>>;
  /** Per level, the value the hostile table forgets to make room. */
  hostile: Partial<Record<HostileLevel, string>>;
  /** The pending challenge forgotten to make room (null: none). */
  pending: string | null;
}

/**
 * The value to evict from a full table to make room for `incoming` (rules 3 and 4): null when
 * the table holds it already or has room.
 */
export function evictionCandidate(
  table: StoredTable | undefined,
  cap: number,
  incoming: string,
): string | null {
  if (!table || table[incoming] || !holdsAtLeast(table, cap)) return null;
  let victim: string | null = null;
  let least = Infinity;
  for (const [value, e] of Object.entries(table)) {
    // (`as number`: an entry without a count or last sighting compares false, so is never chosen.)
    if (
      (e.c as number) < least ||
      (e.c === least && victim !== null && (e.l as number) < (table[victim]?.l ?? 0))
    ) {
      least = e.c as number;
      victim = value;
    }
  }
  return victim;
}

/** Whether a table holds at least `n` values (counted up to `n`, without listing them). */
function holdsAtLeast(table: StoredTable, n: number): boolean {
  let count = 0;
  if (count >= n) return true;
  for (const key in table) if (Object.prototype.hasOwnProperty.call(table, key) && ++count >= n) return true;
  return false;
}

/** Rules 1–4 for one record: the value each table forgets for an addition of `weight`. */
function tableEvictions<L extends Level>(
  tables: Readonly<Partial<Record<L, StoredTable>>> | undefined,
  levels: readonly L[],
  cap: (level: L) => number,
  addition: { values: Partial<Record<Level, string | null>>; weight: number } | undefined,
  storedKey: (value: string) => string,
): Partial<Record<L, string>> {
  const out: Partial<Record<L, string>> = {};
  if (!addition || !(addition.weight > 0)) return out;
  for (const level of levels) {
    const value = addition.values[level];
    if (value === null || value === undefined) continue;
    const victim = evictionCandidate(tables?.[level], cap(level), storedKey(value));
    if (victim) out[level] = victim;
  }
  return out;
}

/**
 * What `change` makes a user's record forget to stay within its bounds (the rule above), given
 * the record as stored (`known`, undefined when none is). `storedKey` turns a feature value into
 * the key the store files it under (the same keys `known` has).
 */
export function planBehaviourEviction(
  known: StoredRecord | undefined,
  change: BehaviourChange,
  storedKey: (value: string) => string = (v) => v,
): EvictionPlan {
  let pending: string | null = null;
  if (change.pend) {
    const held = Object.entries(known?.pending ?? {});
    if (held.length >= PENDING_CAP)
      pending = held.sort(([, a], [, b]) => (a.at ?? 0) - (b.at ?? 0))[0]?.[0] ?? null;
  }
  return {
    legit: tableEvictions(known?.legit, LEVELS, (l) => TABLE_CAPS[l], change.legit, storedKey),
    hostile: tableEvictions(known?.hostile, HOSTILE_LEVELS, () => HOSTILE_CAP, change.hostile, storedKey),
    pending,
  };
}
