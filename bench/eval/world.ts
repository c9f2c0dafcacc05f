/**
 * The real-world material the evaluation's traffic is built from: address ranges of real
 * networks (residential and mobile operators per country, cloud and hosting providers, VPN
 * providers) read from the ASN data Rampart ships (@ip-location-db/asn), real browser user-agent
 * strings and the headers each browser sends, languages and time zones per country.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { lookupIp, initIntel } from '../../src/intel';

export type Rand = () => number;
export const pick = <T>(r: Rand, list: readonly T[]): T => list[Math.floor(r() * list.length)] as T;
export function weighted<T>(r: Rand, items: readonly [T, number][]): T {
  const total = items.reduce((n, [, w]) => n + w, 0);
  let x = r() * total;
  for (const [item, w] of items) if ((x -= w) <= 0) return item;
  return items[items.length - 1]![0];
}

export interface Country {
  cc: string;
  weight: number;
  /** Residential operators, mobile operators (ASNs). */
  home: number[];
  mobile: number[];
  languages: string[];
  /** Offset of local time from UTC, hours. */
  tz: number;
}

export const COUNTRIES: readonly Country[] = [
  { cc: 'US', weight: 30, home: [7922, 20115, 7018, 701], mobile: [21928, 22394, 20057], languages: ['en-US,en;q=0.9', 'en-US,en;q=0.9,es;q=0.8'], tz: -5 },
  { cc: 'GB', weight: 12, home: [2856, 5089, 5607, 13285], mobile: [25135, 206067], languages: ['en-GB,en;q=0.9', 'en-GB,en-US;q=0.9,en;q=0.8'], tz: 0 },
  { cc: 'DE', weight: 10, home: [3320, 3209], mobile: [6805, 3320], languages: ['de-DE,de;q=0.9,en;q=0.8', 'de-DE,de;q=0.9'], tz: 1 },
  { cc: 'FR', weight: 8, home: [3215, 12322, 15557], mobile: [5410, 15557], languages: ['fr-FR,fr;q=0.9,en;q=0.8', 'fr-FR,fr;q=0.9'], tz: 1 },
  { cc: 'ES', weight: 5, home: [3352], mobile: [12430, 3352], languages: ['es-ES,es;q=0.9,en;q=0.8'], tz: 1 },
  { cc: 'IT', weight: 5, home: [3269], mobile: [3269], languages: ['it-IT,it;q=0.9,en;q=0.8'], tz: 1 },
  { cc: 'NL', weight: 4, home: [1136, 33915], mobile: [1136, 33915], languages: ['nl-NL,nl;q=0.9,en;q=0.8'], tz: 1 },
  { cc: 'BR', weight: 6, home: [28573, 26599], mobile: [26599, 28573], languages: ['pt-BR,pt;q=0.9,en;q=0.8'], tz: -3 },
  { cc: 'IN', weight: 7, home: [24560, 55836], mobile: [55836, 24560], languages: ['en-IN,en;q=0.9,hi;q=0.8', 'en-US,en;q=0.9'], tz: 5.5 },
  { cc: 'JP', weight: 4, home: [4713, 2516], mobile: [2516], languages: ['ja-JP,ja;q=0.9,en;q=0.8'], tz: 9 },
  { cc: 'CA', weight: 5, home: [812, 577], mobile: [812, 577], languages: ['en-CA,en;q=0.9', 'fr-CA,fr;q=0.9,en;q=0.8'], tz: -5 },
  { cc: 'AU', weight: 4, home: [1221], mobile: [1221], languages: ['en-AU,en;q=0.9'], tz: 10 },
];

/** Cloud and hosting providers attackers rent, and providers of commercial VPN egress. */
export const HOSTING_ASNS = [16509, 14061, 16276, 24940, 20473, 396982, 8075, 51167];
export const VPN_ASNS = [9009, 60068];

interface Range {
  start: number;
  end: number;
}

interface Range6 {
  start: bigint;
  end: bigint;
}

/** A random non-negative bigint below `n` (n > 0). */
function below(r: Rand, n: bigint): bigint {
  let x = 0n;
  for (let i = 0; i < 4; i++) x = (x << 32n) | BigInt(Math.floor(r() * 2 ** 32));
  return x % n;
}

/** The eight groups of a 128-bit address, in full. */
const v6Text = (n: bigint): string => Array.from({ length: 8 }, (_, i) => ((n >> BigInt(112 - 16 * i)) & 0xffffn).toString(16)).join(':');

/** IPv4 ranges of the ASNs the evaluation uses, read once from the bundled ASN data. */
export class Networks {
  private readonly ranges = new Map<number, Range[]>();
  /** IPv6 ranges of the same ASNs (at least a /48 each), for `--ipv6`. */
  private readonly ranges6 = new Map<number, Range6[]>();
  /** VPN egress addresses by the country they geolocate to. */
  private readonly vpnByCountry = new Map<string, string[]>();

  constructor(r: Rand) {
    initIntel();
    const wanted = new Set<number>([...COUNTRIES.flatMap((c) => [...c.home, ...c.mobile]), ...HOSTING_ASNS, ...VPN_ASNS]);
    const file = join(dirname(require.resolve('@ip-location-db/asn/package.json')), 'asn-ipv4-num.csv');
    for (const line of readFileSync(file, 'utf8').split('\n')) {
      const [s, e, a] = line.split(',');
      const asn = Number(a);
      if (!wanted.has(asn)) continue;
      const start = Number(s);
      const end = Number(e);
      if (!(end >= start) || end - start < 255) continue;
      let list = this.ranges.get(asn);
      if (!list) this.ranges.set(asn, (list = []));
      list.push({ start, end });
    }
    const file6 = join(dirname(file), 'asn-ipv6-num.csv');
    for (const line of readFileSync(file6, 'utf8').split('\n')) {
      const [s, e, a] = line.split(',');
      const asn = Number(a);
      if (!wanted.has(asn) || !s || !e) continue;
      const start = BigInt(s);
      const end = BigInt(e);
      if (end - start < (1n << 80n) - 1n) continue;
      let list = this.ranges6.get(asn);
      if (!list) this.ranges6.set(asn, (list = []));
      list.push({ start, end });
    }
    // Country-matched VPN exits: sample VPN providers' addresses and keep them by country.
    for (let i = 0; i < 6000; i++) {
      const ip = this.address(r, pick(r, VPN_ASNS));
      const cc = lookupIp(ip).location?.country_code;
      if (!cc) continue;
      let list = this.vpnByCountry.get(cc);
      if (!list) this.vpnByCountry.set(cc, (list = []));
      list.push(ip);
    }
  }

  /** A random address of an ASN (weighted by range size). */
  address(r: Rand, asn: number): string {
    const list = this.ranges.get(asn);
    if (!list || list.length === 0) throw new Error(`no ranges for AS${asn}`);
    const range = pick(r, list);
    const n = range.start + 1 + Math.floor(r() * Math.max(1, range.end - range.start - 1));
    return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
  }

  /** Whether the ASN announces IPv6 (at least a /48). */
  hasV6(asn: number): boolean {
    return (this.ranges6.get(asn)?.length ?? 0) > 0;
  }

  /** A random /64 of an ASN's IPv6 ranges, as its first address (null: none announced). */
  prefix64(r: Rand, asn: number): bigint | null {
    const list = this.ranges6.get(asn);
    if (!list || list.length === 0) return null;
    const range = pick(r, list);
    const count = ((range.end - range.start) >> 64n) + 1n;
    return range.start + (below(r, count) << 64n);
  }

  /** An address in a /64 with a random interface identifier (privacy extensions: a new one every day or so). */
  inPrefix(r: Rand, prefix: bigint): string {
    return v6Text(prefix | below(r, 1n << 64n));
  }

  /** A VPN exit in `cc` when one was sampled, else anywhere. */
  vpnIn(r: Rand, cc: string): string {
    const list = this.vpnByCountry.get(cc);
    if (list && list.length) return pick(r, list);
    return this.address(r, pick(r, VPN_ASNS));
  }
}

export type BrowserKind = 'chrome-win' | 'chrome-mac' | 'edge-win' | 'firefox-win' | 'firefox-mac' | 'safari-mac' | 'safari-iphone' | 'chrome-android' | 'samsung-android';

/** A browser at some version: its user agent and the headers it sends with a login form post. */
export interface Browser {
  kind: BrowserKind;
  version: number;
  mobile: boolean;
}

export const DESKTOP_BROWSERS: readonly [BrowserKind, number][] = [
  ['chrome-win', 40],
  ['chrome-mac', 12],
  ['edge-win', 12],
  ['firefox-win', 6],
  ['firefox-mac', 2],
  ['safari-mac', 10],
];
export const MOBILE_BROWSERS: readonly [BrowserKind, number][] = [
  ['safari-iphone', 50],
  ['chrome-android', 35],
  ['samsung-android', 15],
];

/** The version a browser kind is at on a given day (browsers update about monthly). */
export function versionAt(kind: BrowserKind, day: number, lag: number): number {
  const months = Math.floor((day - lag) / 30);
  switch (kind) {
    case 'chrome-win':
    case 'chrome-mac':
    case 'edge-win':
    case 'chrome-android':
      return 122 + months;
    case 'firefox-win':
    case 'firefox-mac':
      return 123 + months;
    case 'safari-mac':
    case 'safari-iphone':
      return 17;
    case 'samsung-android':
      return 24;
  }
}

export function userAgent(b: Browser, model = 'Pixel 7'): string {
  const v = b.version;
  switch (b.kind) {
    case 'chrome-win':
      return `Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/${v}.0.0.0 Safari/537.36`;
    case 'chrome-mac':
      return `Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/${v}.0.0.0 Safari/537.36`;
    case 'edge-win':
      return `Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/${v}.0.0.0 Safari/537.36 Edg/${v}.0.0.0`;
    case 'firefox-win':
      return `Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:${v}.0) Gecko/20100101 Firefox/${v}.0`;
    case 'firefox-mac':
      return `Mozilla/5.0 (Macintosh; Intel Mac OS X 10.15; rv:${v}.0) Gecko/20100101 Firefox/${v}.0`;
    case 'safari-mac':
      return `Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/${v}.4 Safari/605.1.15`;
    case 'safari-iphone':
      return `Mozilla/5.0 (iPhone; CPU iPhone OS ${v}_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/${v}.4 Mobile/15E148 Safari/604.1`;
    case 'chrome-android':
      return `Mozilla/5.0 (Linux; Android 14; ${model}) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/${v}.0.0.0 Mobile Safari/537.36`;
    case 'samsung-android':
      return `Mozilla/5.0 (Linux; Android 14; SM-S911B) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/${v}.0 Chrome/117.0.0.0 Mobile Safari/537.36`;
  }
}

/** The headers a browser sends with a login form post, as an application forwards them. */
export function browserHeaders(b: Browser, language: string, model?: string): Record<string, string> {
  const h: Record<string, string> = {
    'User-Agent': userAgent(b, model),
    Accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8',
    'Accept-Language': language,
    'Accept-Encoding': 'gzip, deflate, br',
    'Content-Type': 'application/x-www-form-urlencoded',
    'Sec-Fetch-Site': 'same-origin',
    'Sec-Fetch-Mode': 'navigate',
    'Sec-Fetch-Dest': 'document',
  };
  if (b.kind.startsWith('chrome') || b.kind === 'edge-win' || b.kind === 'samsung-android') {
    const brand = b.kind === 'edge-win' ? 'Microsoft Edge' : 'Google Chrome';
    h['sec-ch-ua'] = `"Chromium";v="${b.version}", "${brand}";v="${b.version}", "Not-A.Brand";v="99"`;
    h['sec-ch-ua-mobile'] = b.mobile ? '?1' : '?0';
    h['sec-ch-ua-platform'] = b.kind.endsWith('android') ? '"Android"' : b.kind.endsWith('mac') ? '"macOS"' : '"Windows"';
  }
  return h;
}

/** Clients of automation tools, as credential-stuffing tools announce themselves. */
export const LIBRARY_AGENTS = ['python-requests/2.31.0', 'curl/8.4.0', 'Go-http-client/1.1', 'okhttp/4.12.0', 'axios/1.6.7', 'Java/17.0.9'];

/** Common free-mail domains, and some companies', for legitimate users. */
export const MAIL_DOMAINS: readonly [string, number][] = [
  ['gmail.com', 45],
  ['outlook.com', 10],
  ['hotmail.com', 8],
  ['yahoo.com', 8],
  ['icloud.com', 8],
  ['proton.me', 2],
  ['gmx.de', 3],
  ['orange.fr', 2],
  ['acme-corp.com', 2],
  ['example.org', 2],
];
