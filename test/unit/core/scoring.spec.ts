/**
 * The risk engine's pure parts (src/core/scoring): features, the behavioural model, each piece of
 * attack evidence, velocity across accounts, the combination into one risk, and what each event
 * teaches. No I/O: address facts are given by hand, user agents parsed offline.
 */
import { validateEvent, type ParseOptions } from '../../../src/core/events/parse';
import type { Endpoint } from '../../../src/core/model';
import { eventCommand } from '../../../src/rest/event-command';
import { isDisposableEmail, parseUserAgent, type IpIntel } from '../../../src/intel';
import { deviceKey } from '../../../src/core/devices/service';
import {
  appReleaseOf,
  extractFeatures,
  hostOf,
  networkOf,
  primaryLanguage,
  requestShape,
  type Features,
  type Level,
} from '../../../src/core/scoring/features';
import {
  answeredChallenge,
  placeRatio,
  atTime,
  chainRatio,
  emptyBehaviour,
  epochWeight,
  evictionCandidate,
  FIRST_SEEN_LEVELS,
  familiarity,
  hostileMatch,
  type Behaviour,
  type PopulationCounts,
} from '../../../src/core/scoring/behaviour';
import type { EvidenceInput, EventKind, ProofEvidence } from '../../../src/core/scoring/evidence';
import { requestEvidence } from '../../../src/core/scoring/request-evidence';
import { tokenlessHabit } from '../../../src/core/scoring/user-evidence';
import { velocityEvidence } from '../../../src/core/scoring/velocity-evidence';
import type { Behaviour as ProofBehaviour } from '../../../src/core/client/proof';
import {
  assess,
  eventKind,
  lesson,
  historyGain,
  BASE_LOGIT,
  HISTORY_GAIN,
  HISTORY_GAIN_FROM,
  HISTORY_GAIN_FULL,
  TENTATIVE_WEIGHT,
  APPROVED_CREDIT,
  JOINT_NOVELTY,
  HOME_NEW_DEVICE,
  TRUSTED_TRAVEL_MAX,
  UNFAMILIARITY_CAP,
  CAP_KNEE,
  belowCap,
  type AssessInput,
} from '../../../src/core/scoring/model';
import {
  appFingerprintShare,
  counterBumps,
  keysToRead,
  languageCounts,
  populationCounts,
  proofHabit,
  readWindow,
  environmentStats,
  NO_SNAPSHOTS,
  POPULATION_HALF_LIFE_MS,
  tokenBump,
  tokenReplayed,
  type Outcome,
  type Snapshots,
  type Window,
} from '../../../src/core/scoring/population';
import type { CounterSnapshot } from '../../../src/core/ports';
import { riskLevel, SIGNAL_NAMES } from '../../../src/core/scoring/signals';
import type { Device, EventInput } from '../../../src/core/model';

/** A Castle JSON body validated as the REST door validates it. */
const parseEvent = (endpoint: Endpoint, body: unknown, opts: ParseOptions) =>
  validateEvent(endpoint, eventCommand(body), opts);

const CHROME =
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36';
const IPHONE =
  'Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1';
const FIREFOX = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:125.0) Gecko/20100101 Firefox/125.0';
const DAY = 86_400_000;
const T0 = Date.parse('2026-10-01T12:00:00Z');

/** A browser's usual headers (as an application forwards them). */
const browser = (ua = CHROME, lang = 'en-GB,en;q=0.9'): Record<string, string> => ({
  'User-Agent': ua,
  Accept: 'text/html',
  'Accept-Language': lang,
  'Sec-Fetch-Mode': 'navigate',
  'Sec-Fetch-Site': 'same-origin',
  ...(ua.includes('Chrome/')
    ? { 'sec-ch-ua': '"Chromium";v="124"', 'sec-ch-ua-mobile': '?0', 'sec-ch-ua-platform': '"Windows"' }
    : {}),
});

interface Net {
  ip: string;
  asn: number;
  cc: string;
  lat: number;
  lon: number;
  hosting?: boolean;
  vpn?: boolean;
  tor?: boolean;
  city?: string;
}
const HOME: Net = { ip: '81.2.69.142', asn: 2856, cc: 'GB', lat: 51.5, lon: -0.1, city: 'London' };
const HOME_OTHER_IP: Net = { ...HOME, ip: '81.2.69.201' };
const OTHER_ISP: Net = { ip: '86.128.0.20', asn: 5089, cc: 'GB', lat: 53.4, lon: -2.2, city: 'Manchester' };
/** The home operator, another of its networks in the user's city, and one in another city. */
const HOME_OPERATOR_SAME_CITY: Net = { ...HOME, ip: '81.2.88.20' };
const HOME_OPERATOR_ELSEWHERE: Net = { ...HOME, ip: '81.2.90.20', lat: 53.4, lon: -2.2, city: 'Manchester' };
const PARIS: Net = { ip: '90.84.0.10', asn: 3215, cc: 'FR', lat: 48.8, lon: 2.3 };
const SYDNEY: Net = { ip: '1.120.0.1', asn: 1221, cc: 'AU', lat: -33.8, lon: 151.2 };
const CLOUD: Net = { ip: '52.95.110.1', asn: 16509, cc: 'US', lat: 39, lon: -77, hosting: true };
const VPN: Net = { ip: '185.159.157.9', asn: 9009, cc: 'GB', lat: 51.5, lon: -0.1, vpn: true };
const TOR: Net = { ip: '185.220.101.1', asn: 208294, cc: 'DE', lat: 52.5, lon: 13.4, tor: true };

const intel = (n: Net): IpIntel => ({
  ip: n.ip,
  version: 4,
  location: {
    country_code: n.cc,
    country: n.cc,
    region: null,
    region_code: null,
    city: n.city ?? null,
    lat: n.lat,
    lon: n.lon,
  },
  asn: { number: n.asn, organization: `AS${n.asn}` },
  hosting: n.hosting ?? false,
  vpn: n.vpn ?? false,
  relay: false,
  tor: n.tor ?? false,
  bogon: false,
});

interface Call {
  name?: string;
  user?: string | null;
  email?: string;
  net?: Net;
  headers?: Record<string, string>;
  token?: string;
  at?: number;
}

function event(c: Call = {}): EventInput {
  const at = c.at ?? T0;
  const user = c.user === undefined ? 'alice' : c.user;
  const body: Record<string, unknown> = {
    event: c.name ?? '$login',
    ...(user
      ? { user: { id: user, email: c.email ?? `${user}@example.com` } }
      : { user: { email: c.email ?? 'someone@example.com' } }),
    context: { ip: (c.net ?? HOME).ip, headers: c.headers ?? browser() },
    ...(c.token ? { request_token: c.token } : {}),
    timestamp: new Date(at).toISOString(),
  };
  return parseEvent(user ? 'risk' : 'filter', body, { sandbox: true, now: new Date(at + 1000) });
}

function features(c: Call = {}): { event: EventInput; f: Features; ip: IpIntel } {
  const e = event(c);
  const ip = intel(c.net ?? HOME);
  const ua = parseUserAgent(e.context.userAgent);
  return { event: e, ip, f: extractFeatures(e, ip, ua, deviceKey(e)) };
}

/** A population where every value is as common as `share` of `total` legitimate events. */
const population = (total = 10_000, share = 0.05): PopulationCounts => ({
  total,
  count: () => total * share,
});

/** The feature values of a call, read only: parsed once per distinct call (histories repeat them). */
const valuesOf = (() => {
  const seen = new Map<string, Features['values']>();
  return (c: Call): Features['values'] => {
    const key = JSON.stringify(c);
    let values = seen.get(key);
    if (!values) seen.set(key, (values = features(c).f.values));
    return values;
  };
})();

/** A user's behaviour after the given legitimate logins (in event time). */
function history(calls: Call[]): Behaviour {
  const b = emptyBehaviour();
  for (const c of calls) {
    const f = { values: valuesOf(c) };
    const at = c.at ?? T0;
    const w = epochWeight(at);
    b.n += w;
    for (const [level, value] of Object.entries(f.values)) {
      if (value === null) continue;
      const table = (b.tables[level as keyof typeof b.tables] ??= {});
      const e = (table[value] ??= { c: 0, l: 0 });
      e.c += w;
      e.l = Math.max(e.l, at);
      if (FIRST_SEEN_LEVELS.has(level as Level)) e.f = Math.min(e.f ?? at, at);
    }
    const ip = intel(c.net ?? HOME);
    b.lastLegit = { at, lat: ip.location!.lat!, lon: ip.location!.lon!, cc: ip.location!.country_code };
  }
  return b;
}

/** Thirty days of logins from home on the user's laptop. */
const habitual = (): Behaviour =>
  history(Array.from({ length: 30 }, (_, k) => ({ at: T0 - (30 - k) * DAY, token: 'alice-laptop' })));

const noWindows = (): EvidenceInput['windows'] => ({});
const window = (w: Partial<Window>): Window => ({
  attempts: 0,
  failures: 0,
  successes: 0,
  registrations: 0,
  unknown: 0,
  accounts: 0,
  failedAccounts: 0,
  ...w,
});

/** A settled environment: weeks old, 50 attempts an hour, 2 of them on accounts Rampart does not know. */
const ENV: EvidenceInput['env'] = {
  legit: 10_000,
  attemptsPerHour: 50,
  failuresPerHour: 5,
  unknownPerHour: 2,
  usualUnknownShare: 0.04,
  usualSignupShare: 0.02,
  registrationsPerHour: 1,
  signups: 0,
  newDomainSignups: 0,
  feedback: 100,
  ageHours: 2000,
};

function assessInput(c: Call, over: Partial<AssessInput> = {}): AssessInput {
  const { event: e, ip, f } = features(c);
  const email = e.email ?? (typeof e.properties.email === 'string' ? e.properties.email : null);
  return {
    event: e,
    disposableEmail: email !== null && isDisposableEmail(email),
    ip,
    ua: parseUserAgent(e.context.userAgent),
    features: f,
    env: ENV,
    headers: { events: 5000, acceptLanguage: 0.99, secFetch: 0.98, clientHints: 0.97 },
    windows: noWindows(),
    shapeShare: 0.01,
    operatorShare: 0.01,
    fingerprints: { events: 0, share: 0 },
    client: null,
    domainCount: 500,
    unknownAccount: false,
    language: null,
    behaviour: null,
    population: population(),
    device: null,
    ...over,
  };
}

const evidenceInput = (c: Call, kind: EventKind, over: Partial<EvidenceInput> = {}): EvidenceInput => ({
  ...assessInput(c),
  kind,
  familiarAsn: false,
  ...over,
});
const fired = (list: { signal: string; weight: number }[]) =>
  list.filter((x) => x.weight > 0).map((x) => x.signal);

describe('features', () => {
  it.each([
    ['81.2.69.142', '81.2.69.0/24'],
    ['2001:db8:1234:5678::1', '2001:db8:1234::/48'],
    ['2001:db8::1', '2001:db8:0::/48'],
    ['nonsense', null],
  ])('the network of %s is %s', (ip, net) => expect(networkOf(ip)).toBe(net));

  it.each([
    ['81.2.69.142', '81.2.69.142', '81.2.69.0/24'],
    ['2001:db8:1234:5678:a1b2:c3d4:e5f6:1', '2001:db8:1234:5678::/64', '2001:db8:1234::/48'],
    ['2001:db8:1234:5678::1', '2001:db8:1234:5678::/64', '2001:db8:1234::/48'],
    ['2001:db8::1', '2001:db8:0:0::/64', '2001:db8:0::/48'],
    ['nonsense:', null, null],
  ])('the host of %s is %s, within %s', (ip, host, net) => {
    expect(hostOf(ip)).toBe(host);
    if (host) expect(networkOf(host)).toBe(net);
  });

  it("an IPv6 host is its /64: a device's privacy addresses are one address, another /64 is another", () => {
    const v6 = (ip: string): Net => ({ ...HOME, ip });
    const today = features({ net: v6('2a01:4cb:389:ccf5:e584:495d:49c1:f657') }).f;
    const tomorrow = features({ net: v6('2a01:4cb:389:ccf5:1c2:33a1:9e0:4') }).f;
    const neighbour = features({ net: v6('2a01:4cb:389:ccf6:e584:495d:49c1:f657') }).f;
    expect(today.values.ip).toBe('2a01:4cb:389:ccf5::/64');
    expect(tomorrow.values.ip).toBe(today.values.ip);
    expect(neighbour.values.ip).not.toBe(today.values.ip);
    expect(neighbour.values.net).toBe(today.values.net);
    // The address's velocity window is the /64's: rotating through it does not spread an attack.
    expect(keysToRead(tomorrow, null)).toEqual(keysToRead(today, null));
  });

  it.each([
    ['en-GB,en;q=0.9', 'en-gb'],
    ['de', 'de'],
    ['*', null],
    [undefined, null],
  ])('the primary language of %s is %s', (header, lang) => expect(primaryLanguage(header)).toBe(lang));

  it('a request shape ignores per-request headers and changes with the client', () => {
    const a = requestShape(event({ headers: { ...browser(), Cookie: 'a=1', 'X-Request-Id': '1' } }));
    const b = requestShape(event({ headers: { ...browser(), Cookie: 'b=2', 'X-Request-Id': '2' } }));
    expect(a).toBe(b);
    expect(requestShape(event({ headers: browser(FIREFOX) }))).not.toBe(a);
    expect(requestShape(event({ headers: browser(CHROME, 'de-DE') }))).not.toBe(a);
  });

  it('every level of both hierarchies, and the device only when fingerprinted', () => {
    const { f } = features({ token: 'laptop' });
    expect(f.values).toMatchObject({
      ip: HOME.ip,
      net: '81.2.69.0/24',
      asn: 'AS2856',
      cc: 'GB',
      bf: 'Chrome',
      br: 'Chrome 124',
      os: 'Windows 10',
      dt: 'desktop',
      fp: 'y',
      lang: 'en-gb',
      hr: '12',
    });
    expect(f.values.dev).toMatch(/^f:/);
    expect(f.fingerprinted).toBe(true);
    const headersOnly = features({}).f;
    expect(headersOnly.values.dev).toBeNull();
    expect(headersOnly.values.fp).toBe('n');
  });
});

describe('behavioural model', () => {
  it('stores counts so that event order does not matter (importing history = living it)', () => {
    const calls = [{ at: T0 - 20 * DAY }, { at: T0 - 3 * DAY, net: PARIS }, { at: T0 - 9 * DAY }];
    const forward = history(calls);
    const backward = history([...calls].reverse());
    expect(backward.n).toBeCloseTo(forward.n, 12);
    expect(backward.tables.cc).toEqual(forward.tables.cc);
    // A count decays with a half-life: one event 120 days ago counts half.
    expect(atTime(epochWeight(T0 - 120 * DAY), T0)).toBeCloseTo(0.5, 9);
  });

  it('the decay weight is the same whatever was asked before it (it keeps the last answer per half-life)', () => {
    const direct = (t: number, h: number) => 2 ** ((t - Date.UTC(2025, 0, 1)) / h);
    const asks: [number, number][] = [
      [T0, 120 * DAY],
      [T0, 30 * DAY],
      [T0, 120 * DAY],
      [T0 + DAY, 30 * DAY],
      [T0, 30 * DAY],
      [T0 + DAY, 7 * DAY],
      [T0, 120 * DAY],
      [T0 + DAY, 120 * DAY],
    ];
    for (const [t, h] of asks) expect(epochWeight(t, h)).toBe(direct(t, h));
  });

  it('a user without history has the population distribution: neither familiar nor strange', () => {
    const { f } = features({ net: OTHER_ISP });
    const r = familiarity(emptyBehaviour(), population(), f, T0);
    expect(r.network.llr).toBeCloseTo(0, 9);
    expect(r.software.llr).toBeCloseTo(0, 9);
  });

  it.each([
    ['home, the usual laptop', { token: 'alice-laptop' }, 'network', 'lt', 0],
    ['another address of the home ISP', { net: HOME_OTHER_IP, token: 'alice-laptop' }, 'network', 'lt', 0.5],
    ['another ISP', { net: OTHER_ISP, token: 'alice-laptop' }, 'network', 'gt', 1],
    ['another country', { net: PARIS, token: 'alice-laptop' }, 'network', 'gt', 2],
    ['the usual software', { token: 'alice-laptop' }, 'software', 'lt', 0],
    ['another browser and OS', { headers: browser(IPHONE), token: 'alice-laptop' }, 'software', 'gt', 1],
    ['another device', { token: 'stranger' }, 'device', 'gt', 1],
  ] as const)('%s', (_name, call, chain, cmp, bound) => {
    const { f } = features(call);
    const llr = familiarity(habitual(), population(), f, T0)[chain].llr;
    if (cmp === 'lt') expect(llr).toBeLessThan(bound);
    else expect(llr).toBeGreaterThan(bound);
  });

  it('a new network within an operator is surprising where the user always showed one network there, not where they always change', () => {
    const days = Array.from({ length: 30 }, (_, k) => T0 - (30 - k) * DAY);
    // Both users also log in from a mobile operator whose addresses always change.
    const mobile = (at: number, k: number): Call => ({
      at,
      token: 'alice-laptop',
      net: { ip: `92.40.${k}.3`, asn: 25135, cc: 'GB', lat: 51.5, lon: -0.1 },
    });
    const settled = history(
      days.map((at, k) => (k % 3 === 2 ? mobile(at, k) : { at, token: 'alice-laptop' })),
    );
    const roaming = history(
      days.map((at, k) =>
        k % 3 === 2
          ? mobile(at, k)
          : { at, token: 'alice-laptop', net: { ...HOME, ip: `81.2.${100 + k}.7` } },
      ),
    );
    const { f } = features({ net: { ...HOME, ip: '81.2.250.9' }, token: 'alice-laptop' });
    const settledLlr = familiarity(settled, population(), f, T0).network.llr;
    const roamingLlr = familiarity(roaming, population(), f, T0).network.llr;
    // Judged against all the user's networks (the mobile ones included) the two would differ by
    // about 1.2; given the operator, by about 2.5.
    expect(settledLlr).toBeGreaterThan(roamingLlr + 1.8);
    // The usual network stays familiar for the settled user.
    expect(
      familiarity(settled, population(), features({ token: 'alice-laptop' }).f, T0).network.llr,
    ).toBeLessThan(0);
  });

  it('devices set up long ago make a new one less likely than as many set up this week', () => {
    const tokens = ['alice-laptop', 'alice-phone', 'alice-tablet'];
    // Thirty logins each, the same three devices; only when they first appeared differs.
    const early = history(
      Array.from({ length: 30 }, (_, k) => ({ at: T0 - (90 - 3 * k) * DAY, token: tokens[k % 3] })),
    );
    const recent = history(
      Array.from({ length: 30 }, (_, k) => ({
        at: T0 - (90 - 3 * k) * DAY,
        token: tokens[k < 27 ? 0 : k % 3],
      })),
    );
    const { f } = features({ token: 'stranger' });
    expect(familiarity(early, population(), f, T0).device.llr).toBeGreaterThan(
      familiarity(recent, population(), f, T0).device.llr + 0.5,
    );
  });

  it('with a client fingerprint, a new kind of device counts as new once in the software levels; without one, at every level', () => {
    const b = habitual();
    const phone = familiarity(
      b,
      population(),
      features({ token: 'alice-phone', headers: browser(IPHONE) }).f,
      T0,
    ).software;
    const headersOnly = familiarity(b, population(), features({ headers: browser(IPHONE) }).f, T0).software;
    expect(phone.firstUnseen).toBe('dt');
    expect(headersOnly.firstUnseen).toBe('dt');
    // The device type's own surprise (one kind shown so far: a novelty of one), and nothing below it.
    expect(phone.llr).toBeCloseTo(Math.log(atTime(b.n, T0) + 1), 6);
    expect(headersOnly.llr).toBeGreaterThan(phone.llr + 3);
  });

  it('names the coarsest level the user had never shown', () => {
    const b = habitual();
    const at = (call: Call) =>
      chainRatio(
        b,
        population(),
        [
          { level: 'cc', value: features(call).f.values.cc },
          { level: 'asn', value: features(call).f.values.asn },
        ],
        T0,
      ).firstUnseen;
    expect(at({})).toBeNull();
    expect(at({ net: OTHER_ISP })).toBe('asn');
    expect(at({ net: PARIS })).toBe('cc');
  });

  describe("operators shared with strangers do not widen the user's own range", () => {
    const VPN_B: Net = { ip: '146.70.12.9', asn: 212238, cc: 'GB', lat: 51.5, lon: -0.1, vpn: true };
    const ISP_B: Net = { ip: '82.132.2.9', asn: 12576, cc: 'GB', lat: 51.5, lon: -0.1, city: 'London' };
    const ISP_C: Net = { ip: '2.96.1.9', asn: 5607, cc: 'GB', lat: 51.5, lon: -0.1, city: 'London' };
    /** The user's provider's exit, once from an address it also places in the user's city (its residential range). */
    const VPN_PLACED: Net = { ...VPN, ip: '185.159.100.9', vpn: false, city: 'London' };
    const MOBILE: Net = { ip: '92.40.7.3', asn: 25135, cc: 'GB', lat: 51.5, lon: -0.1, city: 'London' };
    const NEW_VPN: Net = { ip: '193.32.1.9', asn: 39351, cc: 'GB', lat: 51.5, lon: -0.1, vpn: true };
    /** Thirty days from home on the laptop, another ISP every fifth day, and two more operators on two days each. */
    const user = (third: Net, fourth: Net): Behaviour =>
      history(
        Array.from({ length: 30 }, (_, k) => ({
          at: T0 - (30 - k) * DAY,
          token: 'alice-laptop',
          net: k % 10 === 3 ? third : k % 10 === 7 ? fourth : k % 5 === 0 ? OTHER_ISP : HOME,
        })),
      );
    const network = (b: Behaviour, net: Net) =>
      familiarity(b, population(), features({ net, token: 'alice-laptop' }).f, T0).network.llr;

    it.each<[string, [Net, Net], [Net, Net], Net, 'same' | 'less surprising']>([
      [
        'a new mobile operator: two VPN providers count as no operators of the user',
        [VPN, VPN_B],
        [HOME, HOME],
        MOBILE,
        'same',
      ],
      [
        'a new mobile operator: two more home operators make it less surprising',
        [ISP_B, ISP_C],
        [VPN, VPN_B],
        MOBILE,
        'less surprising',
      ],
      [
        "a new VPN provider: the user's VPN habit makes it less surprising",
        [VPN, VPN_B],
        [HOME, HOME],
        NEW_VPN,
        'less surprising',
      ],
      [
        "a provider that also placed the user at home counts as the user's own operator",
        [VPN_PLACED, VPN_B],
        [ISP_B, VPN_B],
        MOBILE,
        'same',
      ],
    ])('%s', (_name, a, b, net, expected) => {
      const llrA = network(user(...a), net);
      const llrB = network(user(...b), net);
      expect(features({ net }).f.values.asn).not.toBeNull();
      if (expected === 'same') expect(llrA).toBeCloseTo(llrB, 9);
      else expect(llrA).toBeLessThan(llrB - 0.3);
    });

    it('the anonymising operator is recorded from VPN, Tor and data-centre addresses only', () => {
      expect(features({ net: VPN }).f.values.ao).toBe('AS9009');
      expect(features({ net: TOR }).f.values.ao).toBe('AS208294');
      expect(features({ net: CLOUD }).f.values.ao).toBe('AS16509');
      expect(features({ net: HOME }).f.values.ao).toBeNull();
    });
  });

  it('finds the values an attacker already used against the account', () => {
    const b = habitual();
    const { f } = features({ net: CLOUD });
    expect(hostileMatch(b, f, T0).levels).toEqual([]);
    b.hostile.ip = { [CLOUD.ip]: { c: 2 * epochWeight(T0 - DAY), l: T0 - DAY } };
    const m = hostileMatch(b, f, T0);
    expect(m.levels).toEqual(['ip']);
    expect(m.weight).toBeCloseTo(2, 1);
  });

  it('evicts the least used value of a full table, never for a value it holds', () => {
    const table = { a: { c: 5, l: 1 }, b: { c: 1, l: 2 }, c: { c: 3, l: 3 } };
    expect(evictionCandidate(table, 3, 'd')).toBe('b');
    expect(evictionCandidate(table, 3, 'a')).toBeNull();
    expect(evictionCandidate(table, 4, 'd')).toBeNull();
  });

  it('pairs a challenge answer with the latest challenge of the day before it', () => {
    const b = emptyBehaviour();
    b.pending = {
      old: { at: T0 - 2 * DAY, values: {}, tentative: 0 },
      recent: { at: T0 - 60_000, values: {}, tentative: 0 },
      older: { at: T0 - 3_600_000, values: {}, tentative: 0 },
    };
    expect(answeredChallenge(b, T0)?.[0]).toBe('recent');
    expect(answeredChallenge(b, T0 + 3 * DAY)).toBeNull();
  });
});

describe('attack-population evidence (one signal each)', () => {
  it.each([
    ['a clean browser from home', {}, 'login', []],
    ['Tor', { net: TOR }, 'login', ['proxy_ip']],
    ['a cloud server', { net: CLOUD }, 'login', ['proxy_ip']],
    ['a commercial VPN', { net: VPN }, 'login', ['proxy_ip']],
    [
      'an HTTP library',
      { headers: { 'User-Agent': 'python-requests/2.31.0', Accept: '*/*' } },
      'preauth',
      ['bot_behavior'],
    ],
    [
      'a headless browser',
      { headers: browser(CHROME.replace('Chrome/', 'HeadlessChrome/')) },
      'preauth',
      ['headless_browser'],
    ],
    [
      'a crawler',
      {
        headers: { 'User-Agent': 'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)' },
      },
      'login',
      ['web_crawler'],
    ],
    [
      'Chrome without Sec-Fetch or client hints',
      { headers: { 'User-Agent': CHROME, Accept: 'text/html', 'Accept-Language': 'en' } },
      'login',
      ['missing_headers'],
    ],
    [
      'client hints naming another platform',
      { headers: { ...browser(), 'sec-ch-ua-platform': '"Linux"' } },
      'login',
      ['spoofed_device'],
    ],
    [
      'client hints from Firefox',
      { headers: { ...browser(FIREFOX), 'sec-ch-ua': '"Chromium";v="124"' } },
      'login',
      ['spoofed_device'],
    ],
    [
      'a throw-away address at sign-up',
      { email: 'x@mailinator.com', name: '$registration' },
      'registration',
      ['disposable_email'],
    ],
  ] as const)('%s', (_name, call, kind, expected) => {
    expect(fired(requestEvidence(evidenceInput(call as Call, kind)))).toEqual(expected);
  });

  it('missing headers count only where this application usually forwards them', () => {
    const bare = { headers: { 'User-Agent': CHROME, Accept: 'text/html', 'Accept-Language': 'en' } };
    expect(
      fired(
        requestEvidence(
          evidenceInput(bare, 'login', {
            headers: { events: 5000, acceptLanguage: 1, secFetch: 0.1, clientHints: 0.1 },
          }),
        ),
      ),
    ).toEqual([]);
    expect(fired(requestEvidence(evidenceInput(bare, 'login', { headers: null })))).toEqual([]);
  });

  it.each([
    // share of this browser's logins that carry Sec-Fetch-*, weight of a login without them
    [0.89, null],
    [0.9, Math.log(5)],
    [0.95, Math.log(10)],
    [0.96, Math.log(12.5)],
    [0.98, 3],
    [1, 3],
  ])('Chrome without Sec-Fetch-*, where %s of its logins carry them, counts %s', (share, weight) => {
    const noSecFetch = {
      headers: Object.fromEntries(
        Object.entries(browser()).filter(([name]) => !name.toLowerCase().startsWith('sec-fetch')),
      ),
    };
    const missing = requestEvidence(
      evidenceInput(noSecFetch, 'preauth', {
        headers: { events: 5000, acceptLanguage: 1, secFetch: share, clientHints: 1 },
      }),
    ).filter((c) => c.signal === 'missing_headers');
    if (weight === null) expect(missing).toEqual([]);
    else expect(missing.map((c) => c.weight)).toEqual([expect.closeTo(weight, 9)]);
  });

  it('several missing groups add up to at most 3', () => {
    const bare = { headers: { 'User-Agent': CHROME, Accept: 'text/html' } };
    const [missing] = requestEvidence(
      evidenceInput(bare, 'preauth', {
        headers: { events: 5000, acceptLanguage: 0.9, secFetch: 0.9, clientHints: 0.9 },
      }),
    ).filter((c) => c.signal === 'missing_headers');
    expect(missing?.detail.missing).toBe('accept-language, sec-fetch-*, sec-ch-ua');
    expect(missing?.weight).toBe(3);
  });

  it('no client token where nearly every legitimate login of the environment carries one', () => {
    const bare = { user: null };
    const signals = (share: number, events = 5000, call: Call = bare) =>
      fired(requestEvidence(evidenceInput(call, 'preauth', { fingerprints: { events, share } })));
    expect(signals(0.995)).toEqual(['missing_fingerprint']);
    // Many of its logins come without one (a native app, a page without the SDK), or too few seen.
    expect(signals(0.6)).toEqual([]);
    expect(signals(0.995, 20)).toEqual([]);
    // This one has a token.
    expect(signals(0.995, 5000, { user: null, token: 'some-device' })).toEqual([]);
  });

  it('no token from a user whose own app logins mostly came without one (a release without the client) is their habit, not missing_fingerprint', () => {
    const signals = (tokenlessHabit: boolean) =>
      fired(
        requestEvidence(
          evidenceInput({ user: null }, 'preauth', {
            fingerprints: { events: 5000, share: 0.995 },
            tokenlessHabit,
          }),
        ),
      );
    expect(signals(false)).toEqual(['missing_fingerprint']);
    expect(signals(true)).toEqual([]);
  });

  it.each([
    ['always a token', 10, 0, false],
    ['an old app release: never a token', 0, 6, true],
    ['web with a token, the old app without one', 6, 4, true],
    ['once without, long ago or rarely', 20, 1, false],
  ] as const)("a user's tokenless habit: %s", (_name, carried, without, expected) => {
    const b = history([
      ...Array.from({ length: carried }, (_, k) => ({ at: T0 - (k + 1) * 3_600_000, token: 'phone-1' })),
      ...Array.from({ length: without }, (_, k) => ({ at: T0 - (k + 1) * 3_600_000 - 1 })),
    ]);
    expect(tokenlessHabit(b, T0)).toBe(expected);
  });

  it('a Rampart client token: replayed or invalid, automation the browser showed, a swapped user agent', () => {
    const clean = {
      problem: null,
      automation: [],
      userAgentMismatch: false,
      languageMismatch: false,
      timezoneGapHours: null,
    };
    const signals = (client: Partial<NonNullable<EvidenceInput['client']>>) =>
      fired(requestEvidence(evidenceInput({}, 'login', { client: { ...clean, ...client } })));
    expect(signals({})).toEqual([]);
    expect(signals({ problem: 'replayed' })).toEqual(['replayed_token']);
    for (const problem of ['forged', 'malformed', 'expired', 'not_yet_valid', 'other_environment'] as const)
      expect(signals({ problem })).toEqual(['invalid_token']);
    expect(signals({ automation: ['webdriver'] })).toEqual(['bot_behavior']);
    expect(signals({ automation: ['headless_window'] })).toEqual(['headless_browser']);
    expect(signals({ automation: ['tampered_natives'] })).toEqual(['spoofed_device']);
    expect(signals({ userAgentMismatch: true })).toEqual(['spoofed_device']);
    expect(signals({ languageMismatch: true })).toEqual(['spoofed_device']);
    expect(signals({ timezoneGapHours: 9 })).toEqual(['spoofed_device']);
    expect(signals({ timezoneGapHours: 2 })).toEqual([]);
    // A clock far from the address is evidence, never alone a deny (a traveller's laptop).
    expect(
      riskLevel(assess(assessInput({}, { client: { ...clean, timezoneGapHours: 9 } }), 'login', T0).risk),
    ).not.toBe('high');
  });

  describe('unproven_client: a browser token without the proof of work, or from a page no person touched, where nearly every legitimate login has them', () => {
    const clean = {
      problem: null,
      automation: [],
      userAgentMismatch: false,
      languageMismatch: false,
      timezoneGapHours: null,
    };
    const person: ProofBehaviour = {
      elapsedMs: 9400,
      keys: 23,
      pointer: 2,
      pastes: 0,
      inputs: 21,
      password: 'typed',
      ahead: false,
    };
    const untouched: ProofBehaviour = {
      elapsedMs: 310,
      keys: 0,
      pointer: 0,
      pastes: 0,
      inputs: 0,
      password: 'filled',
      ahead: false,
    };
    /** 5,000 legitimate logins with browser tokens, 99.5% with a proof and 99.5% with a person on the page. */
    const habit = (over: Partial<ProofEvidence['habit']> = {}): ProofEvidence['habit'] => ({
      events: 5000,
      proved: 0.995,
      reported: 5000,
      interacted: 0.995,
      ...over,
    });
    const unproven = (
      proof: ProofEvidence | null,
      kind: EventKind = 'login',
      client: Partial<NonNullable<EvidenceInput['client']>> = {},
    ) =>
      requestEvidence(evidenceInput({}, kind, { client: { ...clean, proof, ...client } })).filter(
        (c) => c.signal === 'unproven_client',
      );

    it('no proof of work, where nearly every legitimate login with a token has one: up to 2.5 as that share goes from 90% to 99%', () => {
      expect(unproven({ bits: null, behaviour: null, habit: habit() })).toEqual([
        {
          signal: 'unproven_client',
          weight: 2.5,
          detail: {
            reason: 'no_proof_of_work',
            expected_by: 'environment',
            share_with_proof: 0.995,
            behaviour: 'absent',
          },
        },
      ]);
      expect(
        unproven({ bits: null, behaviour: null, habit: habit({ proved: 0.945 }) })[0]?.weight,
      ).toBeCloseTo(1.25, 5);
      expect(unproven({ bits: null, behaviour: person, habit: habit() })[0]?.detail).toMatchObject({
        behaviour: 'reported',
      });
    });

    it.each<[string, ProofEvidence | null, EventKind, Partial<NonNullable<EvidenceInput['client']>>]>([
      ['the token carries a proof', { bits: 17, behaviour: person, habit: habit() }, 'login', {}],
      [
        'many legitimate logins come without one (old pages, other integrations, an evaluation posting components)',
        { bits: null, behaviour: null, habit: habit({ proved: 0.6 }) },
        'login',
        {},
      ],
      [
        'too few legitimate logins with tokens to tell',
        { bits: null, behaviour: null, habit: habit({ events: 40 }) },
        'login',
        {},
      ],
      [
        'an event that is no attempt (a logout, a profile update)',
        { bits: null, behaviour: null, habit: habit() },
        'other',
        {},
      ],
      [
        'a token that does not verify (invalid_token says so)',
        { bits: null, behaviour: null, habit: habit() },
        'login',
        { problem: 'forged' },
      ],
      [
        'a replayed token (replayed_token says so)',
        { bits: null, behaviour: null, habit: habit() },
        'login',
        { problem: 'replayed' },
      ],
      ["no proof evidence at all (a native app's token)", null, 'login', {}],
    ])('not when %s', (_name, proof, kind, client) => {
      expect(unproven(proof, kind, client)).toEqual([]);
    });

    it('a page no person touched, where nearly every legitimate login had a person on it: up to 1.5 (password managers that fill and submit are people too)', () => {
      const [c] = unproven({ bits: 17, behaviour: untouched, habit: habit() });
      expect(c).toEqual({
        signal: 'unproven_client',
        weight: 1.5,
        detail: {
          reason: 'no_user_input',
          expected_by: 'environment',
          share_with_input: 0.995,
          time_on_page_ms: 310,
          keys: 0,
          pointer: 0,
          pastes: 0,
          inputs: 0,
          password: 'filled',
        },
      });
      // A pasted password is a person; so is one pointer press.
      expect(unproven({ bits: 17, behaviour: { ...untouched, password: 'pasted' }, habit: habit() })).toEqual(
        [],
      );
      expect(unproven({ bits: 17, behaviour: { ...untouched, pointer: 1 }, habit: habit() })).toEqual([]);
      // A token kept ready ahead of any request (Castle's names): no person is expected yet.
      expect(unproven({ bits: 17, behaviour: { ...untouched, ahead: true }, habit: habit() })).toEqual([]);
      // Where a tenth of the legitimate logins are filled and submitted by password managers, it says nothing.
      expect(unproven({ bits: 17, behaviour: untouched, habit: habit({ interacted: 0.88 }) })).toEqual([]);
      expect(unproven({ bits: 17, behaviour: untouched, habit: habit({ reported: 30 }) })).toEqual([]);
      // No behaviour reported at all (a client of its own that proves work): nothing to weigh.
      expect(unproven({ bits: 17, behaviour: null, habit: habit() })).toEqual([]);
    });

    it("a browser whose pages named many accounts over the week (castle-js's events): multiple_accounts_per_device, as an install's accounts", () => {
      const accounts = (n: number | undefined, kind: EventKind = 'login') =>
        requestEvidence(
          evidenceInput({}, kind, {
            client: {
              ...clean,
              proof: {
                bits: 17,
                behaviour: person,
                habit: habit(),
                ...(n === undefined ? {} : { accounts: n }),
              },
            },
          }),
        ).filter((c) => c.signal === 'multiple_accounts_per_device');
      expect(accounts(6)).toEqual([
        {
          signal: 'multiple_accounts_per_device',
          weight: 3.5,
          detail: { by: 'browser_events', accounts: 6, window_days: 7 },
        },
      ]);
      expect(accounts(4)[0]?.weight).toBeCloseTo(1.75, 5);
      // Any event kind: one profile for many accounts is the device's, not the login's.
      expect(accounts(6, 'other')).toHaveLength(1);
      // Its own user, a couple sharing a laptop, a page that sends no events: nothing.
      expect(accounts(1)).toEqual([]);
      expect(accounts(2)).toEqual([]);
      expect(accounts(0)).toEqual([]);
      expect(accounts(undefined)).toEqual([]);
    });

    it('counts once: no proof is the reason, whatever the page reported', () => {
      expect(
        unproven({ bits: null, behaviour: untouched, habit: habit() }).map((c) => c.detail.reason),
      ).toEqual(['no_proof_of_work']);
    });

    it('alone it challenges at most, never denies (privacy tools and old pages exist)', () => {
      const input = assessInput(
        { token: 'some-device' },
        { client: { ...clean, proof: { bits: null, behaviour: untouched, habit: habit() } } },
      );
      const r = assess(input, 'login', T0);
      expect(r.signals).toMatchObject({ unproven_client: { reason: 'no_proof_of_work' } });
      expect(riskLevel(r.risk)).not.toBe('high');
    });

    it('what the population learns: legitimate logins with browser tokens, proved or not, a person on the page or not', () => {
      const login: Outcome = {
        attempt: true,
        failure: false,
        success: true,
        registration: false,
        unknownAccount: false,
        credentialed: true,
        stopped: false,
        challengeFeedback: false,
        account: 'alice',
      };
      const flags = { acceptLanguage: true, secFetch: true, clientHints: true };
      const { f } = features({ token: 'some-device' });
      const keys = (browserToken: Features['browserToken'], o: Outcome = login) =>
        counterBumps({ ...f, browserToken }, o, NO_SNAPSHOTS, T0, flags)
          .map((b) => b.key)
          .filter((k) => /^p:(pow|ui):/.test(k));
      expect(keys({ proved: true, interacted: true })).toEqual(['p:pow:y', 'p:ui:y']);
      expect(keys({ proved: false, interacted: null })).toEqual(['p:pow:n']);
      expect(keys({ proved: true, interacted: false })).toEqual(['p:pow:y', 'p:ui:n']);
      expect(keys(null)).toEqual([]);
      expect(keys({ proved: true, interacted: true }, { ...login, success: false, failure: true })).toEqual(
        [],
      );
      expect(keysToRead({ ...f, browserToken: { proved: false, interacted: null } }, null)).toEqual(
        expect.arrayContaining(['p:pow:y', 'p:pow:n', 'p:ui:y', 'p:ui:n']),
      );
      expect(keysToRead({ ...f, browserToken: null }, null).filter((k) => /^p:(pow|ui):/.test(k))).toEqual(
        [],
      );
      // A verified browser token's device: its pages' events are read with the rest (pageAccounts).
      expect(
        keysToRead({ ...f, browserToken: { proved: true, interacted: true, deviceKey: 'dk-1' } }, null),
      ).toContain('i:dk-1');
      expect(
        keysToRead({ ...f, browserToken: { proved: true, interacted: true } }, null).filter((k) =>
          k.startsWith('i:'),
        ),
      ).toEqual([]);
      // Read back as shares (decayed counts: 30 with a proof, 10 without; 24 with a person, 6 without).
      const w = epochWeight(T0, POPULATION_HALF_LIFE_MS);
      const snap = (c: number): CounterSnapshot => ({ counts: { c: c * w }, sets: {} });
      const s: Snapshots = new Map([
        ['p:pow:y', snap(30)],
        ['p:pow:n', snap(10)],
        ['p:ui:y', snap(24)],
        ['p:ui:n', snap(6)],
      ]);
      const h = proofHabit(s, T0);
      expect(h.events).toBeCloseTo(40, 5);
      expect(h.proved).toBeCloseTo(0.75, 5);
      expect(h.reported).toBeCloseTo(30, 5);
      expect(h.interacted).toBeCloseTo(0.8, 5);
    });

    it("an event's features say what its token proved", () => {
      const withClient = (client: EventInput['client']) => {
        const e = { ...event({ token: 'rp-device' }), client };
        return extractFeatures(e, intel(HOME), parseUserAgent(e.context.userAgent), deviceKey(e))
          .browserToken;
      };
      const base = {
        problem: null,
        jti: 'j',
        automation: [],
        userAgentHash: 'u',
        language: null,
        timezoneOffset: null,
      };
      expect(withClient({ ...base, proof: 17, behaviour: person })).toEqual({
        proved: true,
        interacted: true,
      });
      expect(withClient({ ...base, proof: null, behaviour: untouched })).toEqual({
        proved: false,
        interacted: false,
      });
      expect(withClient({ ...base, proof: 17, behaviour: { ...untouched, ahead: true } })).toEqual({
        proved: true,
        interacted: null,
      });
      expect(withClient({ ...base, problem: 'expired', jti: null })).toBeNull();
      expect(withClient(null)).toBeNull();
    });
  });

  describe("language_country_mismatch: a browser language rare in the address's country, for an account without history", () => {
    // 10,000 legitimate events; 2,000 from Britain. English (en-us) is 30% of all events and 4 of
    // Britain's 2,000 (Britain asks for en-gb); Japanese is 0.5% of all and 1% of Britain's.
    const counts = (inCountry: number, overall: number, country = 2000) => ({ country, inCountry, overall });
    const mismatch = (
      kind: EventKind,
      language: EvidenceInput['language'],
      over: Partial<EvidenceInput> = {},
    ) =>
      requestEvidence(
        evidenceInput({ headers: browser(CHROME, 'en-US,en;q=0.9') }, kind, { language, ...over }),
      ).find((c) => c.signal === 'language_country_mismatch');
    it.each([
      ['a sign-up asking for a language Britain rarely asks for', 'registration', counts(4, 0.3), {}, true],
      [
        'a pre-auth check for an account Rampart does not know',
        'preauth',
        counts(4, 0.3),
        { unknownAccount: true },
        true,
      ],
      [
        "a known account (its own language is the behavioural model's: a traveller asks for theirs)",
        'preauth',
        counts(4, 0.3),
        {},
        false,
      ],
      ["the country's own language", 'registration', counts(1800, 0.3), {}, false],
      [
        'a language rare everywhere and as common here: 1% of Britain, 0.5% overall, at least 5% for a tool',
        'registration',
        counts(20, 0.005),
        {},
        true,
      ],
      [
        'a language a third of the country asks for (as often as overall)',
        'registration',
        counts(700, 0.3),
        {},
        false,
      ],
      ['a country with too few legitimate events to tell', 'registration', counts(0, 0.3, 150), {}, false],
      ['no language or no country', 'registration', null, {}, false],
    ] as const)('%s', (_name, kind, language, over, fires) => {
      const c = mismatch(kind, language, over);
      if (!fires) return expect(c).toBeUndefined();
      expect(c!.weight).toBeGreaterThanOrEqual(0.5);
      // Soft evidence: alone it challenges no one.
      expect(c!.weight).toBeLessThanOrEqual(1.5);
      expect(c!.detail).toMatchObject({ language: 'en-us', country: 'GB' });
    });

    it('is counted per country and language from legitimate events, and read with the other population entries', () => {
      const { f } = features({ headers: browser(CHROME, 'en-US,en;q=0.9') });
      expect(keysToRead(f, null)).toContain('p:cl:GB|en-us');
      const success: Outcome = {
        attempt: true,
        failure: false,
        success: true,
        registration: false,
        unknownAccount: false,
        stopped: false,
        challengeFeedback: false,
        account: 'alice',
      };
      expect(
        counterBumps(f, success, NO_SNAPSHOTS, T0, {
          acceptLanguage: true,
          secFetch: true,
          clientHints: true,
        }).map((b) => b.key),
      ).toContain('p:cl:GB|en-us');
      expect(
        counterBumps(f, { ...success, success: false, failure: true }, NO_SNAPSHOTS, T0, {
          acceptLanguage: true,
          secFetch: true,
          clientHints: true,
        }).map((b) => b.key),
      ).not.toContain('p:cl:GB|en-us');
      // Read back as the evidence needs it.
      const epoch = epochWeight(T0, POPULATION_HALF_LIFE_MS);
      const s = snaps({
        'p:*': { counts: { c: 10_000 * epoch }, sets: {} },
        'p:cc:GB': { counts: { c: 2000 * epoch }, sets: {} },
        'p:cl:GB|en-us': { counts: { c: 4 * epoch }, sets: {} },
        'p:lang:en-us': { counts: { c: 3000 * epoch }, sets: {} },
      });
      const l = languageCounts(populationCounts(s, T0), f)!;
      expect(l.country).toBeCloseTo(2000, 6);
      expect(l.inCountry).toBeCloseTo(4, 6);
      expect(l.overall).toBeCloseTo(0.3, 6);
    });
  });

  it('a VPN the user habitually uses counts for less', () => {
    const weight = (familiarAsn: boolean) =>
      requestEvidence(evidenceInput({ net: VPN }, 'login', { familiarAsn }))[0]!.weight;
    expect(weight(true)).toBeLessThan(weight(false) / 2);
  });
});

describe('native apps', () => {
  const OKHTTP = { 'User-Agent': 'okhttp/4.12.0', Accept: 'application/json', 'Accept-Encoding': 'gzip' };
  const habits = (credentialed: number, failed: number) => ({
    events: credentialed + failed,
    acceptLanguage: 0,
    secFetch: 0,
    clientHints: 0,
    credentialed,
    failed,
  });
  const appSignals = (over: Partial<EvidenceInput>, headers: Record<string, string> = OKHTTP) =>
    requestEvidence(evidenceInput({ headers }, 'login', over)).filter((c) => c.weight > 0);

  it.each([
    // the application's users' logins with this stack (right password, failed), the environment, what counts
    ['learned: its logins mostly had the right password', habits(40, 3), ENV, undefined, null],
    [
      'a young environment: its first app users are arriving',
      habits(2, 0),
      { ...ENV, legit: 30 },
      undefined,
      1,
    ],
    ['a settled environment that lists its apps (a new app launching)', habits(0, 0), ENV, true, 1],
    ['a settled environment whose users never logged in with it', habits(0, 0), ENV, undefined, 3],
    [
      'a stuffing tool borrowing the stack: a few right passwords among hundreds of failures',
      habits(12, 400),
      ENV,
      undefined,
      3,
    ],
  ] as const)('an HTTP stack of native apps without a token: %s', (_name, h, env, appsDeclared, weight) => {
    const bot = appSignals({ headers: h, env, ...(appsDeclared ? { appsDeclared } : {}) }).filter(
      (c) => c.signal === 'bot_behavior',
    );
    if (weight === null) expect(bot).toEqual([]);
    else
      expect(bot).toEqual([
        expect.objectContaining({
          weight,
          detail: expect.objectContaining({ reason: 'unfamiliar_app_client', client: 'okhttp' }),
        }),
      ]);
  });

  it('a script stays a bot whatever the environment learnt', () => {
    const bot = appSignals({ headers: habits(500, 0) }, { 'User-Agent': 'python-requests/2.31.0' }).find(
      (c) => c.signal === 'bot_behavior',
    );
    expect(bot).toMatchObject({ weight: 6, detail: { reason: 'automation_user_agent' } });
  });

  const clean = {
    problem: null,
    automation: [],
    userAgentMismatch: false,
    languageMismatch: false,
    timezoneGapHours: null,
  };
  const mobile = (over: Partial<NonNullable<NonNullable<EvidenceInput['client']>['mobile']>> = {}) => ({
    client: {
      ...clean,
      mobile: {
        integrity: [],
        activity: { installs: 1, opens: 12, screens: 40, events: 80, accounts: 1, first: T0 - 30 * DAY },
        accounts: 1,
        habit: { events: 500, announced: 0.995, screens: 0.97 },
        platformMismatch: false,
        ...over,
      },
    },
  });

  it('with a valid mobile token no user-agent rule calls the request automated', () => {
    expect(fired(appSignals({ ...mobile(), headers: habits(0, 0) }))).toEqual([]);
    expect(
      fired(appSignals({ ...mobile(), headers: habits(0, 0) }, { 'User-Agent': 'python-requests/2.31.0' })),
    ).toEqual([]);
    // A token that does not verify vouches for nothing.
    expect(
      fired(appSignals({ client: { ...mobile().client, problem: 'forged' }, headers: habits(0, 0) })),
    ).toEqual(['bot_behavior', 'invalid_token']);
  });

  it.each([
    ['an emulator', { integrity: ['emulator'] }, ['emulator']],
    ['a hooking framework in the app', { integrity: ['hooking_framework'] }, ['spoofed_device']],
    ['a rooted phone', { integrity: ['rooted'] }, ['compromised_device']],
    [
      'a token for another platform than the user agent names',
      { platformMismatch: true },
      ['spoofed_device'],
    ],
    ['an install that never announced itself, where nearly all do', { activity: null }, ['no_app_activity']],
    [
      'an install that never announced itself, before the environment knows the habit',
      { activity: null, habit: { events: 10, announced: 1, screens: 1 } },
      [],
    ],
    [
      'an install that never announced itself, where many do not (events dropped on the way)',
      { activity: null, habit: { events: 500, announced: 0.7, screens: 0.6 } },
      [],
    ],
    [
      'an install that opened twice this week but never showed a screen, where nearly all did',
      { activity: { installs: 1, opens: 2, screens: 0, events: 3, accounts: 0, first: T0 } },
      ['no_app_activity'],
    ],
    [
      'a fresh install at its first open, its screens still queued (the documented flush triggers)',
      { activity: { installs: 1, opens: 1, screens: 0, events: 2, accounts: 0, first: T0 } },
      [],
    ],
    [
      'an install that never showed a screen, in an application that does not track screens',
      {
        activity: { installs: 1, opens: 3, screens: 0, events: 4, accounts: 0, first: T0 },
        habit: { events: 500, announced: 0.99, screens: 0 },
      },
      [],
    ],
    ['one install, six accounts this week', { accounts: 6 }, ['multiple_accounts_per_device']],
    ['one install shared by two people', { accounts: 2 }, []],
  ] as const)('a mobile token: %s', (_name, over, expected) => {
    expect(fired(appSignals({ ...mobile(over as never), headers: habits(50, 1) }))).toEqual(expected);
  });

  it("weighs an install that never opened the app by how surely the application's own installs do, up to 2.8; no screens less", () => {
    const weight = (announced: number) =>
      appSignals(mobile({ activity: null, habit: { events: 500, announced, screens: 0.5 } })).find(
        (c) => c.signal === 'no_app_activity',
      )?.weight ?? 0;
    expect(weight(0.89)).toBe(0);
    expect(weight(0.95)).toBeGreaterThan(0);
    expect(weight(0.999)).toBeCloseTo(2.8, 6);
    const screens = appSignals(
      mobile({
        activity: { installs: 1, opens: 2, screens: 0, events: 3, accounts: 0, first: T0 },
        habit: { events: 500, announced: 1, screens: 1 },
      }),
    ).find((c) => c.signal === 'no_app_activity');
    expect(screens?.weight).toBeCloseTo(1.5, 6);
  });

  it('the first app user of a new environment is let in; a settled one challenges a stack its users never used, and denies it with evidence of an attack', () => {
    const level = (over: Partial<AssessInput>, call: Call = { headers: OKHTTP }) =>
      riskLevel(assess(assessInput(call, over), 'login', T0).risk);
    expect(level({ env: { ...ENV, legit: 5 }, headers: habits(0, 0) })).toBe('low');
    expect(level({ headers: habits(0, 0) })).toBe('medium');
    expect(level({ headers: habits(0, 0) }, { headers: OKHTTP, net: CLOUD })).toBe('high');
    expect(level({ headers: habits(40, 2) })).toBe('low');
  });

  it("one install used for many accounts counts once, the week's or the hour's", () => {
    const w = { dev: window({ accounts: 6, attempts: 6 }) };
    const c = assess(
      assessInput(
        { headers: OKHTTP, token: 'some-device' },
        { ...mobile({ accounts: 6 }), windows: w, headers: habits(50, 1) },
      ),
      'login',
      T0,
    ).contributions;
    expect(c.filter((x) => x.signal === 'multiple_accounts_per_device')).toHaveLength(1);
  });

  it("an app's HTTP stack without the Accept-Encoding it always adds, where the application's logins with it carry one", () => {
    const bare = { 'User-Agent': 'okhttp/4.12.0', Accept: '*/*' };
    const missing = (share: number) =>
      appSignals({ headers: { ...habits(50, 1), events: 1000, acceptEncoding: share } }, bare).filter(
        (c) => c.signal === 'missing_headers',
      );
    expect(missing(0.99)).toEqual([expect.objectContaining({ detail: { missing: 'accept-encoding' } })]);
    expect(missing(0.5)).toEqual([]);
  });

  describe('an app release from before the client: judged as its own traffic, not against the token users', () => {
    const IOS = (build: string) => ({
      'User-Agent': `ShopApp/${build} CFNetwork/1498.700.2 Darwin/23.6.0`,
      Accept: 'application/json',
      'Accept-Language': 'en-GB',
      'Accept-Encoding': 'gzip, deflate, br',
    });
    /** The environment's counts: its apps' legitimate events with and without a token, and per release. */
    const counters = (apps: [number, number], releases: Record<string, [number, number]> = {}) => {
      const w = (n: number) => n * epochWeight(T0, POPULATION_HALF_LIFE_MS);
      const docs: Record<string, CounterSnapshot> = {
        'p:fpa:y': { counts: { c: w(apps[0]) }, sets: {} },
        'p:fpa:n': { counts: { c: w(apps[1]) }, sets: {} },
      };
      for (const [release, [y, n]] of Object.entries(releases))
        docs[`p:fpr:${release}`] = { counts: { y: w(y), n: w(n) }, sets: {} };
      return snaps(docs);
    };
    const firstLogin = (headers: Record<string, string>, s: Snapshots) => {
      const { f } = features({ headers });
      const out = requestEvidence(
        evidenceInput({ headers }, 'login', {
          fingerprints: appFingerprintShare(s, T0, f.release),
          headers: { ...habits(500, 10), events: 510, acceptLanguage: 1, acceptEncoding: 1 },
        }),
      );
      return out.find((c) => c.signal === 'missing_fingerprint');
    };
    // 5,000 legitimate app logins, 97% with a token; release 304 (before the client) brought 150 of
    // those without one, release 331 4,000 with one and 2 without.
    const env = () =>
      counters([4850, 150], {
        'CFNetwork|ShopApp/304': [0, 148],
        'CFNetwork|ShopApp/331': [4000, 2],
      });

    it.each([
      [
        'an iOS app names its bundle version',
        'ShopApp/304 CFNetwork/1498.700.2 Darwin/23.6.0',
        'CFNetwork|ShopApp/304',
      ],
      [
        'an Android app that names itself, by its version',
        'ShopApp/3.2.1 (Android 14; Pixel 8) okhttp/4.12.0',
        'okhttp|ShopApp/3.2.1',
      ],
      ['OkHttp alone: many releases send it alike', 'okhttp/4.12.0', null],
      [
        "Android's own stack says the OS, not the app",
        'Dalvik/2.1.0 (Linux; U; Android 14; Pixel 8 Build/AP2A)',
        null,
      ],
      ['a browser', CHROME, null],
    ])('the release a user agent names: %s', (_name, ua, release) => {
      expect(appReleaseOf(parseUserAgent(ua).app ?? null)).toBe(release);
      expect(features({ headers: { 'User-Agent': ua } }).f.release).toBe(release);
    });

    it('a first login from the old release without a token: no missing_fingerprint', () => {
      expect(firstLogin(IOS('304'), env())).toBeUndefined();
    });

    it('the current release without a token (its headers replayed without one): missing_fingerprint', () => {
      expect(firstLogin(IOS('331'), env())).toMatchObject({
        detail: { expected_by: 'environment', release: 'CFNetwork|ShopApp/331' },
      });
      // Its own share is 99.3%: the full weight.
      expect(firstLogin(IOS('331'), env())?.weight).toBeCloseTo(2.8, 9);
    });

    it('a release never seen among legitimate logins (claimed by a tool) is judged as the apps are', () => {
      const claimed = firstLogin(IOS('299'), env());
      const apps = firstLogin(IOS('299'), counters([4850, 150]));
      expect(claimed?.weight).toBeGreaterThan(2);
      expect(claimed?.weight).toBeCloseTo(apps?.weight ?? 0, 9);
    });

    it("a release's habit is learned from its legitimate logins: one without a token weighs less, three none", () => {
      const weight = (without: number) =>
        firstLogin(IOS('304'), counters([4850, 150], { 'CFNetwork|ShopApp/304': [0, without] }))?.weight ?? 0;
      expect(weight(0)).toBeGreaterThan(2);
      expect(weight(1)).toBeGreaterThan(0);
      expect(weight(1)).toBeLessThan(weight(0) / 1.5);
      expect(weight(3)).toBe(0);
      // A release whose logins carry tokens keeps its habit whatever a few without one do.
      const current = (without: number) =>
        firstLogin(IOS('331'), counters([4850, 150], { 'CFNetwork|ShopApp/331': [4000, without] }))?.weight ??
        0;
      expect(current(3)).toBeGreaterThan(2.5);
    });

    it("counts each legitimate app login under its release, with or without a token, in the verdict's one look-up", () => {
      const { f } = features({ headers: IOS('304') });
      expect(keysToRead(f, null)).toContain('p:fpr:CFNetwork|ShopApp/304');
      expect(keysToRead(features().f, null).filter((k) => k.startsWith('p:fpr:'))).toEqual([]);
      const login: Outcome = {
        attempt: true,
        failure: false,
        success: true,
        registration: false,
        unknownAccount: false,
        credentialed: true,
        stopped: false,
        challengeFeedback: false,
        account: 'alice',
      };
      const flags = { acceptLanguage: true, secFetch: false, clientHints: false };
      const bump = (ff: Features, o: Outcome) =>
        counterBumps(ff, o, NO_SNAPSHOTS, T0, flags).find((b) => b.key.startsWith('p:fpr:'));
      expect(bump(f, login)?.inc).toEqual({ n: expect.any(Number) });
      expect(bump({ ...f, fingerprinted: true }, login)?.inc).toEqual({ y: expect.any(Number) });
      // A failed or stopped login teaches the release nothing (a tool claiming it cannot make it tokenless).
      expect(bump(f, { ...login, success: false, failure: true })).toBeUndefined();
    });
  });

  it('sign-ups from phones of one model, OS and screen: as from one device, beyond what the model brings', () => {
    const signup = (registrations: number, machineShare: number, perHour = 1) =>
      velocityEvidence(
        evidenceInput({ name: '$registration', headers: OKHTTP }, 'registration', {
          env: { ...ENV, registrationsPerHour: perHour },
          machineShare,
          windows: { mk: window({ registrations, attempts: registrations, accounts: registrations }) },
        }),
      ).find((c) => c.signal === 'registration_velocity');
    // One sign-up asked about twice (filter, then risk) is one sign-up.
    expect(signup(0, 0.001)).toBeUndefined();
    expect(signup(1, 0.001)).toBeUndefined();
    // A model that brings next to none an hour: a second sign-up within the hour weighs in full.
    expect(signup(2, 0.001)).toMatchObject({ detail: { by: 'machine' } });
    expect(signup(2, 0.001)?.weight).toBeCloseTo(3, 1);
    // A phone a third of the environment's users have, in an environment of 30 sign-ups an hour.
    expect(signup(3, 0.3, 30)).toBeUndefined();
    expect(signup(40, 0.3, 30)).toMatchObject({ detail: { by: 'machine' } });
  });

  it("a flood shaped like the user's own phone's requests is not that phone's doing", () => {
    const w = { shape: window({ accounts: 40, attempts: 400 }), env: window({ attempts: 500 }) };
    const burst = (ownDevice: boolean) =>
      fired(
        velocityEvidence(
          evidenceInput({ headers: OKHTTP }, 'login', { windows: w, shapeShare: 0.01, ownDevice }),
        ),
      );
    expect(burst(false)).toContain('request_shape_burst');
    expect(burst(true)).not.toContain('request_shape_burst');
  });

  it("a flood shaped like the user's own app client weighs, but alone never makes the user's login a deny", () => {
    const b = history(Array.from({ length: 20 }, (_, k) => ({ at: T0 - (20 - k) * DAY, headers: OKHTTP })));
    const flood = { shape: window({ accounts: 40, attempts: 400 }), env: window({ attempts: 500 }) };
    const input = assessInput(
      { headers: OKHTTP, net: OTHER_ISP },
      { behaviour: b, windows: flood, shapeShare: 0.01, headers: habits(50, 1) },
    );
    const own = assess(input, 'login', T0);
    expect(own.signals).toMatchObject({ request_shape_burst: { users_own_client: true } });
    expect(riskLevel(own.risk)).not.toBe('high');
    // Someone else's client in the same flood is evidence of an attack.
    const stranger = assess({ ...input, behaviour: history([{ at: T0 - DAY }]) }, 'login', T0);
    expect(stranger.signals.request_shape_burst).not.toHaveProperty('users_own_client');
  });

  it('counts what tells an app from a script and an install from a farm', () => {
    const { f } = features({ headers: OKHTTP });
    expect(f.app).toBe(true);
    const withMobile = { ...f, fingerprinted: true, mobile: { deviceKey: 'mdev', machineKey: 'mm' } };
    expect(keysToRead(withMobile, null)).toEqual(
      expect.arrayContaining([
        'i:mdev',
        'p:ma:y',
        'p:ma:n',
        'p:ms:y',
        'p:ms:n',
        'p:fpa:y',
        'p:fpa:n',
        'h:okhttp',
      ]),
    );
    expect(keysToRead(features().f, null).filter((k) => /^(i:|p:ma|p:ms|p:fpa)/.test(k))).toEqual([]);
    const login: Outcome = {
      attempt: true,
      failure: false,
      success: true,
      registration: false,
      unknownAccount: false,
      credentialed: true,
      stopped: false,
      challengeFeedback: false,
      account: 'alice',
    };
    const flags = { acceptLanguage: false, secFetch: false, clientHints: false };
    const byKey = (bumps: ReturnType<typeof counterBumps>) =>
      Object.fromEntries(bumps.map((b) => [b.key + (b.add ? '+' : ''), b]));
    const bumps = byKey(counterBumps(withMobile, login, NO_SNAPSHOTS, T0, flags));
    expect(bumps['h:okhttp']?.inc).toHaveProperty('ok');
    expect(bumps['p:fpa:y']).toBeDefined();
    // The install never announced itself (nothing read): counted as such in the habit; its screens
    // are not expected (a fresh install's may still be queued), nor are a first open's.
    expect(bumps['p:ma:n']).toBeDefined();
    expect(bumps['p:ms:n']).toBeUndefined();
    const install = (opens: number) =>
      new Map([['i:mdev', { counts: { n: 1, o: opens, e: opens + 1 }, sets: {} }]]);
    expect(byKey(counterBumps(withMobile, login, install(1), T0, flags))['p:ms:n']).toBeUndefined();
    expect(byKey(counterBumps(withMobile, login, install(2), T0, flags))['p:ms:n']).toBeDefined();
    expect(bumps['i:mdev+']?.add).toEqual({ u: 'alice' });
    const failed = byKey(
      counterBumps(
        withMobile,
        { ...login, success: false, credentialed: false, failure: true },
        NO_SNAPSHOTS,
        T0,
        flags,
      ),
    );
    expect(failed['h:okhttp']?.inc).toHaveProperty('fl');
    expect(failed['h:okhttp']?.inc).not.toHaveProperty('ok');
    expect(failed['p:ma:n']).toBeUndefined();
    // A browser's counts are left as they were.
    expect(
      byKey(counterBumps(features().f, login, NO_SNAPSHOTS, T0, flags))['h:Chrome']?.inc,
    ).not.toHaveProperty('ok');
  });
});

describe('velocity across accounts (one signal each, at its threshold)', () => {
  const velocity = (
    kind: EventKind,
    windows: EvidenceInput['windows'],
    over: Partial<EvidenceInput> = {},
    call: Call = {},
  ) => fired(velocityEvidence(evidenceInput(call, kind, { windows, ...over })));

  it.each([
    ['two failed accounts from one address', { ip: window({ failedAccounts: 2, failures: 2 }) }, []],
    [
      'six failed accounts from one address',
      { ip: window({ failedAccounts: 6, failures: 6 }) },
      ['credential_stuffing'],
    ],
    [
      'failures across a network, as many as successes',
      { net: window({ failedAccounts: 12, failures: 12, successes: 12 }) },
      [],
    ],
    [
      'failures across a network, far above successes',
      { net: window({ failedAccounts: 12, failures: 40, successes: 2 }) },
      ['credential_stuffing'],
    ],
    ['four accounts from one address', { ip: window({ accounts: 4 }) }, []],
    ['fifteen accounts from one address', { ip: window({ accounts: 15 }) }, ['high_activity_ip']],
    // A carrier's or an office's NAT: many accounts, most of their logins successful.
    [
      'six failed accounts from an address where half the attempts succeed',
      { ip: window({ failedAccounts: 6, failures: 6, attempts: 60, successes: 30 }) },
      [],
    ],
    [
      'fifteen accounts from an address where half the attempts succeed',
      { ip: window({ accounts: 15, attempts: 60, successes: 30 }) },
      [],
    ],
    [
      'fifteen accounts and six failed from an address where few succeed',
      { ip: window({ accounts: 15, failedAccounts: 6, failures: 20, attempts: 40, successes: 2 }) },
      ['credential_stuffing', 'high_activity_ip'],
    ],
  ] as const)('%s', (_name, windows, expected) => expect(velocity('login', windows)).toEqual(expected));

  it('a shared address still counts its sign-ups', () => {
    const nat = { ip: window({ accounts: 15, attempts: 60, successes: 30 }) };
    expect(velocity('registration', nat)).toContain('high_activity_ip');
  });

  it('multiple_accounts_per_device only for a fingerprinted device', () => {
    const windows = { dev: window({ accounts: 6 }) };
    expect(velocity('login', windows, {}, { token: 'farm-phone' })).toEqual(['multiple_accounts_per_device']);
    expect(velocity('login', windows, {}, {})).toEqual([]);
  });

  it('request_shape_burst when one shape takes far more of the traffic than usual', () => {
    const windows = { shape: window({ accounts: 30, attempts: 60 }), env: window({ attempts: 100 }) };
    expect(velocity('preauth', windows, { shapeShare: 0.01 })).toEqual(['request_shape_burst']);
    expect(velocity('preauth', windows, { shapeShare: 0.5 })).toEqual([]);
    // A new browser version reaching many users at once: a new shape, most of its logins successful.
    const update = {
      shape: window({ accounts: 30, attempts: 60, successes: 28 }),
      env: window({ attempts: 100 }),
    };
    expect(velocity('login', update, { shapeShare: 0 })).toEqual([]);
    // A farm's sign-ups count as successes when allowed: sign-ups alike stay evidence.
    expect(velocity('registration', update, { shapeShare: 0 })).toContain('request_shape_burst');
  });

  // Many accounts through one operator: a VPN provider a login list is pushed through. The env
  // window holds the hour's 200 attempts; the operator's usual share of legitimate events is 1%.
  it.each([
    // operator window, usual share, kind, expected
    [
      '30 accounts, 60% of the attempts, usually 1%',
      window({ accounts: 30, attempts: 120 }),
      0.01,
      'preauth',
      ['high_activity_network'],
    ],
    [
      'the same as failed logins sent for a verdict',
      window({ accounts: 30, attempts: 120 }),
      0.01,
      'failure',
      ['high_activity_network'],
    ],
    [
      'an operator the environment has never seen',
      window({ accounts: 30, attempts: 120 }),
      0,
      'login',
      ['high_activity_network'],
    ],
    ['eight accounts: a household and friends', window({ accounts: 8, attempts: 16 }), 0.01, 'preauth', []],
    [
      'its usual share: the country’s big operator',
      window({ accounts: 30, attempts: 120 }),
      0.4,
      'preauth',
      [],
    ],
    [
      'most attempts succeed: an office in its busy hour',
      window({ accounts: 30, attempts: 120, successes: 55 }),
      0.01,
      'login',
      [],
    ],
    ['sign-ups: registration_velocity’s', window({ accounts: 30, attempts: 120 }), 0.01, 'registration', []],
  ] as const)('high_activity_network: %s', (_name, asn, operatorShare, kind, expected) => {
    expect(velocity(kind, { asn, env: window({ attempts: 200 }) }, { operatorShare })).toEqual(expected);
  });

  it('high_activity_network and request_shape_burst wait for the environment to know its usual shares', () => {
    const windows = {
      asn: window({ accounts: 30, attempts: 120 }),
      shape: window({ accounts: 30, attempts: 120 }),
      env: window({ attempts: 200 }),
    };
    expect(velocity('preauth', windows, { operatorShare: 0, shapeShare: 0 })).toEqual([
      'request_shape_burst',
      'high_activity_network',
    ]);
    // An integration that never reports a successful login (filters only) has no usual share of anything.
    expect(
      velocity('preauth', windows, { operatorShare: 0, shapeShare: 0, env: { ...ENV, legit: 150 } }),
    ).toEqual([]);
  });

  it('high_activity_network weighs more the more accounts, and names the operator', () => {
    const weight = (accounts: number) =>
      velocityEvidence(
        evidenceInput({}, 'preauth', {
          windows: { asn: window({ accounts, attempts: 120 }), env: window({ attempts: 200 }) },
          operatorShare: 0.01,
        }),
      ).find((c) => c.signal === 'high_activity_network');
    expect(weight(15)?.weight).toBeCloseTo(3 * (7 / 22), 5);
    expect(weight(40)?.weight).toBe(3);
    expect(weight(40)?.detail).toMatchObject({
      by: 'operator',
      asn: 'AS2856',
      accounts_last_hour: 40,
      share_of_attempts: 0.6,
      usual_share: 0.01,
    });
  });

  const envStats = (o: Partial<EvidenceInput['env']>): EvidenceInput['env'] => ({ ...ENV, ...o });
  it.each([
    // usual share of attempts on accounts Rampart does not know, environment age, weight
    ['a settled environment (2% unknown)', envStats({ unknownPerHour: 1 }), 1],
    ['a quarter of attempts unknown', envStats({ unknownPerHour: 12.5 }), Math.log(2)],
    ['half of them unknown or more', envStats({ unknownPerHour: 25 }), null],
    ['an environment younger than a week', envStats({ unknownPerHour: 1, ageHours: 100 }), null],
    ['too few attempts yet', envStats({ unknownPerHour: 0.01, attemptsPerHour: 0.2 }), null],
  ])('unknown_account: %s', (_name, env, weight) => {
    const found = velocityEvidence(evidenceInput({}, 'preauth', { env, unknownAccount: true })).filter(
      (c) => c.signal === 'unknown_account',
    );
    if (weight === null) expect(found).toEqual([]);
    else expect(found.map((c) => c.weight)).toEqual([expect.closeTo(weight, 9)]);
  });

  it('unknown_account: only a login, pre-auth check or failed login, only for an account Rampart does not know', () => {
    const env = envStats({ unknownPerHour: 1 });
    expect(velocity('login', {}, { env, unknownAccount: true })).toEqual(['unknown_account']);
    expect(velocity('failure', {}, { env, unknownAccount: true })).toEqual(['unknown_account']);
    expect(velocity('preauth', {}, { env, unknownAccount: false })).toEqual([]);
    expect(velocity('registration', {}, { env, unknownAccount: true })).toEqual([]);
    // Alone it challenges nobody: a user's first login stays low.
    expect(riskLevel(assess(assessInput({}, { env, unknownAccount: true }), 'preauth', T0).risk)).toBe('low');
  });

  it('attack_wave: attempts on unknown accounts far above the usual rate, for an unknown account', () => {
    const windows = { env: window({ unknown: 80, attempts: 100 }) };
    expect(velocity('preauth', windows, { unknownAccount: true })).toEqual([
      'attack_wave',
      'unknown_account',
    ]);
    expect(velocity('preauth', windows, { unknownAccount: false })).toEqual([]);
    // A sign-up's account is always new: a login wave says nothing about it.
    expect(velocity('registration', windows, { unknownAccount: true })).toEqual([]);
    expect(
      velocity('preauth', { env: window({ unknown: 3, attempts: 100 }) }, { unknownAccount: true }),
    ).toEqual(['unknown_account']);
  });

  // The last 5–10 minutes see a burst from its first few attempts. The settled environment (ENV)
  // sees 2 attempts an hour on unknown accounts (4% of its 50) and 5 failures (10%); a rate and a
  // share of attempts both 3× usual make a wave.
  it.each([
    [
      '4 unknown accounts of 8 attempts in 10 minutes (12× the rate, 12× the share)',
      { attempts: 8, unknown: 4, failures: 0, minutes: 10, usual: 2 },
      true,
    ],
    [
      '3 unknown accounts in 5 minutes: too few to tell from chance',
      { attempts: 3, unknown: 3, failures: 0, minutes: 5, usual: 2 },
      false,
    ],
    [
      '4 unknown accounts in 10 minutes where 10 an hour are usual (2.4× the rate)',
      { attempts: 8, unknown: 4, failures: 0, minutes: 10, usual: 10 },
      false,
    ],
    [
      '4 unknown accounts of 40 attempts (a busy hour: the share is 2.5× usual)',
      { attempts: 40, unknown: 4, failures: 0, minutes: 10, usual: 2 },
      false,
    ],
    [
      '8 failures of 10 attempts in 10 minutes (9.6× the rate, 8× the share)',
      { attempts: 10, unknown: 0, failures: 8, minutes: 10, usual: 2 },
      true,
    ],
    [
      '6 failures in 10 minutes: fewer than twice the minimum',
      { attempts: 6, unknown: 0, failures: 6, minutes: 10, usual: 2 },
      false,
    ],
  ])('attack_wave over the last minutes: %s', (_name, r, fires) => {
    const windows = {
      env: window({
        unknown: r.unknown,
        failures: r.failures,
        attempts: 50,
        recent: {
          attempts: r.attempts,
          unknown: r.unknown,
          failures: r.failures,
          registrations: 0,
          minutes: r.minutes,
          signups: 0,
        },
      }),
    };
    const env = envStats({ unknownPerHour: r.usual });
    expect(velocity('preauth', windows, { env, unknownAccount: true }).includes('attack_wave')).toBe(fires);
    // And on the failed login of such an account (filtered where there is no pre-auth check).
    expect(velocity('failure', windows, { env, unknownAccount: true }).includes('attack_wave')).toBe(fires);
    // Only for an account Rampart does not know.
    expect(velocity('preauth', windows, { env, unknownAccount: false })).toEqual([]);
  });

  // Low and slow: no hour stands out, the day's share of attempts on unknown accounts does. The
  // settled environment (ENV) usually sees 4% of its attempts name an unknown account (those it
  // let through, over the last week or so) and 10% fail.
  it.each([
    // day window, kind, unknown account, env, expected weight (null: no attack_wave)
    [
      '20% of 1,000 attempts named an unknown account (5× usual)',
      { attempts: 1000, unknown: 200, failures: 0 },
      'preauth',
      true,
      ENV,
      2.5,
    ],
    ['12% of them (3×)', { attempts: 1000, unknown: 120, failures: 0 }, 'preauth', true, ENV, 1.25],
    [
      '8% (2×): a day with more new users than usual',
      { attempts: 1000, unknown: 80, failures: 0 },
      'preauth',
      true,
      ENV,
      null,
    ],
    [
      '9 of 30 (7.5×), but too few to tell',
      { attempts: 30, unknown: 9, failures: 0 },
      'preauth',
      true,
      ENV,
      null,
    ],
    [
      'the same day, on the failed login of such an account',
      { attempts: 1000, unknown: 200, failures: 0 },
      'failure',
      true,
      ENV,
      2.5,
    ],
    [
      'a third of attempts failed (3.3× the usual 10%)',
      { attempts: 1000, unknown: 0, failures: 330 },
      'preauth',
      true,
      ENV,
      1.625,
    ],
    [
      'an account Rampart knows: the model weighs the hour',
      { attempts: 1000, unknown: 200, failures: 0 },
      'preauth',
      false,
      ENV,
      null,
    ],
    [
      'an environment younger than a week, when every account is new',
      { attempts: 1000, unknown: 200, failures: 0 },
      'preauth',
      true,
      { ...ENV, ageHours: 100 },
      null,
    ],
    [
      'a usual share under 1% counts as 1%',
      { attempts: 1000, unknown: 40, failures: 0 },
      'preauth',
      true,
      { ...ENV, usualUnknownShare: 0.001 },
      2.5,
    ],
  ] as const)('attack_wave over the last day: %s', (_name, day, kind, unknownAccount, env, weight) => {
    const windows = { env: window({ attempts: 40, day: { ...day, registrations: 0 } }) };
    const wave = velocityEvidence(evidenceInput({}, kind, { windows, env, unknownAccount })).find(
      (c) => c.signal === 'attack_wave',
    );
    if (weight === null) expect(wave).toBeUndefined();
    else {
      expect(wave?.weight).toBeCloseTo(weight, 5);
      expect(wave?.detail).toMatchObject({
        window_hours: 24,
        attempts_last_day: day.attempts,
        unknown_accounts_last_day: day.unknown,
      });
    }
  });

  it('a wave within the hour outweighs the day’s', () => {
    const windows = {
      env: window({
        attempts: 50,
        unknown: 30,
        day: { attempts: 1000, unknown: 200, failures: 0, registrations: 0 },
      }),
    };
    const wave = velocityEvidence(evidenceInput({}, 'preauth', { windows, unknownAccount: true })).find(
      (c) => c.signal === 'attack_wave',
    );
    expect(wave?.weight).toBe(4.5);
    expect(wave?.detail).not.toHaveProperty('window_hours');
  });

  // A farm opening an account an hour: no hour stands out, the day's share of sign-ups does. The
  // settled environment (ENV) usually sees 2% of its attempts be sign-ups.
  it.each([
    ['8% of the day’s 1,000 attempts (4×)', 80, 1000, ENV, 2.5],
    ['6% (3×)', 60, 1000, ENV, 1.25],
    ['4% (2×): a good day', 40, 1000, ENV, null],
    ['9 of 20 (22×), but too few to tell', 9, 20, ENV, null],
    ['an environment younger than a week', 80, 1000, { ...ENV, ageHours: 100 }, null],
    ['a usual share under 0.1% counts as 0.1%', 10, 1000, { ...ENV, usualSignupShare: 0 }, 2.5],
  ] as const)(
    'registration_velocity over the last day: %s',
    (_name, registrations, attempts, env, weight) => {
      const windows = {
        env: window({ attempts: 40, day: { attempts, unknown: 0, failures: 0, registrations } }),
      };
      const reg = velocityEvidence(
        evidenceInput({ email: 'x@gmail.com', name: '$registration' }, 'registration', { windows, env }),
      ).find((c) => c.signal === 'registration_velocity');
      if (weight === null) expect(reg).toBeUndefined();
      else
        expect(reg).toMatchObject({
          weight: expect.closeTo(weight, 5),
          dayLevel: true,
          detail: { by: 'environment', window_hours: 24, registrations_last_day: registrations },
        });
    },
  );

  it('sign-ups from one address on a farm’s day: the address counts in full, the day only for what it adds', () => {
    const windows = {
      ip: window({ registrations: 5 }),
      env: window({ attempts: 40, day: { attempts: 1000, unknown: 0, failures: 0, registrations: 80 } }),
    };
    const regs = velocityEvidence(
      evidenceInput({ email: 'x@gmail.com', name: '$registration' }, 'registration', { windows }),
    ).filter((c) => c.signal === 'registration_velocity');
    expect(regs).toEqual([
      { signal: 'registration_velocity', weight: 1.5, detail: { by: 'ip', registrations_last_hour: 5 } },
      expect.objectContaining({
        weight: 1,
        dayLevel: true,
        detail: expect.objectContaining({ window_hours: 24 }),
      }),
    ]);
    // The address's evidence is about the request: six sign-ups from one data-centre address deny,
    // on the farm's day as on any other (the day's part does not take the address's away).
    const busy = { ip: window({ registrations: 6 }) };
    const signup = (w: EvidenceInput['windows']) =>
      assess(
        assessInput({ net: CLOUD, email: 'x@gmail.com', name: '$registration' }, { windows: w }),
        'registration',
        T0,
      ).risk;
    expect(riskLevel(signup(busy))).toBe('high');
    expect(riskLevel(signup({ ...busy, env: windows.env }))).toBe('high');
  });

  it('registration_velocity from one address; new_email_domain for a domain no user has', () => {
    expect(velocity('registration', { ip: window({ registrations: 8 }) })).toEqual(['registration_velocity']);
    expect(velocity('registration', { ip: window({ registrations: 1 }) })).toEqual([]);
    expect(
      velocity('registration', {}, { domainCount: 0 }, { email: 'x@qzkmail.top', name: '$registration' }),
    ).toEqual(['new_email_domain']);
    expect(velocity('login', { ip: window({ registrations: 8 }) })).toEqual([]);
  });

  // The weight of a domain no legitimate user has: by how often the environment's legitimate
  // sign-ups bring one (one sign-up wave in two names an invented or unseen domain).
  it.each([
    ['an environment with too few sign-ups to tell', 10, 0, 0.6, 0.6],
    ['a consumer service: 2 of 400 legitimate sign-ups brought a new domain', 400, 2, 2, 2],
    ['1 in 8 did', 400, 50, 1.3, 1.45],
    ["a business tool: most sign-ups bring their company's domain", 400, 300, 0.6, 0.6],
  ])('new_email_domain, %s', (_what, signups, newDomainSignups, low, high) => {
    const env = { ...ENV, signups, newDomainSignups };
    const c = velocityEvidence(
      evidenceInput({ email: 'x@qzkmail.top', name: '$registration' }, 'registration', {
        domainCount: 0,
        env,
      }),
    ).find((x) => x.signal === 'new_email_domain');
    expect(c?.weight).toBeGreaterThanOrEqual(low);
    expect(c?.weight).toBeLessThanOrEqual(high);
  });

  it('registration_velocity across the environment: sign-ups far above their usual hourly rate', () => {
    const wave = { env: window({ registrations: 30, attempts: 100 }) };
    const usual = (registrationsPerHour: number) => ({ env: { ...ENV, registrationsPerHour } });
    expect(velocity('registration', wave, usual(1))).toEqual(['registration_velocity']);
    expect(
      velocityEvidence(evidenceInput({}, 'registration', { windows: wave, ...usual(1) }))[0]!.detail,
    ).toMatchObject({ by: 'environment', registrations_last_hour: 30 });
    // A busy application signs up this many every hour; a quiet one saw only a few.
    expect(velocity('registration', wave, usual(20))).toEqual([]);
    expect(velocity('registration', { env: window({ registrations: 6 }) }, usual(0.1))).toEqual([]);
    expect(velocity('login', wave, usual(1))).toEqual([]);
  });

  it('a sign-up wave weighs on the sign-ups that look like it, not on everybody signing up during it', () => {
    const env = { ...ENV, registrationsPerHour: 1 };
    const weight = (windows: EvidenceInput['windows'], over: Partial<EvidenceInput> = {}) =>
      velocityEvidence(
        evidenceInput({ email: 'x@gmail.com', name: '$registration' }, 'registration', {
          windows,
          env,
          ...over,
        }),
      ).find((c) => c.signal === 'registration_velocity')?.weight ?? 0;
    const wave = window({ registrations: 40, attempts: 40 });
    // Someone unrelated: their own address, network, operator and shape.
    const stranger = weight({ env: wave });
    // From an address (a network, a machine, an uncommon domain) that brought a fifth of the hour's sign-ups.
    const member = weight({ env: wave, ip: window({ registrations: 8 }) });
    const sameNetwork = weight({ env: wave, net: window({ registrations: 8 }) });
    const sameDomain = weight({ env: wave, dom: window({ registrations: 8 }) }, { domainCount: 0 });
    expect(member).toBe(3);
    expect(sameNetwork).toBe(3);
    expect(sameDomain).toBe(3);
    expect(stranger).toBeGreaterThan(0);
    expect(stranger).toBeCloseTo(0.6, 6);
    // A common domain (gmail) or a popular request shape at its usual share is no resemblance.
    expect(weight({ env: wave, dom: window({ registrations: 8 }) })).toBe(stranger);
    expect(weight({ env: wave, shape: window({ registrations: 8 }) }, { shapeShare: 0.2 })).toBe(stranger);
    expect(weight({ env: wave, shape: window({ registrations: 8 }) }, { shapeShare: 0.01 })).toBe(3);
  });

  describe("a sign-up wave's language, rare in each of its addresses' countries", () => {
    // 40 sign-ups this hour, 1 an hour usual; English (en-us) is 30% of all events and 4 of
    // Britain's 2,000 (Britain asks for en-gb).
    const wave = (foreign: number) =>
      window({ registrations: 40, attempts: 40, foreignRegistrations: foreign });
    const weight = (foreign: number, lang: string, inCountry: number) =>
      velocityEvidence(
        evidenceInput(
          { email: 'x@gmail.com', name: '$registration', headers: browser(IPHONE, lang) },
          'registration',
          {
            windows: { env: wave(foreign) },
            env: { ...ENV, registrationsPerHour: 1 },
            language: { country: 2000, inCountry, overall: 0.3 },
          },
        ),
      ).find((c) => c.signal === 'registration_velocity')?.weight ?? 0;
    it.each<[string, number, string, number, 'whole' | 'a fifth' | 'more than a fifth']>([
      [
        "a farm's phone set to en-US on a British carrier, the hour's sign-ups a fifth like it",
        8,
        'en-US,en;q=0.9',
        4,
        'whole',
      ],
      ['the same phone in an hour whose other sign-ups are not foreign', 0, 'en-US,en;q=0.9', 4, 'a fifth'],
      [
        "a Briton asking for en-gb during that farm's hour: their language is the country's",
        8,
        'en-GB,en;q=0.9',
        1800,
        'a fifth',
      ],
      ['a few foreign sign-ups beside it: part of the weight', 2, 'en-US,en;q=0.9', 4, 'more than a fifth'],
    ])('%s', (_name, foreign, lang, inCountry, expected) => {
      const w = weight(foreign, lang, inCountry);
      if (expected === 'whole') expect(w).toBe(3);
      else if (expected === 'a fifth') expect(w).toBeCloseTo(0.6, 6);
      else {
        expect(w).toBeGreaterThan(0.6);
        expect(w).toBeLessThan(3);
      }
    });
  });

  it.each([
    ['5 sign-ups in the last 10 minutes where 1 an hour is usual', 5, 10, 1, true],
    ['3 sign-ups in the last 5 minutes: too few to tell from chance', 3, 5, 0.1, false],
    ['5 sign-ups in the last 10 minutes where 10 an hour are usual', 5, 10, 10, false],
    // An environment minutes old (its per-hour rate capped at its first hour) has no usual rate:
    // its first users signing up minutes apart are how every deployment starts.
    ['5 sign-ups in the first 10 minutes of a new environment', 5, 10, 5, false, 0.2],
    ['12 sign-ups in the first hour of a new environment', 12, 10, 12, false, 1],
  ])(
    'registration_velocity across the environment over the last minutes: %s',
    (_name, registrations, minutes, perHour, fires, ageHours = 2000) => {
      const recent = {
        env: window({
          registrations,
          recent: {
            attempts: registrations,
            unknown: 0,
            failures: 0,
            registrations,
            minutes,
            signups: registrations,
          },
        }),
      };
      const env = { ...ENV, registrationsPerHour: perHour, ageHours };
      expect(velocity('registration', recent, { env })).toEqual(fires ? ['registration_velocity'] : []);
    },
  );
});

/** Counter documents as the store reads them, from an object literal. */
const snaps = (docs: Record<string, CounterSnapshot>): Snapshots => new Map(Object.entries(docs));

describe('windows and counters', () => {
  it('a client token serves one login flow: three calls within a minute, from one address', () => {
    const A = '81.2.69.142';
    const used = (n: number, ips = [A]): Snapshots =>
      snaps({ 't:tok': { counts: { n, first: T0 }, sets: { ip: ips } } });
    expect(tokenReplayed(NO_SNAPSHOTS, 'tok', T0, A)).toBe(false);
    expect(tokenReplayed(used(1), 'tok', T0 + 5_000, A)).toBe(false);
    expect(tokenReplayed(used(2), 'tok', T0 + 5_000, A)).toBe(false);
    expect(tokenReplayed(used(3), 'tok', T0 + 5_000, A)).toBe(true);
    expect(tokenReplayed(used(1), 'tok', T0 + 61_000, A)).toBe(true);
    expect(tokenReplayed(used(1), 'tok', T0 + 5_000, '203.0.113.9')).toBe(true);
    expect(tokenBump('tok', T0, A)).toMatchObject({
      key: 't:tok',
      inc: { n: 1 },
      min: { first: T0 },
      add: { ip: A },
    });
    expect(keysToRead(features({}).f, null, 'tok')).toContain('t:tok');
  });

  describe('how late each counter document may reach the database', () => {
    const success: Outcome = {
      attempt: true,
      failure: false,
      success: true,
      registration: false,
      unknownAccount: false,
      stopped: false,
      challengeFeedback: false,
      account: 'alice',
    };
    const { f } = features({ headers: browser(CHROME, 'en-US,en;q=0.9') });
    const bumps = counterBumps(f, success, NO_SNAPSHOTS, T0, {
      acceptLanguage: true,
      secFetch: true,
      clientHints: true,
    });
    const lateness = (pattern: RegExp) => [
      ...new Set(bumps.filter((b) => pattern.test(b.key)).map((b) => b.late ?? 'at once')),
    ];
    it.each([
      ['the population (ten seconds)', /^p:/, ['population']],
      ['header habits (ten seconds)', /^h:/, ['population']],
      ['windows many users share, and the day (a second)', /^w:(asn|shape|dom|env|day):/, [true]],
      ["an address's, a /24's and a device's windows (at once)", /^w:(ip|net|dev):/, ['at once']],
    ] as const)('%s', (_what, pattern, expected) => {
      expect(lateness(pattern)).toEqual(expected);
    });
    it('a token use is never late', () => {
      expect(tokenBump('tok', T0, '81.2.69.142').late).toBeUndefined();
    });
  });

  it('reads both sides of the fingerprint level, so that an event without one sees their share', () => {
    const keys = keysToRead(features({ user: null }).f, null);
    expect(keys).toEqual(expect.arrayContaining(['p:fp:y', 'p:fp:n']));
    expect(keys.filter((k) => k.startsWith('p:fp:'))).toHaveLength(2);
  });

  it('a window adds the previous hour in proportion to what is left of it, and counts this account', () => {
    const { f } = features({ at: Date.parse('2026-10-01T12:15:00Z') });
    const hour = f.hourBucket;
    const s = snaps({
      [`w:ip:${HOME.ip}:${hour}`]: { counts: { a: 4, f: 2 }, sets: { u: ['a', 'b'], uf: ['a'] } },
      [`w:ip:${HOME.ip}:${hour - 1}`]: { counts: { a: 8, f: 4 }, sets: { u: ['c'], uf: ['c'] } },
    });
    const w = readWindow(s, f, 'ip', 'd')!;
    expect(w.attempts).toBeCloseTo(4 + 0.75 * 8, 9);
    expect(w.failures).toBeCloseTo(2 + 0.75 * 4, 9);
    expect(w.accounts).toBe(4);
    expect(w.failedAccounts).toBe(2);
  });

  it('counts distinct accounts again as the sets grow in place or are replaced between reads', () => {
    const { f } = features({ at: Date.parse('2026-10-01T12:15:00Z') });
    const hour = f.hourBucket;
    const cur: CounterSnapshot = { counts: { a: 2 }, sets: { u: ['a', 'b'] } };
    const prev: CounterSnapshot = { counts: { a: 2 }, sets: { u: ['b', 'c'] } };
    const s = snaps({ [`w:ip:${HOME.ip}:${hour}`]: cur, [`w:ip:${HOME.ip}:${hour - 1}`]: prev });
    expect(readWindow(s, f, 'ip')!.accounts).toBe(3);
    // Read again unchanged, then after members were added to one side in place (as the state layer adds them).
    expect(readWindow(s, f, 'ip', 'c')!.accounts).toBe(3);
    cur.sets.u!.push('c');
    expect(readWindow(s, f, 'ip')!.accounts).toBe(3);
    cur.sets.u!.push('d');
    expect(readWindow(s, f, 'ip', 'e')!.accounts).toBe(5);
    prev.sets.u!.push('e', 'a');
    expect(readWindow(s, f, 'ip')!.accounts).toBe(5);
    // Both sides grown, then one replaced by another array.
    cur.sets.u!.push('f');
    prev.sets.u!.push('g');
    expect(readWindow(s, f, 'ip')!.accounts).toBe(7);
    prev.sets.u = ['z'];
    expect(readWindow(s, f, 'ip')!.accounts).toBe(6);
  });

  it('the environment window counts unknown accounts and failures per five minutes, and reads the last 5–10', () => {
    const at = Date.parse('2026-10-01T12:02:30Z'); // slot 0 of its hour, 2.5 minutes in
    const { f } = features({ at });
    const hour = f.hourBucket;
    const outcome: Outcome = {
      attempt: true,
      failure: true,
      success: false,
      registration: false,
      unknownAccount: true,
      stopped: false,
      challengeFeedback: false,
      account: null,
    };
    const env = counterBumps(f, outcome, NO_SNAPSHOTS, at, {
      acceptLanguage: true,
      secFetch: true,
      clientHints: true,
    }).find((b) => b.key === `w:env:*:${hour}`);
    expect(env?.inc).toEqual({ a: 1, f: 1, x: 1, a0: 1, x0: 1, f0: 1 });
    const s = snaps({
      [`w:env:*:${hour}`]: { counts: { x: 3, a0: 6, x0: 3, f0: 1 }, sets: {} },
      // The previous hour's last slot (55–60) counts; its earlier slots do not.
      [`w:env:*:${hour - 1}`]: { counts: { x: 9, x10: 5, a11: 3, x11: 2, f11: 4 }, sets: {} },
    });
    const recent = readWindow(s, f, 'env')!.recent!;
    expect(recent.attempts).toBe(9);
    expect(recent.registrations).toBe(0);
    expect(recent.unknown).toBe(5);
    expect(recent.failures).toBe(5);
    expect(recent.minutes).toBeCloseTo(7.5, 9);
    // Other windows have no slots.
    expect(readWindow(s, f, 'ip')!.recent).toBeUndefined();
  });

  it.each<[string, string, Record<string, number>, Record<string, number>, number]>([
    // 12:02:30: slot 0 so far (2.5 min), the previous hour's slot 11 (5 min), and half of its slot 10.
    [
      '2.5 minutes into an hour: half of the slot before the previous one',
      '2026-10-01T12:02:30Z',
      { r0: 1 },
      { r11: 2, r10: 4, r9: 8 },
      5,
    ],
    // 12:45:22 (a farm's third sign-up, its first two at 12:39): slots 9 and 8, and 93% of slot 7.
    [
      'a farm whose first sign-ups came six minutes ago',
      '2026-10-01T12:45:22Z',
      { r9: 1, r8: 2, r7: 4, r6: 8 },
      {},
      3 + 4 * (1 - 22 / 300),
    ],
    // 12:09:59: slots 1 and 0 (all but a second of ten minutes), next to nothing of the previous hour.
    [
      'the end of a slot: the two slots are ten minutes already',
      '2026-10-01T12:09:59Z',
      { r1: 1, r0: 2 },
      { r11: 4 },
      3 + 4 / 300,
    ],
  ])('sign-ups are read over the last ten minutes exactly: %s', (_name, time, cur, prev, signups) => {
    const { f } = features({ at: Date.parse(time) });
    const s = snaps({
      [`w:env:*:${f.hourBucket}`]: { counts: cur, sets: {} },
      [`w:env:*:${f.hourBucket - 1}`]: { counts: prev, sets: {} },
    });
    expect(readWindow(s, f, 'env')!.recent!.signups).toBeCloseTo(signups, 9);
  });

  it('the environment counts attempts, unknown accounts, failures and sign-ups per day, and reads the last 24 hours', () => {
    const at = Date.parse('2026-10-01T18:00:00Z'); // three quarters into its day
    const { f } = features({ at });
    const day = Math.floor(f.hourBucket / 24);
    const outcome: Outcome = {
      attempt: true,
      failure: true,
      success: false,
      registration: false,
      unknownAccount: true,
      stopped: false,
      challengeFeedback: false,
      account: null,
    };
    const bumps = counterBumps(f, outcome, NO_SNAPSHOTS, at, {
      acceptLanguage: true,
      secFetch: true,
      clientHints: true,
    });
    expect(bumps.find((b) => b.key === `w:day:*:${day}`)?.inc).toEqual({ a: 1, x: 1, f: 1 });
    const signup = counterBumps(
      f,
      { ...outcome, failure: false, unknownAccount: false, registration: true },
      NO_SNAPSHOTS,
      at,
      { acceptLanguage: true, secFetch: true, clientHints: true },
    );
    expect(signup.find((b) => b.key === `w:day:*:${day}`)?.inc).toEqual({ a: 1, r: 1 });
    expect(keysToRead(f, null)).toEqual(expect.arrayContaining([`w:day:*:${day}`, `w:day:*:${day - 1}`]));
    const s = snaps({
      [`w:day:*:${day}`]: { counts: { a: 300, x: 30, f: 6, r: 4 }, sets: {} },
      [`w:day:*:${day - 1}`]: { counts: { a: 400, x: 8, f: 40, r: 8 }, sets: {} },
    });
    expect(readWindow(s, f, 'env')!.day).toEqual({
      attempts: 300 + 0.25 * 400,
      unknown: 30 + 0.25 * 8,
      failures: 6 + 0.25 * 40,
      registrations: 4 + 0.25 * 8,
    });
    expect(readWindow(s, f, 'ip')!.day).toBeUndefined();
  });

  it('the usual share of attempts on unknown accounts leaves out those Rampart stopped', () => {
    const { f } = features({ at: T0 });
    const env = (o: Partial<Outcome>) => {
      const outcome: Outcome = {
        attempt: true,
        failure: false,
        success: false,
        registration: false,
        unknownAccount: true,
        stopped: false,
        challengeFeedback: false,
        account: null,
        ...o,
      };
      return (
        counterBumps(f, outcome, NO_SNAPSHOTS, T0, {
          acceptLanguage: true,
          secFetch: true,
          clientHints: true,
        }).find((b) => b.key === 'p:*')?.inc ?? {}
      );
    };
    expect(env({})).toHaveProperty('xw');
    expect(env({})).toHaveProperty('aw');
    expect(env({ stopped: true })).not.toHaveProperty('xw');
    expect(env({ stopped: true })).toHaveProperty('aw');
    expect(env({ unknownAccount: false })).not.toHaveProperty('xw');
    const stats = environmentStats(
      snaps({ 'p:*': { counts: { aw: 200, xw: 6, first: T0 - 30 * DAY }, sets: {} } }),
      T0,
    );
    expect(stats.usualUnknownShare).toBeCloseTo(0.03, 9);
  });

  it('a legitimate sign-up counts, and counts whether its domain was new to the environment', () => {
    const { f } = features({ email: 'bob@qzkmail.top', name: '$registration' });
    const signup: Outcome = {
      attempt: true,
      failure: false,
      success: true,
      registration: true,
      unknownAccount: false,
      stopped: false,
      challengeFeedback: false,
      account: 'bob',
    };
    const env = (o: Outcome, s: Snapshots) =>
      counterBumps(f, o, s, T0, { acceptLanguage: true, secFetch: true, clientHints: true }).find(
        (b) => b.key === 'p:*',
      )?.inc ?? {};
    const w = epochWeight(T0, 30 * DAY);
    expect(env(signup, NO_SNAPSHOTS)).toMatchObject({ rs: w, rn: w });
    const known = snaps({ 'p:dom:qzkmail.top': { counts: { c: 3 * w }, sets: {} } });
    expect(env(signup, known)).toMatchObject({ rs: w });
    expect(env(signup, known)).not.toHaveProperty('rn');
    // A sign-up that was stopped, or a login, is no legitimate sign-up.
    expect(env({ ...signup, success: false }, NO_SNAPSHOTS)).not.toHaveProperty('rs');
    expect(env({ ...signup, registration: false }, NO_SNAPSHOTS)).not.toHaveProperty('rs');
    const stats = environmentStats(
      snaps({ 'p:*': { counts: { c: 100 * w, rs: 40 * w, rn: 4 * w, first: T0 - 30 * DAY }, sets: {} } }),
      T0,
    );
    expect(stats.signups).toBeCloseTo(40, 6);
    expect(stats.newDomainSignups).toBeCloseTo(4, 6);
  });

  it('an event bumps its windows, and only legitimate evidence the population', () => {
    const { f } = features({});
    const outcome = (o: Partial<Outcome>): Outcome => ({
      attempt: true,
      failure: false,
      success: false,
      registration: false,
      unknownAccount: false,
      stopped: false,
      challengeFeedback: false,
      account: 'alice',
      ...o,
    });
    const keys = (o: Outcome) =>
      counterBumps(f, o, NO_SNAPSHOTS, T0, { acceptLanguage: true, secFetch: true, clientHints: true }).map(
        (b) => b.key,
      );
    const failed = keys(outcome({ failure: true }));
    expect(failed).toEqual(
      expect.arrayContaining([
        `w:ip:${HOME.ip}:${f.hourBucket}`,
        `w:net:81.2.69.0/24:${f.hourBucket}`,
        `w:env:*:${f.hourBucket}`,
      ]),
    );
    expect(failed.some((k) => k.startsWith('p:cc:'))).toBe(false);
    expect(keys(outcome({ success: true }))).toEqual(
      expect.arrayContaining(['p:cc:GB', 'p:asn:AS2856', 'p:*']),
    );
  });

  it("counts the hour's sign-ups whose language is rare in their country in the environment's window", () => {
    const { f } = features({});
    const signup = (foreignLanguage: boolean): Outcome => ({
      attempt: true,
      failure: false,
      success: true,
      registration: true,
      unknownAccount: false,
      stopped: false,
      challengeFeedback: false,
      account: 'alice',
      foreignLanguage,
    });
    const envInc = (o: Outcome) =>
      counterBumps(f, o, NO_SNAPSHOTS, T0, { acceptLanguage: true, secFetch: true, clientHints: true }).find(
        (b) => b.key === `w:env:*:${f.hourBucket}`,
      )?.inc;
    expect(envInc(signup(true))).toMatchObject({ r: 1, rl: 1 });
    expect(envInc(signup(false))?.rl).toBeUndefined();
    const s = snaps({ [`w:env:*:${f.hourBucket}`]: { counts: { a: 10, r: 10, rl: 4 }, sets: {} } });
    expect(readWindow(s, f, 'env')?.foreignRegistrations).toBe(4);
    // What the verdict found is what its lesson counts, and only for a sign-up.
    const taught = (name: string, foreignLanguage: boolean) =>
      lesson({
        event: event({ name }),
        userId: 'alice',
        kind: eventKind(name),
        features: f,
        behaviour: null,
        action: 'allow',
        unknownAccount: false,
        feedbackReported: true,
        ip: intel(HOME),
        eventId: 'e1',
        foreignLanguage,
      }).outcome.foreignLanguage ?? false;
    expect(taught('$registration', true)).toBe(true);
    expect(taught('$registration', false)).toBe(false);
    expect(taught('$login', true)).toBe(false);
  });

  it("the environment's hourly rates are averages over its age", () => {
    const w = epochWeight(T0, 30 * DAY);
    const s = snaps({ 'p:*': { counts: { a: 200 * w, f: 20 * w, first: T0 - 10 * 3_600_000 }, sets: {} } });
    const e = environmentStats(s, T0);
    expect(e.ageHours).toBeCloseTo(10, 6);
    expect(e.attemptsPerHour).toBeCloseTo(20, 6);
    expect(e.failuresPerHour).toBeCloseTo(2, 6);
  });
});

describe('one calibrated risk', () => {
  const risk = (call: Call, over: Partial<AssessInput> = {}, kind: EventKind = 'login') =>
    assess(assessInput(call, over), kind, call.at ?? T0);

  it('an event with nothing for or against it sits at the base rate', () => {
    expect(risk({}).risk).toBeCloseTo(1 / (1 + Math.exp(-BASE_LOGIT)), 3);
    expect(riskLevel(risk({}).risk)).toBe('low');
  });

  it('a day that stands out raises the risk to a challenge, never to a deny', () => {
    const slowDay = {
      env: window({ attempts: 40, day: { attempts: 1000, unknown: 200, failures: 0, registrations: 0 } }),
    };
    // An account Rampart does not know, on a day when a fifth of attempts named one.
    const plain = risk({ user: null }, { windows: slowDay, unknownAccount: true }, 'preauth');
    expect(plain.contributions.find((c) => c.signal === 'attack_wave')).toMatchObject({
      weight: 2.5,
      dayLevel: true,
    });
    expect(riskLevel(plain.risk)).toBe('medium');
    // Through a VPN too: enough soft evidence with the day to deny, were the day evidence about the request.
    const vpn = risk({ user: null, net: VPN }, { windows: slowDay, unknownAccount: true }, 'preauth');
    expect(vpn.risk).toBeLessThan(1 / (1 + Math.exp(-UNFAMILIARITY_CAP)));
    expect(vpn.risk).toBeGreaterThan(plain.risk);
    expect(riskLevel(vpn.risk)).toBe('medium');
    // What the request itself shows still decides beyond the cap: a script is denied that day as any other.
    const script = risk(
      { user: null, headers: { 'User-Agent': 'python-requests/2.31.0' } },
      { windows: slowDay, unknownAccount: true },
      'preauth',
    );
    expect(riskLevel(script.risk)).toBe('high');
  });

  it.each([
    ['the user at home on the laptop', { token: 'alice-laptop' }, 'low'],
    ['the user at home on a new phone', { token: 'alice-phone', headers: browser(IPHONE) }, 'low'],
    [
      "a stranger's device from another country",
      { token: 'stranger', net: SYDNEY, headers: browser(FIREFOX, 'en-AU') },
      'medium',
    ],
  ] as const)('%s: %s', (_name, call, level) => {
    expect(riskLevel(risk(call, { behaviour: habitual() }).risk)).toBe(level);
  });

  it.each([
    [0, 1],
    [HISTORY_GAIN_FROM, 1],
    [(HISTORY_GAIN_FROM + HISTORY_GAIN_FULL) / 2, (1 + HISTORY_GAIN) / 2],
    [HISTORY_GAIN_FULL, HISTORY_GAIN],
    [500, HISTORY_GAIN],
  ])('behavioural evidence after %s legitimate logins counts ×%s', (n, gain) => {
    expect(historyGain(n)).toBeCloseTo(gain, 9);
  });

  it('a longer history makes the same stranger stranger and the user more familiar (headers only)', () => {
    // Logins without a client token: only the network, the software, the language and the hour
    // tell the user from someone who copied their browser.
    const desktop = (n: number) => history(Array.from({ length: n }, (_, k) => ({ at: T0 - (n - k) * DAY })));
    const stranger: Call = { net: OTHER_ISP };
    const user: Call = {};
    const at = (n: number, call: Call) => risk(call, { behaviour: desktop(n) }).risk;
    expect(at(HISTORY_GAIN_FULL, stranger)).toBeGreaterThan(at(HISTORY_GAIN_FROM, stranger));
    expect(at(HISTORY_GAIN_FULL, user)).toBeLessThan(at(HISTORY_GAIN_FROM, user));
    // Someone on the user's own operator, from a network the user never used in another city, at
    // an hour the user never logs in: after five logins that is still little to go on; after
    // thirty, a challenge (without the gain it stayed near 0.2). In the user's own city, that
    // network could be the user's home address reassigned: less.
    const night: Call = { net: { ...HOME_OPERATOR_ELSEWHERE, ip: '81.2.90.7' }, at: T0 + 14 * 3_600_000 };
    const nightInTown: Call = { net: { ...HOME, ip: '81.2.90.7' }, at: T0 + 14 * 3_600_000 };
    expect(at(5, night)).toBeLessThan(0.2);
    expect(at(30, night)).toBeGreaterThan(0.6);
    expect(at(30, nightInTown)).toBeLessThan(at(30, night));
    // The device term does not grow: 'the user at home on a new phone' above stays low.
  });

  it('during an attack wave an unfamiliar login to a known account weighs more; a familiar one does not, and neither reaches deny', () => {
    const wave = { env: window({ unknown: 80, attempts: 100 }) };
    // A user without a client token, twenty logins from home.
    const user = history(Array.from({ length: 20 }, (_, k) => ({ at: T0 - (20 - k) * DAY })));
    // Their browser on a network of their operator they never used, at an hour they never log in:
    // unfamiliar, under a challenge alone.
    const unfamiliar: Call = { net: { ...HOME, ip: '81.2.90.7' }, at: T0 + 14 * 3_600_000 };
    const at = (call: Call, over: Partial<AssessInput> = {}) => risk(call, { behaviour: user, ...over });
    expect(at(unfamiliar).risk).toBeLessThan(0.6);
    expect(Object.keys(at(unfamiliar, { windows: wave }).signals)).toContain('attack_wave');
    expect(at(unfamiliar, { windows: wave }).risk).toBeGreaterThan(at(unfamiliar).risk);
    expect(Object.keys(at(unfamiliar).signals)).not.toContain('attack_wave');
    // At home: left alone.
    expect(at({}, { windows: wave }).risk).toBe(at({}).risk);
    // A stranger on the far side of the world is challenged, never denied, for it.
    expect(at({ token: 'stranger', net: SYDNEY }, { windows: wave }).risk).toBeLessThan(0.9);
    // A device of the user's that its client token identifies is left alone.
    const laptop = habitual();
    const away: Call = { token: 'alice-laptop', net: OTHER_ISP };
    expect(risk(away, { behaviour: laptop, windows: wave }).risk).toBe(
      risk(away, { behaviour: laptop }).risk,
    );
  });

  it('a VPN the user always comes through vouches for the user, not for another browser on it', () => {
    // Thirty logins through the same VPN, from a Windows laptop, headers only.
    const vpnUser = history(
      Array.from({ length: 30 }, (_, k) => ({
        at: T0 - (30 - k) * DAY,
        net: { ...VPN, ip: `185.159.157.${10 + k}` },
      })),
    );
    const throughVpn = (headers: Record<string, string>) =>
      risk({ net: { ...VPN, ip: '185.159.157.200' }, headers }, { behaviour: vpnUser }, 'preauth');
    // The user's own browser on another exit of it: low.
    expect(riskLevel(throughVpn(browser()).risk)).toBe('low');
    // Someone else's browser on the same VPN: its familiarity no longer hides the stranger.
    const stranger = throughVpn(browser(IPHONE, 'en-US,en;q=0.9'));
    expect(riskLevel(stranger.risk)).toBe('medium');
    // The same stranger's browser on the user's home operator, which the user owns alone, counts as familiar as before.
    const homeUser = history(
      Array.from({ length: 30 }, (_, k) => ({
        at: T0 - (30 - k) * DAY,
        net: { ...HOME, ip: `81.2.69.${10 + k}` },
      })),
    );
    const atHome = risk(
      { net: { ...HOME, ip: '81.2.69.200' }, headers: browser(IPHONE, 'en-US,en;q=0.9') },
      { behaviour: homeUser },
      'preauth',
    );
    const network = (a: { contributions: { signal: string; weight: number }[] }) =>
      a.contributions.find((c) => c.signal === 'network')?.weight ?? 0;
    expect(network(atHome)).toBeLessThan(network(stranger));
  });

  it("a country the user never showed vouches for little, even on the user's own operator", () => {
    // The home operator's address, placed in another country by the address data; the population
    // has seen that country in 1% of its events.
    const placedAbroad: Net = { ...HOME, ip: '81.2.70.9', cc: 'NO', lat: 59.9, lon: 10.7, city: 'Oslo' };
    const pop: PopulationCounts = {
      total: 10_000,
      count: (level, value) => (level === 'cc' && value === 'NO' ? 100 : 500),
    };
    const network = (net: Net) =>
      risk({ net, token: 'alice-laptop' }, { behaviour: habitual(), population: pop }).contributions.find(
        (c) => ['network', 'new_isp', 'new_country'].includes(c.signal),
      )!;
    const abroad = network(placedAbroad);
    expect(abroad.signal).toBe('new_country');
    // At most −1 of log-likelihood, times 0.8 (the user's own fingerprinted laptop: no history gain).
    expect(abroad.weight).toBeGreaterThanOrEqual(-0.8 * 1 - 1e-9);
    // The same operator at home is as familiar as ever.
    expect(network({ ...HOME, ip: '81.2.69.9' }).weight).toBeLessThan(abroad.weight - 1);
  });

  it('unfamiliarity bends towards the cap without reaching it, and keeps its order', () => {
    expect(belowCap(CAP_KNEE - 1)).toBe(CAP_KNEE - 1);
    expect(belowCap(CAP_KNEE)).toBe(CAP_KNEE);
    // Continuous at the knee, rising all the way, never at the cap.
    expect(belowCap(CAP_KNEE + 1e-6)).toBeCloseTo(CAP_KNEE, 5);
    const sums = [1.6, 2, 2.5, 3, 4, 6, 8];
    const bent = sums.map(belowCap);
    for (let k = 1; k < bent.length; k++) expect(bent[k]!).toBeGreaterThan(bent[k - 1]!);
    for (const z of bent) expect(z).toBeLessThan(UNFAMILIARITY_CAP);
    // Still apart at the precision a risk is answered with (four decimals).
    const answered = (z: number) => Math.round(10000 / (1 + Math.exp(-belowCap(z))));
    expect(answered(3)).toBeGreaterThan(answered(2.5));
    expect(answered(12)).toBeGreaterThan(answered(10));
    expect(answered(20)).toBeGreaterThan(answered(18));
    // A stranger's device on another operator of the user's country, and from another country:
    // both challenged, the second above the first.
    const [otherIsp, abroad] = [OTHER_ISP, SYDNEY].map((net) =>
      risk({ token: 'stranger', net, headers: browser(FIREFOX) }, { behaviour: habitual() }),
    );
    expect(riskLevel(otherIsp!.risk)).toBe('medium');
    expect(riskLevel(abroad!.risk)).toBe('medium');
    expect(abroad!.risk).toBeGreaterThan(otherIsp!.risk);
  });

  it('what anyone can copy vouches for nothing for a device the user never showed: the language, the hour', () => {
    // The user's own browser and a stranger's, with the same headers, at the hour the user always logs in.
    const weight = (token: string, signal: string) =>
      risk({ token, net: OTHER_ISP }, { behaviour: habitual() }).contributions.find(
        (c) => c.signal === signal || c.signal === `unusual_${signal}`,
      )!.weight;
    expect(weight('alice-laptop', 'hour')).toBeLessThan(0);
    expect(weight('alice-laptop', 'language')).toBeLessThan(0);
    expect(weight('stranger', 'hour')).toBe(0);
    expect(weight('stranger', 'language')).toBe(0);
  });

  it('no fingerprint from a user whose logins always carried one: only an address the user used still vouches', () => {
    // The user's browser and language, on the home operator at another address: a script posting the form.
    const at = (net: Net) => risk({ net }, { behaviour: habitual() }).contributions;
    const weight = (list: { signal: string; weight: number }[], ...names: string[]) =>
      list.find((c) => names.includes(c.signal))!.weight;
    const script = at(HOME_OPERATOR_SAME_CITY);
    expect(weight(script, 'network')).toBeGreaterThanOrEqual(0);
    expect(weight(script, 'language', 'unusual_language')).toBe(0);
    expect(weight(script, 'hour', 'unusual_hour')).toBe(0);
    expect(weight(script, 'device', 'new_device')).toBeGreaterThanOrEqual(0);
    // From the user's own address the network still vouches; a user who never sent a token is unchanged.
    expect(weight(at(HOME), 'network')).toBeLessThan(0);
    const headersOnly = history(Array.from({ length: 30 }, (_, k) => ({ at: T0 - (30 - k) * DAY })));
    const plain = risk({ net: HOME_OPERATOR_SAME_CITY }, { behaviour: headersOnly }).contributions;
    expect(weight(plain, 'language', 'unusual_language')).toBeLessThan(0);
    expect(weight(plain, 'hour', 'unusual_hour')).toBeLessThan(0);
  });

  it('unfamiliarity alone never reaches deny; evidence of an attack does', () => {
    const stranger = { token: 'stranger', net: SYDNEY, headers: browser(FIREFOX, 'ja-JP') };
    expect(risk(stranger, { behaviour: habitual() }).risk).toBeLessThan(0.9);
    expect(
      risk(
        { ...stranger, net: TOR },
        { behaviour: habitual(), windows: { ip: window({ failedAccounts: 8, failures: 8 }) } },
      ).risk,
    ).toBeGreaterThanOrEqual(0.9);
  });

  it('bots and stuffing are high risk before any history', () => {
    expect(riskLevel(risk({ user: null, headers: { 'User-Agent': 'curl/8.4.0' } }, {}, 'preauth').risk)).toBe(
      'high',
    );
    expect(
      riskLevel(
        risk(
          { user: null, net: CLOUD },
          { windows: { ip: window({ failedAccounts: 10, failures: 12, accounts: 12 }) } },
          'preauth',
        ).risk,
      ),
    ).toBe('high');
  });

  it('a device the user never showed, at an address they never used, is challenged even within their own mobile ISP', () => {
    // Thirty logins from the phone, each from another network of the same mobile operator: a new
    // network there is expected of the phone, but vouches for nothing about a stranger's device.
    const mobile = (k: number): Net => ({ ip: `92.40.${k}.9`, asn: 206067, cc: 'GB', lat: 51.5, lon: -0.1 });
    const phone = history(
      Array.from({ length: 30 }, (_, k) => ({
        at: T0 - (30 - k) * DAY,
        token: 'alice-phone',
        headers: browser(IPHONE),
        net: mobile(k),
      })),
    );
    expect(
      riskLevel(
        risk({ token: 'stranger', headers: browser(IPHONE), net: mobile(200) }, { behaviour: phone }).risk,
      ),
    ).toBe('medium');
    // The phone itself on yet another network, or the stranger at an address the user used, is not.
    expect(
      riskLevel(
        risk({ token: 'alice-phone', headers: browser(IPHONE), net: mobile(200) }, { behaviour: phone }).risk,
      ),
    ).toBe('low');
    expect(
      riskLevel(
        risk({ token: 'stranger', headers: browser(IPHONE), net: mobile(29) }, { behaviour: phone }).risk,
      ),
    ).toBe('low');
  });

  it("a missing fingerprint counts once, whether against the user's habit, the environment's or both", () => {
    const missing = (over: Partial<AssessInput>) =>
      assess(assessInput({}, { behaviour: habitual(), ...over }), 'login', T0).contributions.filter(
        (c) => c.signal === 'missing_fingerprint',
      );
    const both = missing({ fingerprints: { events: 5000, share: 0.995 } });
    expect(both).toHaveLength(1);
    expect(both[0]!.weight).toBeCloseTo(2.8, 5);
    expect(missing({})).toHaveLength(1);
    expect(missing({})[0]!.weight).toBeLessThan(2.8);
  });

  it('names each signal with its weight, and the facts policies match on', () => {
    const r = risk({ token: 'stranger', net: PARIS }, { behaviour: habitual() });
    expect(r.signals.new_country).toMatchObject({ country: 'FR' });
    expect(typeof r.signals.new_country!.score).toBe('number');
    expect(r.signals).toHaveProperty('new_device');
    for (const name of Object.keys(r.signals)) expect(SIGNAL_NAMES).toContain(name);
  });

  it('another city on the home operator weighs against the user; another network in the same city does not', () => {
    const elsewhere = risk({ net: HOME_OPERATOR_ELSEWHERE }, { behaviour: habitual() });
    const sameCity = risk({ net: HOME_OPERATOR_SAME_CITY }, { behaviour: habitual() });
    expect(elsewhere.signals).toHaveProperty('unusual_place');
    expect(sameCity.signals).not.toHaveProperty('unusual_place');
    expect(elsewhere.risk).toBeGreaterThan(sameCity.risk);
  });

  it("the user's city is no credit to a device the user never showed, at an address the user never used", () => {
    // habitual(): thirty logins on the laptop's fingerprint, all from HOME (London).
    const place = (c: Call) =>
      assess(assessInput(c, { behaviour: habitual() }), 'login', T0).contributions.find(
        (x) => x.signal === 'place' || x.signal === 'unusual_place',
      )?.weight;
    expect(place({ token: 'alice-laptop', net: HOME_OPERATOR_SAME_CITY })).toBeLessThan(0);
    expect(place({ token: 'stranger', net: HOME_OPERATOR_SAME_CITY })).toBe(0);
    expect(place({ token: 'stranger', net: HOME })).toBeLessThan(0);
  });

  /** A user placed by AS2856 only in `places`, 24 logins spread evenly over them. */
  const placedIn = (places: readonly string[]) => {
    const b = emptyBehaviour();
    const w = epochWeight(T0);
    b.n = 24 * w;
    b.tables.asn = { AS2856: { c: 24 * w, l: T0 } };
    b.tables.ap = Object.fromEntries(places.map((p) => [p, { c: (24 * w) / places.length, l: T0 }]));
    return b;
  };
  const CARRIER_CITIES = ['London', 'Bristol', 'York', 'Bath', 'Hull', 'Derby'].map((c) => `AS2856|GB|${c}`);

  it.each([
    [
      'a city the user was never placed in, on an operator that always placed them in one',
      ['AS2856|GB|London'],
      'AS2856|GB|Manchester',
      3,
      3.5,
    ],
    [
      'the city the operator always placed the user in',
      ['AS2856|GB|London'],
      'AS2856|GB|London',
      -Infinity,
      -1.5,
    ],
    ['a new city, on a carrier that placed the user in six', CARRIER_CITIES, 'AS2856|GB|Leeds', 1, 2],
    ['one of those six', CARRIER_CITIES, 'AS2856|GB|York', -Infinity, 0],
  ] as const)('the place ratio of %s is within bounds', (_what, places, place, low, high) => {
    const ratio = placeRatio(placedIn(places), 'AS2856', place, T0);
    expect(ratio).toBeGreaterThan(low);
    expect(ratio).toBeLessThan(high);
  });

  it('the place says nothing on an operator new to the user, without a place, or through a VPN', () => {
    const b = habitual();
    expect(placeRatio(b, 'AS5089', 'AS5089|GB|Manchester', T0)).toBe(0);
    expect(placeRatio(b, 'AS2856', null, T0)).toBe(0);
    expect(features({ net: VPN }).f.values.ap).toBeNull();
    expect(features({ net: { ...HOME, city: undefined } }).f.values.ap).toBeNull();
    expect(features({ net: HOME }).f.values.ap).toBe('AS2856|GB|London');
  });

  it('impossible travel from where the user last really was', () => {
    const b = habitual();
    b.lastLegit = { at: T0 - 3_600_000, lat: HOME.lat, lon: HOME.lon, cc: 'GB' };
    expect(risk({ net: SYDNEY, token: 'alice-laptop' }, { behaviour: b }).signals).toHaveProperty(
      'impossible_travel',
    );
    b.lastLegit = { at: T0 - 3 * DAY, lat: HOME.lat, lon: HOME.lon, cc: 'GB' };
    expect(risk({ net: SYDNEY, token: 'alice-laptop' }, { behaviour: b }).signals).not.toHaveProperty(
      'impossible_travel',
    );
  });

  it('a VPN exit, Tor or a data centre is not a place: no impossible travel from it, and it does not move the last place', () => {
    const b = habitual();
    b.lastLegit = { at: T0 - 3_600_000, lat: HOME.lat, lon: HOME.lon, cc: 'GB' };
    const farVpn: Net = { ...SYDNEY, ip: '185.159.157.20', asn: 9009, vpn: true };
    expect(risk({ net: SYDNEY, token: 'alice-laptop' }, { behaviour: b }).signals).toHaveProperty(
      'impossible_travel',
    );
    expect(risk({ net: farVpn, token: 'alice-laptop' }, { behaviour: b }).signals).not.toHaveProperty(
      'impossible_travel',
    );
    expect(
      risk({ net: { ...CLOUD, lat: -33.8, lon: 151.2 }, token: 'alice-laptop' }, { behaviour: b }).signals,
    ).not.toHaveProperty('impossible_travel');
  });

  it("a replayed or forged client token is denied even on the user's own device (a stolen token names it)", () => {
    const clean = {
      problem: null,
      automation: [],
      userAgentMismatch: false,
      languageMismatch: false,
      timezoneGapHours: null,
    };
    const level = (client: NonNullable<AssessInput['client']>) =>
      riskLevel(risk({ token: 'alice-laptop' }, { behaviour: habitual(), client }).risk);
    expect(level(clean)).toBe('low');
    expect(level({ ...clean, problem: 'replayed' })).toBe('high');
    expect(level({ ...clean, problem: 'forged' })).toBe('high');
    // A token past its lifetime is as likely a page left open: evidence, not a verdict.
    expect(level({ ...clean, problem: 'expired' })).not.toBe('high');
  });

  it('an approved device lowers the risk; a reported one is certain', () => {
    const call = { token: 'stranger', net: PARIS };
    const plain = risk(call, { behaviour: habitual() }).risk;
    expect(
      risk(call, { behaviour: habitual(), device: { feedback: 'approved' } as Device }).risk,
    ).toBeLessThan(plain);
    expect(risk(call, { behaviour: habitual(), device: { feedback: 'reported' } as Device }).risk).toBe(1);
  });

  it('a device the user has long used vouches where it travels; one used once does not', () => {
    // Thirty days of logins on the laptop (a client token): abroad, in Sydney.
    const trip = (b: Behaviour) =>
      assess(assessInput({ net: SYDNEY, token: 'alice-laptop' }, { behaviour: b }), 'login', T0);
    const long = trip(habitual());
    for (const name of ['new_country', 'unusual_network_for_device', 'unusual_place', 'unusual_hour']) {
      expect(long.contributions.find((c) => c.signal === name)?.weight ?? 0).toBeLessThanOrEqual(
        TRUSTED_TRAVEL_MAX,
      );
    }
    expect(long.signals).toHaveProperty('new_country');
    expect(riskLevel(long.risk)).toBe('low');
    // The same laptop seen only twice, yesterday: its travel counts in full.
    const twice = history([
      { at: T0 - 2 * DAY, token: 'alice-laptop' },
      { at: T0 - DAY, token: 'alice-laptop' },
      ...Array.from({ length: 28 }, (_, k) => ({
        at: T0 - (30 - k) * DAY,
        token: 'alice-phone',
        headers: browser(IPHONE),
      })),
    ]);
    expect(trip(twice).risk).toBeGreaterThan(long.risk);
    expect(trip(twice).contributions.find((c) => c.signal === 'new_country')?.weight ?? 0).toBeGreaterThan(
      TRUSTED_TRAVEL_MAX,
    );
    // A stranger's browser in Sydney is not helped by the user's laptop.
    expect(
      riskLevel(
        assess(assessInput({ net: SYDNEY, token: 'stranger' }, { behaviour: habitual() }), 'login', T0).risk,
      ),
    ).not.toBe('low');
  });

  it('a new kind of device on an operator new to the user counts its novelty once and a half, not twice', () => {
    // Ten logins from the laptop at home, headers only; then a phone.
    const b = history(Array.from({ length: 10 }, (_, i) => ({ at: T0 - (10 - i) * DAY })));
    const device = (net: Net) =>
      assess(
        assessInput({ net, headers: browser(IPHONE) }, { behaviour: b }),
        'login',
        T0,
      ).contributions.find((c) => c.signal === 'new_device')?.weight ?? 0;
    const atHome = device(HOME);
    expect(atHome).toBeGreaterThan(0.5);
    // On a new operator (its carrier) in the user's country: one change, counted once and a half.
    expect(device(OTHER_ISP)).toBeCloseTo(JOINT_NOVELTY * atHome, 6);
    // In a new country: both count in full.
    expect(device(PARIS)).toBeCloseTo(atHome, 6);
    // A fingerprint is the device itself: in full on any network but the user's own (a new phone
    // at home counts HOME_NEW_DEVICE of it).
    const fingerprinted = (net: Net) =>
      assess(
        assessInput({ net, headers: browser(IPHONE), token: 'new-phone' }, { behaviour: habitual() }),
        'login',
        T0,
      ).contributions.find((c) => c.signal === 'new_device')?.weight ?? NaN;
    expect(fingerprinted(OTHER_ISP)).toBeGreaterThan(1);
    expect(fingerprinted(PARIS)).toBeCloseTo(fingerprinted(OTHER_ISP), 6);
    expect(fingerprinted(HOME)).toBeCloseTo(HOME_NEW_DEVICE * fingerprinted(OTHER_ISP), 6);
  });

  // The approval's credit, in log-odds: in full for a device a client token identifies, or where
  // nothing in the request points to an attack; less, by half the attack evidence, for a device
  // known only by its copyable headers through a VPN.
  it.each([
    ['a device known by its headers, from a new country', { net: PARIS }, APPROVED_CREDIT],
    ['a device known by its headers, through a VPN (proxy_ip)', { net: VPN }, APPROVED_CREDIT - 0.5],
    [
      'a device a client token identifies, through the same VPN',
      { net: VPN, token: 'alice-laptop' },
      APPROVED_CREDIT,
    ],
  ] as const)('how much an approval lowers the risk: %s', (_what, call, credit) => {
    const logit = (r: number) => Math.log(r / (1 - r));
    const plain = risk(call, { behaviour: habitual() });
    const approved = risk(call, { behaviour: habitual(), device: { feedback: 'approved' } as Device });
    const lowered = logit(plain.risk) - logit(approved.risk);
    // (The risk is rounded to four decimals: near 0 its logit is known to about 0.02.)
    if (credit === APPROVED_CREDIT) expect(lowered).toBeCloseTo(APPROVED_CREDIT, 1);
    else {
      expect(plain.signals).toHaveProperty('proxy_ip');
      expect(lowered).toBeLessThan(credit);
      expect(lowered).toBeGreaterThan(0);
    }
  });

  it('needs nothing but its input (its speed is measured by npm run bench, not here)', () => {
    // Not a timing assertion: the figure is printed by `npm run bench` (scoring part). This only
    // proves the function needs nothing but its input.
    const x = assessInput({ token: 'stranger', net: PARIS }, { behaviour: habitual() });
    expect(assess(x, 'login', T0).contributions.length).toBeGreaterThan(3);
  });
});

describe('what each event teaches', () => {
  const teach = (
    c: Call,
    action: 'allow' | 'challenge' | 'deny' | null,
    over: { behaviour?: Behaviour | null; feedbackReported?: boolean } = {},
  ) => {
    const { event: e, f, ip } = features(c);
    return lesson({
      event: e,
      userId: e.userId,
      kind: eventKind(e.name),
      features: f,
      behaviour: over.behaviour ?? null,
      action,
      unknownAccount: false,
      feedbackReported: over.feedbackReported ?? true,
      ip,
      eventId: 'ev-1',
    });
  };

  it.each([
    ['$login', 'allow', 'legit'],
    ['$login', 'deny', 'hostile'],
    ['$login.failed', null, 'hostile'],
    ['$login.attempted', 'allow', 'nothing'],
    ['$registration', 'allow', 'legit'],
    ['$password_reset_request.succeeded', 'allow', 'nothing'],
  ] as const)('%s answered %s teaches %s', (name, action, what) => {
    const b = teach({ name }, action).behaviour;
    if (what === 'legit') expect(b?.legit?.weight).toBe(1);
    if (what === 'hostile') expect(b?.hostile?.weight).toBe(1);
    if (what === 'nothing') expect(b).toBeNull();
  });

  it('an allowed login teaches where the user was, unless it came through a VPN, Tor or a data centre', () => {
    expect(teach({}, 'allow').behaviour?.legit?.location).toMatchObject({ lat: HOME.lat, lon: HOME.lon });
    expect(teach({ net: VPN }, 'allow').behaviour?.legit?.location).toBeNull();
    expect(teach({ net: CLOUD }, 'allow').behaviour?.legit?.location).toBeNull();
  });

  it('a challenge waits for its answer; passed, it teaches the legitimate profile; failed, the hostile record', () => {
    const challenged = teach({}, 'challenge').behaviour;
    expect(challenged?.pend?.id).toBe('ev-1');
    expect(challenged?.legit).toBeUndefined();
    const b = emptyBehaviour();
    b.pending['ev-1'] = challenged!.pend!.challenge;
    const passed = teach({ name: '$challenge.succeeded', at: T0 + 60_000 }, null, { behaviour: b });
    expect(passed.behaviour).toMatchObject({ resolve: 'ev-1', legit: { weight: 1 } });
    // The challenged login counts in the client-token habit as an allowed one would.
    expect(passed.outcome.passedChallenge).toEqual({
      fingerprinted: challenged!.pend!.challenge.values.fp === 'y',
      app: false,
      release: null,
    });
    const failed = teach({ name: '$challenge.failed', at: T0 + 60_000 }, null, { behaviour: b });
    expect(failed.behaviour).toMatchObject({ resolve: 'ev-1', hostile: { weight: 1 } });
    expect(failed.outcome.passedChallenge).toBeUndefined();
  });

  it('where challenge answers are not reported, a challenge teaches tentatively (not the operator)', () => {
    const b = teach({}, 'challenge', { feedbackReported: false }).behaviour;
    expect(b?.legit?.weight).toBe(TENTATIVE_WEIGHT);
    expect(b?.legit?.values.asn).toBeNull();
    // Nor the operator joined with the software or the network.
    expect(b?.legit?.values.sa).toBeNull();
    expect(b?.legit?.values.an).toBeNull();
    expect(b?.legit?.values.ip).toBe(HOME.ip);
    expect(b?.pend?.challenge.operator).toBe(false);
  });

  // An earlier unanswered challenge of the user's, from the operator (PARIS: AS3215) or another one.
  it.each([
    ['the same operator a day before', PARIS, DAY, true],
    ['the same operator 7 hours before', PARIS, 7 * 3_600_000, true],
    ['the same operator 10 minutes before (an attacker retrying)', PARIS, 10 * 60_000, false],
    ['the same operator 40 days before', PARIS, 40 * DAY, false],
    ['another operator a day before', SYDNEY, DAY, false],
  ] as const)(
    'without reported answers, a challenge from an operator met at a challenge %s teaches the operator (%#)',
    (_what, earlier, ago, operator) => {
      const b = emptyBehaviour();
      b.pending['ev-0'] = { at: T0 - ago, values: { asn: `AS${earlier.asn}` }, tentative: TENTATIVE_WEIGHT };
      const taught = teach({ net: PARIS }, 'challenge', { feedbackReported: false, behaviour: b }).behaviour;
      expect(taught?.legit?.weight).toBe(TENTATIVE_WEIGHT);
      expect(taught?.legit?.values.asn ?? null).toBe(operator ? 'AS3215' : null);
      expect(taught?.legit?.values.sa ?? null).toEqual(operator ? expect.stringContaining('|AS3215') : null);
      expect(taught?.pend?.challenge.operator).toBe(operator);
      // Where answers are reported, nothing is taught before the answer.
      expect(teach({ net: PARIS }, 'challenge', { behaviour: b }).behaviour?.legit).toBeUndefined();
    },
  );

  it.each([true, false])(
    'a failed challenge takes back what it taught tentatively, the operator only if it was taught (%s)',
    (operator) => {
      const b = emptyBehaviour();
      b.pending['ev-1'] = {
        at: T0,
        values: { ip: PARIS.ip, asn: 'AS3215', sa: 'Windows|Chrome|AS3215' },
        tentative: TENTATIVE_WEIGHT,
        operator,
      };
      const failed = teach({ name: '$challenge.failed', at: T0 + 60_000 }, null, {
        behaviour: b,
        feedbackReported: false,
      }).behaviour;
      expect(failed?.legit?.weight).toBe(-TENTATIVE_WEIGHT);
      expect(failed?.legit?.values.ip).toBe(PARIS.ip);
      expect(failed?.legit?.values.asn ?? null).toBe(operator ? 'AS3215' : null);
      expect(failed?.legit?.values.sa ?? null).toBe(operator ? 'Windows|Chrome|AS3215' : null);
      expect(failed?.hostile?.values.asn).toBe('AS3215');
    },
  );

  it('a failed attempt never moves where the user is', () => {
    expect(teach({ name: '$login.failed', net: SYDNEY }, null).behaviour?.legit).toBeUndefined();
    expect(teach({ net: SYDNEY }, 'allow').behaviour?.legit?.location).toMatchObject({ lat: SYDNEY.lat });
  });
});
