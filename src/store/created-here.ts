/**
 * Which time-bucketed documents (the velocity windows: core/scoring/counters.ts) can be in the
 * database without this process having written them, so that a look-up of one that cannot be
 * there is skipped.
 *
 * Only where this process is the database's only writer (the embedded database): every window
 * document of a bucket after the `horizon` (the last bucket an earlier run can have written) was
 * written by this process, and each one it writes is noted here first. A window of such a bucket
 * that was never noted does not exist: it is known empty without asking the database. A verdict
 * for a new address, /24 or device then reads no window document at all (they are most of what
 * a verdict used to look up and not find).
 *
 * Noted ids are kept per bucket in a Bloom filter (a false positive only costs the look-up that
 * would have been made anyway), for the latest `buckets` buckets: a bucket older than those
 * dropped is unknown again, and its documents are looked up as before.
 */

import { Bloom } from './bloom';

export interface CreatedHereOptions {
  /** Buckets whose filters are kept (the current hour, the previous one, a day, some slack). */
  buckets: number;
  /** Bits per bucket's filter (a power of two); with 3 probes, ~2.7% false positives at bits/16 ids. */
  bits: number;
}

const DEFAULTS: CreatedHereOptions = { buckets: 6, bits: 1 << 24 };

export class CreatedHere {
  private readonly o: CreatedHereOptions;
  private readonly filters = new Map<number, Bloom>();
  /** Buckets below this had their filter dropped: unknown. */
  private unknownBelow = Number.NEGATIVE_INFINITY;

  /**
   * `horizon`: the last bucket documents written before this process can have (-Infinity: the
   * database held none). `bucketOf`: a key's bucket, null for a document without one.
   */
  constructor(
    readonly horizon: number,
    private readonly bucketOf: (key: string) => number | null,
    options: Partial<CreatedHereOptions> = {},
  ) {
    this.o = { ...DEFAULTS, ...options };
    Bloom.check(this.o.bits);
  }

  /** Buckets tracked now (for tests and metrics). */
  get tracked(): number[] {
    return [...this.filters.keys()].sort((a, b) => a - b);
  }

  private trackable(bucket: number | null): bucket is number {
    return bucket !== null && bucket > this.horizon && bucket >= this.unknownBelow;
  }

  /** The document `id` (of key `key`) is about to be written by this process. */
  note(key: string, id: string): void {
    const bucket = this.bucketOf(key);
    if (!this.trackable(bucket)) return;
    let filter = this.filters.get(bucket);
    if (!filter) {
      filter = new Bloom(this.o.bits);
      this.filters.set(bucket, filter);
      this.trim();
      // This bucket was the oldest one, and was dropped at once: it is unknown now.
      if (!this.filters.has(bucket)) return;
    }
    filter.add(id);
  }

  /** Whether the document cannot exist: its bucket is this process's alone, and it never wrote it. */
  absent(key: string, id: string): boolean {
    const bucket = this.bucketOf(key);
    if (!this.trackable(bucket)) return false;
    const filter = this.filters.get(bucket);
    return !filter?.has(id);
  }

  /** Keep the latest buckets' filters; an older bucket becomes unknown (looked up as before). */
  private trim(): void {
    while (this.filters.size > this.o.buckets) {
      const oldest = Math.min(...this.filters.keys());
      this.filters.delete(oldest);
      this.unknownBelow = Math.max(this.unknownBelow, oldest + 1);
    }
  }
}
