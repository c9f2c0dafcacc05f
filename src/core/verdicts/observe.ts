/**
 * What the verdict and track use cases share: enriching an event (enrich), reading the state
 * it needs (readEventState), and what every event, verdict or feedback, teaches Rampart: the
 * user profile (last location, countries), velocity counters, and the stored event itself.
 * Reads come first (awaited); everything learnt is then recorded as changes written behind.
 */
import type { IpIntel, ParsedUserAgent } from '../intel/types';
import { timeOrderedUuid } from '../crypto';
import type { Action, Device, EnvId, EventInput, PolicyRef, Signals, StoredEvent } from '../model';
import type { CounterStore, Intel, ProfileChange, UserState, UserStateStore } from '../ports';
import { sha256Hex } from '../crypto';
import { extractFeatures, type Features } from '../scoring/features';
import type { EventKind } from '../scoring/evidence';
import { eventKind } from '../scoring/model';
import {
  accountOfEmail,
  counterBumps,
  emailBump,
  keysToRead,
  NO_SNAPSHOTS,
  populationCounts,
  tokenBump,
  type Outcome,
  type Snapshots,
} from '../scoring/population';
import { deviceOfMachine } from '../devices/machine';
import { deviceKey } from '../devices/service';
import { completesRegistration } from '../events/catalog';
import { withMobileDevice } from '../client/mobile';
import { namesOfEvent } from '../privacy/names';

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
  /** The e-mail the event names is at a throw-away domain (the intel port's list). */
  disposableEmail: boolean;
  features: Features;
  /** SHA-256 of the lower-cased e-mail the event names (the key of its account look-up). */
  emailHash: string | null;
  kind: EventKind;
}

/** Everything derived from an event before any database read, with the reference data of `intel`. */
export function enrich(event: EventInput, intel: Intel): Enriched {
  let ip = event.context.ip ? intel.lookupIp(event.context.ip) : null;
  const forced = event.testToken?.ip;
  if (forced) {
    const [cc, region] = forced.split('-');
    const known = TEST_LOCATIONS[forced] ?? TEST_LOCATIONS[cc ?? ''];
    ip = {
      ip: event.context.ip ?? '203.0.113.1',
      version: 4,
      asn: null,
      hosting: false,
      vpn: false,
      relay: false,
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
  const parsed = intel.parseUserAgent(event.context.userAgent);
  const ua = event.client?.mobile ? withMobileDevice(parsed, event.client.mobile) : parsed;
  const key = deviceKey(event);
  const email = eventEmail(event);
  const named = event.email ?? (typeof event.properties.email === 'string' ? event.properties.email : null);
  return {
    event,
    ip,
    ua,
    key,
    features: extractFeatures(event, ip, ua, key),
    // Hashed afresh each time: no e-mail address is kept in memory past its request, so that a
    // purge leaves none behind.
    emailHash: email ? sha256Hex(email) : null,
    kind: eventKind(event.name),
    disposableEmail: named !== null && intel.isDisposableEmail(named),
  };
}

/** The e-mail an event names (identity or submitted identifier), lower-cased. */
export function eventEmail(event: EventInput): string | null {
  const email = event.email ?? (typeof event.properties.email === 'string' ? event.properties.email : null);
  return email && email.includes('@') ? email.trim().toLowerCase() : null;
}

/** What the engine reads for an event: the user's state and the counter documents. */
export interface EventState {
  /** The account the event is about (its user id, or the one its e-mail belongs to). */
  userId: string | null;
  /** The user's state: null for an account never seen, undefined when not read in time. */
  state: UserState | null | undefined;
  /**
   * The counter documents (population, windows): when they were not all read in time, those this
   * process holds in memory (`partial`), undefined only where nothing could be asked.
   */
  counters: Snapshots | undefined;
  /** The counters are only those held in memory: the read missed the verdict's budget. */
  partial?: boolean;
  /** Neither the user nor the e-mail is known to Rampart. */
  unknownAccount: boolean;
}

/**
 * The event's device as the user's registry knows it. A browser profile linked to one of the
 * user's devices is that device; a new profile on one of the user's own machines, at home, is
 * linked to it now (core/devices/machine.ts): the event then counts as that device's (the
 * registry, the behavioural model, the velocity windows) and `link` names the profile to link.
 */
export function resolveDevice(x: Enriched, read: EventState): { x: Enriched; link: string | null } {
  const state = read.state;
  if (!state || x.key.identity !== 'fingerprint' || state.devices.some((d) => d.fingerprintKey === x.key.key))
    return { x, link: null };
  const as = (device: Device): Enriched => ({
    ...x,
    key: { key: device.fingerprintKey, identity: 'fingerprint' },
    features: { ...x.features, values: { ...x.features.values, dev: device.fingerprintKey } },
  });
  const linked = state.devices.find((d) => d.linkedKeys.includes(x.key.key));
  if (linked) return { x: as(linked), link: null };
  const machine = x.features.machine;
  if (!machine) return { x, link: null };
  const at = x.event.occurredAt.getTime();
  const device = deviceOfMachine(
    state,
    x.features,
    populationCounts(read.counters ?? NO_SNAPSHOTS, at).machine(machine),
    at,
  );
  return device ? { x: as(device), link: x.key.key } : { x, link: null };
}

export interface StateReaders {
  users: UserStateStore;
  counters: CounterStore;
}

/**
 * Read what the engine needs for an event: one batched look-up of the counter documents and one
 * of the user (at the same time when the event names its user; after the counters when only its
 * e-mail says who it is). With `deadline`, what is not read by then is undefined.
 */
export async function readEventState(
  d: StateReaders,
  env: EnvId,
  x: Enriched,
  deadline?: number,
): Promise<EventState> {
  const userId = x.event.userId;
  const keys = keysToRead(x.features, x.emailHash, x.event.client?.jti ?? null);
  const [state, read] = await Promise.all([
    userId ? d.users.load(env, userId, deadline) : Promise.resolve(null),
    d.counters.read(env, keys, deadline),
  ]);
  // Past the budget, what memory holds: the windows that decide stuffing are always there, so a
  // slow database (or an attacker who makes the service slow) does not make the verdict blind.
  const partial = read === undefined;
  const counters = read ?? d.counters.held(env, keys);
  const flag = partial ? { partial: true } : {};
  if (userId) return { userId, state, counters, unknownAccount: state === null, ...flag };
  const account = accountOfEmail(counters, x.emailHash);
  if (!account)
    return { userId: null, state: null, counters, unknownAccount: x.emailHash !== null && !partial, ...flag };
  const byEmail = await d.users.load(env, account, deadline);
  return { userId: account, state: byEmail, counters, unknownAccount: byEmail === null, ...flag };
}

/** The header facts counted per browser (what the application forwards). */
export const headerFacts = (x: Enriched) => {
  const h = x.event.context.headers;
  return {
    acceptLanguage: h['accept-language'] !== undefined,
    secFetch: h['sec-fetch-mode'] !== undefined || h['sec-fetch-site'] !== undefined,
    clientHints: h['sec-ch-ua'] !== undefined,
    acceptEncoding: h['accept-encoding'] !== undefined,
  };
};

/** Record what the event taught in the counters (and which account its e-mail belongs to). */
export function recordCounters(
  counters: CounterStore,
  env: EnvId,
  x: Enriched,
  read: EventState,
  outcome: Outcome,
): void {
  const s = read.counters ?? NO_SNAPSHOTS;
  const bumps = counterBumps(x.features, outcome, s, x.event.occurredAt.getTime(), headerFacts(x));
  const token = x.event.client?.jti;
  if (token) bumps.push(tokenBump(token, x.event.receivedAt.getTime(), x.event.context.ip));
  if (x.emailHash && x.event.userId && (outcome.success || x.kind === 'registration')) {
    const b = emailBump(s, x.emailHash, x.event.userId);
    if (b) bumps.push(b);
  }
  if (bumps.length) counters.bump(env, bumps);
}

/**
 * What an event naming a user teaches its profile (commutative: latest, earliest, add). Where
 * the user is (last location, countries) is learnt only from `legit` events: an attacker's
 * attempt must not move the victim.
 */
export function profileChange(x: Enriched, legit: boolean): ProfileChange {
  const e = x.event;
  const at = e.occurredAt;
  const change: ProfileChange = { seenAt: at, firstSeenAt: e.receivedAt };
  if (e.email) change.email = e.email;
  if (e.username) change.username = e.username;
  if (e.phone) change.phone = e.phone;
  if (e.registeredAt) change.registeredAt = e.registeredAt;
  else if (completesRegistration(e.name)) change.registeredAt = at;
  if (Object.keys(e.userTraits).length > 0) change.traits = e.userTraits;
  const loc = x.ip?.location;
  if (legit && loc && loc.lat !== null && loc.lon !== null)
    change.location = { lat: loc.lat, lon: loc.lon, country: loc.country_code, at };
  if (legit && loc?.country_code) change.country = loc.country_code;
  if (e.name === '$password_reset.succeeded') change.passwordResetAt = at;
  return change;
}

export function toStoredEvent(
  env: EnvId,
  x: Enriched,
  outcome: {
    id?: string;
    action: Action | null;
    risk: number | null;
    signals: Signals;
    policy: PolicyRef | null;
    deviceToken: string | null;
    degraded?: boolean;
  },
): StoredEvent {
  const e = x.event;
  const stored: StoredEvent = {
    id: outcome.id ?? timeOrderedUuid(),
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
  // What names the person an anonymous event is about, for a purge to find it.
  if (e.userId === null) {
    const names = namesOfEvent(e);
    if (names.length > 0) stored.names = names;
  }
  return stored;
}
