/**
 * IP address intelligence: validation/normalisation, bogon classification and the combined
 * lookup (geo + ASN + hosting, VPN and Tor flags) over the offline databases in geo.ts, asn.ts
 * and ranges.ts (maintained lists installed by scripts/install-ip-lists.sh). Tor exits change
 * within hours and the list is as fresh as its last release; it is evidence, not a verdict.
 */
import ipaddr from 'ipaddr.js';
import { loadAsnData, lookupAsnV4, lookupAsnV6 } from './asn';
import { loadGeoData, lookupGeo } from './geo';
import { isHostingNetwork } from './hosting-asns';
import { loadRanges, rangeFlags } from './ranges';
import type { AsnInfo, IpIntel } from './types';
import { normaliseIp } from '../core/intel/ip';
import { fifoMemo } from './memo';

export { normaliseIp };

/** ipaddr.js ranges that are publicly routable (everything else counts as a bogon). */
const ROUTABLE_V4: ReadonlySet<string> = new Set(['unicast', 'as112', 'amt']);
const ROUTABLE_V6: ReadonlySet<string> = new Set(['unicast', 'teredo', '6to4', 'as112v6', 'amt']);

let initialised = false;

function isBogon(addr: ipaddr.IPv4 | ipaddr.IPv6): boolean {
  if (addr.kind() === 'ipv4') return !ROUTABLE_V4.has(addr.range());
  const v6 = addr as ipaddr.IPv6;
  // Only 2000::/3 is allocated for global unicast; ipaddr.js calls the rest "unicast" too.
  if ((v6.parts[0] & 0xe000) !== 0x2000) return true;
  return !ROUTABLE_V6.has(v6.range());
}

function asnOf(addr: ipaddr.IPv4 | ipaddr.IPv6): AsnInfo | null {
  if (addr.kind() === 'ipv4') {
    const o = (addr as ipaddr.IPv4).octets;
    return lookupAsnV4(((o[0] << 24) | (o[1] << 16) | (o[2] << 8) | o[3]) >>> 0);
  }
  const p = (addr as ipaddr.IPv6).parts;
  const words = [
    ((p[0] << 16) | p[1]) >>> 0,
    ((p[2] << 16) | p[3]) >>> 0,
    ((p[4] << 16) | p[5]) >>> 0,
    ((p[6] << 16) | p[7]) >>> 0,
  ];
  return lookupAsnV6(words);
}

/** Loads the databases once (idempotent, fast to call again). lookupIp lazily calls it if needed. */
export function initIntel(): void {
  if (initialised) return;
  loadGeoData();
  loadAsnData();
  loadRanges();
  initialised = true;
}

/** Recent look-ups: traffic repeats addresses, and a result is small next to a tree walk. */
const CACHE_SIZE = 20_000;
const lookupCached = fifoMemo(CACHE_SIZE, (ip) => lookupUncached(ip));

/**
 * Look up an already-normalised IP. Synchronous after init.
 * Input is re-normalised defensively; an invalid address yields a bogon result with no data.
 * Bogons are answered without touching (or loading) the databases. Results are shared between
 * callers: treat them as read-only.
 */
export function lookupIp(ip: string): IpIntel {
  return lookupCached(ip);
}

/** What an invalid or non-routable address is answered: a bogon, with no data. */
const bogonResult = (ip: string, version: 4 | 6): IpIntel => ({
  ip,
  version,
  location: null,
  asn: null,
  hosting: false,
  vpn: false,
  relay: false,
  tor: false,
  bogon: true,
});

/** An IPv4 address's bytes, in one array reused by every look-up (lookupGeo keeps none of it). */
const v4Bytes = new Uint8Array(4);
function bytesOf(addr: ipaddr.IPv4 | ipaddr.IPv6): Uint8Array {
  if (addr.kind() !== 'ipv4') return Uint8Array.from(addr.toByteArray());
  const o = (addr as ipaddr.IPv4).octets;
  for (let i = 0; i < 4; i++) v4Bytes[i] = o[i] as number;
  return v4Bytes;
}

function lookupUncached(ip: string): IpIntel {
  const norm = normaliseIp(ip);
  if (norm === null) return bogonResult(ip, ip.includes(':') ? 6 : 4);
  const addr = ipaddr.parse(norm);
  const version = addr.kind() === 'ipv4' ? 4 : 6;
  if (isBogon(addr)) return bogonResult(norm, version);
  initIntel();
  const asn = asnOf(addr);
  const listed = rangeFlags(addr);
  const hosting = (asn !== null && isHostingNetwork(asn.number, asn.organization)) || listed.hosting;
  return {
    ip: norm,
    version,
    location: lookupGeo(bytesOf(addr)),
    asn,
    hosting,
    // The MISP list does not tell VPNs from data centres: what is not known hosting is a VPN.
    vpn: listed.vpn || (listed.anonymiser && !hosting),
    relay: listed.relay,
    tor: listed.tor,
    bogon: false,
  };
}
