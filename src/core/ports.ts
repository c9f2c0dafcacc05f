/**
 * Ports: what the core needs from storage and the outside world. The store implements them on
 * MongoDB; no driver type appears here. Every tenant-scoped method takes the EnvId first.
 */
import type { Behaviour, BehaviourChange } from './scoring/behaviour-tables';
import type {
  Credential,
  Device,
  DeviceContext,
  EnvId,
  Environment,
  EventInput,
  RejectedPayload,
  StoredEvent,
  UserProfile,
} from './model';
import type { PolicyRevision, PolicySet } from './policies/model';
import type { IpIntel, ParsedUserAgent } from './intel/types';

export interface EnvironmentStore {
  create(env: Environment): Promise<void>;
  byId(id: EnvId): Promise<Environment | null>;
  byName(name: string): Promise<Environment | null>;
  byPublishableKey(key: string): Promise<Environment | null>;
  list(): Promise<Environment[]>;
  update(
    id: EnvId,
    patch: Partial<
      Pick<
        Environment,
        | 'enabled'
        | 'webhookUrl'
        | 'privacyEmail'
        | 'name'
        | 'clientOrigins'
        | 'clientApps'
        | 'attestation'
        | 'retentionDays'
      >
    >,
  ): Promise<Environment | null>;
}

export interface CredentialStore {
  insert(cred: Credential): Promise<void>;
  byHash(hash: string): Promise<Credential | null>;
  list(env: EnvId): Promise<Credential[]>;
  revoke(env: EnvId, hash: string, at: Date): Promise<boolean>;
}

/** A change to one of the user's devices, as commutative deltas (see UserChange). */
export interface DeviceChange {
  /** The device's key for this user (a fingerprint, or derived from stable headers). */
  key: string;
  /**
   * Record the device (idempotent): its identity, first-seen time and a token. A device known
   * already keeps its first token; this one then becomes another name for it.
   */
  create?: { token: string; identity: Device['identity']; at: Date };
  /** Seen at `at`; `context` replaces the stored one only when `at` is the latest sighting. */
  seen?: { at: Date; context: DeviceContext | null };
  /** Risk of the latest event from it, in [0, 1]. */
  eventRisk?: number;
  /** Feedback: the latest one decides the review state. */
  review?: { state: 'approved' | 'reported'; at: Date };
  mitigatedAt?: Date;
  removedAt?: Date;
  /** The device's machine vector as now seen (a browser's; see core/devices/machine.ts). */
  machine?: string;
  /** A browser profile's key that names this device from now on (bounded: MAX_LINKED_PROFILES). */
  link?: string;
}

/** A change to a user's profile: only commutative updates (latest, earliest, add). */
export interface ProfileChange {
  /** Event time of the event (lastSeenAt keeps the latest). */
  seenAt: Date;
  /** Receive time of the user's first event (createdAt keeps the earliest). */
  firstSeenAt: Date;
  email?: string;
  username?: string;
  phone?: string;
  registeredAt?: Date;
  /** Traits to set (each key replaces its value). */
  traits?: Record<string, unknown>;
  /** A located sighting; the latest one by event time is the user's last location. */
  location?: { lat: number; lon: number; country: string | null; at: Date };
  /** A country to add to the user's countries (bounded). */
  country?: string;
  passwordResetAt?: Date;
}

export interface UserChange {
  profile?: ProfileChange;
  devices?: DeviceChange[];
  /** What the event taught the user's behavioural model (scoring/behaviour-tables.ts). */
  behaviour?: BehaviourChange;
}

/** A user as the hot path sees it: the profile and every device, from one document. */
export interface UserState {
  profile: UserProfile;
  /** Every device, removed ones included, most recently seen first. */
  devices: Device[];
  /** The behavioural history the risk model reads. */
  behaviour: Behaviour;
}

/**
 * Users and their devices: one document per user, read through an in-process cache (one _id
 * look-up on a miss) and changed only by deltas written behind, so concurrent requests never
 * lose an update. A device token maps to its (user, device) in a small document written once.
 */
export interface UserStateStore {
  /**
   * The user's state, or null for a user never seen. With `deadline` (epoch ms), resolves
   * undefined when it could not be read by then.
   */
  load(env: EnvId, userId: string, deadline?: number): Promise<UserState | null | undefined>;
  /** Apply a change now (to the cached state) and write it behind. Never waits. */
  record(env: EnvId, userId: string, change: UserChange): void;
  /** One device as this process holds it, without I/O (undefined: the user is not held; null: no such device). */
  cachedDevice(env: EnvId, userId: string, key: string): Device | null | undefined;
  /** The device any of its tokens names, with its user. */
  byToken(env: EnvId, token: string): Promise<Device | null>;
  /** Several users' states at once (missing users absent). */
  loadMany(env: EnvId, userIds: readonly string[]): Promise<Map<string, UserState>>;
}

/** The write-behind queue every hot-path write goes through. */
export interface WriteQueue {
  /**
   * Admission of new work. Resolves at once while the writes keep up. What is not written yet is
   * bounded by age: once the oldest unwritten change is half the bound old, admit() waits (at
   * most until `waitUntil`, epoch ms) for a flush to bring it down, so that a burst slows its
   * callers; at the bound (a second) it rejects with Unavailable (→ 503 with Retry-After) until
   * the writes have caught up, and so it does when the queue is full or the service is shutting
   * down. A crash then loses at most that bound of acknowledged changes.
   */
  admit(waitUntil?: number): Promise<void>;
  /** The same, without waiting: `behind` where admit() would wait, `full` where it would refuse. */
  readonly pressure: 'ok' | 'behind' | 'full';
  /**
   * Throws Unavailable where admit() would refuse, without waiting: a use case calls it again
   * right before it records, so that nothing is queued past the bound by work admitted earlier.
   */
  check(): void;
  /**
   * Resolves once every change queued so far (statistics held back on purpose aside) is written:
   * the group commit behind "acknowledged means stored". With `deadline` (epoch ms), rejects with
   * Unavailable if that has not happened by then (the changes stay queued).
   */
  durable(deadline?: number): Promise<void>;
  /**
   * Resolves when everything queued so far is written; with `timeoutMs`, rejects if it could not
   * be written in that time (the database is down).
   */
  flush(timeoutMs?: number): Promise<void>;
}

export interface EventStore {
  /** Queue an event for a batched write (behind the answer); resolves when it is written. */
  append(event: StoredEvent): Promise<void>;
}

export interface DebuggerStore {
  append(entry: RejectedPayload): Promise<void>;
}

/** A counter document: named counts and named distinct sets. */
export interface CounterSnapshot {
  counts: Record<string, number>;
  sets: Record<string, string[]>;
}

/** Reads Rampart's client tokens in an event (core/client/service.ts). */
export interface ClientTokens {
  attach(env: Environment, event: EventInput): EventInput;
  /** The fingerprint a client id names (a token: the device it carries; null when it does not verify). */
  fingerprintOf(env: Environment, clientId: string): string | null;
}

/** One change to one counter document: counts to add, set members to add. */
export interface CounterBump {
  key: string;
  inc?: Record<string, number>;
  /** Counts that keep the smallest value given (a first time, say). */
  min?: Record<string, number>;
  add?: Record<string, string>;
  /** Sets replaced whole. */
  replaceSet?: Record<string, string[]>;
  /** How long the document lives after this change (default two days). */
  keepMs?: number;
  /**
   * A statistic many events touch: `true` (a window many users share, the environment's day) may
   * reach the database, and other instances, up to a second late; `population` (how common a
   * value is among legitimate events, counted over months) up to ten seconds. A crash may lose
   * that long of them. This process counts them at once. Not for what must be seen at once
   * elsewhere (a client token's uses, an account's e-mail) or for per-address and per-device
   * windows.
   */
  late?: true | 'population';
}

/**
 * Rolling counters for velocity signals, one document per key, read through the state cache and
 * changed by deltas written behind (increments and set-adds: no update is ever lost).
 */
export interface CounterStore {
  /**
   * Read several counter documents (missing ones are empty). With `deadline` (epoch ms),
   * resolves undefined when they could not all be read by then.
   */
  read(
    env: EnvId,
    keys: readonly string[],
    deadline?: number,
  ): Promise<ReadonlyMap<string, CounterSnapshot> | undefined>;
  /**
   * The documents this process holds in memory among `keys`, without waiting (a key not held is
   * absent): what a verdict whose read missed its budget still knows. The windows an attack
   * keeps bumping (per address, network, operator, account) are always among them.
   */
  held(env: EnvId, keys: readonly string[]): ReadonlyMap<string, CounterSnapshot>;
  /** Apply changes now and write them behind. Never waits. */
  bump(env: EnvId, bumps: readonly CounterBump[]): void;
  /** Delete expired counters of every tenant; returns how many. */
  sweep(now: Date): Promise<number>;
}

export interface PolicyStore {
  getSet(env: EnvId): Promise<PolicySet | null>;
  /** Replace the set if its version is still `expectedVersion` (0: create). */
  putSet(set: PolicySet, expectedVersion: number): Promise<boolean>;
  addRevisions(revisions: PolicyRevision[]): Promise<void>;
  revisions(env: EnvId, policyIds: readonly string[]): Promise<PolicyRevision[]>;
  /** One revision by its id, or null (another environment's: null). */
  revision(env: EnvId, revisionId: string): Promise<PolicyRevision | null>;
}

/**
 * Offline reference data an event is enriched with (src/intel: IP geolocation, networks and
 * hosting ranges, user-agent parsing). Its tables are large (~130 MB) and loaded once by whoever
 * builds the services; the core only asks.
 */
export interface Intel {
  /** What is known of an IP address (a bogon result, with no data, for an invalid one). */
  lookupIp(ip: string): IpIntel;
  parseUserAgent(raw: string): ParsedUserAgent;
  /** Whether an e-mail address (or `x@<domain>`) is at a throw-away domain (a maintained list). */
  isDisposableEmail(email: string): boolean;
}

/** Every time read of the core: the wall clock in production, a fake one in tests. */
export interface Clock {
  now(): Date;
  /**
   * A monotonic reading in ms, for durations (never for dates): the process's performance clock
   * in production. A clock without one measures durations on `now()`.
   */
  monotonic?(): number;
}
export const systemClock: Clock = { now: () => new Date(), monotonic: () => performance.now() };

/** A duration's start and end on `clock` (its monotonic reading, else its wall clock), in ms. */
export const monotonicMs = (clock: Clock): number => clock.monotonic?.() ?? clock.now().getTime();

/**
 * When the core's work runs: the core says what to do and after how long, the scheduler
 * (src/workers/scheduler.ts) runs it.
 */
export interface Scheduler {
  /**
   * Run `task` once after `ms` milliseconds; the returned function cancels it if it has not run.
   * A pending task keeps the process alive (work that must finish, such as a retry a drain waits
   * for) unless it is `background` work (a periodic poll or sweep).
   */
  after(ms: number, task: () => void, opts?: { background?: boolean }): () => void;
}

/** A promise that resolves after `ms` on `scheduler`. */
export const wait = (scheduler: Scheduler, ms: number): Promise<void> =>
  new Promise((resolve) => scheduler.after(ms, resolve));

/** One HTTP request the core sends (a webhook attempt): how it is sent is the poster's. */
export interface HttpPost {
  headers: Record<string, string>;
  body: string;
  /** Longest the request may take, answer included. */
  timeoutMs: number;
  /** Aborts the request (the core's shutdown). */
  signal: AbortSignal;
}

/** What became of a request: the response's status, or no answer within its timeout. */
export type HttpPostResult = { status: number } | { timedOut: true };

/**
 * Sends the core's HTTP requests (src/workers/http.ts). Redirects are never followed (a 3xx is
 * the answer). Rejects on a network error, and when `signal` aborts.
 */
export interface HttpPoster {
  post(url: string, request: HttpPost): Promise<HttpPostResult>;
}
