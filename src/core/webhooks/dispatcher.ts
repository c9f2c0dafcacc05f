/**
 * The webhook dispatcher: which deliveries this instance sends, and when it stops. It claims due
 * deliveries under a lease (so several instances never send the same one at once), keeps each
 * user's deliveries in order (lanes), shares its attempts between receivers, runs each attempt
 * (attempt.ts: the POST, the retry with backoff, the record) and, at shutdown, sends what is due
 * within a grace before it cuts short what is still under way.
 *
 * Delivery is at least once, and only a failed attempt makes a second copy: an attempt starts only
 * if its whole timeout fits in its lease, this instance never claims a delivery it is still
 * sending, and an answer whose recording failed is recorded again while the lease lasts.
 *
 * A user's deliveries (environment + user id) are sent one at a time in creation order, the next
 * one at once when the last is over (a backlog goes out back to back); users are independent of
 * each other, and a delivery that fails for good lets the user's next one go. What is due is read
 * in pages, each pass going on from where the last one stopped (store: `due`'s cursor).
 *
 * It lives in the core beside the outbox: it uses only the core's ports (the store, the Clock, the
 * Scheduler, the HttpPoster), and the outbox's test webhook is sent through it (`sendClaimed`).
 * When it runs is the worker's (src/workers/webhooks.ts): `deliverDue` on its schedule and when
 * told there is work (`onWork`), `shutdown` on stop.
 */
import type { EnvId } from '../model';
import { monotonicMs } from '../ports';
import type { WebhookDelivery } from './model';
import { OutboxLedger } from './outbox';
import type { DueCursor } from './ports';
import { Attempts, describeError, SHUT_DOWN, type WebhookPorts } from './attempt';

export interface WebhookDispatcherDeps extends WebhookPorts {
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
  /** Source of jitter, in [0, 1). Default Math.random. */
  random?: () => number;
  /** The open deliveries as known here (outbox.ts): told of claims and of deliveries over. */
  ledger?: OutboxLedger;
  /** Notices still being recorded: `shutdown()` waits for them (within its grace) and sends them too. */
  recording?: () => Promise<unknown>;
}

const HOUR_MS = 3_600_000;
/** No attempt starts in the last moments of the shutdown grace: it would only be cut short. */
const SHUTDOWN_LAST_START_MS = 500;
/** Rounds of candidates one pass of the worker reads before it waits for the next poll. */
const FILL_ROUNDS = 4;
/** Most deliveries of one user parked at once behind its first one. */
const PARK_BATCH = 100;
/** A user's open deliveries read at once when whose turn it is is looked up (the first, and those behind it). */
const LANE_READ = 8;
/** Users whose next deliveries are kept at most (all are forgotten past it: they are read again). */
const UP_NEXT_LANES = 10_000;
/** Open deliveries a ledger of its own holds by id (when none is given). */
const OUTBOX_TRACKED = 10_000;

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

export class WebhookDispatcher {
  /** How long a claim is exclusive. */
  readonly leaseMs: number;
  readonly instanceId: string;
  private readonly timeoutMs: number;
  private readonly concurrency: number;
  private readonly receiverConcurrency: number;
  private readonly graceMs: number;
  private readonly shutdownConcurrency: number;
  private readonly ledger: OutboxLedger;
  private readonly attempts: Attempts;

  private saturated = false;
  /** Told when there may be work to do now (a user's next delivery, or anything due when saturated). */
  private readonly workListeners: (() => void)[] = [];
  /** Attempts under way in this process, by delivery id: never claimed again while they run. */
  private readonly inflight = new Map<string, InFlight>();
  /** While stopping: when the grace ends (monotonicMs(this.d.clock)), after which no attempt starts. */
  private graceEnd: number | null = null;
  /** Called when the next attempt ends. */
  private readonly onAttemptEnd: (() => void)[] = [];
  /** A user's next delivery being looked up and claimed after their last one ended (continueLane). */
  private readonly chaining = new Set<Promise<void>>();
  /**
   * Per user with a delivery under way here, their next open deliveries in creation order as last
   * read (firstOf), and whether that read saw all of them: the next one is sent from here when
   * the last is over.
   */
  private readonly upNext = new Map<string, { next: WebhookDelivery[]; all: boolean }>();
  /** Where the last pass stopped reading what is due (null: at its end), where the next one begins. */
  private resume: DueCursor | null = null;

  constructor(private readonly d: WebhookDispatcherDeps) {
    this.leaseMs = d.leaseMs ?? 60_000;
    this.instanceId = d.instanceId;
    this.timeoutMs = d.requestTimeoutMs ?? 10_000;
    const timeoutMs = this.timeoutMs;
    this.concurrency = d.concurrency ?? 8;
    this.receiverConcurrency = d.receiverConcurrency ?? this.concurrency;
    this.graceMs = d.shutdownGraceMs ?? 10_000;
    this.shutdownConcurrency = d.shutdownConcurrency ?? 64;
    this.ledger = d.ledger ?? new OutboxLedger(OUTBOX_TRACKED);
    if (this.leaseMs <= timeoutMs)
      throw new Error('leaseMs must exceed requestTimeoutMs, or a slow attempt could be sent twice');
    this.attempts = new Attempts(
      {
        ...d,
        ledger: this.ledger,
        timeoutMs,
        recordMarginMs: Math.min(10_000, Math.floor((this.leaseMs - timeoutMs) / 2)),
        baseMs: d.backoffBaseMs ?? 1000,
        maxDelayMs: d.backoffMaxMs ?? HOUR_MS,
        random: d.random ?? Math.random,
      },
      {
        mayStart: () => this.mayStart(),
        graceLeftMs: () => (this.graceEnd === null ? Infinity : this.graceEnd - monotonicMs(this.d.clock)),
      },
    );
  }

  /** Be told whenever an attempt ended that may let another delivery go now (its user's next one, or anything due when this instance was saturated). */
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
   * Attempt a delivery this instance recorded already claimed by itself (leaseOwner this
   * instance, leaseUntil `leaseMs` on): the outbox's test webhook. Resolves once it is recorded.
   */
  sendClaimed(delivery: WebhookDelivery): Promise<void> {
    return this.launch(delivery);
  }

  /**
   * Stop delivering, after delivering what is due (when `deliver`: the worker was running). For up
   * to the shutdown grace, everything due is sent (notices still being recorded included), every
   * receiver at once: each environment's URL has its own share of attempts
   * (`receiverConcurrency`), so a slow or dead receiver only spends its own. A user's deliveries
   * keep their order. When the grace ends, attempts still under way are cut short and recorded
   * (the delivery stays due, for the next instance); deliveries not attempted stay as they are.
   * `passUnderWay` (the worker's pass still running) is waited for within the grace. Resolves
   * once every attempt is recorded.
   */
  async shutdown(opts: { deliver: boolean; passUnderWay?: Promise<unknown> | null }): Promise<void> {
    this.graceEnd = monotonicMs(this.d.clock) + this.graceMs;
    let cancel: () => void = () => undefined;
    const graceOver = new Promise<void>(
      (resolve) => (cancel = this.d.scheduler.after(this.graceMs, resolve)),
    );
    try {
      if (opts.passUnderWay) await Promise.race([opts.passUnderWay, graceOver]);
      if (opts.deliver) await this.drain(graceOver);
      if (this.inflight.size > 0 || this.chaining.size > 0) {
        await Promise.race([this.idle(), graceOver]);
        // An attempt a user's next delivery starts from now on gives it back at once (no attempt
        // starts in the last moments of the grace).
        for (const f of this.inflight.values()) f.abort.abort(SHUT_DOWN);
        await this.idle();
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
      if (this.d.recording) await Promise.race([this.d.recording(), graceOver]);
      let over = false;
      void graceOver.then(() => (over = true));
      while (!over && this.mayStart()) {
        // An attempt that ends may free its user's next delivery or its receiver's share: look
        // again then (at once if one ended while this look was under way).
        const ended = new Promise<void>((resolve) => this.onAttemptEnd.push(resolve));
        const started = await this.fill(this.shutdownConcurrency - this.inflight.size);
        if (started.length === 0 && this.inflight.size === 0) return;
        await Promise.race([graceOver, ended]);
      }
    } catch (err) {
      this.d.log.warn(
        { err: describeError(err, this.timeoutMs) },
        'webhooks: delivering at shutdown stopped early',
      );
    }
  }

  private running(): Promise<void>[] {
    return [...this.inflight.values()].map((f) => f.done);
  }

  /** Whether a new attempt may start: always, except in the last moments of a shutdown grace. */
  private mayStart(): boolean {
    return this.graceEnd === null || this.graceEnd - monotonicMs(this.d.clock) >= SHUTDOWN_LAST_START_MS;
  }

  /**
   * Claim up to `slots` due deliveries and start sending them. Returns the attempts started.
   *
   * Deliveries this process is sending are never claimed again, even when their lease has run
   * out. A user's deliveries go one at a time in creation order: a due delivery is sent only if
   * it is its user's first unfinished one; otherwise that first one is sent instead when it is
   * due, and when it waits for a retry the later one is parked (due again at the same time), so
   * that a user's backlog never crowds other users out of the due list. Users already served in
   * this pass are left out of the next round's query, so one user cannot use up a pass either.
   */
  private async fill(slots: number): Promise<Promise<void>[]> {
    const started: Promise<void>[] = [];
    if (slots <= 0) return started;
    const skipIds = new Set<string>(this.inflight.keys());
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
    // Each round reads on from where the last one stopped; a pass begins where the last pass
    // stopped, and goes round to the first due delivery once, so that a long run of deliveries
    // it must skip (one user's backlog behind the delivery being sent) never hides the rest.
    let after = this.resume;
    let wrapped = after === null;
    for (let round = 0; round < FILL_ROUNDS && started.length < slots && this.mayStart(); round++) {
      const limit = slots - started.length;
      const page = await this.d.store.due(this.d.clock.now(), {
        limit,
        skipIds: [...skipIds],
        skipUsers: [...skipUsers.values()],
        skipEnvs: [...skipEnvs],
        ...(after ? { after } : {}),
      });
      const due = page.deliveries;
      more = page.next !== null;
      after = page.next;
      // Read to the end of what is due: from the first due delivery next, unless this read began there.
      const last = after === null && wrapped;
      if (after === null) wrapped = true;
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
        const target = lane ? await this.turnOf(candidate) : candidate;
        // What was read of a user's next deliveries is kept only while one of theirs is sent here.
        const notSent = () => {
          if (lane) this.upNext.delete(lane.key);
        };
        if (!target || this.inflight.has(target.id)) {
          notSent();
          continue;
        }
        skipIds.add(target.id);
        // The lease runs from the claim itself, not from when the candidates were read.
        const claimed = await this.claim(target);
        if (!claimed) {
          notSent();
          continue;
        }
        this.ledger.claimed(claimed.id, claimed.createdAt);
        started.push(this.launch(claimed));
        perReceiver.set(claimed.envId, (perReceiver.get(claimed.envId) ?? 0) + 1);
        if (full(claimed.envId)) skipEnvs.add(claimed.envId);
      }
      if (last) break;
    }
    this.resume = after;
    this.saturated = more || started.length >= slots;
    return started;
  }

  /**
   * Whose turn it is among the deliveries of `candidate`'s user: the candidate itself when it is
   * the user's first unfinished delivery, that first one when it is due now, or null (the first
   * one is being sent, or waits for a retry: then the candidate is parked until that retry).
   */
  private async turnOf(candidate: WebhookDelivery): Promise<WebhookDelivery | null> {
    const lane = laneOf(candidate);
    if (lane === null || candidate.userId === null) return candidate;
    const first = await this.firstOf(lane);
    if (!first || first.id === candidate.id) return candidate;
    if (this.inflight.has(first.id)) return null; // its outcome wakes the worker
    const now = this.d.clock.now().getTime();
    if (first.status === 'pending' && first.nextAttemptAt && first.nextAttemptAt.getTime() > now) {
      // Every due delivery of this user waits for that retry, out of everyone else's way.
      const waiting = (
        await this.d.store.due(this.d.clock.now(), {
          limit: PARK_BATCH,
          user: { env: candidate.envId, userId: candidate.userId },
        })
      ).deliveries;
      for (const d of waiting.some((w) => w.id === candidate.id) ? waiting : [candidate, ...waiting]) {
        if (d.id !== first.id && !this.inflight.has(d.id)) await this.park(d, first.nextAttemptAt);
      }
      return null;
    }
    // Being sent by another instance: looked at again at the next poll.
    if (first.status === 'delivering' && first.leaseUntil && first.leaseUntil.getTime() >= now) return null;
    return first;
  }

  private claim(delivery: WebhookDelivery): Promise<WebhookDelivery | null> {
    const now = this.d.clock.now();
    return this.d.store.claim(delivery, this.d.instanceId, now, new Date(now.getTime() + this.leaseMs));
  }

  /**
   * Move a delivery that must wait for its user's earlier one out of the due list until `until`,
   * without an attempt. Done under a claim, like every write of a delivery, so it never races
   * with another instance's claim (FerretDB's updates are a read and then a write).
   */
  private async park(delivery: WebhookDelivery, until: Date): Promise<void> {
    const claimed = await this.claim(delivery);
    if (!claimed) return;
    try {
      await this.d.store.release(claimed, this.d.instanceId, until);
    } catch (err) {
      // The lease runs out and the delivery is looked at again then.
      this.d.log.warn(
        { delivery: delivery.id, err: describeError(err, this.timeoutMs) },
        "webhooks: could not park a delivery behind its user's earlier one",
      );
    }
  }

  private wake(): void {
    for (const listener of this.workListeners) listener();
  }

  /**
   * Start the attempt of a delivery this instance has just claimed. The promise never rejects;
   * it resolves once the attempt is recorded.
   */
  private launch(delivery: WebhookDelivery): Promise<void> {
    const abort = new AbortController();
    const done = this.attempts.run(delivery, abort).then((over) => {
      this.inflight.delete(delivery.id);
      for (const resolve of this.onAttemptEnd.splice(0)) resolve();
      // Its user's next delivery goes at once; else (or when saturated) a pass looks for work.
      const lane = laneOf(delivery);
      if (!over && lane) this.upNext.delete(lane.key);
      const next = over ? this.continueLane(delivery) : Promise.resolve(false);
      const chained = next.then(
        (went) => {
          if (!went && (this.saturated || laneOf(delivery))) this.wake();
        },
        (err: unknown) => {
          this.d.log.warn(
            { delivery: delivery.id, err: describeError(err, this.timeoutMs) },
            "webhooks: could not send a user's next delivery at once",
          );
          this.wake();
        },
      );
      this.chaining.add(chained);
      void chained.finally(() => this.chaining.delete(chained));
    });
    this.inflight.set(delivery.id, { delivery, abort, done });
    return done;
  }

  /**
   * After a delivery of a user is over, send the user's next one at once if it is due (a backlog
   * goes out back to back, without a look at everything due in between), when this instance may
   * start another attempt for that receiver. True when it started one.
   */
  private async continueLane(over: WebhookDelivery): Promise<boolean> {
    const lane = laneOf(over);
    if (!lane || !this.hasSlot(over.envId)) return false;
    // The user's next one as last read, else read now; a copy that changed meanwhile (sent or
    // parked by another instance, purged) fails its claim, and what is there now is read.
    const ahead = this.upNext.get(lane.key);
    const known = ahead?.next.shift();
    // The last read saw all of the user's open deliveries and they are sent: one created since
    // is found by a pass (its notice wakes one), not by another read here.
    if (ahead && !known && ahead.all) {
      this.upNext.delete(lane.key);
      return false;
    }
    for (const fresh of known ? [false, true] : [true]) {
      const next = fresh ? await this.firstOf(lane) : known;
      if (!next || this.inflight.has(next.id) || !this.hasSlot(next.envId)) break;
      const now = this.d.clock.now().getTime();
      const due =
        next.status === 'pending'
          ? (next.nextAttemptAt?.getTime() ?? Infinity) <= now
          : (next.leaseUntil?.getTime() ?? Infinity) < now;
      if (!due) {
        if (fresh) break;
        continue;
      }
      const claimed = await this.claim(next);
      if (!claimed) continue;
      this.ledger.claimed(claimed.id, claimed.createdAt);
      void this.launch(claimed);
      return true;
    }
    this.upNext.delete(lane.key);
    return false;
  }

  /**
   * The user's first open delivery, read with the next few behind it: those are kept
   * (`upNext`), so that a backlog goes out one after the other without a read for each.
   */
  private async firstOf(lane: { key: string; env: EnvId; userId: string }): Promise<WebhookDelivery | null> {
    const open = await this.d.store.openOfUser(lane.env, lane.userId, LANE_READ);
    if (this.upNext.size >= UP_NEXT_LANES) this.upNext.clear();
    this.upNext.set(lane.key, { next: open.slice(1), all: open.length < LANE_READ });
    return open[0] ?? null;
  }

  /** Whether another attempt may start now, to this environment's receiver. */
  private hasSlot(env: EnvId): boolean {
    if (!this.mayStart()) return false;
    if (this.inflight.size >= (this.graceEnd === null ? this.concurrency : this.shutdownConcurrency))
      return false;
    let toReceiver = 0;
    for (const f of this.inflight.values()) if (f.delivery.envId === env) toReceiver++;
    return toReceiver < this.receiverConcurrency;
  }

  /**
   * Resolves once nothing is being sent: every attempt under way, and each user's next delivery
   * they started, made and recorded.
   */
  async idle(): Promise<void> {
    while (this.inflight.size > 0 || this.chaining.size > 0) {
      await Promise.allSettled([...this.running(), ...this.chaining]);
    }
  }
}
