/**
 * A list value as the caller sent it, checked and put in the one form matching compares: an
 * address or network in CIDR form with its host bits cleared (a single address without `/32`
 * or `/128`, an IPv4-mapped IPv6 address as IPv4), an e-mail or domain in lower case, a country
 * in upper case, an ASN as its number. Pure.
 */
import ipaddr from 'ipaddr.js';
import type { ListType } from './model';
import { LIST_LIMITS } from './model';

export type Normalised = { ok: true; value: string } | { ok: false; message: string };

const ok = (value: string): Normalised => ({ ok: true, value });
const bad = (message: string): Normalised => ({ ok: false, message });
/** Control characters (C0, DEL, C1) and lone surrogates never belong in a value. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
function hasControl(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || (c >= 0x7f && c <= 0x9f)) return true;
  }
  return LONE_SURROGATE.test(s);
}
const DOMAIN = /^(?=.{1,253}$)(?:[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?\.)+[a-z0-9-]{2,63}$/;

/** Check and normalise one value of a list of type `type`. */
export function normaliseValue(type: ListType, raw: unknown): Normalised {
  if (type === 'asn' && typeof raw === 'number') raw = String(raw);
  if (typeof raw !== 'string') return bad('must be a string');
  if (raw.length > LIST_LIMITS.value) return bad(`must be at most ${LIST_LIMITS.value} characters`);
  if (hasControl(raw)) return bad('must not contain control characters');
  const s = raw.trim();
  if (!s) return bad('must not be empty');
  switch (type) {
    case 'ip':
      return normaliseNetwork(s);
    case 'email': {
      const e = s.toLowerCase();
      const at = e.lastIndexOf('@');
      if (at < 1 || /\s/.test(e) || !DOMAIN.test(e.slice(at + 1)))
        return bad('must be an e-mail address (name@domain)');
      return ok(e);
    }
    case 'email_domain': {
      const d = s.toLowerCase().replace(/^@/, '');
      return DOMAIN.test(d) ? ok(d) : bad('must be a domain name (example.com)');
    }
    case 'asn': {
      const m = /^(?:AS)?(\d{1,10})$/i.exec(s);
      const n = m ? Number(m[1]) : NaN;
      return Number.isInteger(n) && n >= 1 && n <= 4_294_967_295
        ? ok(String(n))
        : bad('must be an AS number (13335 or AS13335)');
    }
    case 'country':
      return /^[A-Za-z]{2}$/.test(s)
        ? ok(s.toUpperCase())
        : bad('must be an ISO 3166-1 alpha-2 country code (DE)');
    case 'user_id':
    case 'device':
    case 'machine':
    case 'request_shape':
      // Ids are compared exactly as sent (case matters), without surrounding blanks.
      return ok(s);
  }
}

/** An address or network in CIDR form (host bits cleared), or why not. */
export function normaliseNetwork(s: string): Normalised {
  const slash = s.indexOf('/');
  const addr = slash < 0 ? s : s.slice(0, slash);
  const bitsText = slash < 0 ? null : s.slice(slash + 1);
  const parsed = parseAddress(addr);
  if (!parsed)
    return bad('must be an IPv4 or IPv6 address or network (203.0.113.7, 203.0.113.0/24, 2001:db8::/32)');
  const max = parsed.kind() === 'ipv4' ? 32 : 128;
  let bits = max;
  if (bitsText !== null) {
    if (!/^\d{1,3}$/.test(bitsText) || Number(bitsText) > max)
      return bad(`must have a prefix length from 0 to ${max}`);
    bits = Number(bitsText);
  }
  if (bits === max)
    return ok(parsed.kind() === 'ipv6' ? (parsed as ipaddr.IPv6).toRFC5952String() : parsed.toString());
  const network =
    parsed.kind() === 'ipv4'
      ? ipaddr.IPv4.networkAddressFromCIDR(`${parsed.toString()}/${bits}`).toString()
      : ipaddr.IPv6.networkAddressFromCIDR(`${parsed.toString()}/${bits}`).toRFC5952String();
  return ok(`${network}/${bits}`);
}

function parseAddress(s: string): ipaddr.IPv4 | ipaddr.IPv6 | null {
  if (s.includes(':')) {
    if (!ipaddr.IPv6.isValid(s) || s.includes('%')) return null;
    const v6 = ipaddr.IPv6.parse(s);
    return v6.isIPv4MappedAddress() ? v6.toIPv4Address() : v6;
  }
  return ipaddr.IPv4.isValidFourPartDecimal(s) ? ipaddr.IPv4.parse(s) : null;
}

/**
 * A normalised address or network as 128 bits in four 32-bit words and a prefix length, IPv4 as
 * IPv4-mapped IPv6 (`::ffff:a.b.c.d`, prefix + 96), so that one structure holds both families.
 */
export function networkWords(normalised: string): { words: Uint32Array; bits: number } {
  const slash = normalised.indexOf('/');
  const addr = slash < 0 ? normalised : normalised.slice(0, slash);
  const words = new Uint32Array(4);
  const v4 = !addr.includes(':');
  if (!writeAddressWords(addr, words)) throw new Error(`not a normalised address: ${normalised}`);
  const bits = slash < 0 ? 128 : Number(normalised.slice(slash + 1)) + (v4 ? 96 : 0);
  return { words, bits };
}

/**
 * Write an address (as the core normalises event addresses: dotted quad, or IPv6) into `out` as
 * four 32-bit words; false when it is not one. IPv4 is parsed by hand: it is every verdict's.
 */
export function writeAddressWords(addr: string, out: Uint32Array): boolean {
  if (!addr.includes(':')) {
    let word = 0;
    let part = 0;
    let digits = 0;
    let parts = 0;
    for (let i = 0; i <= addr.length; i++) {
      const c = i < addr.length ? addr.charCodeAt(i) : 46;
      if (c === 46) {
        if (digits === 0 || part > 255) return false;
        word = word * 256 + part;
        parts++;
        part = 0;
        digits = 0;
      } else if (c >= 48 && c <= 57 && digits < 3) {
        part = part * 10 + (c - 48);
        digits++;
      } else return false;
    }
    if (parts !== 4) return false;
    out[0] = 0;
    out[1] = 0;
    out[2] = 0xffff;
    out[3] = word >>> 0;
    return true;
  }
  if (!ipaddr.IPv6.isValid(addr)) return false;
  const p = ipaddr.IPv6.parse(addr).parts;
  for (let i = 0; i < 4; i++) out[i] = (((p[2 * i] ?? 0) << 16) | (p[2 * i + 1] ?? 0)) >>> 0;
  return true;
}
