/**
 * What a verdict matches against: an environment's active list items compiled in memory, and the
 * match itself (pure, synchronous, no database). Exact values are Map look-ups; addresses and
 * networks (IPv4 as IPv4-mapped IPv6) are Maps per prefix length (IpRanges): a match costs one
 * look-up per prefix length the list holds, never a scan, and a change is one Map operation.
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

/** The value part of a network key: its words masked to `bits`, as one number where it fits. */
type Key = number | string;

/**
 * Networks of one list, searchable by address: one Map per prefix length present, from the
 * network's address (masked to that length) to its entries. A match looks the address up once per
 * length present, longest first (the innermost network first); adding or removing a network is
 * one Map operation, so a list of 100,000 networks is built in milliseconds and changed without
 * a rebuild. IPv4 networks (IPv4-mapped, prefix ≥ 96) are keyed by their last word, a number.
 */
export class IpRanges {
  private readonly byLength = new Map<number, Map<Key, MatchEntry[]>>();
  /** The prefix lengths present, longest first. */
  private lengths: number[] = [];
  private count = 0;

  constructor(initial: readonly { value: string; entry: MatchEntry }[] = []) {
    for (const i of initial) this.insert(i.value, i.entry);
    this.sortLengths();
  }

  get size(): number {
    return this.count;
  }

  /** Add one network; found by the next match. */
  add(value: string, entry: MatchEntry): void {
    const fresh = !this.byLength.has(networkWords(value).bits);
    this.insert(value, entry);
    if (fresh) this.sortLengths();
  }

  /** Forget one entry of a network (an item archived or replaced). */
  remove(value: string, entry: MatchEntry): void {
    const { words, bits } = networkWords(value);
    const map = this.byLength.get(bits);
    const key = keyOf(words, bits);
    const at = map?.get(key);
    if (!map || !at) return;
    const rest = at.filter((e) => e !== entry);
    this.count -= at.length - rest.length;
    if (rest.length) map.set(key, rest);
    else map.delete(key);
    if (map.size === 0) {
      this.byLength.delete(bits);
      this.sortLengths();
    }
  }

  /** The first usable entry whose network holds `addr` (four words), innermost network first. */
  find(addr: Uint32Array, usable: (e: MatchEntry) => boolean): MatchEntry | null {
    for (const bits of this.lengths) {
      const entries = this.byLength.get(bits)?.get(keyOf(addr, bits));
      if (entries) for (const e of entries) if (usable(e)) return e;
    }
    return null;
  }

  private insert(value: string, entry: MatchEntry): void {
    const { words, bits } = networkWords(value);
    let map = this.byLength.get(bits);
    if (!map) this.byLength.set(bits, (map = new Map()));
    const key = keyOf(words, bits);
    const at = map.get(key);
    // Entries archived in place (inactive) are dropped when their network is touched again.
    const kept = at ? at.filter((e) => e.active) : [];
    this.count += 1 - ((at?.length ?? 0) - kept.length);
    map.set(key, [...kept, entry]);
  }

  private sortLengths(): void {
    this.lengths = [...this.byLength.keys()].sort((a, b) => b - a);
  }
}

/** The mask of word `i` (0–3) of a prefix `bits` long. */
function maskOf(i: number, bits: number): number {
  const keep = Math.max(0, Math.min(32, bits - i * 32));
  return keep === 0 ? 0 : keep === 32 ? 0xffffffff : (0xffffffff << (32 - keep)) >>> 0;
}

/** An address's (or network's) key at prefix length `bits`: an IPv4-mapped one's masked last word, else the masked words as text. */
function keyOf(w: Uint32Array, bits: number): Key {
  if (bits >= 96 && w[0] === 0 && w[1] === 0 && w[2] === 0xffff)
    return ((w[3] as number) & maskOf(3, bits)) >>> 0;
  let key = '';
  for (let i = 0; i < 4; i++) key += `${(((w[i] as number) & maskOf(i, bits)) >>> 0).toString(16)}:`;
  return key;
}

/**
 * One list compiled for matching, and what it holds: its active items as entries, and the ids of
 * its archived items and of those already expired when it was read (never matched), so that it
 * counts the list's stored items (`count`) and knows which ids the list holds (`holds`).
 */
export class CompiledList {
  readonly exact = new Map<string, MatchEntry[]>();
  readonly ranges: IpRanges | null;
  readonly byItem = new Map<string, MatchEntry>();
  /** Stored items that never match: archived, and (read) expired ones. */
  private readonly archived = new Set<string>();
  private readonly expired = new Set<string>();

  /** `items` as read (archived ones included); those expired at `nowMs` are counted, not compiled. */
  constructor(
    public list: List,
    items: readonly ListItem[] = [],
    nowMs = -Infinity,
  ) {
    const active: { item: ListItem; entry: MatchEntry }[] = [];
    for (const i of items) {
      if (i.archived) this.archived.add(i.id);
      else if (i.expiresAt && i.expiresAt.getTime() <= nowMs) this.expired.add(i.id);
      else active.push({ item: i, entry: entryOf(i) });
    }
    for (const e of active) this.byItem.set(e.item.id, e.entry);
    if (list.type === 'ip')
      this.ranges = new IpRanges(active.map((e) => ({ value: e.item.primaryValue, entry: e.entry })));
    else {
      this.ranges = null;
      for (const e of active) this.addExact(e.entry);
    }
  }

  /** Add or replace an item as stored (an archived one stops matching); with `nowMs`, an expired one is only counted. */
  apply(item: ListItem, nowMs = -Infinity): void {
    this.archived.delete(item.id);
    this.expired.delete(item.id);
    const old = this.byItem.get(item.id);
    if (old) {
      old.active = false;
      this.byItem.delete(item.id);
      this.ranges?.remove(old.value, old);
      const same = this.exact.get(old.value);
      if (same) {
        const rest = same.filter((e) => e !== old);
        if (rest.length) this.exact.set(old.value, rest);
        else this.exact.delete(old.value);
      }
    }
    if (item.archived) {
      this.archived.add(item.id);
      return;
    }
    if (item.expiresAt && item.expiresAt.getTime() <= nowMs) {
      this.expired.add(item.id);
      return;
    }
    const entry = entryOf(item);
    this.byItem.set(item.id, entry);
    if (this.ranges) this.ranges.add(item.primaryValue, entry);
    else this.addExact(entry);
  }

  /** Active (not archived) entries compiled for matching; expired ones included until read again. */
  get size(): number {
    return this.byItem.size;
  }

  /** The list's stored items: all of them, only the archived ones (`true`) or the others (`false`). */
  count(archived?: boolean): number {
    if (archived === true) return this.archived.size;
    const notArchived = this.byItem.size + this.expired.size;
    return archived === false ? notArchived : notArchived + this.archived.size;
  }

  /** Whether the list holds an item of this id (archived and expired ones included). */
  holds(itemId: string): boolean {
    return this.byItem.has(itemId) || this.archived.has(itemId) || this.expired.has(itemId);
  }

  private addExact(entry: MatchEntry): void {
    const at = this.exact.get(entry.value);
    if (at) at.push(entry);
    else this.exact.set(entry.value, [entry]);
  }
}

function entryOf(i: ListItem): MatchEntry {
  return {
    itemId: i.id,
    listId: i.listId,
    value: i.primaryValue,
    secondary: i.secondaryValue,
    expiresAtMs: i.expiresAt ? i.expiresAt.getTime() : Infinity,
    active: true,
  };
}

/** An environment's lists, compiled; `version` is the list set's version it reflects. */
export class CompiledLists {
  readonly byId = new Map<string, CompiledList>();
  constructor(
    public version: number,
    lists: readonly CompiledList[] = [],
  ) {
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
    const usable = (e: MatchEntry): boolean =>
      e.active && e.expiresAtMs > nowMs && (e.secondary === null || e.secondary === secondary);
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

function first(
  entries: readonly MatchEntry[] | undefined,
  usable: (e: MatchEntry) => boolean,
): MatchEntry | null {
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
