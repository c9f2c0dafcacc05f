/**
 * The analysts' bulkhead in front of the database: dashboards' reads (searches, analytics) run
 * at most `concurrency` at a time, and each keeps the gate for a while after it ends, in
 * proportion to how long it ran, so that analyst reads hold the database at most `share` of the
 * time. On the embedded database scoring and dashboards share one SQLite and two cores: without
 * the gate, two dashboards of all-time analytics took the verdicts' p50 from 25 ms to 49 s.
 *
 * A read that cannot start within `waitMs` fails with DeadlineExceeded (504): a dashboard asks
 * again, scoring never waits for it.
 */
import { DeadlineExceeded } from '../core/errors';

export interface AnalystGateOptions {
  /** Reads at once (default 1). */
  concurrency: number;
  /** Most of the time analyst reads may hold the database, from 0.05 to 1 (default 0.5). */
  share: number;
  /** Longest a read waits for its turn. */
  waitMs: number;
  now?: () => number;
}

export class AnalystGate {
  private running = 0;
  private readonly waiting: { start: () => void; timer: NodeJS.Timeout }[] = [];
  private readonly o: Required<AnalystGateOptions>;

  constructor(o: Partial<AnalystGateOptions> & Pick<AnalystGateOptions, 'waitMs'>) {
    this.o = { concurrency: 1, share: 0.5, now: () => performance.now(), ...o };
    this.o.share = Math.min(1, Math.max(0.05, this.o.share));
  }

  /** Reads under way and waiting (for metrics and tests). */
  get load(): { running: number; waiting: number } {
    return { running: this.running, waiting: this.waiting.length };
  }

  async run<T>(read: () => Promise<T>): Promise<T> {
    await this.acquire();
    const started = this.o.now();
    try {
      return await read();
    } finally {
      const ran = this.o.now() - started;
      const rest = ran * (1 / this.o.share - 1);
      if (rest >= 1) setTimeout(() => this.release(), rest).unref();
      else this.release();
    }
  }

  private acquire(): Promise<void> {
    if (this.running < this.o.concurrency) {
      this.running++;
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      const entry = {
        start: () => {
          clearTimeout(entry.timer);
          this.running++;
          resolve();
        },
        timer: setTimeout(() => {
          const i = this.waiting.indexOf(entry);
          if (i >= 0) this.waiting.splice(i, 1);
          reject(
            new DeadlineExceeded(
              'dashboards are reading as much as they may right now: try again shortly, or narrow the query',
            ),
          );
        }, this.o.waitMs),
      };
      this.waiting.push(entry);
    });
  }

  private release(): void {
    this.running--;
    const next = this.waiting.shift();
    if (next) next.start();
  }
}

/** What bounds every analyst read: the gate, and how long one may run in the database (`maxTimeMS`). */
export interface AnalystLimits {
  gate: AnalystGate;
  maxTimeMS: number;
}
