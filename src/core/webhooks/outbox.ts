/**
 * The webhook outbox as this process's dispatcher knows it, for the metrics: how many deliveries
 * are open (pending or being sent) and when the oldest of them was created. A scrape reads this,
 * never the database.
 *
 * Why not count in the database on each scrape: on the embedded FerretDB only `_id` filters reach
 * SQLite's index; any other filter (`status`) decodes and scans the whole outbox, 30 days of
 * delivered history included, and a scrape must answer from memory even while the database
 * hangs. So the dispatcher keeps the open set itself, from what it does anyway:
 *  - a delivery it records (emit, or a test) is added once the write says it was inserted (an
 *    existing `_id` is a deduplicated notice: nothing new);
 *  - a delivery it claims (its lease) is added if unknown (another instance recorded it);
 *  - a delivery it finishes (delivered, or given up for good) is removed.
 * and corrects that now and then with one read of the open deliveries (`reconcile`): at start,
 * then every few seconds where other instances share the outbox (MongoDB, where the read is an
 * index range) and every ten minutes on the embedded database, where this process is the only
 * writer and the read only catches what it cannot see (a privacy purge deleting a user's
 * deliveries). The read is bounded: at most `cap` ids are held, the rest only counted.
 */

export interface OpenDeliveries {
  /** Open deliveries in the outbox. */
  total: number;
  /** The oldest of them (at most the limit asked for), oldest first. */
  oldest: readonly { id: string; createdAt: Date }[];
}

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
      for (const d of found.oldest) if (!changes.finished.has(d.id)) this.open.set(d.id, d.createdAt.getTime());
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
