/**
 * The state layer's admission gate: it owns who may add work while the writes are behind. One
 * job: turn the age of what is not written yet into "come in", "wait" or "no" (Unavailable, →
 * 503 with Retry-After).
 *
 * What a crash can lose is bounded by age, not count: the oldest change not yet written (late
 * statistics aside, see flusher.ts) may be at most `maxUnwrittenMs` old (a second). Past half of
 * that, admit() holds new work back until a flush brings the age down (or the caller's deadline):
 * a burst slows its callers a little instead of refusing them. At `maxUnwrittenMs`, whatever the
 * reason (a database that cannot keep up, one that is down or hung, a machine too busy to write),
 * new work is refused: at once without a deadline, else at its deadline unless a flush brought
 * the age down meanwhile (one slow flush costs a caller its wait, not a 503). It is let in again
 * as soon as a flush brings the age back under the bound. Nothing acknowledged is then ever more
 * than `maxUnwrittenMs` from being written (callers check() again right before they record), and
 * nothing is accepted that could not be kept. `queueLimit` bounds the backlog's size as well (its
 * memory), which the age bound normally keeps far below.
 */
import { Unavailable } from '../../core/errors';
import type { Scheduler } from '../../core/ports';
import { timerScheduler } from '../../workers/scheduler';

/** What the gate watches: the write-behind queue (flusher.ts). */
export interface Backlog {
  /** Writes waiting, late ones held back included: what the queue's bound counts. */
  readonly backlog: number;
  /** Why the last flush failed, while flushes keep failing; null while the database is writing. */
  readonly failing: string | null;
  /** How long ago the oldest change not yet written was queued (late statistics aside); 0: none. */
  oldestUnwrittenMs(): number;
}

export interface AdmissionOptions {
  /** Writes waiting before `admit()` refuses new work (a bound on memory). */
  queueLimit: number;
  /** Age of the oldest unwritten change at which `admit()` refuses new work (half of it: holds it back). */
  maxUnwrittenMs: number;
  now?: () => number;
  /** Times the deadlines of held work (default: the process's timers). */
  scheduler?: Scheduler;
}

/** Work held back by admit(), until the writes catch up or its deadline. */
interface Held {
  resolve: () => void;
  reject: (err: unknown) => void;
  cancel: () => void;
}

export class AdmissionGate {
  /** Work held back by admit() until the writes catch up. */
  private readonly held = new Set<Held>();
  private closed = false;
  private readonly now: () => number;
  private readonly scheduler: Scheduler;

  constructor(
    private readonly writes: Backlog,
    private readonly o: AdmissionOptions,
  ) {
    this.now = o.now ?? Date.now;
    this.scheduler = o.scheduler ?? timerScheduler;
  }

  /** Work held back now. */
  get waiting(): number {
    return this.held.size;
  }

  /** `full`: admit() refuses; `behind`: it holds work back; `ok`: it lets work in at once. */
  get pressure(): 'ok' | 'behind' | 'full' {
    if (this.refusal() !== null) return 'full';
    return this.writes.oldestUnwrittenMs() >= this.holdAtMs ? 'behind' : 'ok';
  }

  /** Past this age of the oldest unwritten change, new work waits (within its deadline). */
  private get holdAtMs(): number {
    return this.o.maxUnwrittenMs / 2;
  }

  /** Why new work is refused now, or null. */
  refusal(): Unavailable | null {
    return this.hardRefusal() ?? this.ageRefusal();
  }

  /** Refusals no wait can change: shutting down, the queue full. */
  private hardRefusal(): Unavailable | null {
    if (this.closed) return new Unavailable('the service is shutting down');
    const queued = this.writes.backlog;
    if (queued >= this.o.queueLimit) {
      const lastError = this.writes.failing;
      return new Unavailable(
        `the write queue is full (${queued} writes waiting${lastError ? `; last error: ${lastError}` : ''})`,
      );
    }
    return null;
  }

  /** The oldest unwritten change is at the bound. */
  private ageRefusal(): Unavailable | null {
    const age = this.writes.oldestUnwrittenMs();
    if (age < this.o.maxUnwrittenMs) return null;
    const lastError = this.writes.failing;
    return new Unavailable(
      `the database is behind: a change waits to be written for ${age} ms (at most ${this.o.maxUnwrittenMs} ms)${lastError ? `; last error: ${lastError}` : ''}`,
      { retryAfterSeconds: 1 },
    );
  }

  /** See WriteQueue.admit: at once, after the writes caught up (or at `waitUntil`), or Unavailable. */
  admit(waitUntil?: number): Promise<void> {
    const refused = this.hardRefusal() ?? (waitUntil === undefined ? this.ageRefusal() : null);
    if (refused) return Promise.reject(refused);
    if (waitUntil === undefined || this.writes.oldestUnwrittenMs() < this.holdAtMs) return Promise.resolve();
    const wait = waitUntil - this.now();
    if (wait <= 0) {
      const late = this.ageRefusal();
      return late ? Promise.reject(late) : Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      const waiter: Held = { resolve, reject, cancel: () => undefined };
      waiter.cancel = this.scheduler.after(wait, () =>
        this.release(waiter, this.closed ? null : this.refusal()),
      );
      this.held.add(waiter);
    });
  }

  /** Refuse new work from now on; what is held (already received) goes in after the next flush. */
  close(): void {
    this.closed = true;
  }

  /**
   * After each flush: let held work in once the age is back under the mark (or the gate is
   * closed: work already received is finished), or refuse it once past the bound.
   */
  releaseHeld(): void {
    if (this.held.size === 0) return;
    if (this.closed) {
      for (const w of [...this.held]) this.release(w);
      return;
    }
    const full = this.hardRefusal();
    if (!full && this.writes.oldestUnwrittenMs() >= this.holdAtMs) return;
    for (const w of [...this.held]) this.release(w, full);
  }

  /** Stop holding `waiter`: let it in, or refuse it with `refusal`. */
  private release(waiter: Held, refusal: Unavailable | null = null): void {
    waiter.cancel();
    this.held.delete(waiter);
    if (refusal) waiter.reject(refusal);
    else waiter.resolve();
  }
}
