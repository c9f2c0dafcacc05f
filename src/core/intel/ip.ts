/**
 * An IP address as the core names it: validated and in one canonical form (IPv4 dotted quad,
 * IPv6 in RFC 5952, an IPv4-mapped IPv6 address as its IPv4). Pure: a function of its argument.
 */
import ipaddr from 'ipaddr.js';

/** Longest textual form worth parsing (full IPv6 with embedded IPv4, brackets and a zone id). */
const MAX_IP_LENGTH = 100;

/**
 * Whether `s` is an IPv4 address already in its canonical form (four decimal parts, none with a
 * leading zero or above 255), the form nearly every address arrives in: then it is its own
 * normal form, found without a regular expression, a parse or a copy.
 */
function canonicalQuad(s: string): boolean {
  let parts = 0;
  let digits = 0;
  let value = 0;
  let leadingZero = false;
  for (let i = 0; i <= s.length; i++) {
    const c = i < s.length ? s.charCodeAt(i) : 0x2e;
    if (c === 0x2e) {
      if (digits === 0 || (digits > 1 && leadingZero) || value > 255 || ++parts > 4) return false;
      digits = 0;
      value = 0;
      continue;
    }
    if (c < 0x30 || c > 0x39) return false;
    if (digits === 0) leadingZero = c === 0x30;
    digits++;
    if (value <= 255) value = value * 10 + (c - 0x30);
  }
  return parts === 4;
}

/** Validate and normalise an IP string; returns null when not a valid IPv4/IPv6 address. */
export function normaliseIp(raw: string): string | null {
  if (typeof raw !== 'string' || raw.length > MAX_IP_LENGTH) return null;
  let s = raw.trim();
  if (s.startsWith('[') && s.endsWith(']')) s = s.slice(1, -1);
  if (canonicalQuad(s)) return s;
  if (s.includes(':')) {
    const zone = s.indexOf('%');
    if (zone >= 0) s = s.slice(0, zone);
    if (!ipaddr.IPv6.isValid(s)) return null;
    const v6 = ipaddr.IPv6.parse(s);
    return v6.isIPv4MappedAddress() ? v6.toIPv4Address().toString() : v6.toRFC5952String();
  }
  // Only dotted-quad decimal: shorthand, hex and octal forms ("127.1", "0x7f.0.0.1") are rejected.
  if (!ipaddr.IPv4.isValidFourPartDecimal(s)) return null;
  return ipaddr.IPv4.parse(s).toString();
}
