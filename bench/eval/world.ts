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
  /** The IANA time zone a phone there sets itself to (the most populous one). */
  zone: string;
}

export const COUNTRIES: readonly Country[] = [
  {
    cc: 'US',
    weight: 30,
    home: [7922, 20115, 7018, 701],
    mobile: [21928, 22394, 20057],
    languages: ['en-US,en;q=0.9', 'en-US,en;q=0.9,es;q=0.8'],
    tz: -5,
    zone: 'America/New_York',
  },
  {
    cc: 'GB',
    weight: 12,
    home: [2856, 5089, 5607, 13285],
    mobile: [25135, 206067],
    languages: ['en-GB,en;q=0.9', 'en-GB,en-US;q=0.9,en;q=0.8'],
    tz: 0,
    zone: 'Europe/London',
  },
  {
    cc: 'DE',
    weight: 10,
    home: [3320, 3209],
    mobile: [6805, 3320],
    languages: ['de-DE,de;q=0.9,en;q=0.8', 'de-DE,de;q=0.9'],
    tz: 1,
    zone: 'Europe/Berlin',
  },
  {
    cc: 'FR',
    weight: 8,
    home: [3215, 12322, 15557],
    mobile: [5410, 15557],
    languages: ['fr-FR,fr;q=0.9,en;q=0.8', 'fr-FR,fr;q=0.9'],
    tz: 1,
    zone: 'Europe/Paris',
  },
  {
    cc: 'ES',
    weight: 5,
    home: [3352],
    mobile: [12430, 3352],
    languages: ['es-ES,es;q=0.9,en;q=0.8'],
    tz: 1,
    zone: 'Europe/Madrid',
  },
  {
    cc: 'IT',
    weight: 5,
    home: [3269],
    mobile: [3269],
    languages: ['it-IT,it;q=0.9,en;q=0.8'],
    tz: 1,
    zone: 'Europe/Rome',
  },
  {
    cc: 'NL',
    weight: 4,
    home: [1136, 33915],
    mobile: [1136, 33915],
    languages: ['nl-NL,nl;q=0.9,en;q=0.8'],
    tz: 1,
    zone: 'Europe/Amsterdam',
  },
  {
    cc: 'BR',
    weight: 6,
    home: [28573, 26599],
    mobile: [26599, 28573],
    languages: ['pt-BR,pt;q=0.9,en;q=0.8'],
    tz: -3,
    zone: 'America/Sao_Paulo',
  },
  {
    cc: 'IN',
    weight: 7,
    home: [24560, 55836],
    mobile: [55836, 24560],
    languages: ['en-IN,en;q=0.9,hi;q=0.8', 'en-US,en;q=0.9'],
    tz: 5.5,
    zone: 'Asia/Kolkata',
  },
  {
    cc: 'JP',
    weight: 4,
    home: [4713, 2516],
    mobile: [2516],
    languages: ['ja-JP,ja;q=0.9,en;q=0.8'],
    tz: 9,
    zone: 'Asia/Tokyo',
  },
  {
    cc: 'CA',
    weight: 5,
    home: [812, 577],
    mobile: [812, 577],
    languages: ['en-CA,en;q=0.9', 'fr-CA,fr;q=0.9,en;q=0.8'],
    tz: -5,
    zone: 'America/Toronto',
  },
  {
    cc: 'AU',
    weight: 4,
    home: [1221],
    mobile: [1221],
    languages: ['en-AU,en;q=0.9'],
    tz: 10,
    zone: 'Australia/Sydney',
  },
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
const v6Text = (n: bigint): string =>
  Array.from({ length: 8 }, (_, i) => ((n >> BigInt(112 - 16 * i)) & 0xffffn).toString(16)).join(':');

/** IPv4 ranges of the ASNs the evaluation uses, read once from the bundled ASN data. */
export class Networks {
  private readonly ranges = new Map<number, Range[]>();
  /** IPv6 ranges of the same ASNs (at least a /48 each), for `--ipv6`. */
  private readonly ranges6 = new Map<number, Range6[]>();
  /** VPN egress addresses by the country they geolocate to. */
  private readonly vpnByCountry = new Map<string, string[]>();

  constructor(r: Rand) {
    initIntel();
    const wanted = new Set<number>([
      ...COUNTRIES.flatMap((c) => [...c.home, ...c.mobile]),
      ...HOSTING_ASNS,
      ...VPN_ASNS,
    ]);
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

export type BrowserKind =
  | 'chrome-win'
  | 'chrome-mac'
  | 'edge-win'
  | 'firefox-win'
  | 'firefox-mac'
  | 'safari-mac'
  | 'safari-iphone'
  | 'chrome-android'
  | 'samsung-android';

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
    h['sec-ch-ua-platform'] = b.kind.endsWith('android')
      ? '"Android"'
      : b.kind.endsWith('mac')
        ? '"macOS"'
        : '"Windows"';
  }
  return h;
}

/** Clients of automation tools, as credential-stuffing tools announce themselves. */
export const LIBRARY_AGENTS = [
  'python-requests/2.31.0',
  'curl/8.4.0',
  'Go-http-client/1.1',
  'okhttp/4.12.0',
  'axios/1.6.7',
  'Java/17.0.9',
];

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

/**
 * The company's own app, ShopApp, as the stores ship it: one package name (Android) and bundle id
 * (iOS), and its releases. The version code (Android) and bundle version (iOS) are the build.
 * Releases before the period are what users who installed earlier and never update still run;
 * the rest come out during the period (at these shares of it), and users take them as their
 * phones update apps.
 */
export const APP_ID = 'com.example.shop';
export const APP_NAME = 'ShopApp';
/** The client library the app embeds (docs/mobile.md). */
export const APP_SDK = 'rampart-react-native/0.1.0';
export interface AppRelease {
  version: string;
  build: string;
  /** Before the period: days (negative); during it: the share of the period at which it ships. */
  at: number;
  /**
   * The Android app names itself in its User-Agent (`ShopApp/3.2.1 (Android 14; Pixel 8)
   * okhttp/4.12.0`): the 3.2 line added an interceptor for it, and 3.3's new networking layer
   * (a React Native upgrade) dropped it again, so most versions send OkHttp's own.
   */
  namesItself: boolean;
  /**
   * It embeds Rampart's mobile client (`--client`): the releases before 3.1.2 predate it, so a
   * phone that has not updated since sends no session, no token and no app events, only headers.
   */
  client: boolean;
}
export const APP_RELEASES: readonly AppRelease[] = [
  { version: '3.0.4', build: '304', at: -120, namesItself: false, client: false },
  { version: '3.1.0', build: '310', at: -70, namesItself: false, client: false },
  { version: '3.1.2', build: '312', at: -35, namesItself: false, client: true },
  { version: '3.2.0', build: '320', at: 0.15, namesItself: true, client: true },
  { version: '3.2.1', build: '321', at: 0.3, namesItself: true, client: true },
  { version: '3.3.0', build: '330', at: 0.55, namesItself: false, client: true },
  { version: '3.3.1', build: '331', at: 0.78, namesItself: false, client: true },
];
/** The day (of the period) a release ships. */
export const releaseDay = (a: AppRelease, days: number): number =>
  a.at < 0 ? a.at : Math.round(a.at * days);
/** The newest release out on a day. */
export function releaseOn(day: number, days: number): AppRelease {
  let out = APP_RELEASES[0] as AppRelease;
  for (const a of APP_RELEASES) if (releaseDay(a, days) <= day) out = a;
  return out;
}

export type Platform = 'android' | 'ios';

/** A phone model as the OS reports it (`Build.MODEL` / `utsname.machine`), and its screen. */
export interface PhoneModel {
  platform: Platform;
  model: string;
  manufacturer: string;
  /** Android: the OS majors it runs (12-15); iOS: the oldest iOS major it shipped with. */
  osMin: number;
  osMax: number;
  screen: { width: number; height: number; scale: number };
}

const android = (
  model: string,
  manufacturer: string,
  osMin: number,
  osMax: number,
  width: number,
  height: number,
  scale: number,
): PhoneModel => ({
  platform: 'android',
  model,
  manufacturer,
  osMin,
  osMax,
  screen: { width, height, scale },
});
const iphone = (model: string, osMin: number, width: number, height: number, scale: number): PhoneModel => ({
  platform: 'ios',
  model,
  manufacturer: 'Apple',
  osMin,
  osMax: 18,
  screen: { width, height, scale },
});

/** Common Android phones of the last few years (Pixel, Samsung Galaxy, Xiaomi/Redmi, Motorola). */
export const ANDROID_PHONES: readonly [PhoneModel, number][] = [
  [android('Pixel 6', 'Google', 12, 15, 1080, 2400, 2.625), 3],
  [android('Pixel 7', 'Google', 13, 15, 1080, 2400, 2.625), 5],
  [android('Pixel 7a', 'Google', 13, 15, 1080, 2400, 2.625), 4],
  [android('Pixel 8', 'Google', 14, 15, 1080, 2400, 2.625), 5],
  [android('Pixel 9', 'Google', 14, 15, 1080, 2424, 2.625), 3],
  [android('SM-S911B', 'samsung', 13, 15, 1080, 2340, 2.8125), 6],
  [android('SM-S921B', 'samsung', 14, 15, 1080, 2340, 2.8125), 6],
  [android('SM-A546B', 'samsung', 13, 15, 1080, 2340, 2.625), 8],
  [android('SM-A155F', 'samsung', 14, 15, 1080, 2340, 2.625), 6],
  [android('SM-A536B', 'samsung', 12, 14, 1080, 2400, 2.625), 5],
  [android('SM-G991B', 'samsung', 12, 14, 1080, 2400, 2.8125), 4],
  [android('23021RAAEG', 'Xiaomi', 13, 14, 1080, 2400, 2.75), 5],
  [android('2201117TG', 'Xiaomi', 12, 13, 1080, 2400, 2.75), 4],
  [android('2306EPN60G', 'Xiaomi', 13, 15, 1220, 2712, 3), 3],
  [android('moto g84 5G', 'motorola', 13, 14, 1080, 2400, 2.625), 3],
  [android('moto g54 5G', 'motorola', 13, 14, 1080, 2400, 2.625), 3],
  [android('moto g power 5G - 2023', 'motorola', 13, 14, 1080, 2400, 2.625), 2],
  [android('motorola edge 40', 'motorola', 13, 15, 1080, 2400, 2.625), 2],
];

/** iPhones by hardware identifier (iPhone 11 to 16, SE 3), with the iOS major each shipped with. */
export const IPHONES: readonly [PhoneModel, number][] = [
  [iphone('iPhone12,1', 16, 828, 1792, 2), 5],
  [iphone('iPhone13,2', 16, 1170, 2532, 3), 7],
  [iphone('iPhone14,5', 16, 1170, 2532, 3), 9],
  [iphone('iPhone14,6', 16, 750, 1334, 2), 3],
  [iphone('iPhone14,7', 16, 1170, 2532, 3), 8],
  [iphone('iPhone15,2', 16, 1179, 2556, 3), 6],
  [iphone('iPhone15,3', 16, 1290, 2796, 3), 5],
  [iphone('iPhone15,4', 17, 1179, 2556, 3), 7],
  [iphone('iPhone16,1', 17, 1179, 2556, 3), 6],
  [iphone('iPhone16,2', 17, 1290, 2796, 3), 5],
  [iphone('iPhone17,3', 18, 1179, 2556, 3), 6],
];

/** The stock Android emulator's phone image (Android Studio's x86_64 system images). */
export const EMULATOR: PhoneModel = android('sdk_gphone64_x86_64', 'Google', 13, 15, 1080, 2400, 2.625);

/**
 * iOS releases in use, with the CFNetwork and Darwin versions they put in every app's default
 * User-Agent (`<bundle name>/<bundle version> CFNetwork/<v> Darwin/<v>`), as apps send them:
 * Darwin 22.x is iOS 16, 23.x iOS 17, 24.x iOS 18. Weighted by how many iPhones run each.
 */
export interface IosRelease {
  version: string;
  cfnetwork: string;
  darwin: string;
}
export const IOS_RELEASES: readonly [IosRelease, number][] = [
  [{ version: '16.7.10', cfnetwork: '1410.1', darwin: '22.6.0' }, 4],
  [{ version: '17.5.1', cfnetwork: '1496.0.7', darwin: '23.5.0' }, 4],
  [{ version: '17.6.1', cfnetwork: '1498.700.2', darwin: '23.6.0' }, 10],
  [{ version: '18.1.1', cfnetwork: '1568.200.51', darwin: '24.1.0' }, 5],
  [{ version: '18.2.1', cfnetwork: '1568.300.101', darwin: '24.2.0' }, 8],
  [{ version: '18.3.2', cfnetwork: '3826.400.120', darwin: '24.3.0' }, 12],
  [{ version: '18.4.1', cfnetwork: '3826.500.111.2.2', darwin: '24.4.0' }, 15],
  [{ version: '18.5', cfnetwork: '3826.500.131', darwin: '24.5.0' }, 25],
  [{ version: '18.6.2', cfnetwork: '3826.600.41', darwin: '24.6.0' }, 17],
];

/** What a phone runs on a day: the model, its OS version, and the app's release. */
export interface AppDevice {
  phone: PhoneModel;
  /** Android: the major (`Build.VERSION.RELEASE`); iOS: an index into IOS_RELEASES. */
  os: number;
  release: AppRelease;
}

export const osVersionOf = (d: AppDevice): string =>
  d.phone.platform === 'android' ? String(d.os) : (IOS_RELEASES[d.os] as [IosRelease, number])[0].version;

/**
 * The headers the app's requests to its own API carry, as its backend forwards them: no `Sec-*`,
 * no `Origin`, JSON. Android (React Native on OkHttp): OkHttp's own User-Agent (or the 3.2 line's
 * own one), `Accept-Encoding: gzip` added by OkHttp, no `Accept-Language`. iOS (NSURLSession):
 * the bundle's name and version with CFNetwork's and Darwin's, and the phone's languages.
 */
export function appHeaders(d: AppDevice, language: string): Record<string, string> {
  if (d.phone.platform === 'android') {
    return {
      'User-Agent': d.release.namesItself
        ? `${APP_NAME}/${d.release.version} (Android ${d.os}; ${d.phone.model}) okhttp/4.12.0`
        : 'okhttp/4.12.0',
      Accept: 'application/json',
      'Content-Type': 'application/json',
      'Accept-Encoding': 'gzip',
    };
  }
  const ios = (IOS_RELEASES[d.os] as [IosRelease, number])[0];
  return {
    'User-Agent': `${APP_NAME}/${d.release.build} CFNetwork/${ios.cfnetwork} Darwin/${ios.darwin}`,
    Accept: 'application/json',
    'Accept-Language': language,
    'Accept-Encoding': 'gzip, deflate, br',
    'Content-Type': 'application/json',
  };
}

/** The client library's description of the app (docs/mobile.md's `userAgent`). */
export const sdkUserAgent = (d: AppDevice): string =>
  `${APP_NAME}/${d.release.version} (${d.release.build}; ${d.phone.model}; ${d.phone.platform === 'android' ? 'Android' : 'iOS'} ${osVersionOf(d)}) ${APP_SDK}`;

/** Minutes of UTC minus local time in a zone at a moment, as JavaScript's `getTimezoneOffset()` gives it. */
export function timezoneOffset(zone: string, at: number): number {
  const name =
    new Intl.DateTimeFormat('en-US', { timeZone: zone, timeZoneName: 'longOffset' })
      .formatToParts(new Date(at))
      .find((p) => p.type === 'timeZoneName')?.value ?? '';
  const m = /GMT([+-])(\d\d):(\d\d)/.exec(name);
  if (!m) return 0;
  const minutes = Number(m[2]) * 60 + Number(m[3]);
  return m[1] === '+' ? -minutes : minutes;
}
