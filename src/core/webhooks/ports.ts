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
  /**
   * Only deliveries about this user: among the user's first `limit` open deliveries in creation
   * order, those that may be claimed now.
   */
  user?: { env: EnvId; userId: string };
  /** Read on from here (a `next` of an earlier answer) rather than from the first due delivery. */
  after?: DueCursor;
}

/** A place in the order deliveries fall due in (opaque to the caller). */
export interface DueCursor {
  at: Date;
  id: string;
}

/** What one `due` read found. */
export interface DuePage {
  deliveries: WebhookDelivery[];
  /**
   * Where the read stopped, to go on from there (`DueQuery.after`) when it stopped before the end
   * of what is due: it found `limit` deliveries, or it read as many as one read may (the rest were
   * left out by the query's skips). Null when it read everything due.
   */
  next: DueCursor | null;
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
   * The user's first `limit` unfinished (`pending` or `delivering`) deliveries in creation order
   * (createdAt, seq): the first is the only one of theirs that may be sent now, the others follow.
   */
  openOfUser(env: EnvId, userId: string, limit: number): Promise<WebhookDelivery[]>;
  /**
   * Deliveries that may be claimed now (all tenants): expired leases first, then due pending ones
   * in the order they fell due, minus those the query skips. A bounded read: at most `limit`
   * deliveries, and a bounded number of skipped ones examined (`next` says where it stopped).
   */
  due(now: Date, query: DueQuery): Promise<DuePage>;
  /**
   * Claim a delivery read by `due` for `owner` until `leaseUntil`. At most one caller wins per
   * (delivery, leaseVersion), even on servers whose findAndModify is not atomic. Returns the
   * claimed delivery (status `delivering`, leaseVersion incremented) or null.
   */
  claim(
    delivery: WebhookDelivery,
    owner: string,
    now: Date,
    leaseUntil: Date,
  ): Promise<WebhookDelivery | null>;
  /**
   * Record an attempt and the next state, if `owner` still holds lease `leaseVersion`.
   * False when the lease was lost (expired and taken over) or the delivery was purged.
   */
  complete(
    delivery: WebhookDelivery,
    owner: string,
    attempt: DeliveryAttempt,
    outcome: DeliveryOutcome,
  ): Promise<boolean>;
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
  /**
   * Delete what only guarded against a repeated notice (the dedupe records of deliveries created
   * before `dedupeBefore`, which no notice can repeat any more) and stale claims. Finished
   * deliveries are history, deleted by the retention sweep (core/retention.ts).
   */
  sweep(now: Date, dedupeBefore: Date): Promise<{ dedupe: number }>;
}
