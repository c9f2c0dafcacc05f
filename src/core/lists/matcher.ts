/**
 * What a verdict matches against: an environment's active list items compiled in memory, and the
 * match itself (pure, synchronous, no database). Exact values are Map look-ups; addresses and
 * networks (IPv4 as IPv4-mapped IPv6) are a sorted partition of the address space searched by
 * binary search, each segment naming the innermost network that covers it, whose enclosing
 * networks are its parents: a match costs O(log n) plus the nesting depth, never a scan.
 * Expiry and archiving are checked on the entry at match time, so an expired item stops
 * matching at its expiry and an archived one at once, without a rebuild.
 */
import type { List, ListItem, ListType } from './model';
import { networkWords, writeAddressWords } from './values';

/** One item as matching sees it; `active` is cleared in place when the item is archived. */
export interface MatchEntry {
  itemId: string;
  listId: string;
  value: string;
  secondary: string | null;
  /** Epoch ms it stops matching (Infinity: never). */
  expiresAtMs: number;
  active: boolean;
}

/** The values of one event that lists are matched on (null: the event has none). */
export interface EventValues {
  userId: string | null;
  email: string | null;
  emailDomain: string | null;
  ip: string | null;
  asn: number | null;
  country: string | null;
  /** Every name of the event's device: its token, its key, the fingerprint sent. */
  devices: readonly string[];
  machine: string | null;
  shape: string | null;
}

export interface ListMatch {
  list: List;
  entry: MatchEntry;
}

/** Adds since the last build are scanned until there are this many; then the ranges are rebuilt. */
const PENDING_REBUILD = 64;

/** Networks of one list, searchable by address. */
export class IpRanges {
  private segStarts = new Uint32Array(0);
  private segNode = new Int32Array(0);
  private parent = new Int32Array(0);
  private entries: MatchEntry[][] = [];
  private all: { words: Uint32Array; bits: number; entry: MatchEntry }[] = [];
  private pending: { start: Uint32Array; end: Uint32Array; entry: MatchEntry }[] = [];

  constructor(initial: readonly { value: string; entry: MatchEntry }[] = []) {
    for (const i of initial) this.all.push({ ...networkWords(i.value), entry: i.entry });
    this.build();
  }

  get size(): number {
    return this.all.length;
  }

  /** Add one network; found by the next match. */
  add(value: string, entry: MatchEntry): void {
    const n = { ...networkWords(value), entry };
    this.all.push(n);
    const { start, end } = bounds(n.words, n.bits);
    this.pending.push({ start, end, entry });
    if (this.pending.length >= PENDING_REBUILD) this.build();
  }

  /** The first usable entry whose network holds `addr` (four words), innermost network first. */
  find(addr: Uint32Array, usable: (e: MatchEntry) => boolean): MatchEntry | null {
    let lo = 0;
    let hi = this.segNode.length - 1;
    let at = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      if (compare(this.segStarts, mid * 4, addr, 0) <= 0) {
        at = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    let node = at < 0 ? -1 : (this.segNode[at] as number);
    while (node >= 0) {
      for (const e of this.entries[node] as MatchEntry[]) if (usable(e)) return e;
      node = this.parent[node] as number;
    }
    for (const p of this.pending) if (compare(p.start, 0, addr, 0) <= 0 && compare(addr, 0, p.end, 0) <= 0 && usable(p.entry)) return p.entry;
    return null;
  }

  /** Rebuild the partition from the entries still active. */
  private build(): void {
    this.all = this.all.filter((n) => n.entry.active);
    this.pending = [];
    const ranges = this.all.map((n) => ({ ...bounds(n.words, n.bits), bits: n.bits, entry: n.entry }));
    ranges.sort((a, b) => compare(a.start, 0, b.start, 0) || a.bits - b.bits);
    // One node per distinct network, holding every entry of it.
    const nodeStart: Uint32Array[] = [];
    const nodeEnd: Uint32Array[] = [];
    const entries: MatchEntry[][] = [];
    for (const r of ranges) {
      const last = nodeStart.length - 1;
      if (last >= 0 && compare(nodeStart[last] as Uint32Array, 0, r.start, 0) === 0 && compare(nodeEnd[last] as Uint32Array, 0, r.end, 0) === 0) (entries[last] as MatchEntry[]).push(r.entry);
      else {
        nodeStart.push(r.start);
        nodeEnd.push(r.end);
        entries.push([r.entry]);
      }
    }
    const parent = new Int32Array(nodeStart.length).fill(-1);
    const starts: number[] = [];
    const nodes: number[] = [];
    const emit = (at: Uint32Array, node: number) => {
      const k = nodes.length - 1;
      if (k >= 0 && starts[k * 4] === at[0] && starts[k * 4 + 1] === at[1] && starts[k * 4 + 2] === at[2] && starts[k * 4 + 3] === at[3]) nodes[k] = node;
      else {
        starts.push(at[0] as number, at[1] as number, at[2] as number, at[3] as number);
        nodes.push(node);
      }
    };
    // Networks nest or are disjoint: a stack of the networks holding the current point.
    const stack: number[] = [];
    const close = () => {
      const top = stack.pop() as number;
      const next = plusOne(nodeEnd[top] as Uint32Array);
      if (next) emit(next, stack.length ? (stack[stack.length - 1] as number) : -1);
    };
    for (let i = 0; i < nodeStart.length; i++) {
      const start = nodeStart[i] as Uint32Array;
      while (stack.length && compare(nodeEnd[stack[stack.length - 1] as number] as Uint32Array, 0, start, 0) < 0) close();
      parent[i] = stack.length ? (stack[stack.length - 1] as number) : -1;
      emit(start, i);
      stack.push(i);
    }
    while (stack.length) close();
    this.segStarts = Uint32Array.from(starts);
    this.segNode = Int32Array.from(nodes);
    this.parent = parent;
    this.entries = entries;
  }
}

function compare(a: Uint32Array, ai: number, b: Uint32Array, bi: number): number {
  for (let i = 0; i < 4; i++) {
    const x = a[ai + i] as number;
    const y = b[bi + i] as number;
    if (x !== y) return x < y ? -1 : 1;
  }
  return 0;
}

/** First and last address of a network. */
function bounds(words: Uint32Array, bits: number): { start: Uint32Array; end: Uint32Array } {
  const start = new Uint32Array(4);
  const end = new Uint32Array(4);
  for (let i = 0; i < 4; i++) {
    const keep = Math.max(0, Math.min(32, bits - i * 32));
    const mask = keep === 0 ? 0 : keep === 32 ? 0xffffffff : (0xffffffff << (32 - keep)) >>> 0;
    start[i] = ((words[i] as number) & mask) >>> 0;
    end[i] = (((words[i] as number) & mask) | (~mask >>> 0)) >>> 0;
  }
  return { start, end };
}

/** The next address, or null past the last. */
function plusOne(a: Uint32Array): Uint32Array | null {
  const out = Uint32Array.from(a);
  for (let i = 3; i >= 0; i--) {
    if (out[i] !== 0xffffffff) {
      out[i] = (out[i] as number) + 1;
      return out;
    }
    out[i] = 0;
  }
  return null;
}

/** One list compiled for matching. */
export class CompiledList {
  readonly exact = new Map<string, MatchEntry[]>();
  readonly ranges: IpRanges | null;
  readonly byItem = new Map<string, MatchEntry>();

  constructor(public list: List, items: readonly ListItem[] = []) {
    const active = items.filter((i) => !i.archived);
    const entries = active.map((i) => ({ item: i, entry: entryOf(i) }));
    for (const e of entries) this.byItem.set(e.item.id, e.entry);
    if (list.type === 'ip') this.ranges = new IpRanges(entries.map((e) => ({ value: e.item.primaryValue, entry: e.entry })));
    else {
      this.ranges = null;
      for (const e of entries) this.addExact(e.entry);
    }
  }

  /** Add or replace an item (an archived one is removed). */
  apply(item: ListItem): void {
    const old = this.byItem.get(item.id);
    if (old) {
      old.active = false;
      this.byItem.delete(item.id);
      const same = this.exact.get(old.value);
      if (same) {
        const rest = same.filter((e) => e !== old);
        if (rest.length) this.exact.set(old.value, rest);
        else this.exact.delete(old.value);
      }
    }
    if (item.archived) return;
    const entry = entryOf(item);
    this.byItem.set(item.id, entry);
    if (this.ranges) this.ranges.add(item.primaryValue, entry);
    else this.addExact(entry);
  }

  get size(): number {
    return this.byItem.size;
  }

  private addExact(entry: MatchEntry): void {
    const at = this.exact.get(entry.value);
    if (at) at.push(entry);
    else this.exact.set(entry.value, [entry]);
  }
}

function entryOf(i: ListItem): MatchEntry {
  return { itemId: i.id, listId: i.listId, value: i.primaryValue, secondary: i.secondaryValue, expiresAtMs: i.expiresAt ? i.expiresAt.getTime() : Infinity, active: true };
}

/** An environment's lists, compiled; `version` is the list set's version it reflects. */
export class CompiledLists {
  readonly byId = new Map<string, CompiledList>();
  constructor(public version: number, lists: readonly CompiledList[] = []) {
    for (const l of lists) this.byId.set(l.list.id, l);
  }
  get lists(): IterableIterator<CompiledList> {
    return this.byId.values();
  }
  get size(): number {
    return this.byId.size;
  }
}

export const NO_MATCHES: readonly ListMatch[] = Object.freeze([]);
/** Scratch words for the event's address: matching is synchronous, so one buffer serves every verdict. */
const scratch = new Uint32Array(4);

/**
 * Every list of `lists` the event's values are in, in no particular order (one match per list:
 * the first usable item). Items expired at `nowMs` or archived do not match.
 */
export function matchLists(lists: CompiledLists, v: EventValues, nowMs: number): readonly ListMatch[] {
  if (lists.size === 0) return NO_MATCHES;
  let out: ListMatch[] | null = null;
  let ipParsed = 0; // 0: not yet, 1: parsed, -1: none
  for (const cl of lists.lists) {
    const type = cl.list.type;
    const secondary = cl.list.secondaryType ? valueOf(v, cl.list.secondaryType) : null;
    const usable = (e: MatchEntry): boolean => e.active && e.expiresAtMs > nowMs && (e.secondary === null || e.secondary === secondary);
    let hit: MatchEntry | null = null;
    if (type === 'ip') {
      if (ipParsed === 0) ipParsed = v.ip !== null && writeAddressWords(v.ip, scratch) ? 1 : -1;
      if (ipParsed === 1 && cl.ranges) hit = cl.ranges.find(scratch, usable);
    } else if (type === 'device') {
      for (const d of v.devices) if ((hit = first(cl.exact.get(d), usable))) break;
    } else {
      const value = valueOf(v, type);
      if (value !== null) hit = first(cl.exact.get(value), usable);
    }
    if (hit) (out ??= []).push({ list: cl.list, entry: hit });
  }
  return out ?? NO_MATCHES;
}

function first(entries: readonly MatchEntry[] | undefined, usable: (e: MatchEntry) => boolean): MatchEntry | null {
  if (!entries) return null;
  for (const e of entries) if (usable(e)) return e;
  return null;
}

/** The event's value for a list type, in the form items are normalised to (a device: its first name). */
export function valueOf(v: EventValues, type: ListType): string | null {
  switch (type) {
    case 'user_id':
      return v.userId;
    case 'email':
      return v.email;
    case 'email_domain':
      return v.emailDomain;
    case 'ip':
      return v.ip;
    case 'asn':
      return v.asn === null ? null : String(v.asn);
    case 'country':
      return v.country;
    case 'device':
      return v.devices[0] ?? null;
    case 'machine':
      return v.machine;
    case 'request_shape':
      return v.shape;
  }
}
