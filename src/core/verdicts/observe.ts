/**
 * What every event, verdict or feedback, teaches Rampart: the enriched context, the user profile
 * (last location, countries), velocity counters, and the stored event itself. Reads come first
 * (awaited); everything learnt is then recorded as changes written behind.
 */
import type { IpIntel, ParsedUserAgent } from '../../intel';
import { lookupIp, parseUserAgent } from '../../intel';
import { uuid } from '../crypto';
import type { Action, EnvId, EventInput, PolicyRef, Signals, StoredEvent } from '../model';
import type { CounterBump, CounterStore, ProfileChange } from '../ports';
import { deviceKey } from '../devices/service';

export const HOUR_MS = 3_600_000;
const MAX_DISTINCT = 50;

/** Approximate locations for sandbox test tokens (`ip:us-ca`). */
const TEST_LOCATIONS: Record<string, { country: string; region: string | null; lat: number; lon: number }> = {
  us: { country: 'United States', region: null, lat: 37.751, lon: -97.822 },
  'us-ca': { country: 'United States', region: 'California', lat: 37.7749, lon: -122.4194 },
  'us-ny': { country: 'United States', region: 'New York', lat: 40.7128, lon: -74.006 },
  gb: { country: 'United Kingdom', region: null, lat: 51.5074, lon: -0.1278 },
  de: { country: 'Germany', region: null, lat: 52.52, lon: 13.405 },
  fr: { country: 'France', region: null, lat: 48.8566, lon: 2.3522 },
  ru: { country: 'Russia', region: null, lat: 55.7558, lon: 37.6173 },
  cn: { country: 'China', region: null, lat: 39.9042, lon: 116.4074 },
  br: { country: 'Brazil', region: null, lat: -23.5505, lon: -46.6333 },
  in: { country: 'India', region: null, lat: 28.6139, lon: 77.209 },
};

/** Everything derived from an event before any database read. */
export interface Enriched {
  event: EventInput;
  ip: IpIntel | null;
  ua: ParsedUserAgent;
  key: ReturnType<typeof deviceKey>;
}

export function enrich(event: EventInput): Enriched {
  let ip = event.context.ip ? lookupIp(event.context.ip) : null;
  const forced = event.testToken?.ip;
  if (forced) {
    const [cc, region] = forced.split('-');
    const known = TEST_LOCATIONS[forced] ?? TEST_LOCATIONS[cc ?? ''];
    ip = {
      ip: event.context.ip ?? '203.0.113.1',
      version: 4,
      asn: null,
      hosting: false,
      tor: false,
      bogon: false,
      location: {
        country_code: (cc ?? '').toUpperCase(),
        country: known?.country ?? null,
        region: known?.region ?? null,
        region_code: region ? region.toUpperCase() : null,
        city: null,
        lat: known?.lat ?? null,
        lon: known?.lon ?? null,
      },
    };
  }
  return { event, ip, ua: parseUserAgent(event.context.userAgent), key: deviceKey(event) };
}

const hourBucket = (d: Date) => Math.floor(d.getTime() / HOUR_MS);

/** Names of the distinct sets kept in counters (a purge removes a user from each). */
export const COUNTER_SETS = ['users', 'failed'] as const;

/** The counter documents an event reads and writes: its IP's hour, and its device key. */
export function counterKeys(x: Enriched): { ip: string | null; device: string } {
  const ip = x.event.context.ip;
  return { ip: ip ? `ip:${ip}:${hourBucket(x.event.occurredAt)}` : null, device: `fp:${x.key.key}` };
}

export interface CounterReadings {
  eventsFromIpLastHour: number;
  failedLoginUsersFromIpLastHour: number;
  /** Distinct accounts seen on this fingerprint, this event's user included. */
  accountsOnFingerprint: number;
  failedChallenges: number;
  /** Set sizes as read, so that bumps can respect the cap. */
  sizes: { failed: number; users: number; userKnown: boolean };
}

/** The counts of an event when none could be read: only this event itself. */
export function unknownCounters(x: Enriched): CounterReadings {
  return {
    eventsFromIpLastHour: 1,
    failedLoginUsersFromIpLastHour: 0,
    accountsOnFingerprint: x.event.userId && x.event.context.fingerprint ? 1 : 0,
    failedChallenges: 0,
    sizes: { failed: 0, users: 0, userKnown: false },
  };
}

/**
 * Read the velocity counters of an event (from the state cache, or two parallel _id look-ups).
 * With `deadline`, undefined when they could not be read by then.
 */
export async function readCounters(counters: CounterStore, env: EnvId, x: Enriched, deadline?: number): Promise<CounterReadings | undefined> {
  const k = counterKeys(x);
  const snap = await counters.read(env, k.ip ? [k.ip, k.device] : [k.device], deadline);
  if (!snap) return undefined;
  const ip = k.ip ? snap[k.ip] : undefined;
  const device = snap[k.device];
  const users = x.event.context.fingerprint ? device?.sets.users ?? [] : [];
  const userId = x.event.userId;
  const userKnown = userId !== null && users.includes(userId);
  return {
    eventsFromIpLastHour: (ip?.counts.events ?? 0) + 1,
    failedLoginUsersFromIpLastHour: ip?.sets.failed?.length ?? 0,
    accountsOnFingerprint: users.length + (userId && x.event.context.fingerprint && !userKnown ? 1 : 0),
    failedChallenges: device?.counts.challenge_failed ?? 0,
    sizes: { failed: ip?.sets.failed?.length ?? 0, users: users.length, userKnown },
  };
}

/** Record this event in the velocity counters: deltas applied now and written behind. */
export function bumpCounters(counters: CounterStore, env: EnvId, x: Enriched, read: CounterReadings): void {
  const k = counterKeys(x);
  const e = x.event;
  const bumps: CounterBump[] = [];
  if (k.ip) {
    const who = e.userId ?? e.email ?? e.username;
    const failed = who && e.name === '$login.failed' && read.sizes.failed < MAX_DISTINCT;
    bumps.push({ key: k.ip, inc: { events: 1 }, ...(failed ? { add: { failed: who } } : {}) });
  }
  const device: CounterBump = { key: k.device };
  if (e.name === '$challenge.failed') device.inc = { challenge_failed: 1 };
  if (e.userId && e.context.fingerprint && !read.sizes.userKnown && read.sizes.users < MAX_DISTINCT) device.add = { users: e.userId };
  if (device.inc || device.add) bumps.push(device);
  if (bumps.length) counters.bump(env, bumps);
}

/** What an event naming a user teaches its profile (commutative: latest, earliest, add). */
export function profileChange(x: Enriched): ProfileChange {
  const e = x.event;
  const at = e.occurredAt;
  const change: ProfileChange = { seenAt: at, firstSeenAt: e.receivedAt };
  if (e.email) change.email = e.email;
  if (e.username) change.username = e.username;
  if (e.phone) change.phone = e.phone;
  if (e.registeredAt) change.registeredAt = e.registeredAt;
  else if (e.name === '$registration' || e.name === '$registration.succeeded') change.registeredAt = at;
  if (Object.keys(e.userTraits).length > 0) change.traits = e.userTraits;
  const loc = x.ip?.location;
  if (loc && loc.lat !== null && loc.lon !== null) change.location = { lat: loc.lat, lon: loc.lon, country: loc.country_code, at };
  if (loc?.country_code) change.country = loc.country_code;
  if (e.name === '$password_reset.succeeded') change.passwordResetAt = at;
  return change;
}

export function toStoredEvent(
  env: EnvId,
  x: Enriched,
  outcome: { action: Action | null; risk: number | null; signals: Signals; policy: PolicyRef | null; deviceToken: string | null; degraded?: boolean },
): StoredEvent {
  const e = x.event;
  return {
    id: uuid(),
    envId: env,
    name: e.customName ? `${e.name}:${e.customName}` : e.name,
    endpoint: e.endpoint,
    userId: e.userId,
    email: e.email,
    deviceToken: outcome.deviceToken,
    ip: e.context.ip,
    country: x.ip?.location?.country_code ?? null,
    asn: x.ip?.asn?.number ?? null,
    userAgent: e.context.userAgent,
    action: outcome.action,
    risk: outcome.risk,
    signals: Object.keys(outcome.signals),
    signalDetails: outcome.signals,
    policy: outcome.policy,
    context: e.context,
    userTraits: e.userTraits,
    properties: e.properties,
    occurredAt: e.occurredAt,
    receivedAt: e.receivedAt,
    degraded: outcome.degraded ?? false,
  };
}
