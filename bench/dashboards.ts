/**
 * `node dist/bench/run.js --only dashboards` (not in `npm run bench`'s default sections: it loads
 * millions of documents and takes tens of minutes): the console's queries against a large
 * environment, and scoring beside a console user.
 *
 *   1. Bulk-load an environment straight into the bench's database (not through the verdict
 *      path): `--dash-events` events (default 5,000,000) of `--dash-users` users (default
 *      200,000), inserted as the store writes them (toEventDoc, unordered insertMany batches from
 *      several connections at once), and each user's state (user document, device token
 *      documents, the devices' dashboard copies) written by the store's own write path
 *      (StateUserStore.record on a StateLayer in `snapshots` mode with the users packed, as the
 *      embedded Rampart writes them). What the live path writes beside each event is written too,
 *      by the store's own writers: the overview's rollups (RollupWriter) and the event keys
 *      (EventKeyWriter). Events are generated user by user, not in time order: handed to the
 *      writers as they come, every push of theirs would touch most of the 7 days' ~10,000 rollups
 *      (each rewritten whole, again and again, all held in memory) and break the rollups' bound
 *      on distinct addresses. So what the writers read of each event is kept compactly
 *      (bench/lib/event-log.ts) and handed to them once the events are in, in time order, pushed
 *      every 50,000 events at a minute's end; their "since" markers are then set to the earliest
 *      event's minute. Events span the last 7 days (a denser last 24 h), users are picked with a
 *      Zipf-like skew, addresses are clustered in /24 networks (hence in ASNs and countries, from
 *      the offline intel), ~15% of events carry signals, verdicts are mostly allow with some
 *      challenge and deny, and ~3% of events are `$login.failed` for unknown accounts (no user
 *      id, an e-mail). What is left out: the users' behavioural models (the
 *      `p` field scoring learns), velocity counters, webhooks and policies (events of a verdict
 *      name a policy that does not exist).
 *   2. Time each console query through GraphQL over HTTP (the console's own query texts,
 *      src/console/ui/queries.ts), each `--dash-reps` times in a row: p50/p95/max, failures and
 *      the GraphQL error codes (DEADLINE_EXCEEDED is a failure).
 *   3. REST /v1/risk in a closed loop alone, then while a simulated console user clicks through
 *      every page in a loop.
 *   4. The resident memory of the embedded database's primary and of the analysts' reader.
 */
import http from 'node:http';
import { randomBytes, randomUUID } from 'node:crypto';
import { MongoClient, type Db } from 'mongodb';
import {
  asEnvId,
  type Action,
  type EnvId,
  type Endpoint,
  type EventContext,
  type PolicyRef,
  type Signals,
  type StoredEvent,
} from '../src/core/model';
import type { DeviceChange, UserChange } from '../src/core/ports';
import { deviceTokenFor, fingerprintKeyOf } from '../src/core/devices/service';
import { lookupIp, parseUserAgent, type GeoLocation } from '../src/intel';
import { EVENTS, toEventDoc, type EventDoc } from '../src/store/events';
import { EVENT_KEYS, EventKeyWriter, markKeysSince } from '../src/store/event-keys';
import { markRollupsSince, ROLLUPS, RollupWriter } from '../src/store/rollups';
import { RollupCompactor } from '../src/store/rollup-compactor';
import { StateLayer } from '../src/store/state/layer';
import { StateUserStore, USERS, USER_QUERY_FIELDS } from '../src/store/user-state';
import { EVENT, eventsQuery, REVIEW, SERIES, SOURCES, USER } from '../src/console/ui/queries';
import { EventLog } from './lib/event-log';
import { jsonPoster } from './lib/http';
import { closedLoop, percentile, summarize, table, type Call, type Result } from './lib/load';
import { LANGUAGES, NETWORKS, rng, USER_AGENTS } from './lib/traffic';
import type { Endpoints, MemorySample } from './lib/server';
import { megabytes } from './lib/server';

export interface DashboardOptions {
  events: number;
  users: number;
  /** Times each query is run. */
  reps: number;
}

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/** A /24 network: where a user lives, or where an attack comes from. */
interface Network {
  prefix: string;
  location: GeoLocation | null;
  country: string | null;
  asn: number | null;
}

interface Person {
  home: Network;
  homeHost: number;
  mobile: Network;
  email: string;
  ua: string;
  language: string;
  /** Fingerprints of the person's usual devices (the first is the main one). */
  fingerprints: string[];
}

/** What the query section needs to know about the loaded data. */
export interface Loaded {
  envId: string;
  /** The most active user and a typical one (ids, e-mails and their event counts). */
  top: { id: string; email: string; events: number; device: string; ip: string };
  typical: { id: string; email: string; events: number; device: string; ip: string };
  eventId: string;
  signal: string;
  /** The top user's home network (`a.b.c.0/24`), and a country and an ASN of the loaded addresses. */
  network: string;
  country: string | null;
  asn: number | null;
  /** A policy that decided loaded verdicts. */
  policyId: string;
  /** The newest loaded event's time (ms). */
  newest: number;
}

/** Signals, most frequent first (names the engine uses: src/core/scoring/signals.ts). */
const SIGNALS = [
  'new_device',
  'new_country',
  'high_activity_ip',
  'proxy_ip',
  'language_country_mismatch',
  'unusual_network_for_device',
  'impossible_travel',
  'multiple_accounts_per_device',
  'headless_browser',
  'disposable_email',
  'bot_behavior',
];

/** Event kinds of a known user: name, endpoint, whether it has a verdict, weight. */
const USER_EVENTS: readonly { name: string; endpoint: Endpoint; verdict: boolean; weight: number }[] = [
  { name: '$login.succeeded', endpoint: 'risk', verdict: true, weight: 50 },
  { name: '$login.attempted', endpoint: 'filter', verdict: true, weight: 10 },
  { name: '$login.failed', endpoint: 'track', verdict: false, weight: 9 },
  { name: '$logout.succeeded', endpoint: 'track', verdict: false, weight: 10 },
  { name: '$profile_update.succeeded', endpoint: 'risk', verdict: true, weight: 8 },
  { name: '$password_reset_request.succeeded', endpoint: 'risk', verdict: true, weight: 3 },
  { name: '$login.succeeded', endpoint: 'authenticate', verdict: true, weight: 8 },
  { name: '$challenge.succeeded', endpoint: 'track', verdict: false, weight: 2 },
];
const USER_EVENT_WEIGHT = USER_EVENTS.reduce((n, e) => n + e.weight, 0);
/** Share of all events that are failed logins of unknown accounts (credential stuffing). */
const UNKNOWN_SHARE = 0.03;
const POLICIES: Record<Exclude<Action, 'allow'>, PolicyRef> = {
  challenge: {
    id: 'bench-policy-challenge',
    revision: 'bench-policy-challenge',
    name: 'Challenge risky logins',
    action: 'challenge',
  },
  deny: { id: 'bench-policy-deny', revision: 'bench-policy-deny', name: 'Deny high risk', action: 'deny' },
};

const pad = (s: string | number, n: number) => String(s).padStart(n);
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** `count` /24 networks under the residential first octets, located by the offline intel. */
function networks(r: () => number, count: number, firstOctets: readonly number[]): Network[] {
  const out: Network[] = [];
  const seen = new Set<string>();
  while (out.length < count) {
    const prefix = `${firstOctets[Math.floor(r() * firstOctets.length)]}.${Math.floor(r() * 256)}.${Math.floor(r() * 256)}`;
    if (seen.has(prefix)) continue;
    seen.add(prefix);
    const intel = lookupIp(`${prefix}.1`);
    out.push({
      prefix,
      location: intel.location,
      country: intel.location?.country_code ?? null,
      asn: intel.asn?.number ?? null,
    });
  }
  return out;
}

/** Skewed pick in [0, n): the top 1% of indexes get ~16% of the picks (as bench/lib/traffic.ts). */
const skewed = (r: () => number, n: number) => Math.min(n - 1, Math.floor(n * r() ** 2.5));

/** An event time in the last 7 days, 40% of them in the last 24 h. */
const eventTime = (r: () => number, now: number) =>
  now - Math.floor((r() < 0.4 ? r() * DAY : r() * 7 * DAY) + 1000);

function pickSignals(r: () => number, hostile: boolean): string[] {
  if (!hostile && r() >= 0.13) return [];
  const n = 1 + (r() < 0.3 ? 1 : 0) + (r() < 0.1 ? 1 : 0);
  const out = new Set<string>();
  while (out.size < n) out.add(SIGNALS[skewed(r, SIGNALS.length)] as string);
  return [...out];
}

function verdictOf(r: () => number, signals: readonly string[]): { action: Action; risk: number } {
  const risk =
    signals.length === 0 ? 0.02 + r() * 0.3 : Math.min(0.99, 0.3 + 0.2 * signals.length + r() * 0.45);
  return {
    action: risk >= 0.9 ? 'deny' : risk >= 0.6 ? 'challenge' : 'allow',
    risk: Math.round(risk * 1000) / 1000,
  };
}

function detailsOf(signals: readonly string[], ip: string | null): Signals {
  const out: Signals = {};
  for (const s of signals)
    out[s] =
      s === 'multiple_accounts_per_device'
        ? { accounts: 4 }
        : s === 'high_activity_ip'
          ? { ip, events: 120 }
          : {};
  return out;
}

function contextOf(ip: string, ua: string, language: string, fingerprint: string | null): EventContext {
  return {
    ip,
    headers: {
      'user-agent': ua,
      accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8',
      'accept-language': language,
      'accept-encoding': 'gzip, deflate, br',
    },
    userAgent: ua,
    fingerprint,
    extra: {},
  };
}

/**
 * Write `docs` into `col` with at most `parallel` unordered insertMany batches in flight.
 */
class Inserter {
  private readonly inFlight = new Set<Promise<void>>();
  inserted = 0;
  constructor(
    private readonly dbs: Db[],
    private readonly parallel: number,
  ) {}
  private next = 0;
  async add(collection: string, docs: EventDoc[]): Promise<void> {
    while (this.inFlight.size >= this.parallel) await Promise.race(this.inFlight);
    const db = this.dbs[this.next++ % this.dbs.length] as Db;
    const p: Promise<void> = db
      .collection<EventDoc>(collection)
      .insertMany(docs, { ordered: false })
      .then((r) => {
        this.inserted += r.insertedCount;
      })
      .finally(() => this.inFlight.delete(p));
    this.inFlight.add(p);
  }
  async drain(): Promise<void> {
    await Promise.all(this.inFlight);
  }
}

/** A state layer that counts what is handed to it per collection: changes, distinct documents changed, inserts. */
class CountingStateLayer extends StateLayer {
  readonly changed = new Map<string, Set<string>>();
  readonly changes = new Map<string, number>();
  readonly inserts = new Map<string, number>();
  override apply(...args: Parameters<StateLayer['apply']>): void {
    const [collection, id] = args;
    let ids = this.changed.get(collection);
    if (!ids) this.changed.set(collection, (ids = new Set()));
    ids.add(id);
    this.changes.set(collection, (this.changes.get(collection) ?? 0) + 1);
    super.apply(...args);
  }
  override insert(...args: Parameters<StateLayer['insert']>): void {
    this.inserts.set(args[0], (this.inserts.get(args[0]) ?? 0) + 1);
    super.insert(...args);
  }
}

/** Events handed to the rollup and key writers between two pushes (at the end of a minute). */
const FEED_BATCH = 50_000;

/**
 * Hand the logged events to the store's rollup and key writers in time order, as the live path
 * would have as they arrived, pushing every FEED_BATCH events at a minute's end; then set their
 * "since" markers to the earliest event's minute (the writers set them from the first event they
 * see, rounded up). Written through a state layer as the embedded Rampart's (`snapshots`), with a
 * small cache: a rollup is not touched again once its minute (hour) is past.
 */
async function writeRollupsAndKeys(db: Db, env: EnvId, log: EventLog, out: (s: string) => void) {
  const state = new CountingStateLayer(db, {
    writeMode: 'snapshots',
    maxEntries: 2000,
    maxBatch: 1000,
    queueLimit: 100_000_000,
    maxUnwrittenMs: 3_600_000,
    flushIntervalMs: 1000,
    onError: (err, what) =>
      out(`  rollups and keys: ${what}: ${err instanceof Error ? err.message : String(err)}\n`),
  });
  const rollups = new RollupWriter({ state, pushEveryMs: 60_000 });
  const keys = new EventKeyWriter({ state, pushEveryMs: 60_000 });
  const order = log.byMinute();
  let fed = 0;
  let minute = -1;
  for (const i of order) {
    const ev = log.event(i);
    const m = Math.floor(ev.occurredAt.getTime() / 60_000);
    if (m !== minute && fed >= FEED_BATCH) {
      // flush() drains the key writer too.
      rollups.drain();
      await state.flush();
      fed = 0;
    }
    minute = m;
    rollups.record(ev);
    keys.record(ev);
    fed++;
  }
  rollups.drain();
  await state.flush();
  await state.close(60_000);
  const since = new Date(Math.floor(log.earliest / 60_000) * 60_000);
  await markRollupsSince(db, env, since);
  await markKeysSince(db, env, since);
  return {
    rollups: state.changed.get(ROLLUPS)?.size ?? 0,
    rollupWrites: state.changes.get(ROLLUPS) ?? 0,
    keys: state.inserts.get(EVENT_KEYS) ?? 0,
    since,
  };
}

/**
 * Load the environment: events straight into `events` (batches of `batch`, `parallel` at once,
 * each connection its own client) and users through the store's write path.
 */
export async function loadEnvironment(
  e: Endpoints,
  o: DashboardOptions,
  out: (s: string) => void,
): Promise<Loaded> {
  const env = asEnvId(e.envId);
  const r = rng(7);
  const now = Date.now();
  const started = performance.now();
  const PARALLEL = 4;
  const BATCH = 5000;
  const clients = await Promise.all(
    Array.from({ length: PARALLEL }, () =>
      new MongoClient(e.dbUri, { maxPoolSize: 2, serverSelectionTimeoutMS: 5000 }).connect(),
    ),
  );
  const inserter = new Inserter(
    clients.map((c) => c.db(e.dbName)),
    PARALLEL,
  );
  // The store's write path for users, as the embedded Rampart configures it (src/app/build.ts).
  const stateClient = await new MongoClient(e.dbUri, {
    maxPoolSize: 4,
    serverSelectionTimeoutMS: 5000,
  }).connect();
  const state = new StateLayer(stateClient.db(e.dbName), {
    writeMode: 'snapshots',
    packed: { [USERS]: USER_QUERY_FIELDS },
    maxEntries: 50_000,
    maxBatch: 1000,
    queueLimit: 100_000_000,
    maxUnwrittenMs: 3_600_000,
    flushIntervalMs: 1000,
    onError: (err, what) =>
      out(`  state layer: ${what}: ${err instanceof Error ? err.message : String(err)}\n`),
  });
  const users = new StateUserStore({ db: stateClient.db(e.dbName), state });
  const tokenKey = randomBytes(32);

  // Where people live: residential /24s (a few big ones: carriers' NAT), and hosting /24s attacks come from.
  const homes = networks(r, Math.max(200, Math.ceil(o.users / 50)), NETWORKS);
  const hostile = networks(r, 40, [5, 23, 45, 64, 103, 104, 138, 146, 185, 193]);
  const people: Person[] = Array.from({ length: o.users }, (_, i) => ({
    home: homes[skewed(r, homes.length)] as Network,
    homeHost: 1 + Math.floor(r() * 254),
    mobile: homes[Math.floor(r() * homes.length)] as Network,
    email: `user${i}@${['example.com', 'mail.example', 'example.org', 'inbox.example'][i % 4]}`,
    ua: USER_AGENTS[Math.floor(r() * USER_AGENTS.length)] as string,
    language: LANGUAGES[Math.floor(r() * LANGUAGES.length)] as string,
    fingerprints: [
      `dash-fp-${i}-a`,
      ...(r() < 0.5 ? [`dash-fp-${i}-b`] : []),
      ...(r() < 0.15 ? [`dash-fp-${i}-c`] : []),
    ],
  }));
  const parsedUa = new Map(USER_AGENTS.map((ua) => [ua, parseUserAgent(ua)]));

  // Events per user: one each, the rest skewed (the most active users have thousands).
  const unknown = Math.round(o.events * UNKNOWN_SHARE);
  const counts = new Int32Array(o.users).fill(1);
  for (let k = o.users; k < o.events - unknown; k++) counts[skewed(r, o.users)]++;
  // What the rollup and key writers read of every event, for after the load (writeRollupsAndKeys).
  const log = new EventLog(counts.reduce((a, b) => a + b, 0) + unknown, env);
  const userIdOf = (i: number) => `dash-${i}`;

  const sample = (i: number) => {
    const p = people[i] as Person;
    return {
      id: userIdOf(i),
      email: p.email,
      events: counts[i] ?? 0,
      device: deviceTokenFor(tokenKey, env, userIdOf(i), fingerprintKeyOf(p.fingerprints[0] as string)),
      ip: `${p.home.prefix}.${p.homeHost}`,
    };
  };
  let eventId = '';
  let docs: EventDoc[] = [];
  const push = async (ev: StoredEvent) => {
    docs.push(toEventDoc(ev));
    log.add(ev);
    if (docs.length >= BATCH) {
      const batch = docs;
      docs = [];
      await inserter.add(EVENTS, batch);
    }
  };
  let unknownLeft = unknown;
  let lastReport = performance.now();
  const CHUNK = 2000;
  for (let first = 0; first < o.users; first += CHUNK) {
    const ids = Array.from({ length: Math.min(CHUNK, o.users - first) }, (_, k) => userIdOf(first + k));
    // Read once (they do not exist): the state layer then knows each document whole, as a verdict leaves it.
    await users.loadMany(env, ids);
    for (let i = first; i < first + ids.length; i++) {
      const p = people[i] as Person;
      const userId = userIdOf(i);
      const times = Array.from({ length: counts[i] ?? 0 }, () => eventTime(r, now)).sort((a, b) => a - b);
      const created = new Set<string>();
      for (const at of times) {
        const kindPick = r() * USER_EVENT_WEIGHT;
        let acc = 0;
        const kind =
          USER_EVENTS.find((k) => (acc += k.weight) > kindPick) ??
          (USER_EVENTS[0] as (typeof USER_EVENTS)[number]);
        const where = r();
        const net =
          where < 0.8
            ? p.home
            : where < 0.93
              ? p.mobile
              : where < 0.98
                ? (homes[Math.floor(r() * homes.length)] as Network)
                : (hostile[Math.floor(r() * hostile.length)] as Network);
        const ip = where < 0.8 ? `${net.prefix}.${p.homeHost}` : `${net.prefix}.${1 + Math.floor(r() * 254)}`;
        const which = r();
        const fingerprint =
          which < 0.9
            ? (p.fingerprints[0] as string)
            : which < 0.98
              ? (p.fingerprints[Math.floor(r() * p.fingerprints.length)] as string)
              : `dash-fp-new-${Math.floor(r() * 1e9)}`;
        const key = fingerprintKeyOf(fingerprint);
        const token = deviceTokenFor(tokenKey, env, userId, key);
        const signals = pickSignals(r, where >= 0.98);
        const verdict = kind.verdict ? verdictOf(r, signals) : null;
        const occurredAt = new Date(at);
        const receivedAt = new Date(at + Math.floor(r() * 50));
        const context = contextOf(ip, p.ua, p.language, fingerprint);
        const ev: StoredEvent = {
          id: randomUUID(),
          envId: env,
          name: kind.name,
          endpoint: kind.endpoint,
          userId,
          email: p.email,
          deviceToken: token,
          ip,
          country: net.country,
          asn: net.asn,
          userAgent: p.ua,
          action: verdict?.action ?? null,
          risk: verdict?.risk ?? null,
          signals,
          signalDetails: detailsOf(signals, ip),
          policy: verdict && verdict.action !== 'allow' ? POLICIES[verdict.action] : null,
          context,
          userTraits: r() < 0.2 ? { plan: r() < 0.3 ? 'pro' : 'free' } : {},
          properties: {},
          occurredAt,
          receivedAt,
          degraded: false,
        };
        if (!eventId && i === Math.floor(o.users / 2)) eventId = ev.id;
        await push(ev);
        // What the event teaches the user's state (src/core/verdicts/observe.ts), written by the store.
        const legit = verdict === null ? kind.name !== '$login.failed' : verdict.action === 'allow';
        const ua = parsedUa.get(p.ua) ?? parseUserAgent(p.ua);
        const device: DeviceChange = {
          key,
          seen: {
            at: occurredAt,
            context: { ip, location: net.location, userAgent: ua, type: ua.type, properties: {} },
          },
          ...(created.has(key)
            ? {}
            : { create: { token, identity: 'fingerprint' as const, at: occurredAt } }),
          ...(verdict ? { eventRisk: verdict.risk } : {}),
          ...(kind.name === '$challenge.succeeded'
            ? { review: { state: 'approved' as const, at: occurredAt } }
            : {}),
          // A few denied devices were reported by the user.
          ...(verdict?.action === 'deny' && r() < 0.05
            ? { review: { state: 'reported' as const, at: occurredAt } }
            : {}),
        };
        created.add(key);
        const change: UserChange = {
          profile: {
            seenAt: occurredAt,
            firstSeenAt: receivedAt,
            email: p.email,
            ...(legit && net.location && net.location.lat !== null && net.location.lon !== null
              ? {
                  location: {
                    lat: net.location.lat,
                    lon: net.location.lon,
                    country: net.country,
                    at: occurredAt,
                  },
                }
              : {}),
            ...(legit && net.country ? { country: net.country } : {}),
          },
          devices: [device],
        };
        users.record(env, userId, change);
      }
      // Credential stuffing against unknown accounts, spread among the users' events.
      const due = Math.round((unknown * (i + 1)) / o.users) - (unknown - unknownLeft);
      for (let k = 0; k < due; k++, unknownLeft--) {
        const net = hostile[skewed(r, hostile.length)] as Network;
        const ip = `${net.prefix}.${1 + Math.floor(r() * 254)}`;
        const ua = USER_AGENTS[Math.floor(r() * USER_AGENTS.length)] as string;
        const signals = pickSignals(r, true);
        const at = eventTime(r, now);
        await push({
          id: randomUUID(),
          envId: env,
          name: '$login.failed',
          endpoint: 'track',
          userId: null,
          email: `nobody${Math.floor(r() * 1e7)}@${['example.net', 'mail.example', 'example.com'][k % 3]}`,
          deviceToken: null,
          ip,
          country: net.country,
          asn: net.asn,
          userAgent: ua,
          action: null,
          risk: null,
          signals,
          signalDetails: detailsOf(signals, ip),
          policy: null,
          context: contextOf(ip, ua, 'en-US,en;q=0.9', null),
          userTraits: {},
          properties: {},
          occurredAt: new Date(at),
          receivedAt: new Date(at + 20),
          degraded: false,
        });
      }
    }
    await state.flush();
    if (performance.now() - lastReport > 30_000) {
      lastReport = performance.now();
      const s = (performance.now() - started) / 1000;
      out(
        `  … ${first + ids.length} users, ${inserter.inserted} events in ${s.toFixed(0)} s (${(inserter.inserted / s).toFixed(0)} events/s)\n`,
      );
    }
  }
  if (docs.length) await inserter.add(EVENTS, docs);
  await inserter.drain();
  await state.close(60_000);
  const derivedStarted = performance.now();
  const derived = await writeRollupsAndKeys(stateClient.db(e.dbName), env, log, out);
  const derivedMs = performance.now() - derivedStarted;
  // Pack the settled hours and days, as the server's compactor would within 5 minutes.
  const packStarted = performance.now();
  const packing = await new RollupCompactor({
    db: stateClient.db(e.dbName),
    environments: async () => [{ id: env, retentionDays: 31 }],
  }).run();
  const packMs = performance.now() - packStarted;
  const ms = performance.now() - started;
  // No count of what is stored: on FerretDB a count decodes every document (still running after
  // 4 minutes on 5M events here).
  await Promise.all([...clients, stateClient].map((c) => c.close()));
  out(
    `\nLoaded in ${seconds(ms)}: ${inserter.inserted} events (${(inserter.inserted / (ms / 1000)).toFixed(0)} events/s overall, users' state, rollups and keys included; ${PARALLEL} connections, unordered insertMany of ${BATCH}), ${o.users} users\n` +
      `  rollups and event keys, in time order after the events (${seconds(derivedMs)}): ${derived.rollups} rollup documents (${derived.rollupWrites} writes), ${derived.keys} event key documents, both since ${derived.since.toISOString()}\n` +
      `  settled rollups packed (${seconds(packMs)}): ${packing.written} packed copies of hours and days\n`,
  );
  const top = people[0] as Person;
  const located = [top.home, ...homes];
  return {
    envId: env,
    top: sample(0),
    typical: sample(Math.floor(o.users / 2)),
    eventId,
    signal: 'proxy_ip',
    network: `${top.home.prefix}.0/24`,
    country: located.find((n) => n.country !== null)?.country ?? null,
    asn: located.find((n) => n.asn !== null)?.asn ?? null,
    policyId: POLICIES.deny.id,
    newest: log.newest,
  };
}

interface Page {
  label: string;
  query: string;
  variables: () => Record<string, unknown> | Promise<Record<string, unknown>>;
}

interface Answer {
  ms: number;
  status: number;
  /** GraphQL error codes (`extensions.code`), or the transport error. */
  codes: string[];
  /** The answer's `data`, when it had one. */
  data?: unknown;
}

interface GraphqlBody {
  data?: unknown;
  errors?: { extensions?: { code?: unknown } }[];
}

/** POST a GraphQL request with the secret; the answer's status, time, error codes and data. */
function graphqlClient(e: Endpoints) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
  const post = jsonPoster(agent, e.secret);
  const url = new URL('/graphql', e.rest);
  const ask = async (query: string, variables: Record<string, unknown>): Promise<Answer> => {
    const started = performance.now();
    try {
      const a = await post(url, { query, variables });
      if (a.unparsed || typeof a.body !== 'object' || a.body === null)
        return { ms: a.ms, status: a.status, codes: [`HTTP_${a.status}_UNPARSED`] };
      const body = a.body as GraphqlBody;
      return {
        ms: a.ms,
        status: a.status,
        codes: (body.errors ?? []).map((x) =>
          typeof x.extensions?.code === 'string' ? x.extensions.code : 'UNKNOWN',
        ),
        data: body.data,
      };
    } catch (err) {
      return {
        ms: performance.now() - started,
        status: 0,
        codes: [`TRANSPORT_${err instanceof Error ? err.message : String(err)}`],
      };
    }
  };
  return { ask, close: () => agent.destroy() };
}

/** The console's pages as a user clicks through them, each one GraphQL request (the console's own texts). */
function pages(l: Loaded, ask: ReturnType<typeof graphqlClient>['ask']): Page[] {
  const EVENTS_50 = eventsQuery(50);
  const EVENTS_25 = eventsQuery(25);
  const range = (ms: number, end = Date.now()) => {
    const to = new Date(Math.ceil(end / 60_000) * 60_000);
    return { from: new Date(to.getTime() - ms).toISOString(), to: to.toISOString() };
  };
  // The second page of the latest 50: after the first page's end cursor, asked once.
  let cursor: Promise<string> | null = null;
  const secondPage = async () => {
    cursor ??= ask(EVENTS_50, { filter: {} }).then((a) => {
      const end = (a.data as { events?: { pageInfo?: { endCursor?: unknown } } } | undefined)?.events
        ?.pageInfo?.endCursor;
      if (typeof end !== 'string')
        throw new Error(`no end cursor on the first page (${a.codes.join(' ') || `HTTP ${a.status}`})`);
      return end;
    });
    return { filter: {}, after: await cursor };
  };
  const events = (filter: Record<string, unknown>) => () => ({ filter });
  return [
    { label: 'latest 50 events', query: EVENTS_50, variables: () => ({ filter: {} }) },
    { label: 'latest 50, next page', query: EVENTS_50, variables: secondPage },
    { label: `user page (top user, ${l.top.events} ev)`, query: USER, variables: () => ({ id: l.top.id }) },
    {
      label: `user page (typical, ${l.typical.events} ev)`,
      query: USER,
      variables: () => ({ id: l.typical.id }),
    },
    { label: 'events by address', query: EVENTS_25, variables: events({ ip: l.top.ip }) },
    { label: 'events by /24 network', query: EVENTS_25, variables: events({ network: l.network }) },
    { label: 'events by e-mail', query: EVENTS_25, variables: events({ email: l.typical.email }) },
    { label: 'events by device', query: EVENTS_25, variables: events({ deviceToken: l.typical.device }) },
    { label: `events by signal (${l.signal})`, query: EVENTS_25, variables: events({ signal: l.signal }) },
    { label: 'events by action (DENY)', query: EVENTS_25, variables: events({ action: 'DENY' }) },
    {
      label: `events by country (${l.country})`,
      query: EVENTS_25,
      variables: events({ country: l.country }),
    },
    { label: `events by ASN (${l.asn})`, query: EVENTS_25, variables: events({ asn: l.asn }) },
    { label: 'events by policy (deny)', query: EVENTS_25, variables: events({ policyId: l.policyId }) },
    // Filters few events match, or none (a signal the load never gives, a policy that decided
    // nothing): answered from their keys like the others, never by reading the events.
    {
      label: `events by rarest signal (${SIGNALS[SIGNALS.length - 1]})`,
      query: EVENTS_25,
      variables: events({ signal: SIGNALS[SIGNALS.length - 1] }),
    },
    {
      label: 'events by signal (none: emulator)',
      query: EVENTS_25,
      variables: events({ signal: 'emulator' }),
    },
    {
      label: 'events by policy (none)',
      query: EVENTS_25,
      variables: events({ policyId: 'bench-policy-unused' }),
    },
    {
      label: 'events, last 3 min loaded',
      query: EVENTS_25,
      variables: () => ({ filter: range(3 * 60_000, l.newest) }),
    },
    { label: 'one event by id', query: EVENT, variables: () => ({ id: l.eventId }) },
    {
      label: 'overview 24 h: series',
      query: SERIES,
      variables: () => ({ filter: range(DAY), bucket: 'HOUR' }),
    },
    {
      label: 'overview 24 h: denied from',
      query: SOURCES,
      variables: () => ({ filter: { ...range(DAY), action: 'DENY' } }),
    },
    {
      label: 'overview 24 h: challenged',
      query: SOURCES,
      variables: () => ({ filter: { ...range(DAY), action: 'CHALLENGE' } }),
    },
    {
      label: 'overview 7 d: series',
      query: SERIES,
      variables: () => ({ filter: range(7 * DAY), bucket: 'HOUR' }),
    },
    {
      label: 'overview 7 d: denied from',
      query: SOURCES,
      variables: () => ({ filter: { ...range(7 * DAY), action: 'DENY' } }),
    },
    {
      label: 'overview 7 d: challenged',
      query: SOURCES,
      variables: () => ({ filter: { ...range(7 * DAY), action: 'CHALLENGE' } }),
    },
    {
      label: 'device search (review)',
      query: REVIEW,
      variables: () => ({
        risky: { minRisk: 60, reviewState: 'UNREVIEWED' },
        reported: { reviewState: 'REPORTED' },
      }),
    },
  ];
}

/** One run of a page: its answer, or a failure to make its variables (the next page's cursor). */
async function run(gql: ReturnType<typeof graphqlClient>, page: Page): Promise<Answer> {
  let variables: Record<string, unknown>;
  try {
    variables = await page.variables();
  } catch (err) {
    return { ms: 0, status: 0, codes: [`SETUP: ${err instanceof Error ? err.message : String(err)}`] };
  }
  return gql.ask(page.query, variables);
}

const failed = (a: Answer) => a.status !== 200 || a.codes.length > 0;

/** `call` in a closed loop at `concurrency` for at least `secs` seconds (rounds of 500 calls). */
async function closedFor(secs: number, concurrency: number, call: Call): Promise<Result[]> {
  const out: Result[] = [];
  const started = performance.now();
  while (performance.now() - started < secs * 1000) out.push(await closedLoop(500, concurrency, call));
  return out;
}

/**
 * The dashboards part: load, time every console query, then scoring alone and beside a console
 * user, with the embedded database's memory (primary and analysts' reader) along the way.
 */
export async function benchDashboards(
  e: Endpoints,
  o: DashboardOptions,
  io: {
    out: (s: string) => void;
    memory: () => Promise<MemorySample>;
    risk: Call;
    settle: () => Promise<void>;
  },
): Promise<void> {
  const { out } = io;
  out(
    `\nDashboards at volume: loading ${o.events} events of ${o.users} users straight into the database (${e.database})\n`,
  );
  const loaded = await loadEnvironment(e, o, out);
  await io.settle();
  const afterLoad = await io.memory();
  out(
    `  memory after loading: the database ${megabytes(afterLoad.dbRss)}, the analysts' reader ${afterLoad.readerRss === null ? 'not started yet' : megabytes(afterLoad.readerRss)}\n`,
  );

  const gql = graphqlClient(e);
  const list = pages(loaded, gql.ask);
  const peak = { db: afterLoad.dbRss ?? 0, reader: afterLoad.readerRss ?? 0 };
  const note = (m: MemorySample) => {
    peak.db = Math.max(peak.db, m.dbRss ?? 0);
    peak.reader = Math.max(peak.reader, m.readerRss ?? 0);
  };
  out(
    `\nConsole queries through GraphQL over HTTP, one at a time, ${o.reps} runs each (ms; failed: an error status or any GraphQL error; the reader's RSS after each query's runs)\n`,
  );
  out(
    `  ${'query'.padEnd(34)} ${pad('runs', 4)} ${pad('failed', 6)} ${pad('p50', 8)} ${pad('p95', 8)} ${pad('max', 8)} ${pad('reader', 7)}  error codes\n`,
  );
  const queriesStarted = performance.now();
  for (const page of list) {
    const answers: Answer[] = [];
    for (let i = 0; i < o.reps; i++) answers.push(await run(gql, page));
    const sorted = answers.map((a) => a.ms).sort((a, b) => a - b);
    const codes = new Map<string, number>();
    for (const a of answers) for (const c of new Set(a.codes)) codes.set(c, (codes.get(c) ?? 0) + 1);
    const m = await io.memory();
    note(m);
    const codeText = [...codes].map(([c, n]) => `${c}×${n}`).join(' ') || '-';
    out(
      `  ${page.label.padEnd(34)} ${pad(answers.length, 4)} ${pad(answers.filter(failed).length, 6)} ${pad(percentile(sorted, 50).toFixed(0), 8)} ${pad(percentile(sorted, 95).toFixed(0), 8)} ${pad((sorted[sorted.length - 1] ?? NaN).toFixed(0), 8)} ${pad(megabytes(m.readerRss), 7)}  ${codeText}\n`,
    );
  }
  out(`  (all queries: ${seconds(performance.now() - queriesStarted)})\n`);

  // Scoring alone, then beside one console user clicking through every page in a loop.
  await io.settle();
  const alone = summarize(await closedFor(20, 4, io.risk));
  let clicking = true;
  const clicks = { ok: 0, failed: 0 };
  const user = (async () => {
    for (let i = 0; clicking; i++) {
      const page = list[i % list.length] as Page;
      if (failed(await run(gql, page))) clicks.failed++;
      else clicks.ok++;
    }
  })();
  const beside = summarize(await closedFor(60, 4, io.risk));
  clicking = false;
  await user;
  note(await io.memory());
  out(
    table(
      'Scoring beside a console user (REST /v1/risk, closed loop at concurrency 4: 20 s alone, 60 s beside one console user clicking through every page above in a loop)',
      [
        ['alone', alone],
        ['beside a console user', beside],
      ],
    ),
  );
  out(
    `  beside ÷ alone: p50 x${(beside.p50 / alone.p50).toFixed(2)}, p99 x${(beside.p99 / alone.p99).toFixed(2)}; console pages meanwhile: ${clicks.ok} answered, ${clicks.failed} failed\n`,
  );
  const end = await io.memory();
  note(end);
  out(
    `\nThe embedded database's memory: primary ${megabytes(afterLoad.dbRss)} after loading, peak ${megabytes(peak.db)} (sampled after each query), ${megabytes(end.dbRss)} at the end; the analysts' reader peak ${megabytes(peak.reader)}, ${megabytes(end.readerRss)} at the end\n`,
  );
  gql.close();
}
