/**
 * One attempt of a webhook delivery this instance holds the lease of: look up the environment
 * and its signing secret, POST the signed body within the attempt's budget, decide the next state
 * (delivered, retried with backoff, failed for good, or due again at once when our own shutdown
 * cut it short) and record it, retrying the write while the lease lasts. The dispatcher
 * (dispatcher.ts) says which deliveries to attempt and when; this file says how one attempt goes.
 */
import type { EnvId, Environment } from '../model';
import {
  monotonicMs,
  wait,
  type Clock,
  type HttpPoster,
  type HttpPostResult,
  type Scheduler,
} from '../ports';
import type { DeliveryAttempt, WebhookDelivery } from './model';
import type { DeliveryOutcome, WebhookDeliveryStore } from './ports';
import type { OutboxLedger } from './outbox';
import { signCastle, signRampart } from './signature';

export const WEBHOOK_USER_AGENT = 'Rampart-Webhooks/1';

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

/** First and longest wait between two tries of recording an attempt the database refused. */
const RECORD_RETRY_MS = 100;
const RECORD_RETRY_MAX_MS = 2000;
/** Why an attempt's request was aborted (the reason given to its AbortController). */
export const SHUT_DOWN = new Error('shut down');

/**
 * Delay before retry number `attempt` (1 = after the first failed attempt): `base * 2^(attempt-1)`,
 * jittered by ±20 % and capped at `maxMs`.
 */
export function backoffDelay(
  attempt: number,
  baseMs: number,
  maxMs: number,
  random: () => number = Math.random,
): number {
  const exp = Math.min(maxMs, baseMs * 2 ** Math.min(40, Math.max(0, attempt - 1)));
  return Math.max(0, Math.min(maxMs, Math.round(exp * (0.8 + 0.4 * random()))));
}

export function describeError(err: unknown, timeoutMs: number): string {
  // Duck-typed: errors from fetch may come from another realm (e.g. under a test runner).
  const e =
    typeof err === 'object' && err !== null
      ? (err as { name?: unknown; message?: unknown; cause?: unknown })
      : null;
  if (!e || typeof e.message !== 'string') return String(err);
  if (e.name === 'TimeoutError' || e.name === 'AbortError') return `timed out after ${timeoutMs} ms`;
  const cause =
    typeof e.cause === 'object' && e.cause !== null
      ? (e.cause as { code?: unknown; message?: unknown })
      : null;
  if (cause) {
    const detail =
      typeof cause.code === 'string' ? cause.code : typeof cause.message === 'string' ? cause.message : '';
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
  const e =
    typeof err === 'object' && err !== null
      ? (err as { name?: unknown; code?: unknown; cause?: unknown })
      : null;
  const cause = e && typeof e.cause === 'object' && e.cause !== null ? (e.cause as { code?: unknown }) : null;
  const code = typeof cause?.code === 'string' ? cause.code : typeof e?.code === 'string' ? e.code : '';
  if (e?.name === 'TimeoutError' || e?.name === 'AbortError' || /TIMEOUT|^ETIMEDOUT$/.test(code))
    return 'timeout';
  if (code === 'ECONNREFUSED') return 'connection_refused';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return 'dns';
  if (code === 'ECONNRESET' || code === 'EPIPE' || code === 'UND_ERR_SOCKET' || code === 'UND_ERR_CLOSED')
    return 'connection_reset';
  if (/^(ERR_TLS|ERR_SSL|ERR_OSSL|CERT_|UNABLE_TO_|DEPTH_ZERO|SELF_SIGNED)/.test(code)) return 'tls';
  if (code === 'ERR_INVALID_URL') return 'invalid_url';
  return code ? 'network' : 'other';
}

/** The ports a delivery's attempts use (the dispatcher's too). */
export interface WebhookPorts {
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
  /** Told of every attempt (metrics). */
  observer?: WebhookObserver;
}

/** What an attempt needs: the ports, and the dispatcher's settings it applies. */
export interface AttemptDeps extends WebhookPorts {
  /** Told when a delivery is over (delivered or failed for good). */
  ledger: OutboxLedger;
  timeoutMs: number;
  /** Lease time an attempt leaves for recording its outcome: it starts only with timeout + this left. */
  recordMarginMs: number;
  baseMs: number;
  maxDelayMs: number;
  random: () => number;
}

/** What the dispatcher says of the moment (its shutdown grace). */
export interface AttemptGate {
  /** Whether a new attempt may start now. */
  mayStart(): boolean;
  /** Milliseconds left of the shutdown grace (Infinity when not stopping). */
  graceLeftMs(): number;
}

/**
 * How long attempts to one environment reuse what an earlier attempt read of it (the environment
 * and its signing secret): a backlog to one receiver costs two look-ups a second, not two per
 * delivery. A changed URL or secret is used within this long.
 */
export const RECEIVER_CACHE_MS = 1_000;
/** Environments whose look-ups are kept at once (all are forgotten past it). */
const RECEIVER_CACHE_ENTRIES = 1_000;

interface Receiver {
  at: number;
  env: Environment | null;
  secret: string | null;
}

export class Attempts {
  private readonly receivers = new Map<EnvId, Receiver>();

  constructor(
    private readonly d: AttemptDeps,
    private readonly gate: AttemptGate,
  ) {}

  /** The environment of a delivery and the secret to sign with, read at most once a RECEIVER_CACHE_MS. */
  private async receiver(envId: EnvId): Promise<Receiver> {
    const now = monotonicMs(this.d.clock);
    const known = this.receivers.get(envId);
    if (known && now - known.at < RECEIVER_CACHE_MS) return known;
    const env = await this.d.environments.byId(envId);
    const secret = env ? await this.d.signingSecret(env.id) : null;
    if (this.receivers.size >= RECEIVER_CACHE_ENTRIES) this.receivers.clear();
    const read = { at: now, env, secret };
    this.receivers.set(envId, read);
    return read;
  }

  /**
   * One attempt of a delivery this instance holds the lease of. Never throws. Resolves true when
   * the delivery is over (its delivery, or its failure for good, recorded).
   */
  async run(delivery: WebhookDelivery, abort: AbortController): Promise<boolean> {
    const at = this.d.clock.now();
    const t0 = monotonicMs(this.d.clock);
    let url = delivery.url;
    let statusCode: number | null = null;
    let error: string | null = null;
    let permanent = false;
    let timedOut = false;
    let cut = false;
    /** Why no 2xx came, for the metrics (failureClass); the HTTP status when one came. */
    let failure: string | null = null;
    try {
      const { env, secret } = await this.receiver(delivery.envId);
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
        if (!secret) {
          error = 'no live API secret to sign the webhook with';
          failure = 'no_signing_secret';
        } else {
          const budget = this.budget(delivery);
          if (budget === null || !this.gate.mayStart() || abort.signal.aborted) {
            await this.giveBack(
              delivery,
              budget === null
                ? 'webhooks: lease too short for an attempt; given back without sending'
                : 'webhooks: shutting down; given back without sending',
            );
            return false;
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
              error = `cut short at shutdown after ${Math.round(monotonicMs(this.d.clock) - t0)} ms`;
              failure = 'shutdown';
            } else throw err;
          }
        }
      }
    } catch (err) {
      error = describeError(err, this.d.timeoutMs);
      failure = failureClass(err);
    }
    const durationMs = Math.round(monotonicMs(this.d.clock) - t0);
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
    else if (permanent || attemptNo >= delivery.maxAttempts)
      outcome = { status: 'failed', nextAttemptAt: null, deliveredAt: null, lastError };
    else {
      // After a timeout the receiver may still be working on this copy: give it at least as long
      // again before the next one, so that it has recorded data.id and can drop the repeat.
      const backoff = backoffDelay(attemptNo, this.d.baseMs, this.d.maxDelayMs, this.d.random);
      const delay = timedOut ? Math.max(backoff, this.d.timeoutMs) : backoff;
      outcome = {
        status: 'pending',
        nextAttemptAt: new Date(now.getTime() + delay),
        deliveredAt: null,
        lastError,
      };
    }
    const attempt: DeliveryAttempt = { at, statusCode, error, durationMs, instance: this.d.instanceId, url };
    const meta = {
      delivery: delivery.id,
      env: delivery.envId,
      type: delivery.type,
      attempt: attemptNo,
      statusCode,
      error,
      durationMs,
    };
    let recorded: boolean;
    try {
      recorded = await this.record(delivery, attempt, outcome);
      if (!recorded) this.d.log.warn(meta, 'webhooks: lease lost before the attempt was recorded');
    } catch (err) {
      // The lease expires and another claim retries: at-least-once, never silently dropped.
      this.d.log.warn(
        { ...meta, err: describeError(err, this.d.timeoutMs) },
        'webhooks: could not record the attempt',
      );
      this.d.observer?.attempted({ failure: ok ? null : (failure ?? 'other'), gaveUp: false });
      return false;
    }
    const over = recorded && outcome.status !== 'pending';
    if (over) this.d.ledger.finished(delivery.id);
    this.d.observer?.attempted({
      failure: ok ? null : (failure ?? 'other'),
      gaveUp: over && outcome.status === 'failed',
    });
    if (outcome.status === 'delivered') this.d.log.info(meta, 'webhooks: delivered');
    else if (outcome.status === 'failed') this.d.log.warn(meta, 'webhooks: delivery failed for good');
    else
      this.d.log.warn(
        { ...meta, nextAttemptAt: outcome.nextAttemptAt },
        'webhooks: attempt failed, will retry',
      );
    return over;
  }

  /**
   * How long the request of an attempt may take, or null when it must not start: its whole timeout
   * and the time to record it must fit in the lease, or another instance could take the delivery
   * over and send it while this attempt is still under way.
   */
  private budget(delivery: WebhookDelivery): number | null {
    const leaseLeft = (delivery.leaseUntil?.getTime() ?? 0) - this.d.clock.now().getTime();
    return leaseLeft >= this.d.timeoutMs + this.d.recordMarginMs ? this.d.timeoutMs : null;
  }

  /**
   * Record an attempt; a failure to write is retried while the lease lasts, since a lease that
   * runs out with the outcome unrecorded makes another claim send the delivery again.
   */
  private async record(
    delivery: WebhookDelivery,
    attempt: DeliveryAttempt,
    outcome: DeliveryOutcome,
  ): Promise<boolean> {
    let delay = RECORD_RETRY_MS;
    for (;;) {
      try {
        return await this.d.store.complete(delivery, this.d.instanceId, attempt, outcome);
      } catch (err) {
        const leaseLeft = (delivery.leaseUntil?.getTime() ?? 0) - this.d.clock.now().getTime();
        if (Math.min(leaseLeft, this.gate.graceLeftMs()) <= delay) throw err;
        this.d.log.warn(
          { delivery: delivery.id, err: describeError(err, this.d.timeoutMs), retryInMs: delay },
          'webhooks: could not record the attempt yet; retrying',
        );
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
      this.d.log.warn({ delivery: delivery.id, err: describeError(err, this.d.timeoutMs) }, why);
    }
  }

  private post(
    url: string,
    delivery: WebhookDelivery,
    secret: string,
    timeoutMs: number,
    signal: AbortSignal,
  ): Promise<HttpPostResult> {
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
