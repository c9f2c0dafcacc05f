/**
 * The ports of webhooks. What the core asks of delivery (WebhookSink: emit a notification about
 * a user and device, which the webhooks module turns into a durable, deduplicated, signed
 * delivery), and the storage of delivery (WebhookDeliveryStore: tenant-scoped reads take the
 * EnvId first; the worker's claim and completion calls act on a delivery it already read, across
 * tenants, by design).
 */
import type { Device, EnvId, Environment, PolicyRef } from '../model';
import type { GeoLocation, ParsedUserAgent } from '../intel/types';
import type { DeliveryAttempt, DeliveryStatus, WebhookDelivery } from './model';

/** The open deliveries of the outbox (WebhookDeliveryStore.openDeliveries). */
export interface OpenDeliveries {
  /** Open deliveries in the outbox. */
  total: number;
  /** The oldest of them (at most the limit asked for), oldest first. */
  oldest: readonly { id: string; createdAt: Date }[];
}

export type WebhookType = '$incident.confirmed' | '$review.opened';

export interface WebhookNotice {
  type: WebhookType;
  env: Environment;
  userId: string;
  device: Device | null;
  /** Why it was sent: `device_reported`, `review_escalated`, `verdict_deny`, `verdict_challenge`, `test`. */
  trigger: string;
  context: { ip: string | null; userAgent: ParsedUserAgent | null; location: GeoLocation | null };
  policy: PolicyRef | null;
  userTraits: Record<string, unknown>;
  properties: Record<string, unknown>;
  at: Date;
}

export interface WebhookSink {
  /**
   * Queue a notification for durable delivery, without making the caller wait: the promise
   * resolves once it is recorded and never rejects. Deduplicated per (user, device, type)
   * within a window.
   */
  emit(notice: WebhookNotice): Promise<void>;
}


export interface DeliveryListQuery {
  status?: DeliveryStatus;
  /** Only deliveries about this user. */
  userId?: string;
  limit: number;
  /** Return only deliveries older than this one (newest first order). */
  before?: { createdAt: Date; id: string };
}

export interface DueQuery {
  limit: number;
  /** Leave these deliveries out (e.g. the caller's own attempts in flight). */
  skipIds?: readonly string[];
  /** Leave out every delivery about these users (whose turn it is not). */
  skipUsers?: readonly { env: EnvId; userId: string }[];
  /** Leave out every delivery of these environments (receivers with enough attempts in flight). */
  skipEnvs?: readonly EnvId[];
  /** Only deliveries about this user. */
  user?: { env: EnvId; userId: string };
}

/** The state a delivery moves to after an attempt. */
export interface DeliveryOutcome {
  status: Exclude<DeliveryStatus, 'delivering'>;
  nextAttemptAt: Date | null;
  deliveredAt: Date | null;
  lastError: string | null;
}

export interface WebhookDeliveryStore {
  /**
   * Queue a delivery for writing behind the caller, unless one with its id exists already (the
   * id is derived from the dedupe slot, so this is the dedupe check). Resolves once written:
   * true when it was inserted, false when one with its id was there already.
   */
  enqueue(delivery: WebhookDelivery): Promise<boolean>;
  insert(delivery: WebhookDelivery): Promise<void>;
  get(env: EnvId, id: string): Promise<WebhookDelivery | null>;
  list(env: EnvId, query: DeliveryListQuery): Promise<WebhookDelivery[]>;
  listForUser(env: EnvId, userId: string, limit: number): Promise<WebhookDelivery[]>;
  /**
   * The user's first unfinished (`pending` or `delivering`) delivery in creation order
   * (createdAt, seq): the only one of theirs that may be sent now.
   */
  firstOpen(env: EnvId, userId: string): Promise<WebhookDelivery | null>;
  /**
   * Deliveries that may be claimed now (all tenants): due pending ones and expired leases, minus
   * those the caller names in `skip`.
   */
  due(now: Date, query: DueQuery): Promise<WebhookDelivery[]>;
  /**
   * Claim a delivery read by `due` for `owner` until `leaseUntil`. At most one caller wins per
   * (delivery, leaseVersion), even on servers whose findAndModify is not atomic. Returns the
   * claimed delivery (status `delivering`, leaseVersion incremented) or null.
   */
  claim(delivery: WebhookDelivery, owner: string, now: Date, leaseUntil: Date): Promise<WebhookDelivery | null>;
  /**
   * Record an attempt and the next state, if `owner` still holds lease `leaseVersion`.
   * False when the lease was lost (expired and taken over) or the delivery was purged.
   */
  complete(delivery: WebhookDelivery, owner: string, attempt: DeliveryAttempt, outcome: DeliveryOutcome): Promise<boolean>;
  /**
   * Give a claimed delivery back without an attempt: `pending` again, due at `nextAttemptAt`, if
   * `owner` still holds lease `leaseVersion`. False when the lease was lost.
   */
  release(delivery: WebhookDelivery, owner: string, nextAttemptAt: Date): Promise<boolean>;
  /**
   * The open (`pending` or `delivering`) deliveries of every tenant: how many, and the `limit`
   * oldest by creation time (ids and times only). Read now and then for the outbox metrics
   * (core/webhooks/outbox.ts), never on a scrape.
   */
  openDeliveries(limit: number): Promise<OpenDeliveries>;
  /** Delete expired dedupe slots and stale claims, and finished deliveries older than `finishedBefore`. */
  sweep(now: Date, finishedBefore: Date): Promise<{ dedupe: number; deliveries: number }>;
}
