/**
 * IP -> autonomous system lookups from the offline @ip-location-db/asn data
 * (RouteViews + RIR statistics + DB-IP ASN Lite, CC-BY-4.0; attribution: routeviews.org,
 * nro.net and DB-IP.com). The `*-num.csv` files (start,end,asn,organisation with numeric
 * addresses, sorted by start) are parsed once into typed arrays and searched with a binary search:
 * IPv4 ranges as uint32, IPv6 ranges as four big-endian uint32 words each.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { AsnInfo } from './types';

interface AsnTable {
  /** Number of ranges. */
  size: number;
  /** Range starts/ends: one uint32 per range for IPv4, four (most significant first) for IPv6. */
  starts: Uint32Array;
  ends: Uint32Array;
  asns: Uint32Array;
}

interface AsnData {
  v4: AsnTable;
  v6: AsnTable;
  /** Organisation per AS number (the data has exactly one name per ASN). */
  orgs: Map<number, string>;
}

let data: AsnData | null = null;

const NL = 0x0a;
const CR = 0x0d;
const COMMA = 0x2c;
const QUOTE = 0x22;
const ZERO = 0x30;

/** Unquotes a CSV field (`"LLC ""SPUTNIK"""` -> `LLC "SPUTNIK"`). */
function unquote(field: string): string {
  if (field.length >= 2 && field.charCodeAt(0) === QUOTE && field.charCodeAt(field.length - 1) === QUOTE) {
    return field.slice(1, -1).replace(/""/g, '"');
  }
  return field;
}

function countLines(buf: Buffer): number {
  let n = 0;
  for (let i = buf.indexOf(NL); i >= 0; i = buf.indexOf(NL, i + 1)) n++;
  return buf.length > 0 && buf[buf.length - 1] !== NL ? n + 1 : n;
}

/** Parses the unsigned decimal integer (< 2^53) in `buf[from..to)`; NaN when it is not one. */
function parseUint(buf: Buffer, from: number, to: number): number {
  if (from >= to) return NaN;
  let v = 0;
  for (let i = from; i < to; i++) {
    const d = buf[i] - ZERO;
    if (d < 0 || d > 9) return NaN;
    v = v * 10 + d;
  }
  return v;
}

const limbs = new Uint32Array(8); // scratch: 128-bit value as 16-bit limbs, least significant first

/**
 * Parses the unsigned decimal 128-bit integer in `buf[from..to)` into four big-endian uint32
 * words at `out[at..at+3]`, nine digits at a time over 16-bit limbs (no BigInt). False if malformed.
 */
function parseU128(buf: Buffer, from: number, to: number, out: Uint32Array, at: number): boolean {
  if (from >= to || to - from > 39) return false;
  limbs.fill(0);
  for (let i = from; i < to;) {
    const chunkEnd = Math.min(to, i + 9);
    let chunk = 0;
    let scale = 1;
    for (; i < chunkEnd; i++) {
      const d = buf[i] - ZERO;
      if (d < 0 || d > 9) return false;
      chunk = chunk * 10 + d;
      scale *= 10;
    }
    let carry = chunk;
    for (let k = 0; k < 8; k++) {
      const v = limbs[k] * scale + carry; // < 2^16 * 10^9 + 10^9 < 2^53
      limbs[k] = v % 0x10000;
      carry = Math.floor(v / 0x10000);
    }
    if (carry !== 0) return false; // overflow past 128 bits
  }
  out[at] = (limbs[7] * 0x10000 + limbs[6]) >>> 0;
  out[at + 1] = (limbs[5] * 0x10000 + limbs[4]) >>> 0;
  out[at + 2] = (limbs[3] * 0x10000 + limbs[2]) >>> 0;
  out[at + 3] = (limbs[1] * 0x10000 + limbs[0]) >>> 0;
  return true;
}

/** Parses one `*-num.csv` file (start,end,asn,organisation per line) straight from its bytes. */
function parseTable(file: string, version: 4 | 6, orgs: Map<number, string>): AsnTable {
  const buf = readFileSync(join(dirname(require.resolve('@ip-location-db/asn/package.json')), file));
  const capacity = countLines(buf);
  const width = version === 4 ? 1 : 4;
  const starts = new Uint32Array(capacity * width);
  const ends = new Uint32Array(capacity * width);
  const asns = new Uint32Array(capacity);
  let size = 0;
  let pos = 0;
  while (pos < buf.length) {
    let eol = buf.indexOf(NL, pos);
    if (eol < 0) eol = buf.length;
    const lineEnd = eol > pos && buf[eol - 1] === CR ? eol - 1 : eol;
    // The three numeric fields are short: find their commas with a plain loop (cheaper than
    // three more native indexOf calls per line); the organisation is only decoded once per ASN.
    let c1 = -1;
    let c2 = -1;
    let c3 = -1;
    for (let i = pos; i < lineEnd; i++) {
      if (buf[i] !== COMMA) continue;
      if (c1 < 0) c1 = i;
      else if (c2 < 0) c2 = i;
      else {
        c3 = i;
        break;
      }
    }
    const asn = c3 >= 0 ? parseUint(buf, c2 + 1, c3) : NaN;
    let ok = Number.isInteger(asn) && asn <= 0xffffffff;
    if (ok && version === 4) {
      const start = parseUint(buf, pos, c1);
      const end = parseUint(buf, c1 + 1, c2);
      ok = start <= end && end <= 0xffffffff;
      starts[size] = start;
      ends[size] = end;
    } else if (ok) {
      ok = parseU128(buf, pos, c1, starts, size * 4) && parseU128(buf, c1 + 1, c2, ends, size * 4);
    }
    if (ok) {
      asns[size] = asn;
      if (!orgs.has(asn)) orgs.set(asn, unquote(buf.toString('utf8', c3 + 1, lineEnd)));
      size++;
    }
    pos = eol + 1;
  }
  return { size, starts, ends, asns };
}

/** Loads the ASN tables once (idempotent). Takes a few hundred milliseconds the first time. */
export function loadAsnData(): void {
  if (data !== null) return;
  const orgs = new Map<number, string>();
  const v4 = parseTable('asn-ipv4-num.csv', 4, orgs);
  const v6 = parseTable('asn-ipv6-num.csv', 6, orgs);
  data = { v4, v6, orgs };
}

function result(d: AsnData, table: AsnTable, i: number): AsnInfo {
  const number = table.asns[i];
  return { number, organization: d.orgs.get(number) ?? `AS${number}` };
}

/**
 * Binary search over a table's ranges, sorted by start: the last range whose start is at or below
 * the address (`startsAtOrBelow(i)`), or -1 when none is. The caller checks the range's end.
 */
function lastRangeFrom(size: number, startsAtOrBelow: (i: number) => boolean): number {
  let lo = 0;
  let hi = size - 1;
  let found = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    if (startsAtOrBelow(mid)) {
      found = mid;
      lo = mid + 1;
    } else {
      hi = mid - 1;
    }
  }
  return found;
}

/** ASN of an IPv4 address given as an unsigned 32-bit integer; null when unannounced. */
export function lookupAsnV4(ip: number): AsnInfo | null {
  loadAsnData();
  const d = data as AsnData;
  const t = d.v4;
  const found = lastRangeFrom(t.size, (i) => t.starts[i] <= ip);
  return found >= 0 && ip <= t.ends[found] ? result(d, t, found) : null;
}

/** Compares the 128-bit value in `arr[at..at+3]` with `words`; negative, zero or positive. */
function compareU128(arr: Uint32Array, at: number, words: ArrayLike<number>): number {
  for (let k = 0; k < 4; k++) {
    const diff = arr[at + k] - words[k];
    if (diff !== 0) return diff;
  }
  return 0;
}

/** ASN of an IPv6 address given as four big-endian uint32 words; null when unannounced. */
export function lookupAsnV6(words: ArrayLike<number>): AsnInfo | null {
  loadAsnData();
  const d = data as AsnData;
  const t = d.v6;
  const found = lastRangeFrom(t.size, (i) => compareU128(t.starts, i * 4, words) <= 0);
  return found >= 0 && compareU128(t.ends, found * 4, words) >= 0 ? result(d, t, found) : null;
}
