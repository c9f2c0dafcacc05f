/**
 * The features of one event that the risk model looks at, at every level of their hierarchies:
 * the network (address → /24 or /48 → autonomous system → country), the software (user-agent
 * string → browser and major version → browser → operating system → device type), the device key,
 * the language, the hour of day, the request's shape and the e-mail domain. Pure: derived from
 * the event and the offline intel only.
 */
import { memoText, shortHash } from '../crypto';
import type { AppClient, IpIntel, ParsedUserAgent } from '../intel/types';
import type { Device, EventInput } from '../model';
import { interacted } from '../client/proof';

/** The levels the profile and the population keep values for, finest first within each hierarchy. */
export const NETWORK_LEVELS = ['ip', 'net', 'asn', 'cc'] as const;
export const SOFTWARE_LEVELS = ['ua', 'br', 'bf', 'os', 'dt'] as const;
export const OTHER_LEVELS = ['dev', 'fp', 'lang', 'hr', 'mk'] as const;
/**
 * Joint levels: the software (OS and browser) alone, and with the operator and the network it came
 * from; the network within its operator (how many networks the user shows per operator); the
 * place (city, else region) within its operator; and the operator of an anonymising network (see
 * LEVEL for each code).
 */
export const JOINT_LEVELS = ['sw', 'sa', 'sn', 'an', 'ap', 'ao'] as const;
export type NetworkLevel = (typeof NETWORK_LEVELS)[number];
export type SoftwareLevel = (typeof SOFTWARE_LEVELS)[number];
/** A level's code: what the database stores (see LEVEL). */
export type Level =
  NetworkLevel | SoftwareLevel | (typeof OTHER_LEVELS)[number] | (typeof JOINT_LEVELS)[number];
export const LEVELS: readonly Level[] = [
  ...NETWORK_LEVELS,
  ...SOFTWARE_LEVELS,
  ...OTHER_LEVELS,
  ...JOINT_LEVELS,
];

/**
 * Every level by its readable name, and the code it is stored under: the one place that says what
 * each code means. The codes key a user's tables (`p.t.<code>`), the hostile record, the values of
 * pending challenges and the population's counter documents (`p:<code>:<value>`), and name the
 * fields of FeatureValues: they are the database's, so do not rename them. Domain code reads a
 * level by its name, `values[LEVEL.browser]`, not its code (`values.bf`); only this module's
 * extractFeatures and the stores write the codes. A joint level's value joins its parts with `|`,
 * in the order given.
 */
export const LEVEL = {
  /** The address (IPv4, or an IPv6 /64: hostOf). */
  address: 'ip',
  /** Its /24 or /48 (networkOf). */
  network: 'net',
  /** Its operator: the autonomous system (`AS<number>`). */
  operator: 'asn',
  country: 'cc',
  /** The user-agent string. */
  userAgent: 'ua',
  /** Browser and major version. */
  browserVersion: 'br',
  /** Browser family. */
  browser: 'bf',
  os: 'os',
  /** Device type (desktop, mobile, …). */
  deviceType: 'dt',
  /** The device key (a client fingerprint, or derived from the headers). */
  device: 'dev',
  /** Whether the event carried a client fingerprint (`y`/`n`). */
  fingerprint: 'fp',
  /** The primary Accept-Language tag. */
  language: 'lang',
  /** Hour of day (UTC). */
  hour: 'hr',
  /** A mobile token's phone model, or a browser token's machine vector. */
  machine: 'mk',
  /** OS|browser. */
  software: 'sw',
  /** OS|browser|ASN. */
  softwareOnOperator: 'sa',
  /** OS|browser|network. */
  softwareOnNetwork: 'sn',
  /** ASN|network. */
  networkInOperator: 'an',
  /** ASN|country|city (else region). */
  placeInOperator: 'ap',
  /**
   * The ASN, when the address is a commercial VPN's, Tor's or a data centre's (placeless): which
   * of the user's operators are networks shared with strangers rather than the user's own.
   */
  anonymisingOperator: 'ao',
} as const satisfies Record<string, Level>;
/** A level's readable name (LEVEL maps it to its stored code). */
export type BehaviourLevel = keyof typeof LEVEL;

/** A feature value per level (null: not known for this event). */
export type FeatureValues = Record<Level, string | null>;

export interface Features {
  values: FeatureValues;
  /** The device key is a client fingerprint (strong), not derived from headers (weak). */
  fingerprinted: boolean;
  /** Hash of the request's shape: user agent, the set of header names, language and accept values. */
  shape: string;
  /** Lower-cased domain of the e-mail the event names, if any. */
  emailDomain: string | null;
  /** Hour bucket of the event time (hours since the epoch). */
  hourBucket: number;
  /** Fraction of that hour already past, for sliding windows. */
  hourFraction: number;
  /** The user agent is a native app's HTTP stack (OkHttp, CFNetwork, …), not a browser. */
  app: boolean;
  /**
   * The app release the user agent names (appReleaseOf; null: a browser, or an app's user agent
   * that says nothing of its release): what the environment's token habit is learned per, so that
   * an old release from before the client is judged as its own traffic.
   */
  release: string | null;
  /** A verified mobile token's device: its key and machine key (null: none). */
  mobile: { deviceKey: string; machineKey: string } | null;
  /** A verified browser token's machine vector (core/devices/machine.ts; null: none). */
  machine: string | null;
  /**
   * A verified browser token (null: none): whether its collection carried a proof of work, and
   * whether a person did something on the page before it was asked for (null: the page reported
   * no behaviour for a request; a token Castle's names keep ready ahead, say). See client/proof.ts.
   */
  /** A verified browser token: its proof, whether a person used the page, and its device key (its page's events are counted by it). */
  browserToken: { proved: boolean; interacted: boolean | null; deviceKey?: string | null } | null;
}

export const HOUR_MS = 3_600_000;

/**
 * A commercial VPN's, Tor's or a data centre's address is where its exit is, not where the user
 * is: it has no place within its operator, neither moves the user's last place nor makes travel
 * impossible (`proxy_ip` weighs the address itself). Apple's Private Relay egresses near its
 * users, so it counts as a place.
 */
export const placeless = (ip: IpIntel | null): boolean => Boolean(ip && (ip.vpn || ip.tor || ip.hosting));

/** The /24 of an IPv4 address or the /48 of an IPv6 one (or of an IPv6 /64, as hostOf writes it). */
export function networkOf(ip: string): string | null {
  if (ip.includes('.')) {
    // Four parts (three dots): the first three and `.0/24`.
    const last = ip.lastIndexOf('.');
    return dotsIn(ip) === 3 ? `${ip.slice(0, last)}.0/24` : null;
  }
  if (ip.includes(':')) {
    const groups = expandV6(ip.endsWith('::/64') ? ip.slice(0, -3) : ip);
    return groups ? `${groups.slice(0, 3).join(':')}::/48` : null;
  }
  return null;
}

/**
 * The address that stands for one host or home: an IPv4 address as it is, an IPv6 address as its
 * /64. A device on IPv6 takes a new privacy address from its network's /64 every day or so (RFC
 * 8981), and anyone holding a /64 has 2^64 addresses to rotate through: counted per address,
 * every login from home would look new and an attacker's velocity would spread out of sight.
 */
export function hostOf(ip: string): string | null {
  if (!ip.includes(':')) return ip;
  const groups = expandV6(ip);
  return groups ? `${groups.slice(0, 4).join(':')}::/64` : null;
}

/**
 * Where a host (hostOf's value) sits in its network (networkOf's): an IPv4 address's last octet
 * (`o69`), an IPv6 /64's fourth group (`h8d3`). Letters, digits and nothing else, so that it can
 * name fields; null when `host` is neither.
 */
export function hostInNetwork(host: string): string | null {
  if (!host.includes(':')) {
    if (dotsIn(host) !== 3) return null;
    const last = host.slice(host.lastIndexOf('.') + 1);
    return /^\d{1,3}$/.test(last) ? `o${last}` : null;
  }
  const groups = expandV6(host.endsWith('::/64') ? host.slice(0, -3) : host);
  const fourth = groups?.[3]?.toLowerCase();
  return fourth !== undefined && /^[0-9a-f]{1,4}$/.test(fourth) ? `h${fourth}` : null;
}

/** How many dots `s` holds. */
function dotsIn(s: string): number {
  let n = 0;
  for (let i = s.indexOf('.'); i >= 0; i = s.indexOf('.', i + 1)) n++;
  return n;
}

function expandV6(ip: string): string[] | null {
  const [head, tail] = ip.split('::');
  const h = head ? head.split(':') : [];
  const t = tail !== undefined && tail !== '' ? tail.split(':') : [];
  if (ip.includes('::')) {
    const fill = 8 - h.length - t.length;
    if (fill < 0) return null;
    return [...h, ...Array.from({ length: fill }, () => '0'), ...t];
  }
  return h.length === 8 ? h : null;
}

/** The first language tag of an Accept-Language header, lower-cased (`en-gb`), or null. */
export function primaryLanguage(header: string | true | undefined): string | null {
  if (typeof header !== 'string') return null;
  const first = header.split(',')[0]?.split(';')[0]?.trim().toLowerCase() ?? '';
  return /^[a-z]{2,3}(-[a-z0-9]{2,8})?$/.test(first) ? first : null;
}

/** Header names whose values vary by request rather than by client (left out of the shape). */
const VOLATILE = new Set([
  'cookie',
  'authorization',
  'content-length',
  'x-forwarded-for',
  'x-real-ip',
  'forwarded',
  'x-request-id',
  'traceparent',
  'referer',
  'origin',
  'host',
  'content-type',
  'x-castle-client-id',
  'x-castle-request-token',
  'x-service-client-id',
]);

/** The request's shape: what one client (or one attack tool) sends alike on every request. */
export function requestShape(event: Pick<EventInput, 'context'>): string {
  const h = event.context.headers;
  // In code-unit order (as sort() orders strings), placed as they come: a request has a dozen or
  // so, and sort() makes a working copy.
  const names: string[] = [];
  for (const n in h) {
    if (VOLATILE.has(n)) continue;
    let i = names.length;
    names.push(n);
    for (; i > 0 && (names[i - 1] as string) > n; i--) names[i] = names[i - 1] as string;
    names[i] = n;
  }
  const value = (n: string) => (typeof h[n] === 'string' ? (h[n] as string) : '');
  return shapeHash(
    `${event.context.userAgent ?? ''}\n${names.join(',')}\n${value('accept-language')}\n${value('accept')}\n${value('accept-encoding')}\n${value('sec-ch-ua')}`,
  );
}
/** Clients send the same shape over and over: its hash is kept (shortHash makes a hash object each time). */
const shapeHash = memoText(5_000, shortHash);
/** The same for the user agent's own hash. */
const agentHash = memoText(5_000, shortHash);

/** Where the operator placed the event's address, for people (`<country>, <city>`; null: nowhere). */
export const placeName = (v: Pick<FeatureValues, typeof LEVEL.placeInOperator>): string | null =>
  v[LEVEL.placeInOperator]?.split('|').slice(1).join(', ') ?? null;

export function extractFeatures(
  event: EventInput,
  ip: IpIntel | null,
  ua: ParsedUserAgent,
  device: { key: string; identity: Device['identity'] },
): Features {
  const at = event.occurredAt.getTime();
  const dot = ua.version.indexOf('.');
  const major = dot < 0 ? ua.version : ua.version.slice(0, dot);
  const known = (s: string) => (s && s !== 'Other' && s !== 'Unknown' ? s : null);
  // An app's family is its HTTP stack (OkHttp, CFNetwork, …), its finer level the app itself: the
  // headers a request carries are the stack's (OkHttp sends no Accept-Language, URLSession does),
  // whatever app and release names itself in the user agent, and missing_headers and the app
  // client's learning (request-evidence.ts) go by the family.
  const app = ua.app && ua.app.library !== 'native' ? ua.app : null;
  const browser = app ? app.library : known(ua.browser);
  const machine =
    device.identity === 'fingerprint' && !event.client?.mobile ? (event.client?.machine ?? null) : null;
  const operator = ip?.asn ? `AS${ip.asn.number}` : null;
  const network = ip && !ip.bogon ? networkOf(ip.ip) : null;
  const country = ip?.location?.country_code ?? null;
  const os = known(ua.os);
  // Where the operator placed this address (see placeless).
  const place = ip && !placeless(ip) ? (ip.location?.city ?? ip.location?.region ?? null) : null;
  // Where this software usually comes from: a user's laptop sits at home, their phone moves.
  const software = os || browser ? `${os ?? '?'}|${browser ?? '?'}` : null;
  // Keyed by the stored codes (LEVEL says which is which), in LEVELS' order.
  const values: FeatureValues = {
    ip: ip && !ip.bogon ? hostOf(ip.ip) : null,
    net: network,
    asn: operator,
    cc: country,
    ua: event.context.userAgent ? agentHash(event.context.userAgent) : null,
    br: app
      ? `${known(ua.browser) ?? app.library} ${major}`.trim()
      : browser
        ? `${browser} ${major}`.trim()
        : null,
    bf: browser,
    os,
    dt: ua.type,
    // Only a client fingerprint identifies a device; a key derived from headers is as easy to copy
    // as the headers, which the software levels already hold.
    dev: device.identity === 'fingerprint' ? device.key : null,
    fp: device.identity === 'fingerprint' ? 'y' : 'n',
    lang: primaryLanguage(event.context.headers['accept-language']),
    hr: String(new Date(at).getUTCHours()),
    mk: machine,
    sw: software,
    sa: software && operator ? `${software}|${operator}` : null,
    sn: software && network ? `${software}|${network}` : null,
    an: operator && network ? `${operator}|${network}` : null,
    ap: operator && country && place ? `${operator}|${country}|${place}` : null,
    ao: operator && placeless(ip) ? operator : null,
  };
  const email = event.email ?? (typeof event.properties.email === 'string' ? event.properties.email : null);
  const domain = email && email.includes('@') ? (email.split('@').pop() ?? '').toLowerCase() : null;
  return {
    values,
    fingerprinted: device.identity === 'fingerprint',
    shape: requestShape(event),
    emailDomain: domain || null,
    hourBucket: Math.floor(at / HOUR_MS),
    hourFraction: (at % HOUR_MS) / HOUR_MS,
    app: Boolean(ua.app),
    release: appReleaseOf(ua.app ?? null),
    mobile: event.client?.mobile
      ? { deviceKey: event.client.mobile.deviceKey, machineKey: event.client.mobile.machineKey }
      : null,
    machine,
    browserToken: browserToken(event),
  };
}

/** Longest app name and version a release key keeps (a user agent is the client's to write). */
const RELEASE_NAME_MAX = 64;
const RELEASE_VERSION_MAX = 32;

/**
 * The app release a native app's user agent names, as `<stack>|<name>/<version>`: the app's own
 * product token and version (iOS's `ShopApp/321 CFNetwork/… Darwin/…`, the bundle version;
 * `ShopApp/3.2.1 (Android 14; …) okhttp/4.12.0`). null: not an app, or a user agent that does not
 * name the app (a bare `okhttp/4.12.0` is sent by many releases alike, and by the tools that copy
 * it: its token habit is the apps' as a whole).
 */
export function appReleaseOf(app: AppClient | null): string | null {
  if (!app || !app.version) return null;
  const version = app.version.slice(0, RELEASE_VERSION_MAX);
  return app.name ? `${app.library}|${app.name.slice(0, RELEASE_NAME_MAX)}/${version}` : null;
}

/** A verified browser token's proof and the page's behaviour, as the population counts them. */
function browserToken(event: EventInput): Features['browserToken'] {
  const c = event.client;
  if (!c || c.problem !== null || c.mobile) return null;
  const b = c.behaviour ?? null;
  return {
    proved: (c.proof ?? null) !== null,
    interacted: b && !b.ahead ? interacted(b) : null,
    ...(c.deviceKey ? { deviceKey: c.deviceKey } : {}),
  };
}
