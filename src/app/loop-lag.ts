/**
 * How far behind Rampart's event loop runs, as a load shedder reads it. A process short of CPU (a
 * traffic spike, a noisy neighbour) reads its sockets late: requests wait in the kernel, unseen by
 * every bound that counts work inside the process, until their callers have given up. The loop's
 * delay is what that wait looks like from inside: while it is too large, new requests are answered
 * 503 with `Retry-After` at once (a few hundred microseconds each), so that the kernel's queue
 * drains and the work the process can do goes to requests that can still be answered in time.
 */

/** The window over which the delay is summed. */
const WINDOW_MS = 2000;

export class LoopLag {
  private readonly timer: NodeJS.Timeout;
  /** When each tick of the last window fired, and how late. */
  private readonly ticks: { at: number; late: number }[] = [];
  private last = performance.now();

  /**
   * Overloaded while the loop's delay over the last two seconds adds up to more than `maxMs` (0:
   * never; the delay is still measured).
   */
  constructor(
    private readonly maxMs: number,
    private readonly tickMs = 100,
  ) {
    // A timer every `tickMs` notes how late it fires: the time the loop spent on one turn past
    // the timer's due time. Summed over a window, a loop that is behind half the time (every turn
    // long, or one turn of seconds taking in a queue of requests) reaches a second; one pause as
    // a collection or a large body makes stays well below.
    this.timer = setInterval(() => {
      const now = performance.now();
      this.ticks.push({ at: now, late: Math.max(0, now - this.last - this.tickMs) });
      this.last = now;
      while (this.ticks.length > 0 && (this.ticks[0]?.at ?? now) < now - WINDOW_MS) this.ticks.shift();
    }, tickMs);
    this.timer.unref();
  }

  /** The event loop's delay summed over the last two seconds, in milliseconds. */
  get lagMs(): number {
    let sum = 0;
    for (const t of this.ticks) sum += t.late;
    return sum;
  }

  /**
   * How much of the new work to refuse now: none up to `maxMs`, then in proportion to how far
   * past it the delay is, all of it at twice `maxMs` (a loop behind all the time). Refusing a part
   * lets the delay settle near the bound while the rest is served, rather than swinging between
   * refusing everything and nothing.
   */
  shedShare(): number {
    if (this.maxMs <= 0) return 0;
    return Math.min(1, Math.max(0, (this.lagMs - this.maxMs) / this.maxMs));
  }

  /** Why the process wants no new work (past the bound), or null: for /readyz. */
  behind(): string | null {
    if (this.maxMs <= 0) return null;
    const lag = this.lagMs;
    return lag > this.maxMs
      ? `overloaded: the service ran ${Math.round(lag)} ms behind in the last ${WINDOW_MS / 1000} s`
      : null;
  }

  /** Why this request is refused (one of the share `shedShare()` says), or null. */
  overloaded(random: () => number = Math.random): string | null {
    const share = this.shedShare();
    if (share <= 0 || random() >= share) return null;
    return this.behind();
  }

  stop(): void {
    clearInterval(this.timer);
  }
}
