/**
 * Commutative document deltas: the only way the hot path writes. A delta is a list of update
 * operators on field paths (`$inc`, `$max`, `$min`, `$addToSet`, `$set`, `$unset`,
 * `$setOnInsert`), applied to the in-process copy of a document at once with MongoDB's own
 * semantics, and later sent as one `updateOne(..., {upsert: true})`. One more operation, `replace`,
 * stands for a whole document written by its only author (a derived copy, a record written once):
 * it is sent as `replaceOne(..., {upsert: true})`. Because increments, set-adds
 * and max-of-time commute, deltas from many requests (or many Rampart instances) can be coalesced
 * and applied in any interleaving without losing one; no request ever reads a document, changes
 * it and writes it back.
 *
 * Pure: no I/O, no driver types. Dates stay Date objects (the driver maps them to BSON dates).
 */

export type Op = 'set' | 'setOnInsert' | 'inc' | 'max' | 'min' | 'addToSet' | 'unset' | 'replace';

/** A comparable scalar for `max`/`min`: numbers, dates and strings (never mixed on one path). */
export type Ordered = number | Date | string;

export interface OpEntry {
  op: Op;
  /** Field path segments, each already a safe field name (see `fieldName`); empty for `replace`. */
  path: readonly string[];
  value: unknown;
}

/** A stored document: plain data. `_id` is never part of a delta. */
export type Doc = Record<string, unknown>;

/**
 * A field name for arbitrary text (a user id, an IP address, a trait key): MongoDB field names
 * may not contain `.`, start with `$`, or contain NUL, so those (and `%`, the escape character)
 * become `%XX`. Never throws, whatever the string (lone surrogates included).
 */
export function fieldName(text: string): string {
  if (text === '') return '%';
  // Most names escape nothing (a browser, a country, a network): returned as they are. The others
  // (an address, a version: dots only, mostly) are escaped once and kept, since a verdict escapes
  // each of its values several times (the behaviour tables, their eviction, the rollups).
  let dots = true;
  let plain = true;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x2e) plain = false;
    else if (c === 0x25 || c === 0x24 || c === 0) {
      plain = false;
      dots = false;
      break;
    }
  }
  if (plain) return text;
  let escaped = ESCAPED.get(text);
  if (escaped === undefined) {
    escaped = dots ? text.replaceAll('.', '%2E') : escapeEach(text);
    // Bounded: emptied when full (the names of the last few thousand verdicts; at 4,096 the bench's
    // addresses and networks of 10,000 users were escaped again and again).
    if (ESCAPED.size >= MAX_ESCAPED) ESCAPED.clear();
    ESCAPED.set(text, escaped);
  }
  return escaped;
}

/** Names `fieldName` escaped lately, and what it made of them. */
const ESCAPED = new Map<string, string>();
const MAX_ESCAPED = 16_384;

/** `text` with each character `fieldName` escapes escaped, in one pass. */
function escapeEach(text: string): string {
  let out = '';
  let from = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c !== 0x2e && c !== 0x25 && c !== 0x24 && c !== 0) continue;
    out += text.slice(from, i) + (ESCAPES[c] as string);
    from = i + 1;
  }
  return out + text.slice(from);
}

/** What `fieldName` writes for each character it escapes: `%` and two upper-case hex digits. */
const ESCAPES: Readonly<Record<number, string>> = { 0x00: '%00', 0x24: '%24', 0x25: '%25', 0x2e: '%2E' };

/** The value of an upper-case hex digit's character code, or -1. */
function hexDigit(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x41 && c <= 0x46) return c - 0x37;
  return -1;
}

/** The text a `fieldName` was made from. */
export function fromFieldName(name: string): string {
  if (name === '%') return '';
  // Most names escape nothing (a browser, a country): returned as they are.
  let at = name.indexOf('%');
  if (at < 0) return name;
  // Every `%XX` (upper-case hex) is the character it stands for, as `fieldName` wrote it.
  let out = '';
  let from = 0;
  for (; at >= 0 && at + 2 < name.length; at = name.indexOf('%', at + 1)) {
    const hi = hexDigit(name.charCodeAt(at + 1));
    const lo = hexDigit(name.charCodeAt(at + 2));
    if (hi < 0 || lo < 0) continue;
    out += name.slice(from, at) + String.fromCharCode(hi * 16 + lo);
    from = at + 3;
    at += 2;
  }
  return out + name.slice(from);
}

/**
 * No operation: what is queued for a document changed in place (StateLayer.edit), which is
 * written whole as it then is.
 */
export const NO_OPS: readonly OpEntry[] = Object.freeze([]);

/** The whole document, replacing whatever is stored (never commutative: for a document's only author). */
export const replacement = (doc: Doc): OpEntry[] => [{ op: 'replace', path: [], value: clone(doc) }];

/** What a writer of a document says: a Delta records it, an Edit applies it at once. */
export interface Changes {
  set(path: readonly string[], value: unknown): this;
  setOnInsert(path: readonly string[], value: unknown): this;
  inc(path: readonly string[], by: number): this;
  max(path: readonly string[], value: Ordered): this;
  min(path: readonly string[], value: Ordered): this;
  addToSet(path: readonly string[], ...members: string[]): this;
  unset(path: readonly string[]): this;
}

/** Builds a delta fluently: `delta().inc(['c', 'events'], 1).max(['seenAt'], at)`. */
export class Delta implements Changes {
  readonly ops: OpEntry[] = [];

  private push(op: Op, path: readonly string[], value: unknown): this {
    if (path.length === 0) throw new Error('a delta path needs at least one segment');
    this.ops.push({ op, path, value });
    return this;
  }
  set(path: readonly string[], value: unknown): this {
    return this.push('set', path, value);
  }
  /** Set only when the update inserts the document (its first write). */
  setOnInsert(path: readonly string[], value: unknown): this {
    return this.push('setOnInsert', path, value);
  }
  inc(path: readonly string[], by: number): this {
    return this.push('inc', path, by);
  }
  max(path: readonly string[], value: Ordered): this {
    return this.push('max', path, value);
  }
  min(path: readonly string[], value: Ordered): this {
    return this.push('min', path, value);
  }
  /** Add members to a set (an array without duplicates). */
  addToSet(path: readonly string[], ...members: string[]): this {
    return members.length ? this.push('addToSet', path, members) : this;
  }
  unset(path: readonly string[]): this {
    return this.push('unset', path, true);
  }
  get empty(): boolean {
    return this.ops.length === 0;
  }
}

export const delta = (): Delta => new Delta();

/** Negative, zero or positive as `a` orders before, with or after `b`. */
export function compare(a: Ordered, b: Ordered): number {
  const x = a instanceof Date ? a.getTime() : a;
  const y = b instanceof Date ? b.getTime() : b;
  return x < y ? -1 : x > y ? 1 : 0;
}

export const isOrdered = (v: unknown): v is Ordered =>
  typeof v === 'number' || typeof v === 'string' || v instanceof Date;
export const isObject = (v: unknown): v is Doc =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Date);

/**
 * An object keyed by data (addresses, device keys, values seen): made without a prototype, which
 * V8 keeps as a hash table from the start. An object literal given such keys one by one takes a
 * new hidden class for each key (and, for each, a descriptor array copied whole), made in the old
 * generation and shared with no other object: ~120,000 of them in the bench's heap of 10,000
 * users, a tenth of it, for the garbage collector to mark. Without a prototype, a key such as
 * `constructor` or `__proto__` is a key like any other.
 */
export const dict = <T = unknown>(): Record<string, T> => Object.create(null) as Record<string, T>;

/**
 * Where a collection's documents hold objects keyed by data, as paths of field names, `*` for
 * any one field (`[['d'], ['p', 't', '*']]`): those objects are made with `dict()`, by a change
 * that creates them and by a read that decodes them (`toKeyed`).
 */
export type KeyedPaths = readonly (readonly string[])[];

/** Whether the object at `path[0]…path[depth]` is keyed by data, under `keyed`. */
function keyedAt(keyed: KeyedPaths, path: readonly string[], depth: number): boolean {
  for (const p of keyed) {
    if (p.length !== depth + 1) continue;
    let i = 0;
    while (i <= depth && (p[i] === '*' || p[i] === path[i])) i++;
    if (i > depth) return true;
  }
  return false;
}

/** `doc`, each object at a `keyed` path made a dict in place (the same keys, in the same order). */
export function toKeyed(doc: Doc, keyed: KeyedPaths): Doc {
  for (const p of keyed) keyedUnder(doc, p, 0);
  return doc;
}

function keyedUnder(parent: Doc, p: readonly string[], i: number): void {
  const seg = p[i] as string;
  for (const k of seg === '*' ? Object.keys(parent) : [seg]) {
    const v = parent[k];
    if (!isObject(v)) continue;
    if (i < p.length - 1) keyedUnder(v, p, i + 1);
    else if (Object.getPrototypeOf(v) !== null) parent[k] = Object.assign(dict(), v);
  }
}

/** Deep copy of plain data (objects, arrays, dates, scalars). */
export function clone<T>(v: T): T {
  if (v instanceof Date) return new Date(v.getTime()) as T;
  if (Array.isArray(v)) return v.map(clone) as T;
  if (isObject(v)) {
    const out: Doc = {};
    for (const k of Object.keys(v)) out[k] = clone(v[k]);
    return out as T;
  }
  return v;
}

/** The object holding the last segment of `path`, created on the way when `create`. */
function parentOf(doc: Doc, path: readonly string[], create: boolean, keyed?: KeyedPaths): Doc | null {
  let cur: Doc = doc;
  for (let i = 0; i < path.length - 1; i++) {
    const seg = path[i] as string;
    const next = cur[seg];
    if (isObject(next)) cur = next;
    else if (!create) return null;
    else cur = child(cur, seg, keyed !== undefined && keyedAt(keyed, path, i));
  }
  return cur;
}

/**
 * `parent[field]` as an object, made (replacing what is not one) as a delta's path makes it;
 * `keyedByData`: made as a dict.
 */
export function child(parent: Doc, field: string, keyedByData = false): Doc {
  const next = parent[field];
  if (isObject(next)) return next;
  const made: Doc = keyedByData ? dict() : {};
  parent[field] = made;
  return made;
}

/** `$inc` of one field of `parent`, in place. */
export function incField(parent: Doc, field: string, by: number): void {
  const cur = parent[field];
  parent[field] = (typeof cur === 'number' ? cur : 0) + by;
}

/** `$max` of one field of `parent`, in place (a scalar: numbers, strings, dates). */
export function maxField(parent: Doc, field: string, value: Ordered): void {
  const cur = parent[field];
  if (!isOrdered(cur) || compare(value, cur) > 0) parent[field] = value;
}

/** `$min` of one field of `parent`, in place. */
export function minField(parent: Doc, field: string, value: Ordered): void {
  const cur = parent[field];
  if (!isOrdered(cur) || compare(value, cur) < 0) parent[field] = value;
}

/**
 * Apply one operation (not `replace`) to `out` in place, with MongoDB's semantics for an upsert;
 * `inserting`: the document did not exist before this update (then `setOnInsert` applies).
 */
function applyOp(
  out: Doc,
  op: Op,
  path: readonly string[],
  value: unknown,
  inserting: boolean,
  keyed?: KeyedPaths,
): void {
  if (op === 'setOnInsert' && !inserting) return;
  const leaf = path[path.length - 1] as string;
  if (op === 'unset') {
    const parent = parentOf(out, path, false);
    if (parent) delete parent[leaf];
    return;
  }
  const parent = parentOf(out, path, true, keyed) as Doc;
  const cur = parent[leaf];
  switch (op) {
    case 'set':
    case 'setOnInsert':
      parent[leaf] = clone(value);
      break;
    case 'inc':
      incField(parent, leaf, value as number);
      break;
    // Scalars only (numbers, strings, dates): no copy. Nothing mutates a Date in place.
    case 'max':
      maxField(parent, leaf, value as Ordered);
      break;
    case 'min':
      minField(parent, leaf, value as Ordered);
      break;
    case 'addToSet':
      // Added in place, as counts are incremented in place: the cached document's arrays are
      // never replaced (their readers see them grow, as they see counts grow), and a member
      // already there costs nothing. A new array is the document's own, never the delta's.
      if (Array.isArray(cur)) {
        for (const m of value as string[]) if (!(cur as unknown[]).includes(m)) (cur as unknown[]).push(m);
      } else {
        const arr: string[] = [];
        for (const m of value as string[]) if (!arr.includes(m)) arr.push(m);
        parent[leaf] = arr;
      }
      break;
  }
}

/**
 * Apply a delta to a document in place, with MongoDB's semantics for an upsert: `doc` null
 * means the document does not exist yet (then `setOnInsert` applies). Returns the document.
 * `keyed`: the collection's objects keyed by data (see KeyedPaths).
 */
export function applyDelta(doc: Doc | null, d: Delta | readonly OpEntry[], keyed?: KeyedPaths): Doc {
  let inserting = doc === null;
  let out: Doc = doc ?? {};
  for (const { op, path, value } of d instanceof Delta ? d.ops : d) {
    if (op === 'replace') {
      out = clone(value as Doc);
      if (keyed) toKeyed(out, keyed);
      inserting = false;
      continue;
    }
    applyOp(out, op, path, value, inserting, keyed);
  }
  return out;
}

/**
 * Changes applied to a document at once, in place, with the semantics a Delta of the same calls
 * would have (`applyDelta`), and no operation kept: for a document written whole from memory
 * (the state layer's `edit`), where nothing but the document itself is ever sent. `inserting`:
 * the document did not exist before (then `setOnInsert` applies); `keyed`: as for applyDelta.
 */
export class Edit implements Changes {
  constructor(
    readonly doc: Doc,
    private readonly inserting: boolean,
    private readonly keyed?: KeyedPaths,
  ) {}

  private apply(op: Op, path: readonly string[], value: unknown): this {
    if (path.length === 0) throw new Error('a delta path needs at least one segment');
    applyOp(this.doc, op, path, value, this.inserting, this.keyed);
    return this;
  }
  set(path: readonly string[], value: unknown): this {
    return this.apply('set', path, value);
  }
  setOnInsert(path: readonly string[], value: unknown): this {
    return this.apply('setOnInsert', path, value);
  }
  inc(path: readonly string[], by: number): this {
    return this.apply('inc', path, by);
  }
  max(path: readonly string[], value: Ordered): this {
    return this.apply('max', path, value);
  }
  min(path: readonly string[], value: Ordered): this {
    return this.apply('min', path, value);
  }
  addToSet(path: readonly string[], ...members: string[]): this {
    return members.length ? this.apply('addToSet', path, members) : this;
  }
  unset(path: readonly string[]): this {
    return this.apply('unset', path, true);
  }
}

/**
 * One coalesced update: at most one operator per path, and no path a prefix of another; or a
 * whole replacement document (then `fields` is empty).
 */
export interface UpdateGroup {
  /** path (joined with '.') → operator and value */
  readonly fields: Map<string, { op: Op; value: unknown }>;
  readonly replace?: Doc;
}

const join = (path: readonly string[]) => path.join('.');

/**
 * Coalesce a sequence of deltas into as few updates as possible, in order. Two operations on one
 * path merge when their operator is the same and merging is exact (increments add, max/min keep
 * the extreme, set keeps the last, set-adds unite); anything else (a different operator on the
 * same path, or a path under or above one already in the update, which MongoDB refuses as a
 * conflict) starts the next update. Applying the groups in order equals applying the deltas in
 * order.
 */
export function coalesce(deltas: readonly (Delta | readonly OpEntry[])[]): UpdateGroup[] {
  const groups: UpdateGroup[] = [];
  let fields = new Map<string, { op: Op; value: unknown }>();
  /** Every proper prefix of a path in the current group. */
  let prefixes = new Set<string>();
  const next = () => {
    if (fields.size) groups.push({ fields });
    fields = new Map();
    prefixes = new Set();
  };
  deltas.forEach((d, index) => {
    for (const { op, path, value } of d instanceof Delta ? d.ops : d) {
      if (op === 'replace') {
        // Everything before it is overwritten: drop it, and let what follows start anew.
        groups.length = 0;
        fields = new Map();
        prefixes = new Set();
        groups.push({ fields: new Map(), replace: clone(value as Doc) });
        continue;
      }
      // Every delta is an upsert, so after the first one the document exists and a later
      // setOnInsert can never apply: leave it out rather than let it apply too early.
      if (op === 'setOnInsert' && index > 0) continue;
      const key = join(path);
      let existing = fields.get(key);
      let conflict = prefixes.has(key);
      for (let i = 1; !conflict && i < path.length; i++) conflict = fields.has(join(path.slice(0, i)));
      if (!conflict && existing && existing.op !== op) conflict = true;
      if (conflict) {
        next();
        existing = undefined;
      }
      // Only the first update can insert the document.
      if (op === 'setOnInsert' && groups.length > 0)
        throw new Error(`setOnInsert on ${key} does not fit in the first update: it could never apply`);
      if (!existing) {
        fields.set(key, { op, value: op === 'addToSet' ? [...(value as string[])] : value });
        for (let i = 1; i < path.length; i++) prefixes.add(join(path.slice(0, i)));
        continue;
      }
      switch (op) {
        case 'inc':
          existing.value = (existing.value as number) + (value as number);
          break;
        case 'max':
          if (compare(value as Ordered, existing.value as Ordered) > 0) existing.value = value;
          break;
        case 'min':
          if (compare(value as Ordered, existing.value as Ordered) < 0) existing.value = value;
          break;
        case 'set':
          existing.value = value;
          break;
        case 'addToSet':
          for (const m of value as string[])
            if (!(existing.value as string[]).includes(m)) (existing.value as string[]).push(m);
          break;
        case 'setOnInsert':
        case 'unset':
          // The first one decides (a later setOnInsert never applies after an earlier one).
          break;
      }
    }
  });
  next();
  return groups;
}

const MONGO_OP: Record<Op, string> = {
  set: '$set',
  setOnInsert: '$setOnInsert',
  inc: '$inc',
  max: '$max',
  min: '$min',
  addToSet: '$addToSet',
  unset: '$unset',
  replace: '',
};

/** The MongoDB update document of a group of operators (plain object; the store hands it to the driver). */
export function toUpdateDocument(group: UpdateGroup): Record<string, Record<string, unknown>> {
  const update: Record<string, Record<string, unknown>> = {};
  for (const [path, { op, value }] of group.fields) {
    const bucket = (update[MONGO_OP[op]] ??= {});
    bucket[path] = op === 'addToSet' ? { $each: value } : op === 'unset' ? '' : value;
  }
  return update;
}

/** A coalesced group back as operations (a requeued group is written as one update again). */
export function groupOps(group: UpdateGroup): OpEntry[] {
  if (group.replace) return replacement(group.replace);
  return [...group.fields].map(([path, { op, value }]) => ({
    op,
    path: path.split('.'),
    value: clone(value),
  }));
}
