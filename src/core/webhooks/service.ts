/**
 * Webhook delivery: a durable outbox in the database. `emit` deduplicates and records a delivery
 * with its final body; a worker claims due deliveries under a lease (so several instances never
 * send the same one twice), POSTs them signed, and records every attempt, retrying with
 * exponential backoff and jitter until a 2xx or the attempt limit. All state lives in the
 * database, so a restarted instance picks up where another stopped.
 *
 * Delivery is at least once, and only a failed attempt makes a second copy: an attempt starts only
 * if its whole timeout fits in its lease (so no other instance can take the delivery over while it
 * runs), this instance never claims a delivery it is still sending, an answer whose recording
 * failed is recorded again while the lease lasts, and after a timeout the retry waits at least the
 * timeout (a slow receiver has then finished with the first copy and can recognise the second).
 * Every copy carries the same `data.id`, which receivers de-duplicate on.
 *
 * A user's deliveries (environment + user id) are sent one at a time in creation order; users are
 * independent of each other, and a delivery that fails for good lets the user's next one go.
 * `shutdown()` sends what is due for a grace period, every receiver at once (see shutdown()).
 *
 * The core decides what to send; when and how are its ports': the worker (src/workers/webhooks.ts)
 * calls `deliverDue` and `sweep` on its schedule and when told there is work (`onWork`), the
 * HttpPoster sends each request, and the Scheduler runs the waits (a retry of a recording, the
 * shutdown grace).
 */
import { performance } from 'node:perf_hooks';
import { sha256Hex, uuid } from '../crypto';
import { InvalidParameters } from '../errors';
import type { EnvId, Environment } from '../model';
import { wait, type Clock, type HttpPoster, type HttpPostResult, type Scheduler } from '../ports';
import type { DeliveryAttempt, DeliveryStatus, WebhookDelivery } from './model';
import type { DeliveryOutcome, WebhookDeliveryStore, WebhookNotice, WebhookSink } from './ports';
import { webhookBody } from './payload';
import { OutboxLedger } from './outbox';
import { signCastle, signRampart } from './signature';
import type { Page } from '../queries/model';
import { pageSize, toPage } from '../queries/pagination';

export const WEBHOOK_USER_AGENT = 'Rampart-Webhooks/1';
/** Trigger of the deliveries `sendTest` makes; receivers can recognise and ignore them. */
export const TEST_TRIGGER = 'test';

export interface WebhookLog {
  warn(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

/** What the metrics hear of each attempt (app/metrics.ts). */
export interface WebhookObserver {
  /**
   * One attempt was made: `failure` is null when the receiver answered 2xx, else the HTTP status
   * it answered (`"500"`) or the class of error that prevented an answer (see failureClass);
   * `gaveUp` when the delivery is now failed for good.
   */
  attempted(outcome: { failure: string | null; gaveUp: boolean }): void;
}

export interface WebhookServiceDeps {
  store: WebhookDeliveryStore;
  /** The API secret webhooks are signed with (EnvironmentService.signingSecret). */
  signingSecret: (env: EnvId) => Promise<string | null>;
  environments: { byId(id: EnvId): Promise<Environment | null> };
  clock: Clock;
  /** Sends each attempt's request. */
  http: HttpPoster;
  /** Runs the waits: between tries of recording an attempt, and the shutdown grace. */
  scheduler: Scheduler;
  /** Unique per running process: the lease owner. */
  instanceId: string;
  log: WebhookLog;
  /** One delivery per (user, device, type) per window. Default 1 h. */
  dedupeWindowMs?: number;
  /** Attempts before a delivery is `failed`. Default 10. */
  maxAttempts?: number;
  /** How long a claim is exclusive. Must exceed the request timeout. Default 60 s. */
  leaseMs?: number;
  /** Per-attempt HTTP timeout. Default 10 s. */
  requestTimeoutMs?: number;
  /** First retry delay; doubles per attempt. Default 1 s. */
  backoffBaseMs?: number;
  /** Longest retry delay. Default 1 h. */
  backoffMaxMs?: number;
  /** Deliveries sent in parallel by one instance. Default 8. */
  concurrency?: number;
  /** Deliveries sent in parallel to one environment's URL (one receiver). Default: `concurrency`. */
  receiverConcurrency?: number;
  /**
   * How long `shutdown()` keeps sending what is due before it cuts short what is still under way.
   * Default 10 s.
   */
  shutdownGraceMs?: number;
  /** Deliveries sent in parallel by `shutdown()`, every receiver at once. Default 64. */
  shutdownConcurrency?: number;
  /** Delivered and failed deliveries are kept this long for the history. Default 30 days. */
  retentionMs?: number;
  /** Source of jitter, in [0, 1). Default Math.random. */
  random?: () => number;
  /** Told of every attempt (metrics). */
  observer?: WebhookObserver;
}

export interface DeliveryListOptions {
  status?: DeliveryStatus;
  /** Only deliveries about this user. */
  userId?: string;
  limit: number;
  /** Cursor: the id of the last delivery of the previous page. */
  after?: string;
}

const HOUR_MS = 3_600_000;
/** First and longest wait between two tries of recording an attempt the database refused. */
const RECORD_RETRY_MS = 100;
const RECORD_RETRY_MAX_MS = 2000;
/** Why an attempt's request was aborted (the reason given to its AbortController). */
const SHUT_DOWN = new Error('shut down');
/** No attempt starts in the last moments of the shutdown grace: it would only be cut short. */
const SHUTDOWN_LAST_START_MS = 500;
/** Dedupe slots this instance remembers (the database's unique id is the authority). */
const RECENT_SLOTS = 10_000;

/** A UUID-shaped id derived from a dedupe slot, so every instance names the slot's delivery alike. */
function uuidFrom(slot: string): string {
  const h = sha256Hex(slot);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-8${h.slice(13, 16)}-${((parseInt(h.slice(16, 18), 16) & 0x3f) | 0x80).toString(16)}${h.slice(18, 20)}-${h.slice(20, 32)}`;
}

/**
 * Delay before retry number `attempt` (1 = after the first failed attempt): `base * 2^(attempt-1)`,
 * jittered by ±20 % and capped at `maxMs`.
 */
export function backoffDelay(attempt: number, baseMs: number, maxMs: number, random: () => number = Math.random): number {
  const exp = Math.min(maxMs, baseMs * 2 ** Math.min(40, Math.max(0, attempt - 1)));
  return Math.max(0, Math.min(maxMs, Math.round(exp * (0.8 + 0.4 * random()))));
}

function describeError(err: unknown, timeoutMs: number): string {
  // Duck-typed: errors from fetch may come from another realm (e.g. under a test runner).
  const e = typeof err === 'object' && err !== null ? (err as { name?: unknown; message?: unknown; cause?: unknown }) : null;
  if (!e || typeof e.message !== 'string') return String(err);
  if (e.name === 'TimeoutError' || e.name === 'AbortError') return `timed out after ${timeoutMs} ms`;
  const cause = typeof e.cause === 'object' && e.cause !== null ? (e.cause as { code?: unknown; message?: unknown }) : null;
  if (cause) {
    const detail = typeof cause.code === 'string' ? cause.code : typeof cause.message === 'string' ? cause.message : '';
    if (detail) return `${e.message}: ${detail}`;
  }
  return e.message;
}

/**
 * The class of an error that kept an attempt from getting an answer, for the metrics: a small,
 * fixed set of names (never a message, a host or an address), read from the error's `code` or
 * its cause's (Node's and undici's codes).
 */
export function failureClass(err: unknown): string {
  const e = typeof err === 'object' && err !== null ? (err as { name?: unknown; code?: unknown; cause?: unknown }) : null;
  const cause = e && typeof e.cause === 'object' && e.cause !== null ? (e.cause as { code?: unknown }) : null;
  const code = typeof cause?.code === 'string' ? cause.code : typeof e?.code === 'string' ? e.code : '';
  if (e?.name === 'TimeoutError' || e?.name === 'AbortError' || /TIMEOUT|^ETIMEDOUT$/.test(code)) return 'timeout';
  if (code === 'ECONNREFUSED') return 'connection_refused';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return 'dns';
  if (code === 'ECONNRESET' || code === 'EPIPE' || code === 'UND_ERR_SOCKET' || code === 'UND_ERR_CLOSED') return 'connection_reset';
  if (/^(ERR_TLS|ERR_SSL|ERR_OSSL|CERT_|UNABLE_TO_|DEPTH_ZERO|SELF_SIGNED)/.test(code)) return 'tls';
  if (code === 'ERR_INVALID_URL') return 'invalid_url';
  return code ? 'network' : 'other';
}

/** Open deliveries the outbox ledger holds by id (the others are only counted): see outbox.ts. */
const OUTBOX_TRACKED = 10_000;

/** Rounds of candidates one pass of the worker reads before it waits for the next poll. */
const FILL_ROUNDS = 4;
/** Most deliveries of one user parked at once behind its first one. */
const PARK_BATCH = 100;

/**
 * The ordering key of a delivery: deliveries about one user (environment + user id) are sent one
 * at a time, in creation order. Test webhooks, which are about no user, are not ordered.
 */
function laneOf(d: WebhookDelivery): { key: string; env: EnvId; userId: string } | null {
  if (d.test || d.userId === null) return null;
  return { key: JSON.stringify([d.envId, d.userId]), env: d.envId, userId: d.userId };
}

/** An attempt under way in this process. */
interface InFlight {
  delivery: WebhookDelivery;
  abort: AbortController;
  done: Promise<void>;
}

export class WebhookService implements WebhookSink {
  private readonly windowMs: number;
  private readonly maxAttempts: number;
  private readonly leaseMs: number;
  private readonly timeoutMs: number;
  private readonly baseMs: number;
  private readonly maxDelayMs: number;
  private readonly concurrency: number;
  private readonly receiverConcurrency: number;
  private readonly graceMs: number;
  private readonly shutdownConcurrency: number;
  private readonly retentionMs: number;
  private readonly random: () => number;
  /** Lease time an attempt leaves for recording its outcome: it starts only with timeout + this left. */
  private readonly recordMarginMs: number;

  private saturated = false;
  /** Told when there may be work to do now (a recorded notice, a user's next delivery). */
  private readonly workListeners: (() => void)[] = [];
  /** Attempts under way in this process, by delivery id: never claimed again while they run. */
  private readonly inflight = new Map<string, InFlight>();
  private readonly recentSlots = new Set<string>();
  /** Creation order within one millisecond (see WebhookDelivery.seq). */
  private seq = 0;
  /** Notices being written (shutdown() sends them too). */
  private readonly writing = new Set<Promise<void>>();
  /** While stopping: when the grace ends (performance.now()), after which no attempt starts. */
  private graceEnd: number | null = null;
  /** Called when the next attempt ends. */
  private readonly onAttemptEnd: (() => void)[] = [];
  /** The open deliveries as this dispatcher knows them, for the metrics (outbox.ts). */
  private readonly ledger = new OutboxLedger(OUTBOX_TRACKED);

  constructor(private readonly d: WebhookServiceDeps) {
    this.windowMs = d.dedupeWindowMs ?? HOUR_MS;
    this.maxAttempts = d.maxAttempts ?? 10;
    this.leaseMs = d.leaseMs ?? 60_000;
    this.timeoutMs = d.requestTimeoutMs ?? 10_000;
    this.baseMs = d.backoffBaseMs ?? 1000;
    this.maxDelayMs = d.backoffMaxMs ?? HOUR_MS;
    this.concurrency = d.concurrency ?? 8;
    this.receiverConcurrency = d.receiverConcurrency ?? this.concurrency;
    this.graceMs = d.shutdownGraceMs ?? 10_000;
    this.shutdownConcurrency = d.shutdownConcurrency ?? 64;
    this.retentionMs = d.retentionMs ?? 30 * 24 * HOUR_MS;
    this.random = d.random ?? Math.random;
    if (this.windowMs <= 0) throw new Error('dedupeWindowMs must be positive');
    if (this.maxAttempts < 1) throw new Error('maxAttempts must be at least 1');
    if (this.leaseMs <= this.timeoutMs) throw new Error('leaseMs must exceed requestTimeoutMs, or a slow attempt could be sent twice');
    this.recordMarginMs = Math.min(10_000, Math.floor((this.leaseMs - this.timeoutMs) / 2));
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
    const slot = JSON.stringify([env.id, notice.userId, notice.device?.token ?? null, notice.type, window]);
    if (this.recentSlots.has(slot)) return Promise.resolve();
    this.recentSlots.add(slot);
    if (this.recentSlots.size > RECENT_SLOTS) this.recentSlots.delete(this.recentSlots.values().next().value as string);
    const id = uuidFrom(slot);
    const body = JSON.stringify(webhookBody(id, { ...notice, appId: env.id }, now));
    const written = this.d.store.enqueue(this.newDelivery(env, id, body, notice, now)).then((inserted) => {
      // Not inserted: a delivery of this slot was there already (a notice repeated after a restart).
      if (inserted) this.ledger.added(id, now);
      this.wake();
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
    if (!env.webhookUrl) throw new InvalidParameters([{ field: 'webhook_url', message: 'the environment has no webhook URL' }]);
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
      leaseOwner: this.d.instanceId,
      leaseUntil: new Date(now.getTime() + this.leaseMs),
      leaseVersion: 1,
      maxAttempts: 1,
      test: true,
    };
    await this.d.store.insert(delivery);
    this.ledger.added(delivery.id, delivery.createdAt);
    await this.launch(delivery);
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
  async page(env: EnvId, page: { status?: DeliveryStatus | null; userId?: string | null; first?: number | null; after?: string | null }): Promise<Page<WebhookDelivery>> {
    const n = pageSize(page.first, 20);
    const rows = await this.list(env, { status: page.status ?? undefined, userId: page.userId ?? undefined, limit: n + 1, after: page.after ?? undefined });
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
   * Be told whenever there may be deliveries to send now: a notice was recorded, or an attempt
   * ended (its user's next delivery, or anything due when this instance was saturated).
   */
  onWork(listener: () => void): void {
    this.workListeners.push(listener);
  }

  /**
   * One pass of delivery: claim what is due (as many as this instance may send at once) and
   * start sending it. Resolves once the attempts are started, not finished; `more` says that more
   * was due than could be started, so another pass should follow soon.
   */
  async deliverDue(): Promise<{ started: number; more: boolean }> {
    const started = await this.fill(this.concurrency - this.inflight.size);
    return { started: started.length, more: this.saturated };
  }

  /**
   * The outbox as this dispatcher knows it, from memory (no database read): open deliveries, and
   * the age of the oldest in seconds (0 when there is none). See outbox.ts.
   */
  outbox(): { depth: number; oldestAgeSeconds: number } {
    const oldest = this.ledger.oldest;
    const age = oldest === null ? 0 : Math.max(0, (this.d.clock.now().getTime() - oldest) / 1000);
    return { depth: this.ledger.depth, oldestAgeSeconds: age };
  }

  /** Correct what `outbox()` knows with one bounded read of the open deliveries (the worker's schedule). */
  reconcileOutbox(): Promise<void> {
    return this.ledger.reconcile((limit) => this.d.store.openDeliveries(limit));
  }

  /** Delete expired dedupe slots and stale claims, and finished deliveries past their retention. */
  async sweep(): Promise<void> {
    const now = this.d.clock.now();
    const swept = await this.d.store.sweep(now, new Date(now.getTime() - this.retentionMs));
    if (swept.dedupe + swept.deliveries > 0) this.d.log.info(swept, 'webhooks: swept expired dedupe slots and old deliveries');
  }

  /**
   * Stop delivering, after delivering what is due (when `deliver`: the worker was running). For up
   * to the shutdown grace, everything due is sent (notices still being written included), every
   * receiver at once: each environment's URL has its own share of attempts
   * (`receiverConcurrency`), so a slow or dead receiver only spends its own. A user's deliveries
   * keep their order. When the grace ends, attempts still under way are cut short and recorded
   * (the delivery stays due, for the next instance); deliveries not attempted stay as they are.
   * `passUnderWay` (the worker's pass still running) is waited for within the grace. Resolves
   * once every attempt is recorded.
   */
  async shutdown(opts: { deliver: boolean; passUnderWay?: Promise<unknown> | null }): Promise<void> {
    this.graceEnd = performance.now() + this.graceMs;
    let cancel: () => void = () => undefined;
    const graceOver = new Promise<void>((resolve) => (cancel = this.d.scheduler.after(this.graceMs, resolve)));
    try {
      if (opts.passUnderWay) await Promise.race([opts.passUnderWay, graceOver]);
      if (opts.deliver) await this.drain(graceOver);
      if (this.inflight.size > 0) {
        await Promise.race([Promise.allSettled(this.attempts()), graceOver]);
        for (const f of this.inflight.values()) f.abort.abort(SHUT_DOWN);
        await Promise.allSettled(this.attempts());
      }
    } finally {
      cancel();
      this.graceEnd = null;
    }
  }

  /** Send what is due until nothing is left to start, or the grace is over. */
  private async drain(graceOver: Promise<void>): Promise<void> {
    try {
      // Notices recorded just before the stop (track's drain makes some) are sent too.
      await Promise.race([Promise.allSettled([...this.writing]), graceOver]);
      while (this.mayStart()) {
        // An attempt that ends may free its user's next delivery or its receiver's share: look
        // again then (at once if one ended while this look was under way).
        const ended = new Promise<void>((resolve) => this.onAttemptEnd.push(resolve));
        const started = await this.fill(this.shutdownConcurrency - this.inflight.size);
        if (started.length === 0 && this.inflight.size === 0) return;
        await Promise.race([graceOver, ended]);
      }
    } catch (err) {
      this.d.log.warn({ err: describeError(err, this.timeoutMs) }, 'webhooks: delivering at shutdown stopped early');
    }
  }

  private attempts(): Promise<void>[] {
    return [...this.inflight.values()].map((f) => f.done);
  }

  /** Whether a new attempt may start: always, except in the last moments of a shutdown grace. */
  private mayStart(): boolean {
    return this.graceEnd === null || this.graceEnd - performance.now() >= SHUTDOWN_LAST_START_MS;
  }

  /**
   * Claim and send everything due now, once each, and wait for the results. Returns the number of
   * deliveries attempted. For tests and one-shot tools; the worker does the same continuously.
   */
  async runOnce(): Promise<number> {
    const seen = new Set<string>();
    let attempted = 0;
    for (;;) {
      const work = await this.fill(500, seen);
      if (work.length === 0) return attempted;
      await Promise.all(work);
      attempted += work.length;
    }
  }

  /**
   * Claim up to `slots` due deliveries and start sending them; `seen` (runOnce) names deliveries
   * not to take again and receives those taken. Returns the attempts started.
   *
   * Deliveries this process is sending are never claimed again, even when their lease has run
   * out. A user's deliveries go one at a time in creation order: a due delivery is sent only if
   * it is its user's first unfinished one; otherwise that first one is sent instead when it is
   * due, and when it waits for a retry the later one is parked (due again at the same time), so
   * that a user's backlog never crowds other users out of the due list. Users already served in
   * this pass are left out of the next round's query, so one user cannot use up a pass either.
   */
  private async fill(slots: number, seen?: Set<string>): Promise<Promise<void>[]> {
    const started: Promise<void>[] = [];
    if (slots <= 0) return started;
    const skipIds = new Set<string>([...this.inflight.keys(), ...(seen ?? [])]);
    const skipUsers = new Map<string, { env: EnvId; userId: string }>();
    const perReceiver = new Map<EnvId, number>();
    for (const f of this.inflight.values()) {
      const lane = laneOf(f.delivery);
      if (lane) skipUsers.set(lane.key, lane);
      perReceiver.set(f.delivery.envId, (perReceiver.get(f.delivery.envId) ?? 0) + 1);
    }
    const full = (env: EnvId) => (perReceiver.get(env) ?? 0) >= this.receiverConcurrency;
    const skipEnvs = new Set<EnvId>([...perReceiver.keys()].filter(full));
    let more = false;
    for (let round = 0; round < FILL_ROUNDS && started.length < slots && this.mayStart(); round++) {
      const limit = slots - started.length;
      const due = await this.d.store.due(this.d.clock.now(), { limit, skipIds: [...skipIds], skipUsers: [...skipUsers.values()], skipEnvs: [...skipEnvs] });
      more = due.length >= limit;
      if (due.length === 0) break;
      for (const candidate of due) {
        if (started.length >= slots) break;
        skipIds.add(candidate.id);
        // A receiver with its share of attempts in flight waits, and so do its users.
        if (full(candidate.envId)) {
          skipEnvs.add(candidate.envId);
          continue;
        }
        const lane = laneOf(candidate);
        if (lane && skipUsers.has(lane.key)) continue;
        if (lane) skipUsers.set(lane.key, lane);
        const target = lane ? await this.turnOf(candidate, seen) : candidate;
        if (!target || this.inflight.has(target.id)) continue;
        skipIds.add(target.id);
        // The lease runs from the claim itself, not from when the candidates were read.
        const now = this.d.clock.now();
        const claimed = await this.d.store.claim(target, this.d.instanceId, now, new Date(now.getTime() + this.leaseMs));
        if (!claimed) continue;
        this.ledger.claimed(claimed.id, claimed.createdAt);
        seen?.add(claimed.id);
        started.push(this.launch(claimed));
        perReceiver.set(claimed.envId, (perReceiver.get(claimed.envId) ?? 0) + 1);
        if (full(claimed.envId)) skipEnvs.add(claimed.envId);
      }
    }
    this.saturated = more || started.length >= slots;
    return started;
  }

  /**
   * Whose turn it is among the deliveries of `candidate`'s user: the candidate itself when it is
   * the user's first unfinished delivery, that first one when it is due now, or null (the first
   * one is being sent, or waits for a retry: then the candidate is parked until that retry).
   */
  private async turnOf(candidate: WebhookDelivery, seen?: Set<string>): Promise<WebhookDelivery | null> {
    if (candidate.userId === null) return candidate;
    const first = await this.d.store.firstOpen(candidate.envId, candidate.userId);
    if (!first || first.id === candidate.id) return candidate;
    if (this.inflight.has(first.id)) return null; // its outcome wakes the worker
    const now = this.d.clock.now().getTime();
    if (first.status === 'pending' && first.nextAttemptAt && first.nextAttemptAt.getTime() > now) {
      // Every due delivery of this user waits for that retry, out of everyone else's way.
      const waiting = await this.d.store.due(this.d.clock.now(), { limit: PARK_BATCH, user: { env: candidate.envId, userId: candidate.userId } });
      for (const d of waiting.some((w) => w.id === candidate.id) ? waiting : [candidate, ...waiting]) {
        if (d.id !== first.id && !this.inflight.has(d.id)) await this.park(d, first.nextAttemptAt);
      }
      return null;
    }
    if (seen?.has(first.id)) return null;
    // Being sent by another instance: looked at again at the next poll.
    if (first.status === 'delivering' && first.leaseUntil && first.leaseUntil.getTime() >= now) return null;
    return first;
  }

  /**
   * Move a delivery that must wait for its user's earlier one out of the due list until `until`,
   * without an attempt. Done under a claim, like every write of a delivery, so it never races
   * with another instance's claim (FerretDB's updates are a read and then a write).
   */
  private async park(delivery: WebhookDelivery, until: Date): Promise<void> {
    const now = this.d.clock.now();
    const claimed = await this.d.store.claim(delivery, this.d.instanceId, now, new Date(now.getTime() + this.leaseMs));
    if (!claimed) return;
    try {
      await this.d.store.release(claimed, this.d.instanceId, until);
    } catch (err) {
      // The lease runs out and the delivery is looked at again then.
      this.d.log.warn({ delivery: delivery.id, err: describeError(err, this.timeoutMs) }, 'webhooks: could not park a delivery behind its user\'s earlier one');
    }
  }

  private newDelivery(env: Environment, id: string, body: string, notice: { userId: string | null; device: { token: string } | null; type: string; trigger: string }, now: Date): WebhookDelivery {
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

  private wake(): void {
    for (const listener of this.workListeners) listener();
  }

  /** Start the attempt of a delivery this instance has just claimed. The promise never rejects. */
  private launch(delivery: WebhookDelivery): Promise<void> {
    const abort = new AbortController();
    const done = this.deliver(delivery, abort).finally(() => {
      this.inflight.delete(delivery.id);
      for (const resolve of this.onAttemptEnd.splice(0)) resolve();
      // Its user's next delivery (or, when saturated, anything due) may go now.
      if (this.saturated || laneOf(delivery)) this.wake();
    });
    this.inflight.set(delivery.id, { delivery, abort, done });
    return done;
  }

  /**
   * How long the request of an attempt may take, or null when it must not start: its whole timeout
   * and the time to record it must fit in the lease, or another instance could take the delivery
   * over and send it while this attempt is still under way.
   */
  private attemptBudget(delivery: WebhookDelivery): number | null {
    const leaseLeft = (delivery.leaseUntil?.getTime() ?? 0) - this.d.clock.now().getTime();
    return leaseLeft >= this.timeoutMs + this.recordMarginMs ? this.timeoutMs : null;
  }

  /** One attempt of a delivery this instance holds the lease of. Never throws. */
  private async deliver(delivery: WebhookDelivery, abort: AbortController): Promise<void> {
    const at = this.d.clock.now();
    const t0 = performance.now();
    let url = delivery.url;
    let statusCode: number | null = null;
    let error: string | null = null;
    let permanent = false;
    let timedOut = false;
    let cut = false;
    /** Why no 2xx came, for the metrics (failureClass); the HTTP status when one came. */
    let failure: string | null = null;
    try {
      const env = await this.d.environments.byId(delivery.envId);
      if (!env) {
        error = 'the environment no longer exists';
        failure = 'environment_gone';
        permanent = true;
      } else if (!delivery.test && !env.webhookUrl) {
        error = 'the environment no longer has a webhook URL';
        failure = 'no_webhook_url';
        permanent = true;
      } else {
        // Retries follow the environment's current URL, so fixing a wrong URL rescues pending deliveries.
        if (!delivery.test && env.webhookUrl) url = env.webhookUrl;
        const secret = await this.d.signingSecret(env.id);
        if (!secret) {
          error = 'no live API secret to sign the webhook with';
          failure = 'no_signing_secret';
        } else {
          const budget = this.attemptBudget(delivery);
          if (budget === null || !this.mayStart() || abort.signal.aborted) {
            await this.giveBack(delivery, budget === null ? 'webhooks: lease too short for an attempt; given back without sending' : 'webhooks: shutting down; given back without sending');
            return;
          }
          try {
            const answer = await this.post(url, delivery, secret, budget, abort.signal);
            if ('status' in answer) statusCode = answer.status;
            else {
              timedOut = true;
              error = `timed out after ${budget} ms`;
              failure = 'timeout';
            }
          } catch (err) {
            if (abort.signal.reason === SHUT_DOWN) {
              cut = true;
              error = `cut short at shutdown after ${Math.round(performance.now() - t0)} ms`;
              failure = 'shutdown';
            } else throw err;
          }
        }
      }
    } catch (err) {
      error = describeError(err, this.timeoutMs);
      failure = failureClass(err);
    }
    const durationMs = Math.round(performance.now() - t0);
    const ok = statusCode !== null && statusCode >= 200 && statusCode < 300;
    if (ok) failure = null;
    else if (statusCode !== null) failure = String(statusCode);
    const attemptNo = delivery.attempts.length + 1;
    const lastError = ok ? null : (error ?? `HTTP ${statusCode}`);
    const now = this.d.clock.now();
    let outcome: DeliveryOutcome;
    if (ok) outcome = { status: 'delivered', nextAttemptAt: null, deliveredAt: now, lastError: null };
    // Our own shutdown is not the receiver's failure: due again at once, the attempt limit untouched.
    else if (cut) outcome = { status: 'pending', nextAttemptAt: now, deliveredAt: null, lastError };
    else if (permanent || attemptNo >= delivery.maxAttempts) outcome = { status: 'failed', nextAttemptAt: null, deliveredAt: null, lastError };
    else {
      // After a timeout the receiver may still be working on this copy: give it at least as long
      // again before the next one, so that it has recorded data.id and can drop the repeat.
      const backoff = backoffDelay(attemptNo, this.baseMs, this.maxDelayMs, this.random);
      const delay = timedOut ? Math.max(backoff, this.timeoutMs) : backoff;
      outcome = { status: 'pending', nextAttemptAt: new Date(now.getTime() + delay), deliveredAt: null, lastError };
    }
    const attempt: DeliveryAttempt = { at, statusCode, error, durationMs, instance: this.d.instanceId, url };
    const meta = { delivery: delivery.id, env: delivery.envId, type: delivery.type, attempt: attemptNo, statusCode, error, durationMs };
    let recorded: boolean;
    try {
      recorded = await this.record(delivery, attempt, outcome);
      if (!recorded) this.d.log.warn(meta, 'webhooks: lease lost before the attempt was recorded');
    } catch (err) {
      // The lease expires and another claim retries: at-least-once, never silently dropped.
      this.d.log.warn({ ...meta, err: describeError(err, this.timeoutMs) }, 'webhooks: could not record the attempt');
      this.d.observer?.attempted({ failure: ok ? null : (failure ?? 'other'), gaveUp: false });
      return;
    }
    const over = recorded && outcome.status !== 'pending';
    if (over) this.ledger.finished(delivery.id);
    this.d.observer?.attempted({ failure: ok ? null : (failure ?? 'other'), gaveUp: over && outcome.status === 'failed' });
    if (outcome.status === 'delivered') this.d.log.info(meta, 'webhooks: delivered');
    else if (outcome.status === 'failed') this.d.log.warn(meta, 'webhooks: delivery failed for good');
    else this.d.log.warn({ ...meta, nextAttemptAt: outcome.nextAttemptAt }, 'webhooks: attempt failed, will retry');
  }

  /**
   * Record an attempt; a failure to write is retried while the lease lasts, since a lease that
   * runs out with the outcome unrecorded makes another claim send the delivery again.
   */
  private async record(delivery: WebhookDelivery, attempt: DeliveryAttempt, outcome: DeliveryOutcome): Promise<boolean> {
    let delay = RECORD_RETRY_MS;
    for (;;) {
      try {
        return await this.d.store.complete(delivery, this.d.instanceId, attempt, outcome);
      } catch (err) {
        const leaseLeft = (delivery.leaseUntil?.getTime() ?? 0) - this.d.clock.now().getTime();
        const graceLeft = this.graceEnd === null ? Infinity : this.graceEnd - performance.now();
        if (Math.min(leaseLeft, graceLeft) <= delay) throw err;
        this.d.log.warn({ delivery: delivery.id, err: describeError(err, this.timeoutMs), retryInMs: delay }, 'webhooks: could not record the attempt yet; retrying');
        await wait(this.d.scheduler, delay);
        delay = Math.min(RECORD_RETRY_MAX_MS, delay * 2);
      }
    }
  }

  /** Hand a claimed delivery back without attempting it (it is due again at once). */
  private async giveBack(delivery: WebhookDelivery, why: string): Promise<void> {
    try {
      await this.d.store.release(delivery, this.d.instanceId, this.d.clock.now());
      this.d.log.warn({ delivery: delivery.id, env: delivery.envId }, why);
    } catch (err) {
      // Its lease runs out and it is claimed again later.
      this.d.log.warn({ delivery: delivery.id, err: describeError(err, this.timeoutMs) }, why);
    }
  }

  private post(url: string, delivery: WebhookDelivery, secret: string, timeoutMs: number, signal: AbortSignal): Promise<HttpPostResult> {
    // Receivers check the timestamp against their own wall clock: the Clock is the wall clock in production.
    const t = Math.floor(this.d.clock.now().getTime() / 1000);
    const headers = {
      'Content-Type': 'application/json',
      'User-Agent': WEBHOOK_USER_AGENT,
      'X-Castle-Signature': signCastle(secret, delivery.body),
      'X-Rampart-Signature': signRampart(secret, delivery.body, t),
      'X-Rampart-Delivery': delivery.id,
    };
    return this.d.http.post(url, { headers, body: delivery.body, timeoutMs, signal });
  }
}
