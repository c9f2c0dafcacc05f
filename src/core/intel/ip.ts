/**
 * An IP address as the core names it: validated and in one canonical form (IPv4 dotted quad,
 * IPv6 in RFC 5952, an IPv4-mapped IPv6 address as its IPv4). Pure: a function of its argument.
 */
import ipaddr from 'ipaddr.js';

/** Longest textual form worth parsing (full IPv6 with embedded IPv4, brackets and a zone id). */
const MAX_IP_LENGTH = 100;

/** Validate and normalise an IP string; returns null when not a valid IPv4/IPv6 address. */
export function normaliseIp(raw: string): string | null {
  if (typeof raw !== 'string' || raw.length > MAX_IP_LENGTH) return null;
  let s = raw.trim();
  if (s.startsWith('[') && s.endsWith(']')) s = s.slice(1, -1);
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
