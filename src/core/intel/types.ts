/**
 * What the core knows of an address and a user agent: the shapes the intel port (ports.ts
 * `Intel`) answers, defined here so the core depends on no adapter (src/intel implements them).
 */

/** Geographic location of an IP address, as far as the offline DB-IP Lite data knows it. */
export interface GeoLocation {
  /** ISO 3166-1 alpha-2 code, upper case. */
  country_code: string | null;
  /** English country name derived from `country_code`. */
  country: string | null;
  /** First-level subdivision name (state, province, region). */
  region: string | null;
  /** Subdivision code; the bundled data has none, so this is currently always null. */
  region_code: string | null;
  city: string | null;
  lat: number | null;
  lon: number | null;
}

/** Autonomous system that announces an address. */
export interface AsnInfo {
  number: number;
  organization: string;
}

/** Everything the intel module knows about one IP address. */
export interface IpIntel {
  /** Normalised textual form (IPv4-mapped IPv6 turned into IPv4). */
  ip: string;
  version: 4 | 6;
  /** Null for private/loopback/unknown addresses. */
  location: GeoLocation | null;
  asn: AsnInfo | null;
  /** Address belongs to a hosting/cloud/VPN/proxy network (by curated ASN list or hosting-like AS name). */
  hosting: boolean;
  /** Egress of a commercial VPN (by the maintained lists in ranges.ts). */
  vpn: boolean;
  /** Apple iCloud Private Relay egress: anonymising, but mostly ordinary iPhone users. */
  relay: boolean;
  /** Known Tor exit (as of the list's last release). */
  tor: boolean;
  /** Private, loopback, link-local, reserved, multicast, ... (not publicly routable). Also true for invalid input. */
  bogon: boolean;
}

/** A parsed User-Agent header, carrying Castle's `user_agent` keys plus device type and automation flags. */
export interface ParsedUserAgent {
  raw: string;
  browser: string;
  version: string;
  os: string;
  mobile: boolean;
  platform: string;
  device: string;
  family: string;
  /** Castle `context.device.type`-style classification. */
  type: 'desktop' | 'mobile' | 'tablet' | 'other';
  /** Automation or scripted client (HTTP libraries, CLI tools, headless browsers, crawlers). */
  bot: boolean;
  /** Headless / remote-controlled browser (HeadlessChrome, PhantomJS, puppeteer, playwright, ...). */
  headless: boolean;
  /** Search engine, SEO or link-preview crawler (Googlebot, bingbot, AhrefsBot, ...). */
  crawler: boolean;
  /**
   * A native app's HTTP stack (OkHttp, Dalvik, CFNetwork, Alamofire, Ktor, Dart, or an app's own
   * `Name/1.2 (…; iOS 17.5)`): what an Android or iOS app sends, neither a browser nor, by itself,
   * a bot. Absent or null for everything else.
   */
  app?: AppClient | null;
}

/** What a native app's user agent says about the app and the HTTP stack it uses. */
export interface AppClient {
  /** The HTTP stack (`okhttp`, `Dalvik`, `CFNetwork`, `Alamofire`, `Ktor`, `Dart`), or `native` for an app's own user agent. */
  library: string;
  /** The app's own product token (`ShopApp`), where the user agent names it. */
  name: string | null;
  /** The app's version (or build, as CFNetwork user agents carry it), where named. */
  version: string | null;
}

/** The `user_agent` object of Castle's API: the keys of a parsed user agent that leave Rampart. */
export type CastleUserAgent = Pick<
  ParsedUserAgent,
  'raw' | 'browser' | 'version' | 'os' | 'mobile' | 'platform' | 'device' | 'family'
>;

/** Only Castle's `user_agent` keys, for what leaves Rampart (API answers, webhooks); internal flags stay. */
export function castleUserAgent(ua: ParsedUserAgent): CastleUserAgent {
  return {
    raw: ua.raw,
    browser: ua.browser,
    version: ua.version,
    os: ua.os,
    mobile: ua.mobile,
    platform: ua.platform,
    device: ua.device,
    family: ua.family,
  };
}
