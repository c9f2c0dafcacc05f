/**
 * The webhook outbox, in the database: `WebhookOutbox` records what is to be sent (emit, with
 * de-duplication; the test webhook) and reads it back (list, page, get), and `OutboxLedger` counts
 * what is open for the metrics. The dispatcher (dispatcher.ts) sends what the outbox holds.
 *
 * The ledger: how many deliveries are open (pending or being sent) and when the oldest of them was
 * created, as this process knows them. A scrape reads this, never the database.
 *
 * Why not count in the database on each scrape: a scrape must answer from memory even while the
 * database hangs, and counting the open deliveries reads each of them (on the embedded FerretDB
 * a scan of the outbox: the backlog, never the history, which lives apart). So the process keeps
 * the open set itself, from what it does anyway:
 *  - a delivery the outbox records (emit, or a test) is added once the write says it was inserted
 *    (an existing `_id` is a deduplicated notice: nothing new);
 *  - a delivery the dispatcher claims (its lease) is added if unknown (another instance recorded it);
 *  - a delivery the dispatcher finishes (delivered, or given up for good) is removed.
 * and corrects that now and then with one read of the open deliveries (`reconcile`): at start,
 * then every few seconds where other instances share the outbox (MongoDB, where the read is an
 * index range) and every ten minutes on the embedded database, where this process is the only
 * writer and the read only catches what it cannot see (a privacy purge deleting a user's
 * deliveries). The read is bounded: at most `cap` ids are held, the rest only counted.
 */
import { sha256Hex, uuid } from '../crypto';
import { InvalidParameters } from '../errors';
import type { EnvId, Environment } from '../model';
import type { Clock } from '../ports';
import type { Page } from '../queries/model';
import { pageSize, toPage } from '../queries/pagination';
import type { DeliveryStatus, WebhookDelivery } from './model';
import { webhookBody } from './payload';
import type { OpenDeliveries, WebhookDeliveryStore, WebhookNotice } from './ports';

export type { OpenDeliveries } from './ports';

/** Trigger of the deliveries `sendTest` makes; receivers can recognise and ignore them. */
export const TEST_TRIGGER = 'test';

export class OutboxLedger {
  /** Open deliveries held by id, with their creation time (epoch ms). */
  private readonly open = new Map<string, number>();
  /** Open deliveries counted but not held (past `cap`). */
  private untracked = 0;
  /** What changed while a reconciling read was under way (applied over its answer). */
  private reading: { added: Map<string, number>; finished: Set<string> } | null = null;

  constructor(private readonly cap: number) {}

  /** Deliveries known to be open. */
  get depth(): number {
    return this.open.size + this.untracked;
  }

  /** Creation time (epoch ms) of the oldest open delivery held, or null when none is. */
  get oldest(): number | null {
    let min: number | null = null;
    for (const at of this.open.values()) if (min === null || at < min) min = at;
    return min;
  }

  /** A delivery this process inserted into the outbox. */
  added(id: string, createdAt: Date): void {
    const at = createdAt.getTime();
    this.reading?.added.set(id, at);
    if (this.open.has(id)) return;
    if (this.open.size < this.cap) this.open.set(id, at);
    else this.untracked++;
  }

  /** A delivery this process claimed: open, whoever recorded it. */
  claimed(id: string, createdAt: Date): void {
    // Past the cap an unknown one may be among those counted already.
    if (!this.open.has(id) && this.open.size < this.cap) {
      this.open.set(id, createdAt.getTime());
      this.reading?.added.set(id, createdAt.getTime());
    }
  }

  /** A delivery this process delivered or gave up: no longer open. */
  finished(id: string): void {
    this.reading?.finished.add(id);
    this.reading?.added.delete(id);
    if (!this.open.delete(id) && this.untracked > 0) this.untracked--;
  }

  /**
   * Replace what is known by what `read` finds in the outbox, keeping the changes this process
   * made while it read. One read at a time; a failed read changes nothing (and rejects).
   */
  async reconcile(read: (limit: number) => Promise<OpenDeliveries>): Promise<void> {
    if (this.reading) return;
    const changes = { added: new Map<string, number>(), finished: new Set<string>() };
    this.reading = changes;
    try {
      const found = await read(this.cap);
      this.open.clear();
      for (const d of found.oldest)
        if (!changes.finished.has(d.id)) this.open.set(d.id, d.createdAt.getTime());
      this.untracked = Math.max(0, found.total - found.oldest.length);
      for (const [id, at] of changes.added) {
        if (this.open.has(id)) continue;
        if (this.open.size < this.cap) this.open.set(id, at);
        else this.untracked++;
      }
    } finally {
      this.reading = null;
    }
  }
}

/** Dedupe slots this instance remembers (the database's unique id is the authority). */
const RECENT_SLOTS = 10_000;
const HOUR_MS = 3_600_000;
/**
 * How long past its window a delivery's id is kept to refuse a repeated notice: other instances'
 * clocks may be behind this one's (the same ten minutes docs/state.md assumes of clocks).
 */
export const DEDUPE_MARGIN_MS = 10 * 60_000;

/** A UUID-shaped id derived from a dedupe slot, so every instance names the slot's delivery alike. */
function uuidFrom(slot: string): string {
  const h = sha256Hex(slot);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-8${h.slice(13, 16)}-${((parseInt(h.slice(16, 18), 16) & 0x3f) | 0x80).toString(16)}${h.slice(18, 20)}-${h.slice(20, 32)}`;
}

/** The id of the delivery of a dedupe slot: (environment, user, device token, type, window number). */
export function slotDeliveryId(
  env: EnvId,
  userId: string,
  deviceToken: string | null,
  type: string,
  window: number,
): string {
  return uuidFrom(JSON.stringify([env, userId, deviceToken, type, window]));
}

/** Sends a delivery recorded already claimed by this instance: the dispatcher (dispatcher.ts). */
export interface ClaimedSender {
  readonly instanceId: string;
  /** How long a claim is exclusive. */
  readonly leaseMs: number;
  /** Attempt it now; resolves once the attempt is recorded, never rejects. */
  sendClaimed(delivery: WebhookDelivery): Promise<void>;
}

export interface WebhookOutboxDeps {
  store: WebhookDeliveryStore;
  clock: Clock;
  log: { info(obj: object, msg: string): void };
  /** Sends the test webhook at once. */
  sender: ClaimedSender;
  /** The open deliveries as this process knows them: told of every delivery recorded here. */
  ledger: OutboxLedger;
  /** One delivery per (user, device, type) per window. Default 1 h. */
  dedupeWindowMs?: number;
  /** Attempts before a delivery is `failed`. Default 10. */
  maxAttempts?: number;
}

export interface DeliveryListOptions {
  status?: DeliveryStatus;
  /** Only deliveries about this user. */
  userId?: string;
  limit: number;
  /** Cursor: the id of the last delivery of the previous page. */
  after?: string;
}

/**
 * The webhook outbox: what is to be sent. `emit` de-duplicates a notice and records its delivery
 * with its final body; `sendTest` records a test webhook and has the dispatcher send it at once;
 * the reads (list, page, get, listForUser) serve the doors and privacy exports; `sweep` drops
 * the dedupe records no notice can repeat any more; `open()` answers the outbox metrics from the
 * ledger.
 */
export class WebhookOutbox {
  private readonly windowMs: number;
  private readonly maxAttempts: number;
  private readonly recentSlots = new Set<string>();
  /** Creation order within one millisecond (see WebhookDelivery.seq). */
  private seq = 0;
  /** Notices being written (shutdown sends them too). */
  private readonly writing = new Set<Promise<void>>();
  private readonly listeners: (() => void)[] = [];

  constructor(private readonly d: WebhookOutboxDeps) {
    this.windowMs = d.dedupeWindowMs ?? HOUR_MS;
    this.maxAttempts = d.maxAttempts ?? 10;
    if (this.windowMs <= 0) throw new Error('dedupeWindowMs must be positive');
    if (this.maxAttempts < 1) throw new Error('maxAttempts must be at least 1');
  }

  /** Be told whenever a notice was recorded (a delivery to send now). */
  onRecorded(listener: () => void): void {
    this.listeners.push(listener);
  }

  /** Settles once every notice being written now is written. Never rejects. */
  recording(): Promise<unknown> {
    return Promise.allSettled([...this.writing]);
  }

  /**
   * Record a notification for delivery, behind the caller: the delivery is queued on the write
   * path and the returned promise resolves once it is written (it never rejects; callers on the
   * hot path do not wait for it). Environments without a webhook URL record nothing. At most one
   * delivery per (environment, user, device, type) and dedupe window: the delivery's id is
   * derived from that slot and written only if absent, which holds across instances, and this
   * instance also remembers recent slots so repeated notices (an attack) cost nothing.
   */
  emit(notice: WebhookNotice): Promise<void> {
    const env = notice.env;
    if (!env.webhookUrl) return Promise.resolve();
    const now = this.d.clock.now();
    const window = Math.floor(now.getTime() / this.windowMs);
    const id = slotDeliveryId(env.id, notice.userId, notice.device?.token ?? null, notice.type, window);
    if (this.recentSlots.has(id)) return Promise.resolve();
    this.recentSlots.add(id);
    if (this.recentSlots.size > RECENT_SLOTS)
      this.recentSlots.delete(this.recentSlots.values().next().value as string);
    const body = JSON.stringify(webhookBody(id, { ...notice, appId: env.id }, now));
    const written = this.d.store.enqueue(this.newDelivery(env, id, body, notice, now)).then((inserted) => {
      // Not inserted: a delivery of this slot was there already (a notice repeated after a restart).
      if (inserted) this.d.ledger.added(id, now);
      for (const listener of this.listeners) listener();
    });
    this.writing.add(written);
    void written.finally(() => this.writing.delete(written));
    return written;
  }

  /**
   * Send a test webhook to the environment's URL now and return the delivery with its attempt.
   * It is an `$incident.confirmed` with `data.trigger` "test" and null user and device, is never
   * deduplicated, and is attempted exactly once (no retries).
   */
  async sendTest(env: Environment): Promise<WebhookDelivery> {
    if (!env.webhookUrl)
      throw new InvalidParameters([{ field: 'webhook_url', message: 'the environment has no webhook URL' }]);
    const now = this.d.clock.now();
    const id = uuid();
    const notice = {
      type: '$incident.confirmed' as const,
      appId: env.id,
      userId: null,
      device: null,
      trigger: TEST_TRIGGER,
      context: { ip: null, userAgent: null, location: null },
      policy: null,
      userTraits: {},
      properties: {},
      at: now,
    };
    const body = JSON.stringify(webhookBody(id, notice, now));
    // Recorded already claimed by this instance, so no worker can race us to it.
    const delivery: WebhookDelivery = {
      ...this.newDelivery(env, id, body, { ...notice, userId: null }, now),
      status: 'delivering',
      leaseOwner: this.d.sender.instanceId,
      leaseUntil: new Date(now.getTime() + this.d.sender.leaseMs),
      leaseVersion: 1,
      maxAttempts: 1,
      test: true,
    };
    await this.d.store.insert(delivery);
    this.d.ledger.added(delivery.id, delivery.createdAt);
    await this.d.sender.sendClaimed(delivery);
    return (await this.d.store.get(env.id, id)) ?? delivery;
  }

  /** Deliveries of an environment, newest first, optionally by status; `after` pages on. */
  async list(env: EnvId, opts: DeliveryListOptions): Promise<WebhookDelivery[]> {
    const limit = Math.max(1, Math.min(500, Math.floor(opts.limit) || 1));
    let before: { createdAt: Date; id: string } | undefined;
    if (opts.after) {
      const ref = await this.d.store.get(env, opts.after);
      if (!ref) throw new InvalidParameters([{ field: 'after', message: 'unknown cursor' }]);
      before = { createdAt: ref.createdAt, id: ref.id };
    }
    return this.d.store.list(env, { status: opts.status, userId: opts.userId, limit, before });
  }

  /** A page of an environment's deliveries, newest first, optionally by status. */
  async page(
    env: EnvId,
    page: {
      status?: DeliveryStatus | null;
      userId?: string | null;
      first?: number | null;
      after?: string | null;
    },
  ): Promise<Page<WebhookDelivery>> {
    const n = pageSize(page.first, 20);
    const rows = await this.list(env, {
      status: page.status ?? undefined,
      userId: page.userId ?? undefined,
      limit: n + 1,
      after: page.after ?? undefined,
    });
    return toPage(rows, n, (d) => d.id);
  }

  /** One delivery with its attempt history, or null. */
  get(env: EnvId, id: string): Promise<WebhookDelivery | null> {
    return this.d.store.get(env, id);
  }

  /** Every delivery about a user (for privacy exports), newest first. */
  listForUser(env: EnvId, userId: string): Promise<WebhookDelivery[]> {
    return this.d.store.listForUser(env, userId, 10_000);
  }

  /**
   * The outbox as this process knows it, from memory (no database read): open deliveries, and
   * the age of the oldest in seconds (0 when there is none). See OutboxLedger.
   */
  open(): { depth: number; oldestAgeSeconds: number } {
    const oldest = this.d.ledger.oldest;
    const age = oldest === null ? 0 : Math.max(0, (this.d.clock.now().getTime() - oldest) / 1000);
    return { depth: this.d.ledger.depth, oldestAgeSeconds: age };
  }

  /** Correct what `open()` knows with one bounded read of the open deliveries (the worker's schedule). */
  reconcile(): Promise<void> {
    return this.d.ledger.reconcile((limit) => this.d.store.openDeliveries(limit));
  }

  /**
   * Delete what guards against repeated notices once none can come (the dedupe records of
   * deliveries created more than a window, and a margin for other instances' clocks, ago) and
   * stale claims. Finished deliveries are history: the retention sweep deletes them.
   */
  async sweep(): Promise<void> {
    const now = this.d.clock.now();
    const swept = await this.d.store.sweep(now, new Date(now.getTime() - this.windowMs - DEDUPE_MARGIN_MS));
    if (swept.dedupe > 0) this.d.log.info(swept, 'webhooks: swept expired dedupe records');
  }

  private newDelivery(
    env: Environment,
    id: string,
    body: string,
    notice: { userId: string | null; device: { token: string } | null; type: string; trigger: string },
    now: Date,
  ): WebhookDelivery {
    return {
      id,
      envId: env.id,
      userId: notice.userId,
      deviceToken: notice.device?.token ?? null,
      type: notice.type,
      trigger: notice.trigger,
      url: env.webhookUrl ?? '',
      body,
      status: 'pending',
      attempts: [],
      maxAttempts: this.maxAttempts,
      nextAttemptAt: now,
      leaseOwner: null,
      leaseUntil: null,
      leaseVersion: 0,
      createdAt: now,
      seq: this.seq++,
      deliveredAt: null,
      lastError: null,
      test: false,
    };
  }
}
