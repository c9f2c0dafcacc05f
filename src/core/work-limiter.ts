/**
 * How many verdicts are computed at once, and what happens to the rest: they wait their turn in
 * order for at most `maxWaitMs`, then are refused (Unavailable: 503 with Retry-After), and one
 * whose caller went away while it waited is dropped unstarted.
 *
 * Why: a process given less CPU than its traffic needs (a spike, a noisy neighbour) that starts
 * everything it receives shares its CPU among ever more requests in progress, until each takes
 * longer than its caller waits: every answer comes too late, and the work done for callers who
 * left is what keeps the next answers late. Bounding what runs at once keeps each admitted
 * verdict quick, and refusing early what waited too long keeps the queue from growing.
 *
 * The bound adapts (additive increase, multiplicative decrease, as TCP's congestion window):
 * every `windowMs`, if the verdicts that ended took longer than `targetMs` on average (wall time
 * from their turn to their answer: the CPU they share, and their reads), it shrinks by a quarter
 * (at least `minLimit`); if it was reached and they were quick, it grows by a tenth (at most
 * `maxLimit`). On a machine with CPU to spare it sits at `maxLimit`, far above what traffic
 * needs; on a starved one it settles where a verdict takes about `targetMs`.
 */
import { Unavailable } from './errors';
import { monotonicMs, type Clock, type Scheduler } from './ports';

/** A caller that may go away before its turn (a closed connection, a cancelled call). */
export interface Caller {
  readonly gone: boolean;
  /** Call `listener` once when the caller goes; returns a function that unsubscribes. */
  onGone(listener: () => void): () => void;
}

export interface WorkLimiterOptions {
  /** Most at once, at first and at most; and the least the bound shrinks to. */
  maxLimit: number;
  minLimit: number;
  /** Longest a request waits for its turn before it is refused. */
  maxWaitMs: number;
  /** Most requests waiting; past it new ones are refused at once. */
  maxQueue: number;
  /** Average time from turn to answer past which the bound shrinks. */
  targetMs: number;
  /** How often the bound is adjusted. */
  windowMs: number;
  clock: Clock;
  scheduler: Scheduler;
}

export const DEFAULT_WORK_LIMITS = {
  maxLimit: 128,
  minLimit: 2,
  maxWaitMs: 1000,
  maxQueue: 10_000,
  targetMs: 250,
  windowMs: 1000,
} as const;

interface Waiter {
  resolve: (release: () => void) => void;
  reject: (err: unknown) => void;
  cancel: () => void;
}

export class WorkLimiter {
  private running = 0;
  private bound: number;
  private readonly queue: Waiter[] = [];
  private windowStart: number;
  private ended = 0;
  private endedMs = 0;
  private saturated = false;

  constructor(private readonly o: WorkLimiterOptions) {
    this.bound = o.maxLimit;
    this.windowStart = monotonicMs(o.clock);
  }

  /** Work running now, and the bound it may reach. */
  get inFlight(): number {
    return this.running;
  }

  get limit(): number {
    return this.bound;
  }

  get waiting(): number {
    return this.queue.length;
  }

  /**
   * A turn: resolves with the function that ends it (call it once, when the work is answered).
   * Rejects with Unavailable when the queue is full or the turn did not come within `maxWaitMs`,
   * or when `caller` went away first.
   */
  acquire(caller?: Caller): Promise<() => void> {
    this.adjust();
    if (caller?.gone) return Promise.reject(new Unavailable('the caller went away'));
    if (this.running < this.bound && this.queue.length === 0) return Promise.resolve(this.start());
    this.saturated = true;
    if (this.queue.length >= this.o.maxQueue)
      return Promise.reject(this.refusal('too many requests are waiting'));
    return new Promise<() => void>((resolve, reject) => {
      const waiter: Waiter = { resolve, reject, cancel: () => undefined };
      const stopWaiting = this.o.scheduler.after(this.o.maxWaitMs, () =>
        this.leave(waiter, this.refusal(`no turn within ${this.o.maxWaitMs} ms`)),
      );
      const stopWatching =
        caller?.onGone(() => this.leave(waiter, new Unavailable('the caller went away'))) ??
        (() => undefined);
      waiter.cancel = () => {
        stopWaiting();
        stopWatching();
      };
      this.queue.push(waiter);
    });
  }

  private refusal(why: string): Unavailable {
    return new Unavailable(
      `the service is overloaded (${this.running} verdicts running, ${this.queue.length} waiting): ${why}`,
      { retryAfterSeconds: 1 },
    );
  }

  private leave(waiter: Waiter, err: unknown): void {
    const i = this.queue.indexOf(waiter);
    if (i < 0) return;
    this.queue.splice(i, 1);
    waiter.cancel();
    waiter.reject(err);
  }

  private start(): () => void {
    this.running++;
    const started = monotonicMs(this.o.clock);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.running--;
      this.ended++;
      this.endedMs += monotonicMs(this.o.clock) - started;
      this.adjust();
      this.next();
    };
  }

  /** Give free turns to the waiters, oldest first. */
  private next(): void {
    while (this.running < this.bound && this.queue.length > 0) {
      const waiter = this.queue.shift() as Waiter;
      waiter.cancel();
      waiter.resolve(this.start());
    }
  }

  /** At the end of each window: shrink the bound if work was slow, grow it if it was reached and work was quick. */
  private adjust(): void {
    const now = monotonicMs(this.o.clock);
    if (now - this.windowStart < this.o.windowMs) return;
    if (this.ended > 0 && this.endedMs / this.ended > this.o.targetMs) {
      this.bound = Math.max(this.o.minLimit, Math.floor(this.bound * 0.75));
    } else if (this.saturated) {
      this.bound = Math.min(this.o.maxLimit, this.bound + Math.max(1, Math.floor(this.bound / 10)));
      this.next();
    }
    this.windowStart = now;
    this.ended = 0;
    this.endedMs = 0;
    this.saturated = this.running >= this.bound;
  }
}
