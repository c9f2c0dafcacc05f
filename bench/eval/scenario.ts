/**
 * The evaluation's labelled traffic: legitimate users with weeks of history (a home ISP, a
 * phone on a mobile network, several devices, browser updates, travel, VPNs, new phones, shared
 * family computers, mistyped passwords, new sign-ups) and the attacks Rampart must stop
 * (credential stuffing from hosting ranges, residential proxies and country-matched VPNs;
 * library bots; stealth headless browsers; targeted and very targeted takeover with the right
 * password; device farms; disposable-address sign-up waves). Beside the web users, users of the
 * company's own app (Android and iOS) with the same life, and the attacks on the app's API
 * (stuffing with the app's headers, takeover from the attacker's own phone, emulator farms,
 * sign-ups from phones wiped every time). Everything comes from one seed.
 */
import { createHash } from 'node:crypto';
import {
  ANDROID_PHONES,
  APP_ID,
  APP_RELEASES,
  APP_SDK,
  appHeaders,
  browserHeaders,
  COUNTRIES,
  DESKTOP_BROWSERS,
  EMULATOR,
  HOSTING_ASNS,
  IOS_RELEASES,
  IPHONES,
  LIBRARY_AGENTS,
  MAIL_DOMAINS,
  MOBILE_BROWSERS,
  Networks,
  osVersionOf,
  pick,
  releaseDay,
  releaseOn,
  sdkUserAgent,
  timezoneOffset,
  userAgent,
  versionAt,
  weighted,
  type AppDevice,
  type AppRelease,
  type Browser,
  type BrowserKind,
  type Country,
  type PhoneModel,
  type Platform,
  type Rand,
} from './world';
import { rng } from '../lib/traffic';
import { lookupIp } from '../../src/intel';

export const SCENARIOS = [
  'legit',
  'stuffing_hosting',
  'stuffing_residential',
  'stuffing_vpn',
  'library_bots',
  'stealth_bots',
  'targeted',
  'very_targeted',
  'device_farm',
  'disposable_signups',
  'token_replay',
  'scripted_tokens',
  'app_stuffing',
  'app_takeover',
  'emulator_farm',
  'wiped_signups',
] as const;
export type Scenario = (typeof SCENARIOS)[number];
/** The attacks on the app's API (the rest are on the web login). */
export const APP_SCENARIOS: readonly Scenario[] = [
  'app_stuffing',
  'app_takeover',
  'emulator_farm',
  'wiped_signups',
];
/** Where a step comes from: a browser, or the company's app on Android or iOS. */
export type Channel = 'web' | Platform;

/** What the app registers its session with: docs/mobile.md's `mobile` object. */
export interface MobileInfo {
  platform: Platform;
  osVersion: string;
  model: string;
  manufacturer: string;
  app: { id: string; version: string; build: string };
  sdk: string;
  locale: string;
  timezone: string;
  timezoneOffset: number;
  screen: { width: number; height: number; scale: number };
  installId: string;
  /** SHA-256 of `<app id>:<vendor id>` (ANDROID_ID, identifierForVendor), hex. */
  vendorId: string;
  deviceId: null;
  userAgent: string;
  integrity: string[];
}

/** The app around one login or sign-up, for Rampart's mobile client (`--client`). */
export interface AppContext {
  mobile: MobileInfo;
  /**
   * The app's own events (app_installed, app_opened, screens, identify, app_closed): the real app
   * posts them; a script that only mints request tokens posts none.
   */
  events: boolean;
  /** The first launch of this install (app_installed). */
  installed: boolean;
  /** The release this install ran at its last open, when it has been updated since (app_updated). */
  updatedFrom: AppRelease | null;
  /** Screens the user goes through after logging in. */
  screens: string[];
  /**
   * The release embeds Rampart's mobile client (false: an old version, from before the app
   * integrated it: headers only, no session, no token, no app events).
   */
  client: boolean;
  /** Screens before the login or sign-up form (a fresh install's onboarding), queued with the form's own. */
  before: string[];
}

export interface Context {
  ip: string;
  headers: Record<string, string>;
  /**
   * The device's identity in the page: with opaque tokens, the token itself; with Rampart's
   * browser client, the browser profile the driver collects a fresh token for (null: no script ran).
   * From the app: the install's opaque token (with `--client` the app mints its own from `app`).
   */
  token: string | null;
  /**
   * Browser client: the machine the page runs on, when it is not the one `token` stands for (the
   * profile): a private window or cleared storage on the user's own computer, an anti-detect
   * browser copying a victim's fingerprint, a farm wiping storage between sign-ups.
   */
  machine?: string;
  /** Browser client: the token was minted by a script posting made-up components, not by the page. */
  scripted?: boolean;
  /** Browser client: automation evidence the page shows (a driven or tampered browser). */
  automation?: string[];
  /** Browser client: the token was captured from this address's session, used there first, and is replayed here. */
  replayedFrom?: string;
  /** The company's app: what its mobile client registers and posts (steps from a browser have none). */
  app?: AppContext;
}

/** One login or sign-up, as the application would see it. */
export interface Step {
  scenario: Scenario;
  kind: 'login' | 'register';
  at: number;
  email: string;
  /** The account (null: no such account). */
  userId: string | null;
  context: Context;
  /** The application runs the pre-auth check first. */
  preauth: boolean;
  /** The password the attacker (or user) typed is right. */
  passwordCorrect: boolean;
  /** Legitimate: successful logins the user had before this one. */
  history: number;
  /** A legitimate user mistyped first (a failed login, then this one). */
  typo: boolean;
  /** A browser, or the app on Android or iOS (attacks included: what the request claims to be). */
  channel: Channel;
  /** A legitimate sign-up during an attack's sign-up wave (scored apart). */
  duringWave?: boolean;
  /** A takeover from a network operator none of the victim's earlier legitimate steps came from (scored apart too: what headers alone are judged on). */
  newOperator?: boolean;
}

export interface GenerateOptions {
  users: number;
  days: number;
  seed: number;
  /**
   * What the application's pages send: nothing (`none`), an opaque token per device (`opaque`,
   * as a browser SDK's device id), or Rampart's browser client (`client`: a fresh signed token
   * per login, collected from the device's components, attacks included).
   */
  tokens: 'none' | 'opaque' | 'client';
  /** Scale of every attack (1: the default sizes). */
  attackScale: number;
  /**
   * Hours each campaign (stuffing, bots, the device farm, the sign-up wave) is spread over, instead
   * of its own 1-8: "low and slow", the same attempts at a rate no hour's counters stand out at (at
   * most the attack period, the last third of the days).
   */
  attackHours?: number;
  /**
   * Addresses as many users really have them: with `ipv6`, dual-stack homes and mobile networks
   * (where the operator announces IPv6) reach the application over IPv6 most of the time, from a
   * new privacy address of the home's /64, or a new /64 of the carrier per session; with
   * `dynamicHome`, half of the homes get a new IPv4 address from their operator every 1-14 days.
   * Decided by a second random sequence, so the rest of the traffic stays the same step for step.
   */
  ipv6?: boolean;
  dynamicHome?: boolean;
  /**
   * Stuffing tools rotate user agents: every residential, VPN and sign-up-wave attempt takes a
   * browser of the legitimate mix (mobile ones too) at a version up to five months old, instead
   * of one of five current desktop browsers.
   */
  rotateAgents?: boolean;
  /**
   * Users of the company's app and the attacks on its API (default on). Everything of theirs is
   * drawn from sequences of their own, so the web steps are the same with and without them, and
   * without them the traffic is the old one step for step.
   */
  apps?: boolean;
}

interface Device {
  browser: BrowserKind;
  mobile: boolean;
  lag: number;
  token: string;
  model: string;
}

/** A user's life: where they live and go, when they log in (web and app users alike). */
interface Life {
  id: string;
  email: string;
  country: Country;
  language: string;
  homeIp: string;
  homeAsn: number;
  /** `--ipv6`: the home's /64 (null: IPv4 only). */
  home64?: bigint | null;
  /** `--dynamic-home`: days between new home IPv4 addresses (null: static). */
  leaseDays?: number | null;
  mobileAsn: number;
  workAsn: number | null;
  /** Local hour the user usually logs in around. */
  habitHour: number;
  vpn: boolean;
  /** Logs in every this many days, on average. */
  every: number;
  /** First day of activity (new sign-ups start later). */
  firstDay: number;
  registers: boolean;
  trip: { from: number; to: number; country: Country } | null;
  newPhoneDay: number | null;
  /** Another user's computer this user also logs in from (a family computer). */
  shared: Device | null;
}

interface Person extends Life {
  devices: Device[];
}

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

function makeDevice(r: Rand, mobile: boolean, id: string): Device {
  return {
    browser: weighted(r, mobile ? MOBILE_BROWSERS : DESKTOP_BROWSERS),
    mobile,
    lag: Math.floor(r() * 30),
    token: `tok-${id}-${Math.floor(r() * 1e9).toString(36)}`,
    model: pick(r, ['Pixel 7', 'Pixel 8', 'SM-G991B', 'SM-A536B', 'moto g power']),
  };
}

const browserOf = (d: Device, day: number): Browser => ({
  kind: d.browser,
  version: versionAt(d.browser, day, d.lag),
  mobile: d.mobile,
});

function emailFor(r: Rand, name: string): string {
  return `${name}@${weighted(r, MAIL_DOMAINS)}`;
}

/** A phone of an app user or an attacker: its model, its OS (and an update), its vendor id. */
interface Phone {
  model: PhoneModel;
  /** See AppDevice.os: the OS on the first day, and the one installed overnight on `osUpdate.day`. */
  os: number;
  osUpdate: { day: number; os: number } | null;
  /** The OS's vendor id: Android's ANDROID_ID (per device and app signing key), iOS's identifierForVendor. */
  vendorRaw: string;
  /** What the client library's own checks find on it (a few real users root or jailbreak their phone). */
  integrity: string[];
}

const ID_CHARS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
/** An install id as the client library makes one at first launch: 16 random bytes, base64url. */
const newInstallId = (r: Rand): string =>
  Array.from({ length: 22 }, () => ID_CHARS[Math.floor(r() * 64)]).join('');
/** ANDROID_ID is 16 hex digits; identifierForVendor a random UUID. */
function newVendorRaw(r: Rand, platform: Platform): string {
  const hex = (n: number) => Array.from({ length: n }, () => Math.floor(r() * 16).toString(16)).join('');
  return platform === 'android'
    ? hex(16)
    : `${hex(8)}-${hex(4)}-4${hex(3)}-${'89ab'[Math.floor(r() * 4)] ?? '8'}${hex(3)}-${hex(12)}`.toUpperCase();
}
/** What the client library sends for the vendor id: SHA-256 of `<app id>:<vendor id>`, computed on the device. */
const vendorHash = (raw: string): string => createHash('sha256').update(`${APP_ID}:${raw}`).digest('hex');

function makePhone(r: Rand, platform: Platform, days: number, model?: PhoneModel): Phone {
  if (platform === 'android') {
    const m = model ?? weighted(r, ANDROID_PHONES);
    // A model runs the majors since it shipped; the newer ones more often (one major a year).
    const majors = Array.from(
      { length: m.osMax - m.osMin + 1 },
      (_, k) => [m.osMin + k, k + 1] as [number, number],
    );
    const os = weighted(r, majors);
    const osUpdate = os < m.osMax && r() < 0.1 ? { day: Math.floor(r() * days), os: os + 1 } : null;
    return {
      model: m,
      os,
      osUpdate,
      vendorRaw: newVendorRaw(r, 'android'),
      integrity: r() < 0.02 ? ['rooted'] : [],
    };
  }
  const m = model ?? weighted(r, IPHONES);
  const os = weighted(
    r,
    IOS_RELEASES.map(([rel, w], k) => [k, w, Number(rel.version.split('.')[0])] as const)
      .filter(([, , major]) => major >= m.osMin)
      .map(([k, w]) => [k, w] as [number, number]),
  );
  // The next release (a point release, or the next major) installed one night during the period.
  const osUpdate =
    os + 1 < IOS_RELEASES.length && r() < 0.4 ? { day: Math.floor(r() * days), os: os + 1 } : null;
  return {
    model: m,
    os,
    osUpdate,
    vendorRaw: newVendorRaw(r, 'ios'),
    integrity: r() < 0.007 ? ['jailbroken'] : [],
  };
}

const osOn = (p: Phone, day: number): number => (p.osUpdate && day >= p.osUpdate.day ? p.osUpdate.os : p.os);

/** The `mobile` object the app registers its session with, for a phone at a moment. */
function mobileInfo(
  d: AppDevice,
  installId: string,
  vendorRaw: string,
  locale: string,
  zone: string,
  at: number,
  integrity: string[],
): MobileInfo {
  return {
    platform: d.phone.platform,
    osVersion: osVersionOf(d),
    model: d.phone.model,
    manufacturer: d.phone.manufacturer,
    app: { id: APP_ID, version: d.release.version, build: d.release.build },
    sdk: APP_SDK,
    locale,
    timezone: zone,
    timezoneOffset: timezoneOffset(zone, at),
    screen: { ...d.phone.screen },
    installId,
    vendorId: vendorHash(vendorRaw),
    deviceId: null,
    userAgent: sdkUserAgent(d),
    integrity: [...integrity],
  };
}

/** The first language tag of an Accept-Language list (the phone's locale). */
const localeOf = (language: string): string => language.split(',')[0] ?? 'en-US';

/** Screens a shopper goes through after logging in. */
const screensAfterLogin = (r: Rand): string[] => [
  'Home',
  ...Array.from({ length: 1 + Math.floor(r() * 3) }, () =>
    pick(r, ['Search', 'Product', 'Product', 'Cart', 'Orders', 'Account', 'Wishlist']),
  ),
];

/** A user of the company's app: the same life as a web user's, on one phone at a time. */
interface AppUser extends Life {
  phone: Phone;
  /** Days after a release the phone installs it (Infinity: not during the period). */
  updateLag: number;
  /** The phone after `newPhoneDay`, and whether the old install id comes with it (an iPhone restored from a backup brings its Keychain). */
  nextPhone: Phone;
  keepsInstall: boolean;
  /** The day the user deletes and reinstalls the app (null: never). */
  reinstallDay: number | null;
}

/** Generate every step, in time order. `end` is the last moment (ms). */
export function generate(o: GenerateOptions, nets: Networks, r: Rand, end: number): Step[] {
  const start = end - o.days * DAY;
  const steps: Step[] = [];
  const people: Person[] = [];
  for (let i = 0; i < o.users; i++) {
    const country = weighted(
      r,
      COUNTRIES.map((c) => [c, c.weight] as [Country, number]),
    );
    const homeAsn = pick(r, country.home);
    const registers = r() < 0.12;
    const devices = [makeDevice(r, false, `u${i}d`), makeDevice(r, true, `u${i}m`)];
    if (r() < 0.25) devices.push(makeDevice(r, r() < 0.5, `u${i}x`));
    people.push({
      id: `user-${i}`,
      email: emailFor(r, `person${i}`),
      country,
      language: pick(r, country.languages),
      homeIp: nets.address(r, homeAsn),
      homeAsn,
      mobileAsn: pick(r, country.mobile),
      workAsn: r() < 0.3 ? pick(r, country.home) : null,
      devices,
      habitHour: 7 + Math.floor(r() * 15),
      vpn: r() < 0.08,
      every: 0.7 + r() * 3,
      firstDay: registers ? Math.floor(r() * (o.days - 5)) : 0,
      registers,
      trip:
        r() < 0.2
          ? (() => {
              const from = 10 + Math.floor(r() * (o.days - 20));
              return {
                from,
                to: from + 3 + Math.floor(r() * 6),
                country: pick(
                  r,
                  COUNTRIES.filter((c) => c !== country),
                ),
              };
            })()
          : null,
      newPhoneDay: r() < 0.12 ? 15 + Math.floor(r() * (o.days - 20)) : null,
      shared: null,
    });
  }
  // Family computers: a few users also use another user's computer.
  for (let i = 0; i + 1 < people.length; i += 25) {
    const a = people[i] as Person;
    const b = people[i + 1] as Person;
    b.shared = a.devices[0] as Device;
    b.country = a.country;
    b.homeIp = a.homeIp;
    b.homeAsn = a.homeAsn;
  }

  // The second sequence (see GenerateOptions.ipv6): the home networks' addresses.
  const r6 = rng(o.seed * 7919 + 17);
  if (o.ipv6 || o.dynamicHome) {
    for (const p of people) {
      if (o.ipv6) p.home64 = nets.hasV6(p.homeAsn) && r6() < 0.6 ? nets.prefix64(r6, p.homeAsn) : null;
      if (o.dynamicHome) p.leaseDays = r6() < 0.5 ? 1 + Math.floor(r6() * 14) : null;
    }
    for (let i = 0; i + 1 < people.length; i += 25)
      (people[i + 1] as Person).home64 = (people[i] as Person).home64 ?? null;
  }
  /** A home's IPv4 address on a day: the same for the length of its lease (new ones drawn from `rand6`). */
  const leases = new Map<string, { until: number; ip: string }>();
  const homeAddress = (p: Life, day: number, rand6: Rand): string => {
    if (!p.leaseDays) return p.homeIp;
    const key = p.shared ? `${p.homeAsn}:${p.homeIp}` : p.id;
    const lease = leases.get(key);
    if (lease && day < lease.until) return lease.ip;
    const ip = lease ? nets.address(rand6, p.homeAsn) : p.homeIp;
    leases.set(key, { until: day + p.leaseDays, ip });
    return ip;
  };

  /**
   * Where a user is on a day: abroad (a hotel's or friend's network, or the own carrier roaming),
   * on their VPN, on mobile data (on a phone, `mobileShare` of the time), at work, in a café or
   * at home. `rand` draws the place, `rand6` the address within an IPv6 network or a new lease.
   */
  const whereIs = (
    p: Life,
    day: number,
    at: number,
    onPhone: boolean,
    mobileShare: number,
    rand: Rand,
    rand6: Rand,
  ): { ip: string; abroad: Country | null } => {
    const traveling = p.trip && day >= p.trip.from && day <= p.trip.to;
    let ip: string;
    let mobile = false;
    if (traveling && p.trip) {
      if (rand() < 0.6) ip = nets.address(rand, pick(rand, p.trip.country.home));
      else {
        ip = nets.address(rand, p.mobileAsn);
        mobile = true;
      }
    } else if (p.vpn && rand() < 0.35) ip = nets.vpnIn(rand, p.country.cc);
    else if (onPhone && rand() < mobileShare) {
      ip = nets.address(rand, p.mobileAsn);
      mobile = true;
    } else if (p.workAsn && rand() < 0.25 && new Date(at).getUTCDay() % 6 !== 0)
      ip = nets.address(rand, p.workAsn);
    else if (rand() < 0.03)
      ip = nets.address(rand, pick(rand, p.country.home)); // a café, a friend's
    else {
      ip = homeAddress(p, day, rand6);
      if (p.home64 && rand6() < 0.7) ip = nets.inPrefix(rand6, p.home64);
    }
    if (mobile && o.ipv6 === true && nets.hasV6(p.mobileAsn) && rand6() < 0.6)
      ip = nets.inPrefix(rand6, nets.prefix64(rand6, p.mobileAsn) as bigint);
    return { ip, abroad: traveling && p.trip ? p.trip.country : null };
  };

  const contextOf = (p: Person, day: number, at: number): Context => {
    // Which device: the desktop most days, the phone often, another one sometimes.
    let device = weighted(
      r,
      p.devices.map((d, k) => [d, k === 0 ? 5 : k === 1 ? 4 : 1] as [Device, number]),
    );
    if (p.shared && r() < 0.3) device = p.shared;
    if (p.newPhoneDay !== null && day >= p.newPhoneDay && device === p.devices[1]) {
      device = {
        ...device,
        browser: device.browser === 'safari-iphone' ? 'chrome-android' : 'safari-iphone',
        token: `${device.token}-new`,
        lag: 0,
      };
    }
    const { ip } = whereIs(p, day, at, device.mobile, 0.55, r, r6);
    const headers = browserHeaders(browserOf(device, day), p.language, device.model);
    if (o.tokens === 'none') return { ip, headers, token: null };
    // The browser's storage (where the page keeps its id): a private window starts empty, and a
    // user who cleared the site's data once has a new id on that computer from then on.
    const clearedOn = clearedStorage.get(p.id);
    if (!device.mobile && rs() < PRIVATE_WINDOW_SHARE)
      return {
        ip,
        headers,
        token: `${device.token}-private-${Math.floor(rs() * 1e9).toString(36)}`,
        machine: device.token,
      };
    if (!device.mobile && device === p.devices[0] && clearedOn !== undefined && day >= clearedOn)
      return { ip, headers, token: `${device.token}-cleared`, machine: device.token };
    return { ip, headers, token: device.token };
  };
  // Drawn from a sequence of their own, so that every other step stays the same.
  const rs = rng(o.seed * 6700417 + 41);
  const PRIVATE_WINDOW_SHARE = 0.04;
  const clearedStorage = new Map(
    people.filter(() => rs() < 0.25).map((p) => [p.id, Math.floor(rs() * o.days)] as const),
  );

  const history = new Map<string, number>();
  for (const p of people) {
    let day = p.firstDay + r() * p.every;
    let registeredAt = -Infinity;
    if (p.registers) {
      const at = start + p.firstDay * DAY + (p.habitHour - p.country.tz) * HOUR + r() * HOUR;
      registeredAt = at;
      steps.push({
        scenario: 'legit',
        kind: 'register',
        at,
        email: p.email,
        userId: p.id,
        context: contextOf(p, p.firstDay, at),
        preauth: false,
        passwordCorrect: true,
        history: 0,
        typo: false,
        channel: 'web',
      });
      day = p.firstDay + 0.2 + r() * p.every;
    }
    while (day < o.days) {
      const hour = p.habitHour + (r() - 0.5) * 6 - p.country.tz;
      // Nobody logs in before signing up: a login drawn earlier on the day of the sign-up comes two hours after it.
      const at = Math.max(start + Math.floor(day) * DAY + hour * HOUR + r() * HOUR, registeredAt + 2 * HOUR);
      if (at >= end) break;
      steps.push({
        scenario: 'legit',
        kind: 'login',
        at,
        email: p.email,
        userId: p.id,
        context: contextOf(p, Math.floor(day), at),
        preauth: true,
        passwordCorrect: true,
        history: 0,
        typo: r() < 0.05,
        channel: 'web',
      });
      day += p.every * (0.3 + r() * 1.4);
    }
  }

  // Attacks happen in the last third of the period, against users with history.
  const attackStart = end - Math.floor(o.days / 3) * DAY;
  const inWindow = (from: number, hours: number) => from + r() * hours * HOUR;
  const victims = people.filter((p) => !p.registers);
  const stuffingEmails = (n: number) =>
    Array.from({ length: n }, (_, k) => {
      const existing = r() < 0.3 ? pick(r, victims) : null;
      return {
        email: existing
          ? existing.email
          : `${pick(r, ['john', 'maria', 'alex', 'sam', 'kim', 'lee', 'chris'])}.${Math.floor(r() * 1e6)}@${weighted(r, MAIL_DOMAINS)}`,
        userId: existing?.id ?? null,
        correct: r() < 0.02 && existing !== null,
        k,
      };
    });
  const scale = (n: number) => Math.max(1, Math.round(n * o.attackScale));
  const spread = (ownHours: number) => Math.min(o.attackHours ?? ownHours, (end - attackStart) / HOUR);
  const campaign = (
    scenario: Scenario,
    n: number,
    ownHours: number,
    context: (k: number, victim: { email: string; userId: string | null }) => Context,
  ) => {
    const hours = spread(ownHours);
    const from = attackStart + r() * (end - attackStart - hours * HOUR);
    for (const t of stuffingEmails(scale(n))) {
      steps.push({
        scenario,
        kind: 'login',
        at: inWindow(from, hours),
        email: t.email,
        userId: t.userId,
        context: context(t.k, t),
        preauth: true,
        passwordCorrect: t.correct,
        history: 0,
        typo: false,
        channel: 'web',
      });
    }
  };

  // Credential stuffing from rented servers: a handful of addresses, browser-like or not.
  const hostingIps = Array.from({ length: 40 }, () => nets.address(r, pick(r, HOSTING_ASNS)));
  const toolBrowser: Browser = { kind: 'chrome-win', version: 120, mobile: false };
  campaign('stuffing_hosting', 1200, 2, () => ({
    ip: pick(r, hostingIps),
    headers:
      r() < 0.5
        ? browserHeaders(toolBrowser, 'en-US,en;q=0.9')
        : { 'User-Agent': userAgent(toolBrowser), Accept: '*/*' },
    token: null,
  }));
  // Through residential proxies: every attempt from another home address, real browser headers.
  // The tool's browsers: five current desktop ones, or (`rotateAgents`) a new one every attempt.
  const toolBrowsers: Browser[] = (
    ['chrome-win', 'chrome-mac', 'edge-win', 'safari-mac', 'firefox-win'] as BrowserKind[]
  ).map((kind) => ({ kind, version: versionAt(kind, o.days, 0), mobile: false }));
  // The rotation draws from a sequence of its own, so that every other step stays the same.
  const rr = rng(o.seed * 104729 + 3);
  const proxyBrowser = (): Browser => {
    const fixed = pick(r, toolBrowsers);
    if (!o.rotateAgents) return fixed;
    const mobile = rr() < 0.4;
    const kind = weighted(rr, mobile ? MOBILE_BROWSERS : DESKTOP_BROWSERS);
    return { kind, version: versionAt(kind, o.days, Math.floor(rr() * 150)), mobile };
  };
  // With Rampart's browser client, a tool that sends no token meets `missing_fingerprint`; the
  // adaptive ones run the page in an anti-detect browser that mints a fresh profile (and machine)
  // for every attempt, or post made-up components to the collector from a script.
  const fresh = (kind: 'antidetect' | 'script'): Partial<Context> => ({
    token: `tok-${kind}-${Math.floor(rs() * 1e12).toString(36)}`,
    ...(kind === 'script' ? { scripted: true } : {}),
  });
  campaign('stuffing_residential', 1500, 3, () => {
    const c = weighted(
      r,
      COUNTRIES.map((x) => [x, x.weight] as [Country, number]),
    );
    return {
      ip: nets.address(r, pick(r, c.home)),
      headers: browserHeaders(proxyBrowser(), pick(r, c.languages)),
      token: null,
      ...(o.tokens === 'client' && rs() < 0.5 ? fresh('antidetect') : {}),
    };
  });
  // Through VPN exits in the victim's country.
  campaign('stuffing_vpn', 800, 2, (_k, victim) => {
    const p = victims.find((v) => v.email === victim.email);
    const c =
      p?.country ??
      weighted(
        r,
        COUNTRIES.map((x) => [x, x.weight] as [Country, number]),
      );
    return {
      ip: nets.vpnIn(r, c.cc),
      headers: browserHeaders(proxyBrowser(), pick(r, c.languages)),
      token: null,
      ...(o.tokens === 'client' ? fresh('antidetect') : {}),
    };
  });
  // Scripts that do not pretend: HTTP libraries.
  campaign('library_bots', 400, 1, () => ({
    ip: r() < 0.5 ? pick(r, hostingIps) : nets.address(r, pick(r, pick(r, COUNTRIES).home)),
    headers: { 'User-Agent': pick(r, LIBRARY_AGENTS), Accept: '*/*' },
    token: null,
  }));
  // Headless browsers with a desktop Chrome user agent: what a stealth plugin leaves behind.
  campaign('stealth_bots', 600, 2, () => {
    const h = browserHeaders(
      { kind: 'chrome-win', version: versionAt('chrome-win', o.days, 0), mobile: false },
      'en-US,en;q=0.9',
    );
    const variant = r();
    if (variant < 0.4) {
      delete h['sec-ch-ua'];
      delete h['sec-ch-ua-mobile'];
      delete h['sec-ch-ua-platform'];
    } else if (variant < 0.7) h['sec-ch-ua-platform'] = '"Linux"';
    else {
      delete h['Sec-Fetch-Site'];
      delete h['Sec-Fetch-Mode'];
      delete h['Sec-Fetch-Dest'];
    }
    // With Rampart's browser client the headless browser runs the page's script, which sees it.
    const client =
      o.tokens === 'client'
        ? {
            token: `tok-stealth-${Math.floor(r() * 1e9).toString(36)}`,
            automation: [pick(r, ['headless_window', 'tampered_natives', 'webdriver', 'automation_globals'])],
          }
        : { token: null };
    return {
      ip: r() < 0.5 ? pick(r, hostingIps) : nets.address(r, pick(r, pick(r, COUNTRIES).home)),
      headers: h,
      ...client,
    };
  });

  // Targeted takeover, with the right password: the attacker knows the victim's country and
  // browser (very targeted: the exact user agent and language too), and comes from a home
  // address in that country.
  const experienced = victims.filter((p) => p.devices.length > 0);
  for (const scenario of ['targeted', 'very_targeted'] as const) {
    for (let k = 0; k < scale(150); k++) {
      const p = pick(r, experienced);
      const at = attackStart + r() * (end - attackStart);
      const day = Math.floor((at - start) / DAY);
      const d = p.devices[0] as Device;
      const b = browserOf(d, day);
      const headers =
        scenario === 'very_targeted'
          ? browserHeaders(b, p.language, d.model)
          : browserHeaders(
              { kind: d.browser, version: versionAt(d.browser, day, 0), mobile: false },
              pick(r, p.country.languages).split(',')[0] ?? 'en',
              d.model,
            );
      const asn =
        scenario === 'very_targeted' && r() < 0.3
          ? p.homeAsn
          : pick(r, [...p.country.home, ...p.country.mobile]);
      // With the browser client, half the very targeted attackers run an anti-detect browser
      // that copies the victim's fingerprint (its machine), but cannot read the victim's storage.
      const copied =
        o.tokens === 'client' && scenario === 'very_targeted' && rs() < 0.5 ? { machine: d.token } : {};
      steps.push({
        scenario,
        kind: 'login',
        at,
        email: p.email,
        userId: p.id,
        context: {
          ip: nets.address(r, asn),
          headers,
          token: o.tokens !== 'none' ? `tok-attacker-${k}` : null,
          ...copied,
        },
        preauth: true,
        passwordCorrect: true,
        history: 0,
        typo: false,
        channel: 'web',
        // Whether the victim ever used this operator is settled once every step is drawn (below).
        newOperator: false,
      });
    }
  }

  // Browser client only: a phishing proxy captures a victim's request token with the password
  // and replays both within the minute, from the attacker's own address and with the victim's
  // headers (the victim's session used the token first).
  if (o.tokens === 'client') {
    for (let k = 0; k < scale(150); k++) {
      const p = pick(r, experienced);
      const at = attackStart + r() * (end - attackStart);
      const d = p.devices[0] as Device;
      const headers = browserHeaders(browserOf(d, Math.floor((at - start) / DAY)), p.language, d.model);
      steps.push({
        scenario: 'token_replay',
        kind: 'login',
        at,
        email: p.email,
        userId: p.id,
        context: {
          ip: nets.address(r, pick(r, [...p.country.home, ...p.country.mobile])),
          headers,
          token: d.token,
          replayedFrom: p.homeIp,
        },
        preauth: true,
        passwordCorrect: true,
        history: 0,
        typo: false,
        channel: 'web',
      });
    }
  }

  // A device farm: a few phones opening and using many accounts, each from changing addresses.
  const farm = Array.from({ length: 5 }, (_, k) => makeDevice(r, true, `farm${k}`));
  const farmHours = spread(8);
  const farmFrom = attackStart + r() * (end - attackStart - farmHours * HOUR);
  for (let k = 0; k < scale(250); k++) {
    const d = pick(r, farm);
    const c = pick(r, COUNTRIES);
    const id = `farm-account-${k}`;
    // With the browser client the farm wipes the browser's storage between sign-ups: the same machine, a new profile each time.
    const wiped =
      o.tokens === 'client'
        ? { token: `${d.token}-wiped-${k}`, machine: d.token }
        : { token: o.tokens !== 'none' ? d.token : null };
    const context = {
      ip: nets.address(r, pick(r, c.mobile)),
      headers: browserHeaders(browserOf(d, o.days), 'en-US,en;q=0.9', d.model),
      ...wiped,
    };
    steps.push({
      scenario: 'device_farm',
      kind: 'register',
      at: inWindow(farmFrom, farmHours),
      email: `${id}@${weighted(r, MAIL_DOMAINS)}`,
      userId: id,
      context,
      preauth: false,
      passwordCorrect: true,
      history: 0,
      typo: false,
      channel: 'web',
    });
  }

  // Sign-up waves on throw-away and freshly invented domains.
  const invented = Array.from(
    { length: 6 },
    () => `${Math.floor(r() * 1e6).toString(36)}mail.${pick(r, ['com', 'net', 'xyz', 'top'])}`,
  );
  const throwaway = [
    'mailinator.com',
    'guerrillamail.com',
    'yopmail.com',
    '10minutemail.com',
    'trashmail.com',
    'sharklasers.com',
  ];
  const waveHours = spread(3);
  const waveFrom = attackStart + r() * (end - attackStart - waveHours * HOUR);
  const waveIps = Array.from({ length: 8 }, () =>
    r() < 0.5 ? pick(r, hostingIps) : nets.address(r, pick(r, pick(r, COUNTRIES).home)),
  );
  for (let k = 0; k < scale(300); k++) {
    const c = pick(r, COUNTRIES);
    const id = `wave-account-${k}`;
    const b = proxyBrowser();
    steps.push({
      scenario: 'disposable_signups',
      kind: 'register',
      at: inWindow(waveFrom, waveHours),
      email: `${id}@${r() < 0.5 ? pick(r, throwaway) : pick(r, invented)}`,
      userId: id,
      context: { ip: pick(r, waveIps), headers: browserHeaders(b, pick(r, c.languages)), token: null },
      preauth: false,
      passwordCorrect: true,
      history: 0,
      typo: false,
      channel: 'web',
    });
  }

  // (Last among the web attacks: its draws leave every step above the same.)
  // Scripts that mint tokens: made-up components posted to the collector (the page never ran),
  // then the login posted with a browser's headers through residential proxies.
  if (o.tokens === 'client') {
    campaign('scripted_tokens', 600, 2, () => {
      const c = weighted(
        r,
        COUNTRIES.map((x) => [x, x.weight] as [Country, number]),
      );
      return {
        ip: nets.address(r, pick(r, c.home)),
        headers: browserHeaders(proxyBrowser(), pick(r, c.languages)),
        token: null,
        ...fresh('script'),
      };
    });
  }

  // Real people signing up while the farm and the disposable-domain wave run: their own homes,
  // browsers and mailboxes (drawn from a sequence of their own).
  for (const [k, [from, hours]] of [
    ...Array.from({ length: 40 }, () => [waveFrom, waveHours]),
    ...Array.from({ length: 40 }, () => [farmFrom, farmHours]),
  ].entries()) {
    const c = weighted(
      rs,
      COUNTRIES.map((x) => [x, x.weight] as [Country, number]),
    );
    const d = makeDevice(rs, rs() < 0.4, `wl${k}`);
    const at = from + rs() * hours * HOUR;
    const context = {
      ip: nets.address(rs, pick(rs, d.mobile && rs() < 0.6 ? c.mobile : c.home)),
      headers: browserHeaders(browserOf(d, Math.floor((at - start) / DAY)), pick(rs, c.languages), d.model),
      token: o.tokens !== 'none' ? d.token : null,
    };
    steps.push({
      scenario: 'legit',
      kind: 'register',
      at,
      email: emailFor(rs, `newcomer${k}`),
      userId: `wave-newcomer-${k}`,
      context,
      preauth: false,
      passwordCorrect: true,
      history: 0,
      typo: false,
      channel: 'web',
      duringWave: true,
    });
  }

  if (o.apps !== false) appTraffic();

  /**
   * The company's app, ShopApp: its users (about 30% of all, as many again as 3/7 of the web
   * users, half on Android, half on iOS) and the attacks on its API. Everything here draws from
   * sequences of its own (`ra`; `ra6` for what `--ipv6` and `--dynamic-home` change), so every
   * web step above is the same with and without it.
   */
  function appTraffic(): void {
    const ra = rng(o.seed * 15485863 + 29);
    const ra6 = rng(o.seed * 32452843 + 31);
    const byWeight = COUNTRIES.map((c) => [c, c.weight] as [Country, number]);
    const users: AppUser[] = [];
    for (let i = 0, n = Math.round((o.users * 3) / 7); i < n; i++) {
      const country = weighted(ra, byWeight);
      const homeAsn = pick(ra, country.home);
      const registers = ra() < 0.12;
      const platform: Platform = ra() < 0.5 ? 'android' : 'ios';
      const phone = makePhone(ra, platform, o.days);
      // Most phones update apps overnight within a day or two; some users get to it in a week or
      // a month; a few never during the period (auto-updates off).
      const updateLag = weighted(ra, [
        [ra() * 2, 55],
        [2 + ra() * 8, 30],
        [10 + ra() * 30, 10],
        [Infinity, 5],
      ] as [number, number][]);
      // A new phone: mostly the same platform again.
      const nextPlatform: Platform = ra() < 0.85 ? platform : platform === 'android' ? 'ios' : 'android';
      const nextPhone = makePhone(ra, nextPlatform, o.days);
      users.push({
        id: `app-user-${i}`,
        email: emailFor(ra, `member${i}`),
        country,
        language: pick(ra, country.languages),
        homeIp: nets.address(ra, homeAsn),
        homeAsn,
        mobileAsn: pick(ra, country.mobile),
        workAsn: ra() < 0.3 ? pick(ra, country.home) : null,
        habitHour: 7 + Math.floor(ra() * 15),
        vpn: ra() < 0.08,
        every: 0.7 + ra() * 3,
        firstDay: registers ? Math.floor(ra() * (o.days - 5)) : 0,
        registers,
        trip:
          ra() < 0.2
            ? (() => {
                const from = 10 + Math.floor(ra() * (o.days - 20));
                return {
                  from,
                  to: from + 3 + Math.floor(ra() * 6),
                  country: pick(
                    ra,
                    COUNTRIES.filter((c) => c !== country),
                  ),
                };
              })()
            : null,
        newPhoneDay: ra() < 0.12 ? 15 + Math.floor(ra() * (o.days - 20)) : null,
        shared: null,
        phone,
        updateLag,
        nextPhone,
        keepsInstall: platform === 'ios' && nextPlatform === 'ios' && ra() < 0.5,
        reinstallDay: ra() < 0.1 ? 5 + Math.floor(ra() * (o.days - 10)) : null,
      });
    }
    for (const u of users) {
      if (o.ipv6) u.home64 = nets.hasV6(u.homeAsn) && ra6() < 0.6 ? nets.prefix64(ra6, u.homeAsn) : null;
      if (o.dynamicHome) u.leaseDays = ra6() < 0.5 ? 1 + Math.floor(ra6() * 14) : null;
    }

    /** The release an install runs on a day: the one it was installed with, then each one `lag` days after it ships. */
    const releaseFor = (since: number, lag: number, day: number): AppRelease => {
      let out = releaseOn(since, o.days);
      for (const a of APP_RELEASES)
        if (releaseDay(a, o.days) > since && releaseDay(a, o.days) + lag <= day) out = a;
      return out;
    };

    for (const u of users) {
      // The install on the user's phone: from before the period, or from the sign-up.
      let phone = u.phone;
      let installId = newInstallId(ra);
      let vendorRaw = phone.vendorRaw;
      let since = u.registers ? u.firstDay : -(10 + Math.floor(ra() * 300));
      let fresh = u.registers;
      let last: AppRelease | null = null;
      let reinstalled = false;
      const contextOf = (day: number, at: number): Context => {
        if (u.newPhoneDay !== null && day >= u.newPhoneDay && phone !== u.nextPhone) {
          phone = u.nextPhone;
          vendorRaw = phone.vendorRaw;
          if (!u.keepsInstall) installId = newInstallId(ra);
          since = day;
          fresh = true;
        }
        if (u.reinstallDay !== null && day >= u.reinstallDay && !reinstalled) {
          // Deleting the app: Android forgets the install id but keeps ANDROID_ID; iOS keeps the
          // install id in the Keychain but gives a new identifierForVendor (no other app of the vendor).
          reinstalled = true;
          if (phone.model.platform === 'android') installId = newInstallId(ra);
          else vendorRaw = newVendorRaw(ra, 'ios');
          since = day;
          fresh = true;
        }
        const release = releaseFor(since, u.updateLag, day);
        const device: AppDevice = { phone: phone.model, os: osOn(phone, day), release };
        const { ip, abroad } = whereIs(u, day, at, true, 0.6, ra, ra6);
        // The phone sets its time zone from the network it is on, abroad too.
        const zone = (abroad ?? u.country).zone;
        const app: AppContext = {
          mobile: mobileInfo(device, installId, vendorRaw, localeOf(u.language), zone, at, phone.integrity),
          events: true,
          installed: fresh,
          updatedFrom: !fresh && last !== null && last !== release ? last : null,
          screens: screensAfterLogin(ra),
          client: release.client,
          before: fresh ? ['Welcome', ...(ra() < 0.6 ? ['Onboarding'] : [])] : [],
        };
        fresh = false;
        last = release;
        const token =
          o.tokens === 'opaque' || (o.tokens === 'client' && release.client) ? `tok-app-${installId}` : null;
        return { ip, headers: appHeaders(device, u.language), token, app };
      };
      const channelOf = (c: Context): Channel => c.app?.mobile.platform ?? 'web';

      let day = u.firstDay + ra() * u.every;
      let registeredAt = -Infinity;
      if (u.registers) {
        const at = start + u.firstDay * DAY + (u.habitHour - u.country.tz) * HOUR + ra() * HOUR;
        registeredAt = at;
        const context = contextOf(u.firstDay, at);
        steps.push({
          scenario: 'legit',
          kind: 'register',
          at,
          email: u.email,
          userId: u.id,
          context,
          preauth: false,
          passwordCorrect: true,
          history: 0,
          typo: false,
          channel: channelOf(context),
        });
        day = u.firstDay + 0.2 + ra() * u.every;
      }
      while (day < o.days) {
        const hour = u.habitHour + (ra() - 0.5) * 6 - u.country.tz;
        const at = Math.max(
          start + Math.floor(day) * DAY + hour * HOUR + ra() * HOUR,
          registeredAt + 2 * HOUR,
        );
        if (at >= end) break;
        const context = contextOf(Math.floor(day), at);
        steps.push({
          scenario: 'legit',
          kind: 'login',
          at,
          email: u.email,
          userId: u.id,
          context,
          preauth: true,
          passwordCorrect: true,
          history: 0,
          typo: ra() < 0.05,
          channel: channelOf(context),
        });
        day += u.every * (0.3 + ra() * 1.4);
      }
    }

    // The attacks on the app's API, in the last third of the period like the others.
    const dayOf = (at: number) => Math.floor((at - start) / DAY);
    const windowFor = (hours: number) => attackStart + ra() * (end - attackStart - hours * HOUR);
    const appVictims = users.filter((u) => !u.registers);
    const lists: Life[] = [...victims, ...appVictims];
    const first = [
      'john',
      'maria',
      'alex',
      'sam',
      'kim',
      'lee',
      'chris',
      'anna',
      'david',
      'laura',
      'lucas',
      'emma',
    ];
    const surnames = [
      'smith',
      'garcia',
      'miller',
      'jones',
      'brown',
      'martin',
      'silva',
      'khan',
      'lopez',
      'rossi',
      'weber',
      'tanaka',
    ];
    const realLooking = (domains: readonly string[]) =>
      `${pick(ra, first)}.${pick(ra, surnames)}${Math.floor(ra() * 1e4)}@${pick(ra, domains)}`;
    const freeMail = MAIL_DOMAINS.slice(0, 5).map(([d]) => d);

    // Credential stuffing on the app's login API, scripted with OkHttp and exactly the headers
    // the Android app sends (read off the app's traffic through a proxy): from rented servers and
    // through residential proxies (a new home address every attempt). Most tools were written
    // against the current app (OkHttp's own User-Agent); some replay a capture of the 3.2 line's
    // (the app's name, an Android version and a real model). Combo lists hold web and app users
    // alike. With `--client`, half the attempts first register a session through the collector
    // with made-up components (random install and vendor ids, a real phone) to mint a request
    // token, and post no app events; the other half send no token. With `--tokens`, half send a
    // made-up token of the app's kind.
    const rented = Array.from({ length: 30 }, () => nets.address(ra, pick(ra, HOSTING_ASNS)));
    const stuffingHours = spread(3);
    const stuffingFrom = windowFor(stuffingHours);
    const capture = APP_RELEASES.find((a) => a.namesItself && a.version === '3.2.1') as AppRelease;
    for (let k = 0; k < scale(1500); k++) {
      const at = stuffingFrom + ra() * stuffingHours * HOUR;
      const victim = ra() < 0.3 ? pick(ra, lists) : null;
      const email = victim
        ? victim.email
        : `${pick(ra, first)}.${Math.floor(ra() * 1e6)}@${weighted(ra, MAIL_DOMAINS)}`;
      const correct = victim !== null && ra() < 0.02;
      const c = weighted(ra, byWeight);
      const residential = ra() < 0.6;
      const ip = residential ? nets.address(ra, pick(ra, c.home)) : pick(ra, rented);
      const model = weighted(ra, ANDROID_PHONES);
      const device: AppDevice = {
        phone: model,
        os: model.osMax,
        release: ra() < 0.3 ? capture : releaseOn(dayOf(at), o.days),
      };
      const minted = ra() < 0.5;
      const installId = newInstallId(ra);
      const vendorRaw = newVendorRaw(ra, 'android');
      const app: AppContext | undefined = minted
        ? {
            mobile: mobileInfo(
              device,
              installId,
              vendorRaw,
              residential ? localeOf(c.languages[0] as string) : 'en-US',
              residential ? c.zone : 'America/New_York',
              at,
              [],
            ),
            events: false,
            installed: false,
            updatedFrom: null,
            screens: [],
            client: true,
            before: [],
          }
        : undefined;
      const context: Context = {
        ip,
        headers: appHeaders(device, ''),
        token: minted && o.tokens !== 'none' ? `tok-app-${installId}` : null,
        ...(app ? { app } : {}),
      };
      steps.push({
        scenario: 'app_stuffing',
        kind: 'login',
        at,
        email,
        userId: victim?.id ?? null,
        context,
        preauth: true,
        passwordCorrect: correct,
        history: 0,
        typo: false,
        channel: 'android',
      });
    }

    // Takeover from the attacker's own phone with the real app (a valid token, the app's events),
    // with the right password, against app users with history: from a home or mobile address in
    // the victim's country, sometimes on the victim's own carrier; the phone set to the
    // country's language and time. A dozen attackers, each with a phone; half of them reinstall
    // the app between victims (Android: a new install id, the same ANDROID_ID; iOS: the Keychain
    // keeps the install id, the vendor id is new).
    const attackers = Array.from({ length: 12 }, (_, k) => {
      const phone = makePhone(ra, k % 2 === 0 ? 'android' : 'ios', o.days);
      return {
        phone,
        installId: newInstallId(ra),
        vendorRaw: phone.vendorRaw,
        reinstalls: ra() < 0.5,
        used: false,
      };
    });
    for (let k = 0; k < scale(150); k++) {
      const v = pick(ra, appVictims);
      const at = attackStart + ra() * (end - attackStart);
      const a = pick(ra, attackers);
      if (a.used && a.reinstalls) {
        if (a.phone.model.platform === 'android') a.installId = newInstallId(ra);
        else a.vendorRaw = newVendorRaw(ra, 'ios');
      }
      const installed = !a.used || a.reinstalls;
      a.used = true;
      const asn =
        ra() < 0.55 ? (ra() < 0.4 ? v.mobileAsn : pick(ra, v.country.mobile)) : pick(ra, v.country.home);
      const language = pick(ra, v.country.languages);
      const device: AppDevice = {
        phone: a.phone.model,
        os: a.phone.os,
        release: releaseOn(dayOf(at), o.days),
      };
      const app: AppContext = {
        mobile: mobileInfo(
          device,
          a.installId,
          a.vendorRaw,
          localeOf(language),
          v.country.zone,
          at,
          a.phone.integrity,
        ),
        events: true,
        installed,
        updatedFrom: null,
        screens: screensAfterLogin(ra),
        client: true,
        before: installed ? ['Welcome'] : [],
      };
      steps.push({
        scenario: 'app_takeover',
        kind: 'login',
        at,
        email: v.email,
        userId: v.id,
        context: {
          ip: nets.address(ra, asn),
          headers: appHeaders(device, language),
          token: o.tokens !== 'none' ? `tok-app-${a.installId}` : null,
          app,
        },
        preauth: true,
        passwordCorrect: true,
        history: 0,
        typo: false,
        channel: device.phone.platform,
      });
    }

    // An emulator farm opening accounts through the app: six emulator instances, each wiped
    // between accounts (a new install id; the farm tool randomises ANDROID_ID too), through mobile
    // and residential proxies of its market. Four run the stock image (Android Studio's
    // `sdk_gphone64_x86_64`, the host's UTC clock) and the client library's checks see the
    // emulator; two are hardened (the checks see nothing, a real model, the proxy's country's
    // language and time zone). Two accounts in five are used later, once to three times: from the
    // account's saved snapshot (its install) or from a new wipe.
    const instances = Array.from({ length: 6 }, (_, k) => ({
      hardened: k >= 4,
      spoof: weighted(ra, ANDROID_PHONES),
      os: 13 + Math.floor(ra() * 3),
      country: weighted(ra, byWeight),
    }));
    const farmHours = spread(8);
    const farmFrom = windowFor(farmHours);
    const emulated = (
      inst: (typeof instances)[number],
      at: number,
      installId: string,
      vendorRaw: string,
      installed: boolean,
    ): Context => {
      const phone = inst.hardened ? inst.spoof : EMULATOR;
      const device: AppDevice = {
        phone,
        os: Math.min(Math.max(inst.os, phone.osMin), phone.osMax),
        release: releaseOn(dayOf(at), o.days),
      };
      const c = inst.country;
      const ip = nets.address(ra, ra() < 0.6 ? pick(ra, c.mobile) : pick(ra, c.home));
      const language = inst.hardened ? (c.languages[0] as string) : 'en-US,en;q=0.9';
      const app: AppContext = {
        mobile: mobileInfo(
          device,
          installId,
          vendorRaw,
          localeOf(language),
          inst.hardened ? c.zone : 'Etc/UTC',
          at,
          inst.hardened ? [] : ['emulator'],
        ),
        events: true,
        installed,
        updatedFrom: null,
        screens: screensAfterLogin(ra),
        client: true,
        before: installed ? ['Welcome'] : [],
      };
      return {
        ip,
        headers: appHeaders(device, language),
        token: o.tokens !== 'none' ? `tok-app-${installId}` : null,
        app,
      };
    };
    for (let k = 0; k < scale(200); k++) {
      const inst = pick(ra, instances);
      const at = farmFrom + ra() * farmHours * HOUR;
      const id = `emu-account-${k}`;
      const email = realLooking(freeMail);
      const installId = newInstallId(ra);
      const vendorRaw = newVendorRaw(ra, 'android');
      const context = emulated(inst, at, installId, vendorRaw, true);
      steps.push({
        scenario: 'emulator_farm',
        kind: 'register',
        at,
        email,
        userId: id,
        context,
        preauth: false,
        passwordCorrect: true,
        history: 0,
        typo: false,
        channel: 'android',
      });
      if (ra() < 0.4) {
        let t = at;
        for (let n = 1 + Math.floor(ra() * 3); n > 0; n--) {
          t += (2 + ra() * 46) * HOUR;
          if (t >= end) break;
          const snapshot = ra() < 0.5;
          const later = snapshot
            ? emulated(inst, t, installId, vendorRaw, false)
            : emulated(inst, t, newInstallId(ra), newVendorRaw(ra, 'android'), true);
          steps.push({
            scenario: 'emulator_farm',
            kind: 'login',
            at: t,
            email,
            userId: id,
            context: later,
            preauth: true,
            passwordCorrect: true,
            history: 0,
            typo: false,
            channel: 'android',
          });
        }
      }
    }

    // Sign-ups from one or two real Android phones whose app data is wiped before each (a new
    // install id; ANDROID_ID, per device and signing key, stays), on the carrier's network with a
    // new address after every airplane-mode toggle; throw-away and real-looking addresses.
    const wc = weighted(ra, byWeight);
    const wiped = Array.from({ length: ra() < 0.5 ? 1 : 2 }, () => ({
      phone: makePhone(ra, 'android', o.days),
      carrier: pick(ra, wc.mobile),
    }));
    const wipedHours = spread(6);
    const wipedFrom = windowFor(wipedHours);
    for (let k = 0; k < scale(120); k++) {
      const w = pick(ra, wiped);
      const at = wipedFrom + ra() * wipedHours * HOUR;
      const id = `wiped-account-${k}`;
      const email =
        ra() < 0.5
          ? `${pick(ra, first)}${Math.floor(ra() * 1e5)}@${pick(ra, throwaway)}`
          : realLooking(freeMail);
      const language = wc.languages[0] as string;
      const device: AppDevice = {
        phone: w.phone.model,
        os: osOn(w.phone, dayOf(at)),
        release: releaseOn(dayOf(at), o.days),
      };
      const installId = newInstallId(ra);
      const app: AppContext = {
        mobile: mobileInfo(device, installId, w.phone.vendorRaw, localeOf(language), wc.zone, at, []),
        events: true,
        installed: true,
        updatedFrom: null,
        screens: screensAfterLogin(ra),
        client: true,
        before: ['Welcome'],
      };
      steps.push({
        scenario: 'wiped_signups',
        kind: 'register',
        at,
        email,
        userId: id,
        context: {
          ip: nets.address(ra, w.carrier),
          headers: appHeaders(device, language),
          token: o.tokens !== 'none' ? `tok-app-${installId}` : null,
          app,
        },
        preauth: false,
        passwordCorrect: true,
        history: 0,
        typo: false,
        channel: 'android',
      });
    }
  }

  steps.sort((a, b) => a.at - b.at);
  // Legitimate history lengths, in time order.
  for (const s of steps) {
    if (s.scenario !== 'legit' || !s.userId) continue;
    const n = history.get(s.userId) ?? 0;
    s.history = n;
    history.set(s.userId, n + 1);
  }
  // A takeover is "from a new operator" when none of the victim's legitimate steps before it came
  // from its network operator (the ASN, as Rampart's database names it). The attacker's operator
  // was drawn apart from the victim's home, mobile and work ones, but a user's cafés, trips and
  // friends' networks are operators too: one the victim used last week is not new.
  const used = new Map<string, Set<number>>();
  const asnOf = (ip: string): number | null => lookupIp(ip).asn?.number ?? null;
  for (const s of steps) {
    if (!s.userId) continue;
    if (s.scenario === 'legit') {
      const asn = asnOf(s.context.ip);
      if (asn === null) continue;
      let set = used.get(s.userId);
      if (!set) used.set(s.userId, (set = new Set()));
      set.add(asn);
    } else if (s.newOperator !== undefined) {
      const asn = asnOf(s.context.ip);
      s.newOperator = asn === null || !(used.get(s.userId)?.has(asn) ?? false);
    }
  }
  return steps;
}
