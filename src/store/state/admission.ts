/**
 * The state layer's admission gate: it owns who may add work while the writes are behind. One
 * job: turn the write-behind backlog into "come in", "wait" or "no" (Unavailable, → 503).
 *
 * The backlog is bounded twice. Past `backpressureAt` writes, admit() holds new work back until
 * the database has caught up (or the caller's deadline), which bounds what a crash can lose to
 * about a second of traffic; past `queueLimit` (the database is down) it refuses new work. Work
 * still held at its deadline goes in, unless the database is writing (its last flush succeeded)
 * and the backlog is past OVERLOAD × `backpressureAt`: then more work than the database can write
 * is arriving for good, and letting it in would only grow what a crash loses, so it is refused
 * and the backlog stays near the mark. While the database is down, held work goes in at its
 * deadline (up to `queueLimit`), so that an outage is ridden out.
 */
import { Unavailable } from '../../core/errors';
import type { Scheduler } from '../../core/ports';
import { timerScheduler } from '../../workers/scheduler';

/** Backlog, in multiples of `backpressureAt`, past which held work is refused at its deadline while the database is writing. */
const OVERLOAD = 2;

/** What the gate watches: the write-behind queue (flusher.ts). */
export interface Backlog {
  /** Writes waiting, late ones held back included: what the queue's bound counts (all of it is at risk in a crash). */
  readonly backlog: number;
  /** Writes due: the backlog without late changes held back on purpose, what says the database is behind. */
  readonly due: number;
  /** Why the last flush failed, while flushes keep failing; null while the database is writing. */
  readonly failing: string | null;
}

export interface AdmissionOptions {
  /** Writes waiting before `admit()` refuses new work. */
  queueLimit: number;
  /** Writes waiting before `admit()` holds new work back until they go down. */
  backpressureAt: number;
  now?: () => number;
  /** Times the deadlines of held work (default: the process's timers). */
  scheduler?: Scheduler;
}

/** Work held back by admit(), until the backlog goes down or its deadline. */
interface Held {
  resolve: () => void;
  reject: (err: unknown) => void;
  cancel: () => void;
}

export class AdmissionGate {
  /** Work held back by admit() until the backlog goes down. */
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

  get pressure(): 'ok' | 'behind' | 'full' {
    if (this.closed || this.writes.backlog >= this.o.queueLimit) return 'full';
    return this.writes.due >= this.o.backpressureAt ? 'behind' : 'ok';
  }

  /** See WriteQueue.admit: at once, after the database caught up (or at `waitUntil`), or Unavailable. */
  admit(waitUntil?: number): Promise<void> {
    const queued = this.writes.backlog;
    if (this.closed) return Promise.reject(new Unavailable('shutting down'));
    if (queued >= this.o.queueLimit) {
      const lastError = this.writes.failing;
      return Promise.reject(new Unavailable(`the write queue is full (${queued} writes waiting${lastError ? `; last error: ${lastError}` : ''})`));
    }
    if (this.writes.due < this.o.backpressureAt || waitUntil === undefined) return Promise.resolve();
    const wait = waitUntil - this.now();
    if (wait <= 0) return this.overloaded() ? Promise.reject(this.overload()) : Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const waiter: Held = { resolve, reject, cancel: () => undefined };
      waiter.cancel = this.scheduler.after(wait, () => this.release(waiter, this.overloaded() ? this.overload() : null));
      this.held.add(waiter);
    });
  }

  /** Refuse new work from now on; what is held goes in after the next flush (see releaseHeld()). */
  close(): void {
    this.closed = true;
  }

  /** Let held work in once the backlog is below the backpressure mark (or the gate is closed): call after each flush. */
  releaseHeld(): void {
    if (this.writes.due >= this.o.backpressureAt && !this.closed) return;
    for (const w of [...this.held]) this.release(w);
  }

  /** The database is writing (its last flush succeeded) and still far behind: see OVERLOAD. */
  private overloaded(): boolean {
    return this.writes.failing === null && this.writes.due >= OVERLOAD * this.o.backpressureAt;
  }

  private overload(): Unavailable {
    return new Unavailable(`the database is behind (${this.writes.due} writes waiting): more work is arriving than it can write`);
  }

  /** Stop holding `waiter`: let it in, or refuse it with `refusal`. */
  private release(waiter: Held, refusal: Unavailable | null = null): void {
    waiter.cancel();
    this.held.delete(waiter);
    if (refusal) waiter.reject(refusal);
    else waiter.resolve();
  }
}
