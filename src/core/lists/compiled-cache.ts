/**
 * The lists verdicts match against, per environment, in memory: an environment's active items
 * compiled once (matcher.ts), reused for `cacheMs`, then refreshed in the background when the
 * set's version moved (one `_id` read; a reload of the items when it did), so a verdict never
 * waits on the database for its lists after the first. A change made through this process is
 * applied to the compiled lists at once (`local`): its next verdict sees it; one made by another
 * instance is seen within `cacheMs` plus one read and the reload. A change of this process made
 * while a read of the environment's lists is under way is applied to what that read compiles too
 * (a read that began before the change may not have seen it), so no read undoes it.
 */
import type { EnvId } from '../model';
import type { Clock } from '../ports';
import { CompiledList, CompiledLists } from './matcher';
import type { ListStore } from './ports';

interface Cached {
  compiled: CompiledLists;
  until: number;
  refreshing: Promise<void> | null;
  /**
   * Set (to a number of its own) when a write of this process may have reached the store in part:
   * the compiled lists answer nothing (counts go to the store) until a load begun after it.
   */
  unsure?: number;
}

/** A change of this process: what it does to compiled lists, and the version it moves them from and to. */
interface Change {
  apply?: (c: CompiledLists) => void;
  from?: number;
  to?: number;
}

/** Changes made while reads of an environment's lists are under way (`readers` of them). */
interface InFlight {
  readers: number;
  changes: Change[];
}

export class CompiledListCache {
  private readonly cache = new Map<EnvId, Cached>();
  private readonly loading = new Map<EnvId, Promise<CompiledLists>>();
  private readonly inflight = new Map<EnvId, InFlight>();
  /**
   * Changes of this process applied already whose count in the set's version is not read back yet
   * (`pending`): the set's version may be ahead of the compiled lists by that many, which are not
   * behind it for that.
   */
  private readonly counting = new Map<EnvId, number>();
  /** Numbers the writes that may have stored in part (`unsure`). */
  private unsureCount = 0;

  private readonly store: Pick<ListStore, 'getSet' | 'scanItems'>;
  private readonly clock: Clock;
  private readonly cacheMs: number;

  constructor(d: {
    store: Pick<ListStore, 'getSet' | 'scanItems'>;
    clock: Clock;
    /** How long compiled lists are answered before the set's version is checked again. */
    cacheMs: number;
  }) {
    this.store = d.store;
    this.clock = d.clock;
    this.cacheMs = d.cacheMs;
  }

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

  /**
   * The compiled lists if they hold every change up to `version` (the set's version just read):
   * loaded first if this process has none; null when they lag behind it (another instance changed
   * the set since they were read), and then a refresh is started at once.
   */
  async atVersion(env: EnvId, version: number): Promise<CompiledLists | null> {
    const hit = this.cache.get(env);
    if (!hit) {
      const compiled = await this.forVerdicts(env);
      return compiled.version >= version ? compiled : null;
    }
    if (hit.unsure === undefined && this.reached(env, hit.compiled, version)) return hit.compiled;
    hit.refreshing ??= this.refresh(env, hit);
    return null;
  }

  /** The compiled lists holding every change up to `version`, read again when they lag behind it. */
  async current(env: EnvId, version: number): Promise<CompiledLists> {
    const now = await this.atVersion(env, version);
    if (now) return now;
    await this.cache.get(env)?.refreshing;
    const after = this.cache.get(env)?.compiled;
    return after && after.version >= version ? after : this.load(env);
  }

  /** Apply a change of this process to its compiled lists, if loaded (the next verdict sees it). */
  local(env: EnvId, change: (c: CompiledLists) => void, version?: number): void {
    // Our own change made the version one more: the compiled lists are current. Otherwise another
    // instance changed something too, and the next refresh reloads.
    this.record(env, { apply: change, ...(version !== undefined ? { from: version - 1, to: version } : {}) });
  }

  /**
   * A change of this process to be counted in the set's version next (items stored, the version
   * not incremented yet): applied now; call what this answers with the version read back (or
   * nothing, when the increment failed). Meanwhile the set's version counts as reached.
   */
  pending(env: EnvId, change: (c: CompiledLists) => void): (version?: number) => void {
    this.record(env, { apply: change });
    this.counting.set(env, (this.counting.get(env) ?? 0) + 1);
    let done = false;
    return (version) => {
      if (done) return;
      done = true;
      const left = (this.counting.get(env) ?? 1) - 1;
      if (left > 0) this.counting.set(env, left);
      else this.counting.delete(env);
      if (version !== undefined) this.record(env, { from: version - 1, to: version });
    };
  }

  /** Whether compiled lists hold every change up to `version`, this process's changes being counted included. */
  private reached(env: EnvId, compiled: CompiledLists, version: number): boolean {
    return compiled.version + (this.counting.get(env) ?? 0) >= version;
  }

  /**
   * A write of this process failed and may have stored part of its items (a batch cut off by a
   * database that went away): which ones is unknown, so the compiled lists are read again. Until
   * then a count is answered by the store, and verdicts keep matching what they have.
   */
  unsure(env: EnvId): void {
    const hit = this.cache.get(env);
    if (!hit) return;
    hit.unsure = ++this.unsureCount;
    hit.until = 0;
  }

  /** The set went from `expected` to `next` through this process: compiled lists at `expected` are current. */
  advanced(env: EnvId, expected: number, next: number): void {
    this.record(env, { from: expected, to: next });
  }

  private record(env: EnvId, change: Change): void {
    const hit = this.cache.get(env);
    if (hit) applyChange(hit.compiled, change);
    this.inflight.get(env)?.changes.push(change);
  }

  private refresh(env: EnvId, hit: Cached): Promise<void> {
    const unsure = hit.unsure;
    const done = (compiled: CompiledLists | null) => {
      const current = this.cache.get(env);
      if (current !== hit) return;
      // A load that began before a change of this process must not undo it (versions only grow).
      if (compiled && compiled.version >= hit.compiled.version) hit.compiled = compiled;
      // Read from the store after the write that may have stored in part: what it holds is known.
      if (compiled && hit.unsure === unsure) delete hit.unsure;
      hit.until = this.clock.now().getTime() + this.cacheMs;
      hit.refreshing = null;
    };
    return this.store
      .getSet(env)
      .then(
        async (set) => {
          if (unsure === undefined && this.reached(env, hit.compiled, set?.version ?? 0)) return done(null);
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
    let flight = this.inflight.get(env);
    if (!flight) this.inflight.set(env, (flight = { readers: 0, changes: [] }));
    flight.readers++;
    const from = flight.changes.length;
    try {
      const compiled = await this.read(env);
      // What this process changed meanwhile, which the read may have missed (each change is idempotent).
      for (const change of flight.changes.slice(from)) applyChange(compiled, change);
      return compiled;
    } finally {
      if (--flight.readers === 0) this.inflight.delete(env);
    }
  }

  private async read(env: EnvId): Promise<CompiledLists> {
    const set = await this.store.getSet(env);
    if (!set || set.lists.length === 0) return new CompiledLists(set?.version ?? 0);
    const lists = new Map(set.lists.map((l) => [l.id, new CompiledList(l)]));
    const now = this.clock.now().getTime();
    // Archived and expired items are read too (the store reads them either way), to be counted.
    for await (const batch of this.store.scanItems(
      env,
      set.lists.map((l) => l.id),
      false,
    )) {
      for (const i of batch) lists.get(i.listId)?.apply(i, now);
    }
    return new CompiledLists(set.version, [...lists.values()]);
  }
}

function applyChange(compiled: CompiledLists, change: Change): void {
  change.apply?.(compiled);
  if (change.from !== undefined && change.to !== undefined && compiled.version === change.from)
    compiled.version = change.to;
}
