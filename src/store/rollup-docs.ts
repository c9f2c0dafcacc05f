/**
 * The shapes of the overview's rollups (src/store/rollups.ts) and of their packed copies
 * (src/store/rollup-compactor.ts), shared by the writer, the reader and the compactor.
 *
 * A rollup's counts per address, ASN and country are one field per value. On FerretDB's SQLite
 * backend reading a document costs about 6 µs per field, so an hour that holds its 5,000
 * addresses costs some 50 ms to read, and a cold 7-day panel 168 of them. A settled hour's (and a
 * settled day's) counts are therefore also kept *packed*: each dimension as one JSON text of
 * `[value, count]` pairs, largest first, at most `PACK_TOP` of them (the rest counted as overflow),
 * which the database reads as a single field.
 */
import type { Action, EnvId } from '../core/model';
import { idOf } from './ids';
import { fromFieldName } from './state/delta';

export const ROLLUPS = 'rollups';
export const MINUTE = 60_000;
export const HOUR = 3_600_000;
export const DAY = 86_400_000;

/** The dimensions a rollup counts events by, and their fields in the document. */
export type RollupDimension = 'ip' | 'asn' | 'country';
export const DIMENSION_FIELD: Readonly<Record<RollupDimension, 'ip' | 'asn' | 'cc'>> = {
  ip: 'ip',
  asn: 'asn',
  country: 'cc',
};
const DIMENSIONS = ['ip', 'asn', 'country'] as const;

export interface RollupDoc {
  _id: string;
  envId: EnvId;
  at: Date;
  n?: number;
  a?: Record<string, number>;
  s?: Record<string, number>;
  ip?: Record<string, number>;
  asn?: Record<string, number>;
  cc?: Record<string, number>;
  /** Events whose value was past the cap, per dimension field. */
  o?: Record<string, number>;
  /** Per verdict (allow, challenge, deny): events per dimension field and value. */
  x?: Partial<Record<Action, Record<string, Record<string, number>>>>;
  /** Per verdict: events whose value was past the cap, per dimension field. */
  xo?: Partial<Record<Action, Record<string, number>>>;
}

/** A packed copy of a settled hour's or day's dimensions, of all events or of one verdict. */
export interface PackedDoc {
  _id: string;
  envId: EnvId;
  at: Date;
  /** The events it counts: it stands for its period only while the counts' rollups still say so. */
  n: number;
  /** How many values it holds (what it weighs in the reader's cache). */
  k: number;
  /** Per dimension field: JSON text of `[value, count]` pairs, largest first. */
  p: Record<'ip' | 'asn' | 'cc', string>;
  /** Per dimension field: the events of values it does not name (past a cap, or past the top). */
  o: Record<'ip' | 'asn' | 'cc', number>;
}

/** Events by value per dimension, and the events of values not named. */
export interface DimensionCounts {
  byDimension: Record<RollupDimension, Map<string, number>>;
  overflow: Record<RollupDimension, number>;
}

export const NO_ACTION = 'none';
/** The part of a rollup's dimensions that counts every event (the others: one verdict each). */
export const ALL = 'all';
export type RollupPart = Action | typeof ALL;
export const PARTS: readonly RollupPart[] = [ALL, 'allow', 'challenge', 'deny'];

export const hourId = (env: EnvId, start: number) => idOf(env, 'h', String(start));
export const minuteId = (env: EnvId, start: number) => idOf(env, 'm', String(start));
export const dayId = (env: EnvId, start: number) => idOf(env, 'D', String(start));
export const sinceId = (env: EnvId) => idOf(env, 'since');
/** When rollups began counting the dimensions per verdict (`x`, `xo`). */
export const sinceByActionId = (env: EnvId) => idOf(env, 'since2');
/**
 * The document of a rollup's dimensions, of all events or of one verdict: apart from the counts,
 * which the series read alone (an hour's addresses are most of its bytes).
 */
export const dimensionsId = (rollupId: string, part: RollupPart) => `${rollupId}:d:${part}`;
/**
 * The fields of a rollup document that queries filter on (kept as they are when the state layer
 * stores it packed on the embedded database: see state/pack.ts): the environment and the period
 * (retention), and the count (retention tells rollups of counts from the markers by it). The rest,
 * an hour's thousands of addresses, ASNs and countries, is one string there: FerretDB pays for
 * every field of a document on each write and read, and an hour's dimensions written whole every
 * push took it ~0.5 s (the flush behind them waited, and the verdicts behind the flush).
 */
export const ROLLUP_QUERY_FIELDS = ['envId', 'at', 'n'] as const;

/** The packed copy of an hour's or a day's dimensions (`rollupId`: its hour or day id). */
export const packedId = (rollupId: string, part: RollupPart) => `${rollupId}:p:${part}`;

/** The events of `part` a rollup of counts holds. */
export const partCount = (d: RollupDoc | undefined, part: RollupPart): number =>
  part === ALL ? (d?.n ?? 0) : (d?.a?.[part] ?? 0);

export const emptyDimensions = (): DimensionCounts => ({
  byDimension: { ip: new Map(), asn: new Map(), country: new Map() },
  overflow: { ip: 0, asn: 0, country: 0 },
});

const add = <K>(m: Map<K, number>, k: K, n: number) => m.set(k, (m.get(k) ?? 0) + n);

/** Adds counts per dimension (`values` by dimension field, field-name escaped; `overflow` by dimension field) into `sum`. */
export function addDimensions(
  sum: DimensionCounts,
  values: Partial<Record<string, Record<string, number>>>,
  overflow: Record<string, number> | undefined,
): void {
  for (const dim of DIMENSIONS) {
    for (const [k, n] of Object.entries(values[DIMENSION_FIELD[dim]] ?? {}))
      add(sum.byDimension[dim], fromFieldName(k), n);
    sum.overflow[dim] += overflow?.[DIMENSION_FIELD[dim]] ?? 0;
  }
}

/**
 * Adds one period's dimensions of `part` into `sum`: those kept inside its rollup of counts (the
 * earlier shape) and those of its dimensions' document.
 */
export function addPartDimensions(
  sum: DimensionCounts,
  counts: RollupDoc | undefined,
  part: RollupPart,
  dims: RollupDoc | undefined,
): void {
  if (counts) {
    if (part === ALL) addDimensions(sum, { ip: counts.ip, asn: counts.asn, cc: counts.cc }, counts.o);
    else addDimensions(sum, counts.x?.[part] ?? {}, counts.xo?.[part]);
  }
  if (dims) addDimensions(sum, { ip: dims.ip, asn: dims.asn, cc: dims.cc }, dims.o);
}

/** Adds a packed copy's counts into `sum`. */
export function addPacked(sum: DimensionCounts, d: PackedDoc): void {
  for (const dim of DIMENSIONS) {
    const field = DIMENSION_FIELD[dim];
    for (const [k, n] of JSON.parse(d.p[field]) as [string, number][]) add(sum.byDimension[dim], k, n);
    sum.overflow[dim] += d.o[field];
  }
}

/** The packed copy of `sum`: at most `top` values per dimension, the largest (ties by value), the rest as overflow. */
export function pack(
  id: string,
  envId: EnvId,
  at: Date,
  n: number,
  sum: DimensionCounts,
  top: number,
): PackedDoc {
  const doc: PackedDoc = {
    _id: id,
    envId,
    at,
    n,
    k: 0,
    p: { ip: '[]', asn: '[]', cc: '[]' },
    o: { ip: 0, asn: 0, cc: 0 },
  };
  for (const dim of DIMENSIONS) {
    const field = DIMENSION_FIELD[dim];
    const sorted = [...sum.byDimension[dim]].sort(
      (a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0),
    );
    const kept = sorted.slice(0, top);
    doc.p[field] = JSON.stringify(kept);
    doc.k += kept.length;
    doc.o[field] = sum.overflow[dim] + sorted.slice(top).reduce((s, [, c]) => s + c, 0);
  }
  return doc;
}

/** Whether a stored rollup document is a packed copy. */
export const isPacked = (d: RollupDoc | PackedDoc): d is PackedDoc =>
  typeof (d as Partial<PackedDoc>).p === 'object' && typeof (d as Partial<PackedDoc>).k === 'number';
