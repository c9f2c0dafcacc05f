/**
 * The lists verdicts match against, per environment, in memory: an environment's active items
 * compiled once (matcher.ts), reused for `cacheMs`, then refreshed in the background when the
 * set's version moved (one `_id` read; a reload of the items when it did), so a verdict never
 * waits on the database for its lists after the first. A change made through this process is
 * applied to the compiled lists at once (`local`): its next verdict sees it; one made by another
 * instance is seen within `cacheMs` plus one read and the reload.
 */
import type { EnvId } from '../model';
import type { Clock } from '../ports';
import { CompiledList, CompiledLists } from './matcher';
import type { ListStore } from './ports';

interface Cached {
  compiled: CompiledLists;
  until: number;
  refreshing: Promise<void> | null;
}

export class CompiledListCache {
  private readonly cache = new Map<EnvId, Cached>();
  private readonly loading = new Map<EnvId, Promise<CompiledLists>>();

  constructor(
    private readonly store: Pick<ListStore, 'getSet' | 'scanItems'>,
    private readonly clock: Clock,
    private readonly cacheMs: number,
  ) {}

  /**
   * The compiled lists a verdict matches against. Only the first verdict of an environment in
   * this process waits for the read; afterwards the compiled lists are answered at once and
   * refreshed in the background once they are older than `cacheMs` and the set's version moved.
   */
  async forVerdicts(env: EnvId): Promise<CompiledLists> {
    const now = this.clock.now().getTime();
    const hit = this.cache.get(env);
    if (hit) {
      if (hit.until <= now && !hit.refreshing) hit.refreshing = this.refresh(env, hit);
      return hit.compiled;
    }
    let pending = this.loading.get(env);
    if (!pending) {
      pending = this.load(env).finally(() => this.loading.delete(env));
      this.loading.set(env, pending);
    }
    const compiled = await pending;
    if (!this.cache.has(env)) {
      if (this.cache.size > 10_000) this.cache.clear();
      this.cache.set(env, { compiled, until: this.clock.now().getTime() + this.cacheMs, refreshing: null });
    }
    return (this.cache.get(env) as Cached).compiled;
  }

  /** Apply a change of this process to its compiled lists, if loaded (the next verdict sees it). */
  local(env: EnvId, change: (c: CompiledLists) => void, version?: number): void {
    const hit = this.cache.get(env);
    if (!hit) return;
    change(hit.compiled);
    // Our own change made the version one more: the compiled lists are current. Otherwise another
    // instance changed something too, and the next refresh reloads.
    if (version !== undefined && version === hit.compiled.version + 1) hit.compiled.version = version;
  }

  /** The set went from `expected` to `next` through this process: compiled lists at `expected` are current. */
  advanced(env: EnvId, expected: number, next: number): void {
    const hit = this.cache.get(env);
    if (hit && hit.compiled.version === expected) hit.compiled.version = next;
  }

  private refresh(env: EnvId, hit: Cached): Promise<void> {
    const done = (compiled: CompiledLists | null) => {
      const current = this.cache.get(env);
      if (current !== hit) return;
      // A load that began before a change of this process must not undo it (versions only grow).
      if (compiled && compiled.version >= hit.compiled.version) hit.compiled = compiled;
      hit.until = this.clock.now().getTime() + this.cacheMs;
      hit.refreshing = null;
    };
    return this.store
      .getSet(env)
      .then(
        async (set) => {
          if ((set?.version ?? 0) === hit.compiled.version) return done(null);
          done(await this.load(env));
        },
        // Keep answering the lists we have; the next verdict after the delay tries again.
        () => done(null),
      )
      .catch(() => done(null));
  }

  /**
   * The set first, then its items: a version read this way never claims items it lacks. Items
   * are compiled batch by batch as they are read, so a reload of large lists is many short steps
   * between reads (each item one Map operation), never one long stall of the verdicts beside it.
   */
  private async load(env: EnvId): Promise<CompiledLists> {
    const set = await this.store.getSet(env);
    if (!set || set.lists.length === 0) return new CompiledLists(set?.version ?? 0);
    const lists = new Map(set.lists.map((l) => [l.id, new CompiledList(l)]));
    const now = this.clock.now().getTime();
    for await (const batch of this.store.scanItems(env, set.lists.map((l) => l.id), true)) {
      for (const i of batch) if (!i.expiresAt || i.expiresAt.getTime() > now) lists.get(i.listId)?.apply(i);
    }
    return new CompiledLists(set.version, [...lists.values()]);
  }
}
