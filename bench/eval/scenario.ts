/**
 * The evaluation's labelled traffic: legitimate users with weeks of history (a home ISP, a
 * phone on a mobile network, several devices, browser updates, travel, VPNs, new phones, shared
 * family computers, mistyped passwords, new sign-ups) and the attacks Rampart must stop
 * (credential stuffing from hosting ranges, residential proxies and country-matched VPNs;
 * library bots; stealth headless browsers; targeted and very targeted takeover with the right
 * password; device farms; disposable-address sign-up waves). Everything comes from one seed.
 */
import {
  browserHeaders,
  COUNTRIES,
  DESKTOP_BROWSERS,
  HOSTING_ASNS,
  LIBRARY_AGENTS,
  MAIL_DOMAINS,
  MOBILE_BROWSERS,
  Networks,
  pick,
  userAgent,
  versionAt,
  weighted,
  type Browser,
  type BrowserKind,
  type Country,
  type Rand,
} from './world';
import { rng } from '../lib/traffic';

export const SCENARIOS = ['legit', 'stuffing_hosting', 'stuffing_residential', 'stuffing_vpn', 'library_bots', 'stealth_bots', 'targeted', 'very_targeted', 'device_farm', 'disposable_signups', 'token_replay'] as const;
export type Scenario = (typeof SCENARIOS)[number];

export interface Context {
  ip: string;
  headers: Record<string, string>;
  /**
   * The device's identity in the page: with opaque tokens, the token itself; with Rampart's
   * browser client, the browser profile the driver collects a fresh token for (null: no script ran).
   */
  token: string | null;
  /** Browser client: automation evidence the page shows (a driven or tampered browser). */
  automation?: string[];
  /** Browser client: the token was captured from this address's session, used there first, and is replayed here. */
  replayedFrom?: string;
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
}

interface Device {
  browser: BrowserKind;
  mobile: boolean;
  lag: number;
  token: string;
  model: string;
}

interface Person {
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
  devices: Device[];
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

const browserOf = (d: Device, day: number): Browser => ({ kind: d.browser, version: versionAt(d.browser, day, d.lag), mobile: d.mobile });

function emailFor(r: Rand, name: string): string {
  return `${name}@${weighted(r, MAIL_DOMAINS)}`;
}

/** Generate every step, in time order. `end` is the last moment (ms). */
export function generate(o: GenerateOptions, nets: Networks, r: Rand, end: number): Step[] {
  const start = end - o.days * DAY;
  const steps: Step[] = [];
  const people: Person[] = [];
  for (let i = 0; i < o.users; i++) {
    const country = weighted(r, COUNTRIES.map((c) => [c, c.weight] as [Country, number]));
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
      trip: r() < 0.2 ? (() => {
        const from = 10 + Math.floor(r() * (o.days - 20));
        return { from, to: from + 3 + Math.floor(r() * 6), country: pick(r, COUNTRIES.filter((c) => c !== country)) };
      })() : null,
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
  const mobileV6 = (asn: number) => o.ipv6 === true && nets.hasV6(asn) && r6() < 0.6;
  if (o.ipv6 || o.dynamicHome) {
    for (const p of people) {
      if (o.ipv6) p.home64 = nets.hasV6(p.homeAsn) && r6() < 0.6 ? nets.prefix64(r6, p.homeAsn) : null;
      if (o.dynamicHome) p.leaseDays = r6() < 0.5 ? 1 + Math.floor(r6() * 14) : null;
    }
    for (let i = 0; i + 1 < people.length; i += 25) (people[i + 1] as Person).home64 = (people[i] as Person).home64 ?? null;
  }
  /** A home's IPv4 address on a day: the same for the length of its lease. */
  const leases = new Map<string, { until: number; ip: string }>();
  const homeAddress = (p: Person, day: number): string => {
    if (!p.leaseDays) return p.homeIp;
    const key = p.shared ? `${p.homeAsn}:${p.homeIp}` : p.id;
    const lease = leases.get(key);
    if (lease && day < lease.until) return lease.ip;
    const ip = lease ? nets.address(r6, p.homeAsn) : p.homeIp;
    leases.set(key, { until: day + p.leaseDays, ip });
    return ip;
  };

  const contextOf = (p: Person, day: number, at: number): Context => {
    // Which device: the desktop most days, the phone often, another one sometimes.
    let device = weighted(r, p.devices.map((d, k) => [d, k === 0 ? 5 : k === 1 ? 4 : 1] as [Device, number]));
    if (p.shared && r() < 0.3) device = p.shared;
    if (p.newPhoneDay !== null && day >= p.newPhoneDay && device === p.devices[1]) {
      device = { ...device, browser: device.browser === 'safari-iphone' ? 'chrome-android' : 'safari-iphone', token: `${device.token}-new`, lag: 0 };
    }
    const traveling = p.trip && day >= p.trip.from && day <= p.trip.to;
    let ip: string;
    let mobile = false;
    if (traveling && p.trip) {
      if (r() < 0.6) ip = nets.address(r, pick(r, p.trip.country.home));
      else {
        ip = nets.address(r, p.mobileAsn);
        mobile = true;
      }
    } else if (p.vpn && r() < 0.35) ip = nets.vpnIn(r, p.country.cc);
    else if (device.mobile && r() < 0.55) {
      ip = nets.address(r, p.mobileAsn);
      mobile = true;
    } else if (p.workAsn && r() < 0.25 && new Date(at).getUTCDay() % 6 !== 0) ip = nets.address(r, p.workAsn);
    else if (r() < 0.03) ip = nets.address(r, pick(r, p.country.home)); // a café, a friend's
    else {
      ip = homeAddress(p, day);
      if (p.home64 && r6() < 0.7) ip = nets.inPrefix(r6, p.home64);
    }
    if (mobile && mobileV6(p.mobileAsn)) ip = nets.inPrefix(r6, nets.prefix64(r6, p.mobileAsn) as bigint);
    const headers = browserHeaders(browserOf(device, day), p.language, device.model);
    return { ip, headers, token: o.tokens !== 'none' ? device.token : null };
  };

  const history = new Map<string, number>();
  for (const p of people) {
    let day = p.firstDay + r() * p.every;
    let registeredAt = -Infinity;
    if (p.registers) {
      const at = start + p.firstDay * DAY + (p.habitHour - p.country.tz) * HOUR + r() * HOUR;
      registeredAt = at;
      steps.push({ scenario: 'legit', kind: 'register', at, email: p.email, userId: p.id, context: contextOf(p, p.firstDay, at), preauth: false, passwordCorrect: true, history: 0, typo: false });
      day = p.firstDay + 0.2 + r() * p.every;
    }
    while (day < o.days) {
      const hour = p.habitHour + (r() - 0.5) * 6 - p.country.tz;
      // Nobody logs in before signing up: a login drawn earlier on the day of the sign-up comes two hours after it.
      const at = Math.max(start + Math.floor(day) * DAY + hour * HOUR + r() * HOUR, registeredAt + 2 * HOUR);
      if (at >= end) break;
      steps.push({ scenario: 'legit', kind: 'login', at, email: p.email, userId: p.id, context: contextOf(p, Math.floor(day), at), preauth: true, passwordCorrect: true, history: 0, typo: r() < 0.05 });
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
      return { email: existing ? existing.email : `${pick(r, ['john', 'maria', 'alex', 'sam', 'kim', 'lee', 'chris'])}.${Math.floor(r() * 1e6)}@${weighted(r, MAIL_DOMAINS)}`, userId: existing?.id ?? null, correct: r() < 0.02 && existing !== null, k };
    });
  const scale = (n: number) => Math.max(1, Math.round(n * o.attackScale));
  const spread = (ownHours: number) => Math.min(o.attackHours ?? ownHours, (end - attackStart) / HOUR);
  const campaign = (scenario: Scenario, n: number, ownHours: number, context: (k: number, victim: { email: string; userId: string | null }) => Context) => {
    const hours = spread(ownHours);
    const from = attackStart + r() * (end - attackStart - hours * HOUR);
    for (const t of stuffingEmails(scale(n))) {
      steps.push({ scenario, kind: 'login', at: inWindow(from, hours), email: t.email, userId: t.userId, context: context(t.k, t), preauth: true, passwordCorrect: t.correct, history: 0, typo: false });
    }
  };

  // Credential stuffing from rented servers: a handful of addresses, browser-like or not.
  const hostingIps = Array.from({ length: 40 }, () => nets.address(r, pick(r, HOSTING_ASNS)));
  const toolBrowser: Browser = { kind: 'chrome-win', version: 120, mobile: false };
  campaign('stuffing_hosting', 1200, 2, () => ({ ip: pick(r, hostingIps), headers: r() < 0.5 ? browserHeaders(toolBrowser, 'en-US,en;q=0.9') : { 'User-Agent': userAgent(toolBrowser), Accept: '*/*' }, token: null }));
  // Through residential proxies: every attempt from another home address, real browser headers.
  // The tool's browsers: five current desktop ones, or (`rotateAgents`) a new one every attempt.
  const toolBrowsers: Browser[] = (['chrome-win', 'chrome-mac', 'edge-win', 'safari-mac', 'firefox-win'] as BrowserKind[]).map((kind) => ({ kind, version: versionAt(kind, o.days, 0), mobile: false }));
  // The rotation draws from a sequence of its own, so that every other step stays the same.
  const rr = rng(o.seed * 104729 + 3);
  const proxyBrowser = (): Browser => {
    const fixed = pick(r, toolBrowsers);
    if (!o.rotateAgents) return fixed;
    const mobile = rr() < 0.4;
    const kind = weighted(rr, mobile ? MOBILE_BROWSERS : DESKTOP_BROWSERS);
    return { kind, version: versionAt(kind, o.days, Math.floor(rr() * 150)), mobile };
  };
  campaign('stuffing_residential', 1500, 3, () => {
    const c = weighted(r, COUNTRIES.map((x) => [x, x.weight] as [Country, number]));
    return { ip: nets.address(r, pick(r, c.home)), headers: browserHeaders(proxyBrowser(), pick(r, c.languages)), token: null };
  });
  // Through VPN exits in the victim's country.
  campaign('stuffing_vpn', 800, 2, (_k, victim) => {
    const p = victims.find((v) => v.email === victim.email);
    const c = p?.country ?? weighted(r, COUNTRIES.map((x) => [x, x.weight] as [Country, number]));
    return { ip: nets.vpnIn(r, c.cc), headers: browserHeaders(proxyBrowser(), pick(r, c.languages)), token: null };
  });
  // Scripts that do not pretend: HTTP libraries.
  campaign('library_bots', 400, 1, () => ({ ip: r() < 0.5 ? pick(r, hostingIps) : nets.address(r, pick(r, pick(r, COUNTRIES).home)), headers: { 'User-Agent': pick(r, LIBRARY_AGENTS), Accept: '*/*' }, token: null }));
  // Headless browsers with a desktop Chrome user agent: what a stealth plugin leaves behind.
  campaign('stealth_bots', 600, 2, () => {
    const h = browserHeaders({ kind: 'chrome-win', version: versionAt('chrome-win', o.days, 0), mobile: false }, 'en-US,en;q=0.9');
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
    const client = o.tokens === 'client' ? { token: `tok-stealth-${Math.floor(r() * 1e9).toString(36)}`, automation: [pick(r, ['headless_window', 'tampered_natives', 'webdriver', 'automation_globals'])] } : { token: null };
    return { ip: r() < 0.5 ? pick(r, hostingIps) : nets.address(r, pick(r, pick(r, COUNTRIES).home)), headers: h, ...client };
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
          : browserHeaders({ kind: d.browser, version: versionAt(d.browser, day, 0), mobile: false }, pick(r, p.country.languages).split(',')[0] ?? 'en', d.model);
      const asn = scenario === 'very_targeted' && r() < 0.3 ? p.homeAsn : pick(r, [...p.country.home, ...p.country.mobile]);
      steps.push({ scenario, kind: 'login', at, email: p.email, userId: p.id, context: { ip: nets.address(r, asn), headers, token: o.tokens !== 'none' ? `tok-attacker-${k}` : null }, preauth: true, passwordCorrect: true, history: 0, typo: false });
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
      steps.push({ scenario: 'token_replay', kind: 'login', at, email: p.email, userId: p.id, context: { ip: nets.address(r, pick(r, [...p.country.home, ...p.country.mobile])), headers, token: d.token, replayedFrom: p.homeIp }, preauth: true, passwordCorrect: true, history: 0, typo: false });
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
    const context = { ip: nets.address(r, pick(r, c.mobile)), headers: browserHeaders(browserOf(d, o.days), 'en-US,en;q=0.9', d.model), token: o.tokens !== 'none' ? d.token : null };
    steps.push({ scenario: 'device_farm', kind: 'register', at: inWindow(farmFrom, farmHours), email: `${id}@${weighted(r, MAIL_DOMAINS)}`, userId: id, context, preauth: false, passwordCorrect: true, history: 0, typo: false });
  }

  // Sign-up waves on throw-away and freshly invented domains.
  const invented = Array.from({ length: 6 }, () => `${Math.floor(r() * 1e6).toString(36)}mail.${pick(r, ['com', 'net', 'xyz', 'top'])}`);
  const throwaway = ['mailinator.com', 'guerrillamail.com', 'yopmail.com', '10minutemail.com', 'trashmail.com', 'sharklasers.com'];
  const waveHours = spread(3);
  const waveFrom = attackStart + r() * (end - attackStart - waveHours * HOUR);
  const waveIps = Array.from({ length: 8 }, () => (r() < 0.5 ? pick(r, hostingIps) : nets.address(r, pick(r, pick(r, COUNTRIES).home))));
  for (let k = 0; k < scale(300); k++) {
    const c = pick(r, COUNTRIES);
    const id = `wave-account-${k}`;
    const b = proxyBrowser();
    steps.push({ scenario: 'disposable_signups', kind: 'register', at: inWindow(waveFrom, waveHours), email: `${id}@${r() < 0.5 ? pick(r, throwaway) : pick(r, invented)}`, userId: id, context: { ip: pick(r, waveIps), headers: browserHeaders(b, pick(r, c.languages)), token: null }, preauth: false, passwordCorrect: true, history: 0, typo: false });
  }

  steps.sort((a, b) => a.at - b.at);
  // Legitimate history lengths, in time order.
  for (const s of steps) {
    if (s.scenario !== 'legit' || !s.userId) continue;
    const n = history.get(s.userId) ?? 0;
    s.history = n;
    history.set(s.userId, n + 1);
  }
  return steps;
}

