/**
 * A bounded cache that keeps recently used entries, in two generations: entries go into the young
 * generation; when it holds half the bound, the old one is dropped, the young one becomes old, and
 * a new young one starts. A hit in the old generation moves the entry to the young one.
 *
 * Why not one Map in recency order (delete and set on every hit): V8's ordered hash tables leave a
 * hole for each deletion until they are rehashed, and an eviction that walks from the oldest entry
 * steps over every hole, so at a full cache with a busy hot set eviction cost grows with the
 * traffic. Here nothing is deleted on the hot path and a rotation costs one pass over the old
 * generation per `bound / 2` new entries.
 *
 * Keys live in spaces (the state layer's collections), one map per space, so that a look-up hashes
 * the key it was given rather than a new string joining space and key: a verdict makes dozens.
 *
 * Entries that `pinned` says must stay (unwritten changes, a look-up under way) are carried into
 * the new young generation when theirs is dropped, so the cache may briefly hold more than
 * `bound` entries while many are pinned (a long database outage).
 */
class Generation<V> {
  readonly spaces = new Map<string, Map<string, V>>();
  size = 0;

  get(space: string, key: string): V | undefined {
    return this.spaces.get(space)?.get(key);
  }

  set(space: string, key: string, value: V): void {
    let m = this.spaces.get(space);
    if (!m) {
      m = new Map();
      this.spaces.set(space, m);
    }
    const before = m.size;
    m.set(key, value);
    this.size += m.size - before;
  }

  delete(space: string, key: string): boolean {
    if (!this.spaces.get(space)?.delete(key)) return false;
    this.size--;
    return true;
  }
}

export class Generations<V> {
  private young = new Generation<V>();
  private old = new Generation<V>();
  /** Pinned entries carried into the young generation at the last rotation (they do not count toward it). */
  private carried = 0;

  constructor(
    private readonly bound: number,
    private readonly pinned: (value: V) => boolean,
  ) {}

  get size(): number {
    return this.young.size + this.old.size;
  }

  /** The entry, marked as recently used. */
  get(space: string, key: string): V | undefined {
    const v = this.young.get(space, key);
    if (v !== undefined) return v;
    const o = this.old.get(space, key);
    if (o === undefined) return undefined;
    this.old.delete(space, key);
    this.young.set(space, key, o);
    this.rotateIfFull();
    return o;
  }

  /** The entry, without marking it as used. */
  peek(space: string, key: string): V | undefined {
    return this.young.get(space, key) ?? this.old.get(space, key);
  }

  /** Add an entry that is not in the cache. */
  add(space: string, key: string, value: V): void {
    this.young.set(space, key, value);
    this.rotateIfFull();
  }

  delete(space: string, key: string): void {
    if (!this.young.delete(space, key)) this.old.delete(space, key);
  }

  /** Every entry as [space, key, value], the young generation first. */
  *entries(): IterableIterator<[string, string, V]> {
    for (const g of [this.young, this.old])
      for (const [space, m] of g.spaces) for (const [key, v] of m) yield [space, key, v];
  }

  /** The entries of one space as [key, value]. */
  *space(space: string): IterableIterator<[string, V]> {
    for (const g of [this.young, this.old]) {
      const m = g.spaces.get(space);
      if (m) yield* m;
    }
  }

  private rotateIfFull(): void {
    if (this.young.size - this.carried < Math.max(1, this.bound >> 1)) return;
    const next = new Generation<V>();
    // forEach, not for-of: no [key, value] array made for each of the old generation's entries.
    this.old.spaces.forEach((m, space) =>
      m.forEach((v, k) => {
        if (this.pinned(v)) next.set(space, k, v);
      }),
    );
    this.old = this.young;
    this.young = next;
    this.carried = next.size;
  }
}
