/**
 * Ports: what the core needs from storage and the outside world. The store implements them on
 * MongoDB; no driver type appears here. Every tenant-scoped method takes the EnvId first.
 */
import type {
  Credential,
  Device,
  EnvId,
  Environment,
  RejectedPayload,
  StoredEvent,
  UserProfile,
} from './model';
import type { PolicyRevision, PolicySet } from './policies/model';

export interface EnvironmentStore {
  create(env: Environment): Promise<void>;
  byId(id: EnvId): Promise<Environment | null>;
  byName(name: string): Promise<Environment | null>;
  list(): Promise<Environment[]>;
  update(id: EnvId, patch: Partial<Pick<Environment, 'enabled' | 'webhookUrl' | 'privacyEmail' | 'name'>>): Promise<Environment | null>;
}

export interface CredentialStore {
  insert(cred: Credential): Promise<void>;
  byHash(hash: string): Promise<Credential | null>;
  list(env: EnvId): Promise<Credential[]>;
  revoke(env: EnvId, hash: string, at: Date): Promise<boolean>;
}

export interface DeviceStore {
  byToken(env: EnvId, token: string): Promise<Device | null>;
  /** Token of the user's device with this fingerprint key, by _id look-up. */
  tokenForFingerprint(env: EnvId, userId: string, fingerprintKey: string): Promise<string | null>;
  /** Insert a new device and its fingerprint index; if one was created concurrently, return that one. */
  insert(device: Device): Promise<Device>;
  save(device: Device): Promise<void>;
  listForUser(env: EnvId, userId: string, includeRemoved?: boolean): Promise<Device[]>;
  byTokens(env: EnvId, tokens: readonly string[]): Promise<Device[]>;
}

export interface UserStore {
  get(env: EnvId, userId: string): Promise<UserProfile | null>;
  save(user: UserProfile): Promise<void>;
  /** Users whose e-mail is `email` (lower-cased), for privacy requests by e-mail. */
  byEmail(env: EnvId, email: string): Promise<UserProfile[]>;
}

export interface EventStore {
  /** Queue an event for a batched write; resolves when it is durably written. */
  append(event: StoredEvent): Promise<void>;
  listForUser(env: EnvId, userId: string, limit: number): Promise<StoredEvent[]>;
  flush(): Promise<void>;
}

export interface DebuggerStore {
  append(entry: RejectedPayload): Promise<void>;
  list(env: EnvId, limit: number): Promise<RejectedPayload[]>;
}

/** A counter document: named counts and named distinct sets. */
export interface CounterSnapshot {
  counts: Record<string, number>;
  sets: Record<string, string[]>;
}

/** One change to one counter document: counts to add, set members to add. */
export interface CounterBump {
  key: string;
  inc?: Record<string, number>;
  add?: Record<string, string>;
}

/** Rolling counters for velocity signals, one document per key, read and written by _id. */
export interface CounterStore {
  /** Read several counter documents (missing ones are empty). */
  read(env: EnvId, keys: readonly string[]): Promise<Record<string, CounterSnapshot>>;
  /** Apply changes, one upsert per document. */
  bump(env: EnvId, bumps: readonly CounterBump[]): Promise<void>;
  /** Delete expired counters of every tenant; returns how many. */
  sweep(now: Date): Promise<number>;
}

export interface PolicyStore {
  getSet(env: EnvId): Promise<PolicySet | null>;
  /** Replace the set if its version is still `expectedVersion` (0: create). */
  putSet(set: PolicySet, expectedVersion: number): Promise<boolean>;
  addRevisions(revisions: PolicyRevision[]): Promise<void>;
  revisions(env: EnvId, policyIds: readonly string[]): Promise<PolicyRevision[]>;
  revision(env: EnvId, revisionId: string): Promise<PolicyRevision | null>;
}

export interface Clock {
  now(): Date;
}
export const systemClock: Clock = { now: () => new Date() };
