/**
 * Address ranges of anonymisers and hosting networks, from maintained datasets that
 * `scripts/install-ip-lists.sh` installs into `.tools/ip-lists` (no list is written by hand):
 *  - iporigin (MIT; CC0 aggregations rebuilt weekly upstream): `ranges.bin`, Tor exits, VPN
 *    egress (ProtonVPN, Mullvad), iCloud Private Relay, and cloud/hosting ranges, IPv4 and IPv6;
 *  - MISP warning lists (BSD-3-Clause; X4BNet lists_vpn): `vpn-ipv{4,6}.json`, CIDRs of VPN
 *    providers and data centres together.
 * Loaded once into sorted, merged typed arrays and searched in O(log n). When the files are not
 * installed every look-up answers "nothing known".
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import ipaddr from 'ipaddr.js';
import { PROJECT_ROOT } from '../paths';

/** What a range says about an address. Several can hold (a VPN provider's data centre). */
export interface RangeFlags {
  tor: boolean;
  /** A commercial VPN's egress. */
  vpn: boolean;
  /** Apple's iCloud Private Relay: anonymising, but mostly ordinary iPhone users. */
  relay: boolean;
  /** A cloud or hosting provider's range. */
  hosting: boolean;
  /** Listed as a VPN provider or data centre (MISP), without saying which. */
  anonymiser: boolean;
  /** Provider name where the dataset gives one. */
  provider: string | null;
}

const NONE: RangeFlags = {
  tor: false,
  vpn: false,
  relay: false,
  hosting: false,
  anonymiser: false,
  provider: null,
};

type Kind = 'tor' | 'vpn' | 'relay' | 'hosting' | 'anonymiser';

interface V4Table {
  starts: Uint32Array;
  ends: Uint32Array;
  labels: Uint16Array;
}
interface V6Table {
  starts: bigint[];
  ends: bigint[];
  labels: number[];
}
interface Tables {
  labels: { kind: Kind | null; provider: string }[];
  v4: V4Table[];
  v6: V6Table[];
}

let tables: Tables | null = null;
let loadedFrom: string | null = null;

export const defaultListsDir = (): string => join(PROJECT_ROOT, '.tools', 'ip-lists');

/** Whether scripts/install-ip-lists.sh installed the lists in `dir`. */
export const ipListsInstalled = (dir = defaultListsDir()): boolean => existsSync(join(dir, 'ranges.bin'));

function kindOf(provider: string, kind: string): Kind | null {
  if (kind === 'tor') return 'tor';
  if (kind === 'vpn') return /private relay/i.test(provider) ? 'relay' : 'vpn';
  if (kind === 'hosting') return 'hosting';
  return null;
}

/** Sort ranges by start and merge overlapping ones with the same label. */
function build4(rows: [number, number, number][]): V4Table {
  rows.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  const merged: [number, number, number][] = [];
  for (const r of rows) {
    const last = merged[merged.length - 1];
    if (last && r[0] <= last[1] + 1 && r[2] === last[2]) last[1] = Math.max(last[1], r[1]);
    else merged.push([...r]);
  }
  return {
    starts: Uint32Array.from(merged.map((r) => r[0])),
    ends: Uint32Array.from(merged.map((r) => r[1])),
    labels: Uint16Array.from(merged.map((r) => r[2])),
  };
}

function build6(rows: [bigint, bigint, number][]): V6Table {
  rows.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  const merged: [bigint, bigint, number][] = [];
  for (const r of rows) {
    const last = merged[merged.length - 1];
    if (last && r[0] <= last[1] + 1n && r[2] === last[2]) last[1] = r[1] > last[1] ? r[1] : last[1];
    else merged.push([...r]);
  }
  return { starts: merged.map((r) => r[0]), ends: merged.map((r) => r[1]), labels: merged.map((r) => r[2]) };
}

const bytesToBig = (b: Uint8Array): bigint => b.reduce((acc, x) => (acc << 8n) | BigInt(x), 0n);

/** Parse iporigin's `ranges.bin` (format 1: header, labels, IPv4 then IPv6 records). */
function parseIporigin(
  buf: Buffer,
  labels: Tables['labels'],
): { v4: [number, number, number][]; v6: [bigint, bigint, number][] } {
  if (buf.subarray(0, 8).toString('latin1') !== 'IPORIGIN')
    throw new Error('ranges.bin is not an iporigin dataset');
  let off = 8 + 2 + 8;
  const nLabels = buf.readUInt16LE(off);
  const n4 = buf.readUInt32LE(off + 2);
  const n6 = buf.readUInt32LE(off + 6);
  off += 10;
  const base = labels.length;
  for (let i = 0; i < nLabels; i++) {
    const len = buf.readUInt16LE(off);
    const [provider = '', kind = ''] = buf
      .subarray(off + 2, off + 2 + len)
      .toString('utf8')
      .split('\t');
    labels.push({ kind: kindOf(provider, kind), provider });
    off += 2 + len;
  }
  const v4: [number, number, number][] = [];
  for (let i = 0; i < n4; i++, off += 10) {
    const label = base + buf.readUInt16LE(off + 8);
    if (labels[label]?.kind) v4.push([buf.readUInt32LE(off), buf.readUInt32LE(off + 4), label]);
  }
  const v6: [bigint, bigint, number][] = [];
  for (let i = 0; i < n6; i++, off += 34) {
    const label = base + buf.readUInt16LE(off + 32);
    if (labels[label]?.kind)
      v6.push([bytesToBig(buf.subarray(off, off + 16)), bytesToBig(buf.subarray(off + 16, off + 32)), label]);
  }
  return { v4, v6 };
}

/** Parse a MISP warning list of CIDRs into ranges. */
function parseCidrs(text: string): { v4: [number, number][]; v6: [bigint, bigint][] } {
  const list = (JSON.parse(text) as { list?: unknown }).list;
  const v4: [number, number][] = [];
  const v6: [bigint, bigint][] = [];
  for (const cidr of Array.isArray(list) ? list : []) {
    if (typeof cidr !== 'string' || !ipaddr.isValidCIDR(cidr)) continue;
    const [addr, bits] = ipaddr.parseCIDR(cidr);
    const bytes = addr.toByteArray();
    if (addr.kind() === 'ipv4') {
      const start = ((bytes[0]! << 24) | (bytes[1]! << 16) | (bytes[2]! << 8) | bytes[3]!) >>> 0;
      const size = 2 ** (32 - bits);
      const s = start - (start % size);
      v4.push([s, s + size - 1]);
    } else {
      const start = bytesToBig(Uint8Array.from(bytes));
      const mask = (1n << BigInt(128 - bits)) - 1n;
      v6.push([start & ~mask, (start & ~mask) | mask]);
    }
  }
  return { v4, v6 };
}

/** Load the lists from `dir` (default `.tools/ip-lists`). Returns whether they were found. */
export function loadRanges(dir = defaultListsDir()): boolean {
  if (tables && loadedFrom === dir) return true;
  const bin = join(dir, 'ranges.bin');
  if (!existsSync(bin)) {
    tables = null;
    loadedFrom = null;
    return false;
  }
  const labels: Tables['labels'] = [];
  const origin = parseIporigin(readFileSync(bin), labels);
  const t: Tables = { labels, v4: [build4(origin.v4)], v6: [build6(origin.v6)] };
  const misp = labels.length;
  labels.push({ kind: 'anonymiser', provider: 'VPN or data centre (MISP)' });
  const v4 = [] as [number, number, number][];
  const v6 = [] as [bigint, bigint, number][];
  for (const file of ['vpn-ipv4.json', 'vpn-ipv6.json']) {
    const path = join(dir, file);
    if (!existsSync(path)) continue;
    const parsed = parseCidrs(readFileSync(path, 'utf8'));
    v4.push(...parsed.v4.map(([s, e]) => [s, e, misp] as [number, number, number]));
    v6.push(...parsed.v6.map(([s, e]) => [s, e, misp] as [bigint, bigint, number]));
  }
  t.v4.push(build4(v4));
  t.v6.push(build6(v6));
  tables = t;
  loadedFrom = dir;
  return true;
}

/** Index of the last range starting at or before `x`, by binary search. */
function lastAtOrBefore<T extends number | bigint>(starts: ArrayLike<T>, x: T): number {
  let lo = 0;
  let hi = starts.length - 1;
  let found = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if ((starts[mid] as T) <= x) {
      found = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return found;
}

/** What the lists say about an address (already validated and normalised). */
export function rangeFlags(addr: ipaddr.IPv4 | ipaddr.IPv6): RangeFlags {
  if (!tables) return NONE;
  const hits: number[] = [];
  if (addr.kind() === 'ipv4') {
    const b = addr.toByteArray();
    const x = ((b[0]! << 24) | (b[1]! << 16) | (b[2]! << 8) | b[3]!) >>> 0;
    for (const t of tables.v4) {
      const i = lastAtOrBefore(t.starts, x);
      if (i >= 0 && x <= t.ends[i]!) hits.push(t.labels[i]!);
    }
  } else {
    const x = bytesToBig(Uint8Array.from(addr.toByteArray()));
    for (const t of tables.v6) {
      const i = lastAtOrBefore(t.starts, x);
      if (i >= 0 && x <= t.ends[i]!) hits.push(t.labels[i]!);
    }
  }
  if (hits.length === 0) return NONE;
  const flags: RangeFlags = { ...NONE };
  for (const h of hits) {
    const label = tables.labels[h];
    if (!label?.kind) continue;
    flags[label.kind] = true;
    if (label.kind !== 'anonymiser' || flags.provider === null) flags.provider = label.provider;
  }
  return flags;
}
