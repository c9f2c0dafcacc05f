/**
 * A bounded cache that keeps recently used entries, in two generations: entries go into the young
 * map; when it holds half the bound, the old map is dropped, the young one becomes old, and a new
 * young map starts. A hit in the old map moves the entry to the young one.
 *
 * Why not one Map in recency order (delete and set on every hit): V8's ordered hash tables leave a
 * hole for each deletion until they are rehashed, and an eviction that walks from the oldest entry
 * steps over every hole, so at a full cache with a busy hot set eviction cost grows with the
 * traffic. Here nothing is deleted on the hot path and a rotation costs one pass over the old map
 * per `bound / 2` new entries.
 *
 * Entries that `pinned` says must stay (unwritten changes, a look-up under way) are carried into
 * the new young map when their generation is dropped, so the cache may briefly hold more than
 * `bound` entries while many are pinned (a long database outage).
 */
export class Generations<V> {
  private young = new Map<string, V>();
  private old = new Map<string, V>();
  /** Pinned entries carried into the young map at the last rotation (they do not count toward it). */
  private carried = 0;

  constructor(
    private readonly bound: number,
    private readonly pinned: (value: V) => boolean,
  ) {}

  get size(): number {
    return this.young.size + this.old.size;
  }

  /** The entry, marked as recently used. */
  get(key: string): V | undefined {
    const v = this.young.get(key);
    if (v !== undefined) return v;
    const o = this.old.get(key);
    if (o === undefined) return undefined;
    this.old.delete(key);
    this.young.set(key, o);
    this.rotateIfFull();
    return o;
  }

  /** The entry, without marking it as used. */
  peek(key: string): V | undefined {
    return this.young.get(key) ?? this.old.get(key);
  }

  /** Add an entry that is not in the cache. */
  add(key: string, value: V): void {
    this.young.set(key, value);
    this.rotateIfFull();
  }

  delete(key: string): void {
    if (!this.young.delete(key)) this.old.delete(key);
  }

  *pairs(): IterableIterator<[string, V]> {
    yield* this.young;
    yield* this.old;
  }

  private rotateIfFull(): void {
    if (this.young.size - this.carried < Math.max(1, this.bound >> 1)) return;
    const next = new Map<string, V>();
    for (const [k, v] of this.old) if (this.pinned(v)) next.set(k, v);
    this.old = this.young;
    this.young = next;
    this.carried = next.size;
  }
}
