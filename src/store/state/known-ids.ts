/**
 * Which documents of a collection may be in the database, where this process is the database's
 * only writer (the embedded database): every `_id` the collection held when the process started
 * (read once, in the background, `scan`) and every one this process has changed since (the cache
 * notes each document it changes before the change can be written), kept in a Bloom filter.
 *
 * Once the start's read has ended, an id the filter never saw is a document that does not exist,
 * and the cache answers it as such without a database look-up: a new user's first event, a new
 * e-mail's, install's or network's record. Before then, and for an id the filter may have seen
 * (a false positive, ~2.7% while it holds fewer ids than it was sized for), the document is looked
 * up as ever. A document deleted since it was noted stays noted: it is looked up and not found.
 *
 * Nothing but this process may write the collection while it runs (the same condition as
 * whole-document writes, `StateOptions.writeMode: 'snapshots'`): a document another writer added
 * would be taken for absent and replaced.
 */
import type { Db } from 'mongodb';
import { Bloom } from '../bloom';

/** The least a filter is sized for, so that a small collection's filter has room to grow. */
const MIN_CAPACITY = 250_000;
/** Ids read per batch of the start's scan. */
const SCAN_BATCH = 5_000;

export class KnownIds {
  private readonly filter: Bloom;
  private scanned = false;
  private stopped = false;
  /** Ids added that the filter did not hold (a count of distinct ids, less its false positives). */
  added = 0;

  /** `expected`: how many documents the collection holds now (the filter has room for twice that). */
  constructor(
    readonly collection: string,
    expected: number,
  ) {
    this.filter = new Bloom(Bloom.bitsFor(Math.max(MIN_CAPACITY, 2 * expected)));
  }

  /** Whether the start's scan ended: until then no document is known absent. */
  get complete(): boolean {
    return this.scanned;
  }

  /** The document `id` is (or is about to be) in the database. */
  note(id: string): void {
    if (this.filter.add(id)) this.added++;
  }

  /** Whether the document `id` is known not to exist. */
  absent(id: string): boolean {
    return this.scanned && !this.filter.has(id);
  }

  /**
   * Note every `_id` the collection holds, then know the rest absent. Run once, at start; on a
   * failure (a database gone meanwhile) it stays incomplete, and documents are looked up as ever.
   */
  async scan(db: Db): Promise<void> {
    const cursor = db
      .collection<{ _id: string }>(this.collection)
      .find({}, { projection: { _id: 1 }, batchSize: SCAN_BATCH });
    try {
      for await (const d of cursor) {
        if (this.stopped) return;
        this.note(String(d._id));
      }
    } finally {
      await cursor.close();
    }
    this.scanned = !this.stopped;
  }

  /** End a scan under way (at shutdown): the filter stays incomplete. */
  stop(): void {
    this.stopped = true;
  }
}

/** The most documents of a collection whose ids are read at start by default (RAMPART_KNOWN_IDS_MAX). */
export const DEFAULT_KNOWN_IDS_MAX = 1_000_000;

/**
 * A filter for each of `collections` that holds at most `maxIds` documents now (a larger one is
 * looked up as ever: reading its ids at start would cost more than it saves), or none.
 */
export async function knownIdsOf(
  db: Db,
  collections: readonly string[],
  maxIds: number,
): Promise<Record<string, KnownIds>> {
  const known: Record<string, KnownIds> = {};
  for (const c of collections) {
    const n = await db.collection(c).estimatedDocumentCount();
    if (n <= maxIds) known[c] = new KnownIds(c, n);
  }
  return known;
}
