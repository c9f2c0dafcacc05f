/**
 * Velocity counters for signals on the state layer: one document per key (`<env>:<key>`) holding
 * named counts (`c.<name>`, increments) and named distinct sets (`s.<name>`, set-adds), read
 * through the cache and changed only by deltas written behind, so concurrent requests never lose
 * an increment. They expire after two days and are swept (FerretDB 1.24 has no TTL indexes).
 *
 * On the embedded database (the state layer writes whole documents) they are stored packed (see
 * state/pack.ts): `envId` and `expiresAt` as fields, the counts and sets in one string, which
 * halves what FerretDB spends writing and reading each of the ~6 a verdict changes.
 */
import type { Db } from 'mongodb';
import type { EnvId } from '../core/model';
import type { CounterBump, CounterSnapshot, CounterStore } from '../core/ports';
import { sweepExpired, type IndexSpec } from './database';
import { escapeRegex, keptIds } from './ids';
import { compare, delta, dict, isObject, isOrdered, type OpEntry } from './state/delta';
import { DEFAULT_CACHE_ENTRIES, type StateLayer } from './state/layer';
import { PACKED } from './state/pack';
import type { CreatedHere } from './created-here';
import type { StateStoreDeps } from './deps';

export const COUNTERS = 'counters';

interface CounterDoc {
  envId?: EnvId;
  c?: Record<string, number>;
  s?: Record<string, string[]>;
  expiresAt?: Date;
}

const TTL_MS = 2 * 24 * 3_600_000;
const NAME = /^[a-z_][a-z0-9_]{0,31}$/;

/** The fields of a counter document that queries filter on (kept as they are when packed). */
export const COUNTER_QUERY_FIELDS = ['envId', 'expiresAt'] as const;

export const counterIndexes: IndexSpec[] = [
  { collection: COUNTERS, indexes: [{ key: { expiresAt: 1 }, name: 'expires' }] },
];

const EMPTY: CounterSnapshot = { counts: {}, sets: {} };

/** Where a key's counts are kept inside another document: its key, and the prefix of their names there. */
export interface Fold {
  doc: string;
  part: string;
}

/**
 * Most parts one document keeps (addresses in a network's window): with at most SET_CAP accounts
 * in each distinct set, a /24 attacked from all of its addresses keeps a document under ~20 KB,
 * and the other addresses' windows are their own.
 */
export const MAX_FOLDED = 8;

/** The counts and sets of one part of a document (`<part>_<name>`), named without the prefix. */
function partOf(s: CounterSnapshot, part: string): CounterSnapshot {
  const prefix = `${part}_`;
  let counts: Record<string, number> | undefined;
  let sets: Record<string, string[]> | undefined;
  for (const n in s.counts)
    if (n.startsWith(prefix)) (counts ??= {})[n.slice(prefix.length)] = s.counts[n] as number;
  for (const n in s.sets)
    if (n.startsWith(prefix)) (sets ??= {})[n.slice(prefix.length)] = s.sets[n] as string[];
  return counts || sets ? { counts: counts ?? {}, sets: sets ?? {} } : EMPTY;
}

/** Two snapshots of one key (its own document and its part elsewhere): counts added, sets joined. */
function merged(a: CounterSnapshot, b: CounterSnapshot): CounterSnapshot {
  if (b === EMPTY) return a;
  if (a === EMPTY) return b;
  const counts = { ...a.counts };
  for (const n in b.counts) counts[n] = (counts[n] ?? 0) + (b.counts[n] as number);
  const sets = { ...a.sets };
  for (const n in b.sets) sets[n] = [...new Set([...(sets[n] ?? []), ...(b.sets[n] as string[])])];
  return { counts, sets };
}

/**
 * The snapshot of a cached counter document: its counts and sets as they are (read-only to the
 * engine; they change in place as the document does), one object per document rather than one
 * per read (a verdict reads ~28), made again only when the document's sections were replaced.
 */
const snapshots = new WeakMap<CounterDoc, CounterSnapshot>();
const NO_COUNTS = Object.freeze({}) as Record<string, number>;
const NO_SETS = Object.freeze({}) as Record<string, string[]>;
function snapshotOf(d: CounterDoc): CounterSnapshot {
  const counts = d.c ?? NO_COUNTS;
  const sets = d.s ?? NO_SETS;
  let s = snapshots.get(d);
  if (s === undefined || s.counts !== counts || s.sets !== sets) {
    s = { counts, sets };
    snapshots.set(d, s);
  }
  return s;
}

/** The snapshot of a document read for `env` (empty: none, or another environment's). */
const snapshotFor = (d: CounterDoc | null, env: EnvId): CounterSnapshot =>
  d && d.envId === env ? snapshotOf(d) : EMPTY;

/**
 * What a read found: the keys read (those asked for, and the documents folded keys are kept in)
 * beside their snapshots, in two arrays filled in one pass, rather than a Map filled key by key
 * (a verdict reads ~28, and a Map grows its table four times on the way). A look-up walks the
 * keys; a key the caller built once per event (its windows) is the same string and compares at
 * once. Iteration, rare, goes through a Map made when first asked.
 */
class ReadSnapshots implements ReadonlyMap<string, CounterSnapshot> {
  private map: Map<string, CounterSnapshot> | undefined;
  constructor(
    private readonly ks: readonly string[],
    private readonly vs: CounterSnapshot[],
  ) {}

  private indexOf(key: string): number {
    const ks = this.ks;
    for (let i = 0; i < ks.length; i++) if (ks[i] === key) return i;
    return -1;
  }

  get(key: string): CounterSnapshot | undefined {
    const i = this.indexOf(key);
    return i < 0 ? undefined : this.vs[i];
  }

  has(key: string): boolean {
    return this.indexOf(key) >= 0;
  }

  /** Set `key`'s snapshot (at every place it was asked for). */
  put(key: string, value: CounterSnapshot): void {
    for (let i = 0; i < this.ks.length; i++) if (this.ks[i] === key) this.vs[i] = value;
  }

  private asMap(): Map<string, CounterSnapshot> {
    if (!this.map) {
      this.map = new Map();
      for (let i = 0; i < this.ks.length; i++)
        this.map.set(this.ks[i] as string, this.vs[i] as CounterSnapshot);
    }
    return this.map;
  }

  get size(): number {
    return this.asMap().size;
  }

  forEach(
    each: (value: CounterSnapshot, key: string, map: ReadonlyMap<string, CounterSnapshot>) => void,
    thisArg?: unknown,
  ): void {
    this.asMap().forEach((v, k) => each.call(thisArg, v, k, this));
  }

  entries() {
    return this.asMap().entries();
  }

  keys() {
    return this.asMap().keys();
  }

  values() {
    return this.asMap().values();
  }

  [Symbol.iterator]() {
    return this.asMap()[Symbol.iterator]();
  }
}

const ENV_PATH = ['envId'] as const;
const EXPIRES_PATH = ['expiresAt'] as const;
/** The path of each count (`c.<name>`) and set (`s.<name>`) name, null for a name that is not valid. */
const PATHS = {
  c: new Map<string, readonly string[] | null>(),
  s: new Map<string, readonly string[] | null>(),
};
function fieldPath(section: 'c' | 's', name: string): readonly string[] | null {
  const known = PATHS[section].get(name);
  if (known !== undefined) return known;
  const path = NAME.test(name) ? [section, name] : null;
  // Names are a small fixed vocabulary; the bound only guards against a caller that is not.
  if (PATHS[section].size < 1_000) PATHS[section].set(name, path);
  return path;
}

/**
 * The last window bucket that documents already in the database can have: `horizon(startedAt)`,
 * or -Infinity when the database holds no counter document at all (a new install).
 */
export async function lastBucketBefore(
  db: Db,
  startedAt: number,
  horizon: (startedAt: number) => number,
): Promise<number> {
  const any = await db.collection<{ _id: string }>(COUNTERS).findOne({}, { projection: { _id: 1 } });
  return any === null ? Number.NEGATIVE_INFINITY : horizon(startedAt);
}

/**
 * Most keys whose `_id` a counter store remembers (StateCounterStore.idOf), all environments
 * together: as many as the state cache holds documents by default, so that the ids of the
 * documents it keeps are not built again (at 20,000 the bench's ~40,000 counter keys were, ~2 KB
 * allocated per verdict). ~100 bytes each beyond the cache's own.
 */
const MAX_IDS = DEFAULT_CACHE_ENTRIES;

/** A section of a counter document (`c`, `s`), made when it is missing (as a delta's path would). */
function sectionOf<T>(doc: CounterDoc, name: 'c' | 's', folded: boolean): Record<string, T> {
  const v = doc[name] as unknown;
  if (isObject(v)) return v as Record<string, T>;
  // A document holding other keys' counts (`<part>_<name>`: an address's in its network's) is
  // keyed by data; the others hold the same few names and share a hidden class.
  const made: Record<string, T> = folded ? dict() : {};
  (doc as Record<string, unknown>)[name] = made;
  return made;
}

/**
 * A bump applied to a document in place, as applying its operations (see `bump`) would: the
 * environment set, the expiry the later of the two, counts added, first times the earlier, set
 * members added once, sets replaced by a copy. No operation is built.
 */
function bumpInPlace(doc: CounterDoc, env: EnvId, expiresAt: Date, b: CounterBump, part: string): void {
  doc.envId = env;
  const cur = doc.expiresAt as unknown;
  // The expiry is shared by the bumps of one call, as their operations' is: nothing changes a Date.
  if (!isOrdered(cur) || compare(expiresAt, cur) > 0) doc.expiresAt = expiresAt;
  const folded = part !== '';
  let counts: Record<string, unknown> | undefined;
  for (const n in b.inc) {
    const name = part ? part + n : n;
    if (!fieldPath('c', name)) continue;
    counts ??= sectionOf<unknown>(doc, 'c', folded);
    const was = counts[name];
    counts[name] = (typeof was === 'number' ? was : 0) + (b.inc[n] as number);
  }
  for (const n in b.min) {
    const name = part ? part + n : n;
    if (!fieldPath('c', name)) continue;
    counts ??= sectionOf<unknown>(doc, 'c', folded);
    const was = counts[name];
    const value = b.min[n] as number;
    if (!isOrdered(was) || compare(value, was) < 0) counts[name] = value;
  }
  let sets: Record<string, unknown> | undefined;
  for (const n in b.add) {
    const name = part ? part + n : n;
    if (!fieldPath('s', name)) continue;
    sets ??= sectionOf<unknown>(doc, 's', folded);
    const member = b.add[n] as string;
    const members = sets[name];
    if (Array.isArray(members)) {
      if (!(members as unknown[]).includes(member)) members.push(member);
    } else sets[name] = [member];
  }
  for (const n in b.replaceSet) {
    const name = part ? part + n : n;
    if (!fieldPath('s', name)) continue;
    sets ??= sectionOf<unknown>(doc, 's', folded);
    sets[name] = [...(b.replaceSet[n] as string[])];
  }
}

export interface CounterStoreDeps extends StateStoreDeps {
  /** The time windows are cut by. */
  now: () => Date;
  /**
   * Where this process is the database's only writer (the embedded database):
   * - `created`: the window documents it wrote (created-here.ts), so that windows that cannot
   *   exist are not looked up;
   * - `fold`: where a key's counts may be kept inside another document (an address's window in
   *   its network's: core's addressWindowFold), under names prefixed `<part>_`. The bump writes
   *   there while that document holds fewer than MAX_FOLDED parts, else the key's own document;
   *   a read adds both. (Not on MongoDB: a purge there pulls a member from named sets in the
   *   database, and cannot name every part's.)
   */
  created?: CreatedHere;
  fold?: (key: string) => Fold | null;
}

export class StateCounterStore implements CounterStore {
  private readonly db: Db;
  private readonly state: StateLayer;
  private readonly now: () => Date;
  private readonly created?: CreatedHere;
  private readonly fold?: (key: string) => Fold | null;
  constructor(deps: CounterStoreDeps) {
    this.db = deps.db;
    this.state = deps.state;
    this.now = deps.now;
    this.created = deps.created;
    this.fold = deps.fold;
  }

  /**
   * The `_id` of a key's document, built once per key (a verdict reads its ~28 documents and then
   * bumps ~19 of them: the same ids twice, most with colons to escape). Bounded: cleared when full.
   */
  private readonly idOf = keptIds(MAX_IDS);

  async read(
    env: EnvId,
    keys: readonly string[],
    deadline?: number,
  ): Promise<ReadonlyMap<string, CounterSnapshot> | undefined> {
    // The documents folded keys are kept in (their networks' windows, read with them anyway):
    // the folded keys and their folds, side by side.
    let folded: string[] | undefined;
    let folds: Fold[] | undefined;
    let wanted = keys;
    if (this.fold) {
      for (const k of keys) {
        const f = this.fold(k);
        if (!f || folded?.includes(k)) continue;
        (folded ??= []).push(k);
        (folds ??= []).push(f);
        if (!wanted.includes(f.doc)) {
          if (wanted === keys) wanted = keys.slice();
          (wanted as string[]).push(f.doc);
        }
      }
    }
    const values = new Array<CounterSnapshot>(wanted.length);
    // Most documents are cached: those are answered without a promise each; the others in one read.
    let missed: number[] | undefined;
    let missedIds: string[] | undefined;
    for (let i = 0; i < wanted.length; i++) {
      const k = wanted[i] as string;
      const id = this.idOf(env, k);
      let d = this.state.cached(COUNTERS, id);
      if (d === undefined && this.created?.absent(k, id)) {
        // Known not to exist: cached as such, so that its first change is written whole too.
        this.state.knownAbsent(COUNTERS, id);
        d = null;
      }
      if (d === undefined) {
        (missed ??= []).push(i);
        (missedIds ??= []).push(id);
      } else values[i] = snapshotFor(d as CounterDoc | null, env);
    }
    if (missed && missedIds) {
      const docs = await this.state.readAll(COUNTERS, missedIds, deadline);
      if (!docs) return undefined;
      for (let j = 0; j < missed.length; j++)
        values[missed[j] as number] = snapshotFor(docs[j] as CounterDoc | null, env);
    }
    const out = new ReadSnapshots(wanted, values);
    if (folded && folds)
      for (let j = 0; j < folded.length; j++) {
        const k = folded[j] as string;
        const f = folds[j] as Fold;
        out.put(k, merged(out.get(k) ?? EMPTY, partOf(out.get(f.doc) ?? EMPTY, f.part)));
      }
    return out;
  }

  held(env: EnvId, keys: readonly string[]): Map<string, CounterSnapshot> {
    const out = new Map<string, CounterSnapshot>();
    const snapshot = (d: CounterDoc | null): CounterSnapshot =>
      d && d.envId === env ? { counts: d.c ?? {}, sets: d.s ?? {} } : EMPTY;
    const cached = (k: string): CounterSnapshot | undefined => {
      const d = this.state.cached(COUNTERS, this.idOf(env, k));
      return d === undefined ? undefined : snapshot(d as CounterDoc | null);
    };
    for (const k of keys) {
      const own = cached(k);
      const f = this.fold?.(k);
      const whole = f ? cached(f.doc) : undefined;
      // A folded key is known when both its own document and its part elsewhere are held.
      if (own !== undefined && (!f || whole !== undefined))
        out.set(k, f && whole ? merged(own, partOf(whole, f.part)) : own);
    }
    return out;
  }

  bump(env: EnvId, bumps: readonly CounterBump[]): void {
    const now = this.now().getTime();
    // Operations are built only for a document that must take deltas (MongoDB, or a document
    // not read); one written whole from memory (the embedded database) is changed in place.
    // Operations are read-only once built (applied, coalesced, never changed): the environment's
    // and each lifetime's expiry are shared by the bumps of one call.
    let envOp: OpEntry | undefined;
    let expiries: Map<number, OpEntry> | undefined;
    let lastKeep = 0;
    let lastExpiry: Date | undefined;
    for (const b of bumps) {
      const keep = b.keepMs ?? TTL_MS;
      // Kept in another document (see `fold`) when it has room: its names prefixed with the part.
      const fold = this.foldedInto(env, b.key);
      const key = fold?.doc ?? b.key;
      const part = fold ? `${fold.part}_` : '';
      const id = this.idOf(env, key);
      this.created?.note(key, id);
      const late = b.late === 'population' ? 'long' : b.late === true;
      const doc = this.state.edit(COUNTERS, id, late) as CounterDoc | undefined;
      if (doc) {
        // Most bumps keep their document as long as the one before (TTL_MS): one Date for them.
        if (keep !== lastKeep || !lastExpiry) {
          lastKeep = keep;
          lastExpiry = new Date(now + keep);
        }
        bumpInPlace(doc, env, lastExpiry, b, part);
        continue;
      }
      envOp ??= { op: 'set', path: ENV_PATH, value: env };
      let expires = expiries?.get(keep);
      if (!expires) {
        expires = { op: 'max', path: EXPIRES_PATH, value: new Date(now + keep) };
        (expiries ??= new Map()).set(keep, expires);
      }
      const ops: OpEntry[] = [envOp, expires];
      // Count and set names are ours (never request data), so they are safe as field names.
      for (const n in b.inc) {
        const path = fieldPath('c', part ? part + n : n);
        if (path) ops.push({ op: 'inc', path, value: b.inc[n] });
      }
      for (const n in b.min) {
        const path = fieldPath('c', part ? part + n : n);
        if (path) ops.push({ op: 'min', path, value: b.min[n] });
      }
      for (const n in b.add) {
        const path = fieldPath('s', part ? part + n : n);
        if (path) ops.push({ op: 'addToSet', path, value: [b.add[n]] });
      }
      for (const n in b.replaceSet) {
        const path = fieldPath('s', part ? part + n : n);
        if (path) ops.push({ op: 'set', path, value: [...(b.replaceSet[n] as string[])] });
      }
      this.state.apply(COUNTERS, id, ops, late);
    }
  }

  /**
   * The document a bump of `key` is written into instead of its own: the fold's, when this
   * process holds it (it was read for the verdict) and it has the part already or room for one
   * more. Otherwise (not held, or full) the key's own document.
   */
  private foldedInto(env: EnvId, key: string): Fold | null {
    const fold = this.fold?.(key);
    if (!fold) return null;
    const doc = this.state.peek(COUNTERS, this.idOf(env, fold.doc)) as CounterDoc | null | undefined;
    if (doc === undefined) return null;
    if (doc === null) return fold;
    // Most bumps are of a part the document has already: found without counting the others.
    const prefix = `${fold.part}_`;
    for (const n in doc.c) if (n.startsWith(prefix)) return fold;
    for (const n in doc.s) if (n.startsWith(prefix)) return fold;
    const parts = new Set<string>();
    for (const section of [doc.c, doc.s]) {
      for (const n in section) {
        const at = n.indexOf('_');
        if (at > 0) parts.add(n.slice(0, at));
      }
    }
    return parts.size < MAX_FOLDED ? fold : null;
  }

  /** Delete counters whose window has passed (all tenants: a maintenance task). */
  async sweep(now: Date): Promise<number> {
    return sweepExpired(this.db, COUNTERS, now);
  }
}

/**
 * Remove a member (a purged user's id or e-mail) from every distinct set of an environment.
 * Returns how many documents changed.
 *
 * Where the state layer writes whole documents (the embedded database), a cached copy written
 * after a change made in the database would put the member back, and packed documents hide their
 * sets from queries: so the documents that may hold the member (cached, or found by their plain
 * or packed form) are changed through the state layer itself. Elsewhere the member is pulled in
 * the database (atomic, whatever other instances do), after writing what is queued; the caller
 * then drops the cached copies.
 */
export async function pullCounterMember(
  db: Db,
  state: StateLayer,
  env: EnvId,
  member: string,
  setNames: readonly string[],
): Promise<number> {
  const col = db.collection<CounterDoc & { _id: string }>(COUNTERS);
  if (!state.wholeDocuments) {
    await state.flush();
    let modified = 0;
    for (const name of setNames) {
      const path = `s.${name}`;
      modified += (
        await col.updateMany(
          { envId: env, [path]: member },
          { $pull: { [path]: member } as Record<string, string> },
        )
      ).modifiedCount;
    }
    return modified;
  }
  const ids = new Set(state.cachedIds(COUNTERS, `${env}:`));
  const holds = [
    ...setNames.map((name) => ({ [`s.${name}`]: member })),
    { [PACKED]: { $regex: escapeRegex(JSON.stringify(member)) } },
  ];
  for (const d of await col.find({ envId: env, $or: holds }, { projection: { _id: 1 } }).toArray())
    ids.add(d._id);
  let modified = 0;
  for (const id of ids) {
    const doc = (await state.read(COUNTERS, id)) as CounterDoc | null;
    if (!doc?.s || doc.envId !== env) continue;
    const d = delta();
    // The named sets, and the same sets of every part kept in the document (`<part>_<name>`).
    for (const name in doc.s) {
      if (!setNames.some((n) => name === n || name.endsWith(`_${n}`))) continue;
      const members = doc.s[name];
      if (members?.includes(member))
        d.set(
          ['s', name],
          members.filter((m) => m !== member),
        );
    }
    if (d.empty) continue;
    state.apply(COUNTERS, id, d);
    modified++;
  }
  return modified;
}
