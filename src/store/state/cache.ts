/**
 * The state layer's cache: it owns the documents this process holds and how they are read. One
 * job: answer a read from a fresh cached copy, or from one batched `_id` look-up.
 *
 * Documents are kept in a bounded LRU (generations.ts); one with unwritten changes or a look-up
 * under way is never dropped. A miss costs one `find({_id: {$in}})` per collection at a time,
 * shared by every miss that arrives meanwhile (see load()). A cached copy older than `maxAgeMs` is
 * read again, unless it has changes not yet written (then this process's copy is the newest).
 *
 * What the write-behind queue changes lives here too (an entry's `pending` and `inflight` deltas,
 * see flusher.ts): a look-up never runs while its document's deltas are in flight, and it applies
 * the deltas still pending to the copy it read, so that copy is the stored document plus our
 * unwritten changes.
 */
import type { Collection, Db, Document } from 'mongodb';
import { applyDelta, toKeyed, type Doc, type KeyedPaths, type OpEntry } from './delta';
import { Generations } from './generations';
import { unpackRead } from './pack';
import { Unavailable } from '../../core/errors';
import type { KnownIds } from './known-ids';

/**
 * `work`, or `timeout()` thrown once it has run `ms`. The work is not cancelled (a driver command
 * cannot be): its late answer is ignored.
 */
export function withDeadline<T>(work: Promise<T>, ms: number, timeout: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(timeout()), ms);
  });
  work.catch(() => undefined);
  return Promise.race([work, expired]).finally(() => clearTimeout(timer));
}

/** Every state document is keyed by a string `_id` (`<env>:<key>`). */
export interface StateDocument extends Document {
  _id: string;
}

/** One document as this process knows it, with the changes not yet written (flusher.ts's). */
export interface Entry {
  collection: string;
  id: string;
  /** The document: undefined when never read (only deltas known), null when known not to exist. */
  value: Doc | null | undefined;
  /** Deltas not yet sent, in order. */
  pending: (readonly OpEntry[])[];
  /** Deltas of the flush under way. */
  inflight: (readonly OpEntry[])[] | null;
  loading: Promise<void> | null;
  readAt: number;
  /** Bumped on every change, so derived views can be memoised. */
  version: number;
  /**
   * While its changes are all late ones (StateLayer.apply): the time (ms) before which a timed
   * flush leaves them queued, so that a statistic touched many times a second is written once.
   */
  holdUntil?: number;
  /** The sequence number and time of its oldest pending change that may not wait (flusher.ts's `oldest`). */
  dueSeq?: number;
  dueAt?: number;
  /** The same of the changes in flight. */
  inflightSeq?: number;
  inflightAt?: number;
  memo?: { version: number; view: unknown };
  /** Whether its collection's KnownIds was told of it (once per entry: see note()). */
  noted: boolean;
}

/**
 * An entry's queue when it holds nothing, shared by every such entry (a queue is pushed to only
 * when it holds a change already: see flusher.ts).
 */
export const NOTHING_PENDING = Object.freeze([]) as unknown as (readonly OpEntry[])[];

/** A document neither known (read, or known absent) nor being read or written. */
const unknown = (e: Entry): boolean => e.value === undefined && e.loading === null && e.inflight === null;

/** A document with unwritten changes or a look-up under way: never dropped from the cache. */
export const busy = (e: Entry): boolean => e.pending.length > 0 || e.inflight !== null || e.loading !== null;

export interface CacheObserver {
  /** hit: a fresh cached copy; absent: known not to exist (KnownIds), no look-up; miss, stale: a look-up. */
  read(collection: string, outcome: 'hit' | 'absent' | 'miss' | 'stale'): void;
}

export interface CacheOptions {
  /** Most documents kept in memory (documents with unwritten changes are never evicted). */
  maxEntries: number;
  /** Re-read a cached document older than this (several instances on one database); null: never. */
  maxAgeMs: number | null;
  /**
   * How long a look-up may take before it fails (Unavailable): a database that stopped answering
   * must not hold this collection's next look-ups, which wait for it, forever.
   */
  readTimeoutMs: number;
  observer?: CacheObserver;
  now?: () => number;
  /**
   * Per collection, the ids that may be in the database (known-ids.ts), where this process is its
   * only writer: a document it does not hold is answered as absent without a look-up.
   */
  known?: Readonly<Record<string, KnownIds>>;
  /** Per collection, where its documents hold objects keyed by data (see KeyedPaths). */
  keyed?: Readonly<Record<string, KeyedPaths>>;
}

/** Most _ids in one batched look-up (Rampart's FerretDB build pushes down at most 1,000). */
const MAX_IDS_PER_FIND = 500;

/** What fill() answers for a document known absent: nothing to wait for. */
const SETTLED: Promise<void> = Promise.resolve();

/** Thrown inside a read that did not finish within its deadline. */
const TIMED_OUT = Symbol('timed-out');

interface Miss {
  entry: Entry;
  resolve: () => void;
  reject: (err: unknown) => void;
}

export class StateCache {
  /** The cached documents, most recently used kept (see generations.ts). */
  private readonly entries: Generations<Entry>;
  /** Documents missed this turn, per collection, waiting for their batched look-up. */
  private readonly misses = new Map<string, Miss[]>();
  /** Collections with a batched look-up under way (the next misses wait for it: see load()). */
  private readonly finding = new Set<string>();
  private missesScheduled = false;
  /** Deadlines of reads under way (epoch ms), each with the promise its timer resolves. */
  private readonly expiries = new Map<number, Promise<typeof TIMED_OUT>>();
  private readonly now: () => number;
  private readonly handles = new Map<string, Collection<StateDocument>>();

  /** `inflight` is the flush under way (null: none), which a look-up of a document it writes waits for. */
  constructor(
    private readonly db: Db,
    private readonly o: CacheOptions,
    private readonly inflight: () => Promise<void> | null,
  ) {
    this.entries = new Generations<Entry>(o.maxEntries, busy);
    this.now = o.now ?? Date.now;
  }

  get size(): number {
    return this.entries.size;
  }

  /** The ids of a collection's cached documents (or documents with queued changes) that start with `prefix`. */
  cachedIds(collection: string, prefix: string): string[] {
    const ids: string[] = [];
    for (const [id] of this.entries.space(collection)) if (id.startsWith(prefix)) ids.push(id);
    return ids;
  }

  /** The entry of a document, made (unknown, unchanged) when it is not cached. */
  entry(collection: string, id: string): Entry {
    let e = this.entries.get(collection, id);
    if (e) return e;
    // Every field an entry takes later is made here: a field added to an object that has none
    // free grows its property store (the flusher sets `holdUntil`, `dueSeq`... of most entries).
    e = {
      collection,
      id,
      value: undefined,
      pending: NOTHING_PENDING,
      inflight: null,
      loading: null,
      readAt: 0,
      version: 0,
      holdUntil: undefined,
      dueSeq: undefined,
      dueAt: undefined,
      inflightSeq: undefined,
      inflightAt: undefined,
      memo: undefined,
      noted: false,
    };
    this.entries.add(collection, id, e);
    return e;
  }

  /** Tell `e`'s collection's KnownIds that it is about to be written (before any flush can write it). */
  private note(e: Entry): void {
    if (e.noted) return;
    e.noted = true;
    this.o.known?.[e.collection]?.note(e.id);
  }

  /**
   * Whether `e`, neither known nor being read or written, is known not to exist (KnownIds): then
   * it is held as absent, with the changes queued so far applied, as a look-up finding nothing
   * would leave it.
   */
  private knownToBeAbsent(e: Entry): boolean {
    if (!unknown(e) || !this.o.known?.[e.collection]?.absent(e.id)) return false;
    this.settleAbsent(e);
    return true;
  }

  private settleAbsent(e: Entry): void {
    let value: Doc | null = null;
    for (const d of e.pending) value = applyDelta(value, d, this.o.keyed?.[e.collection]);
    e.value = value;
    e.readAt = this.now();
    e.version++;
  }

  /** Apply `ops` to the cached copy (if known) now: the entry, for the write-behind queue. */
  change(collection: string, id: string, ops: readonly OpEntry[]): Entry {
    const e = this.entry(collection, id);
    if (!e.noted) {
      // A document first changed without a read (a counter bump) may be known absent: then it
      // is known, and written whole with no look-up. Asked before it is noted, which would say
      // it may exist.
      this.knownToBeAbsent(e);
      this.note(e);
    }
    // A replacement makes the document known even when it was never read.
    if (e.value !== undefined || ops[0]?.op === 'replace')
      e.value = applyDelta(e.value ?? null, ops, this.o.keyed?.[collection]);
    e.version++;
    return e;
  }

  /**
   * The entry of a document this process knows (read, or known absent) and is not reading, made
   * to be changed in place (see StateLayer.edit): a document known absent becomes an empty one.
   * Undefined when its changes must be deltas applied to what a look-up returns.
   */
  editable(collection: string, id: string): Entry | undefined {
    const e = this.entries.get(collection, id);
    if (!e || e.value === undefined || e.loading !== null) return undefined;
    this.note(e);
    e.value ??= {};
    e.version++;
    return e;
  }

  /**
   * The entry of a document now `doc` itself, replacing what it was (see StateLayer.put), for the
   * write-behind queue to write whole. Undefined while it is being read: then the replacement
   * must be a delta applied to what the look-up returns.
   */
  replaced(collection: string, id: string, doc: Doc): Entry | undefined {
    const e = this.entry(collection, id);
    if (e.loading !== null) return undefined;
    this.note(e);
    e.value = doc;
    e.version++;
    return e;
  }

  private fresh(e: Entry): boolean {
    if (e.value === undefined) return false;
    return (
      this.o.maxAgeMs === null ||
      this.now() - e.readAt <= this.o.maxAgeMs ||
      e.pending.length > 0 ||
      e.inflight !== null
    );
  }

  /**
   * The document as this process knows it (null: it does not exist), from the cache or with one
   * look-up. With `deadline` (epoch ms), a look-up that has not answered by then resolves the
   * copy this process had before it, past `maxAgeMs` (a failover or a slow database: a copy a
   * few seconds old beats none), or `undefined` when it had none; the look-up still completes and
   * fills the cache. Rejects when the database fails.
   */
  async read(collection: string, id: string, deadline?: number): Promise<Doc | null | undefined> {
    const e = this.entry(collection, id);
    const loading = this.lookUp(e);
    if (loading) await this.inTime(loading, deadline);
    return e.value;
  }

  /** Count a read of `e`, and start its look-up unless the cached copy is fresh: the look-up to wait for, or null. */
  private lookUp(e: Entry): Promise<void> | null {
    if (this.fresh(e)) {
      this.o.observer?.read(e.collection, 'hit');
      return null;
    }
    if (this.knownToBeAbsent(e)) {
      this.o.observer?.read(e.collection, 'absent');
      return null;
    }
    this.o.observer?.read(e.collection, e.value === undefined ? 'miss' : 'stale');
    return this.fill(e);
  }

  /** Read `e` from the database (joining its look-up under way, if any), uncounted: the flusher's. */
  fill(e: Entry): Promise<void> {
    if (e.loading === null && this.knownToBeAbsent(e)) return SETTLED;
    return (e.loading ??= this.load(e));
  }

  /**
   * Whether `loading` ended by `deadline` (always, without one; it rejects when the database fails
   * before then). Past the deadline the look-up goes on and fills the cache.
   */
  private async inTime(loading: Promise<unknown>, deadline?: number): Promise<boolean> {
    if (deadline === undefined) {
      await loading;
      return true;
    }
    const expiry = this.expiry(deadline);
    // (A look-up resolves nothing, the expiry TIMED_OUT: raced as they are.)
    const outcome = expiry === null ? TIMED_OUT : await Promise.race([loading, expiry]);
    if (outcome !== TIMED_OUT) return true;
    // A failure after the deadline must not be an unhandled rejection.
    loading.catch(() => undefined);
    return false;
  }

  /**
   * The document when the cache holds a fresh copy (null: it does not exist), without I/O or a
   * promise; undefined when it must be read (see read()). The hot path's common case.
   */
  cached(collection: string, id: string): Doc | null | undefined {
    const e = this.entries.get(collection, id);
    if (!e || !this.fresh(e)) return undefined;
    this.o.observer?.read(collection, 'hit');
    return e.value;
  }

  /**
   * A promise that resolves TIMED_OUT at `deadline` (null: already past). The reads of one
   * verdict share its deadline, so they share one timer instead of making one each.
   */
  private expiry(deadline: number): Promise<typeof TIMED_OUT> | null {
    const remaining = deadline - this.now();
    if (remaining <= 0) return null;
    let expiry = this.expiries.get(deadline);
    if (!expiry) {
      expiry = new Promise<typeof TIMED_OUT>((resolve) => {
        setTimeout(() => {
          this.expiries.delete(deadline);
          resolve(TIMED_OUT);
        }, remaining).unref();
      });
      this.expiries.set(deadline, expiry);
    }
    return expiry;
  }

  /**
   * Several documents of one collection, as read() reads one (null: does not exist), with one
   * promise for all of them rather than one each: a verdict for a new address misses a dozen
   * counter documents. With `deadline`, resolves `undefined` unless every one is known by then:
   * read, or held from before (an aged copy whose look-up is late, as read() answers it); the
   * look-ups go on and fill the cache. Rejects when the database fails.
   */
  async readAll(
    collection: string,
    ids: readonly string[],
    deadline?: number,
  ): Promise<(Doc | null)[] | undefined> {
    const entries = new Array<Entry>(ids.length);
    let loads: Promise<void>[] | undefined;
    for (let i = 0; i < ids.length; i++) {
      const e = this.entry(collection, ids[i] as string);
      entries[i] = e;
      const load = this.lookUp(e);
      if (load) (loads ??= []).push(load);
    }
    if (loads) {
      const all = loads.length === 1 ? (loads[0] as Promise<void>) : Promise.all(loads);
      if (!(await this.inTime(all, deadline)) && entries.some((e) => e.value === undefined)) return undefined;
    }
    // A look-up that ended sets its document; one that could not answer leaves it unknown.
    const docs = new Array<Doc | null>(entries.length);
    for (let i = 0; i < entries.length; i++) {
      const value = (entries[i] as Entry).value;
      if (value === undefined) return undefined;
      docs[i] = value;
    }
    return docs;
  }

  /**
   * Several documents of one collection (dashboards' batched look-ups): cached ones at once, the
   * others in the same batched look-up as every other miss. Missing documents are null.
   */
  async readMany(collection: string, ids: readonly string[]): Promise<Map<string, Doc | null>> {
    const unique = [...new Set(ids)];
    const docs = await this.readAll(collection, unique);
    return new Map(unique.map((id, i) => [id, docs?.[i] ?? null]));
  }

  /** A collection's handle, made once (every batched look-up asks for one). */
  private handle(collection: string): Collection<StateDocument> {
    let handle = this.handles.get(collection);
    if (!handle) {
      handle = this.db.collection<StateDocument>(collection);
      this.handles.set(collection, handle);
    }
    return handle;
  }

  private async loadMany(collection: string, entries: Entry[]): Promise<void> {
    try {
      while (entries.some((e) => e.inflight)) await this.inflight();
      const docs = await withDeadline(
        this.handle(collection)
          .find({ _id: { $in: entries.map((e) => e.id) } })
          .toArray(),
        this.o.readTimeoutMs,
        () =>
          new Unavailable(
            `a look-up of ${entries.length} ${collection} documents did not answer within ${this.o.readTimeoutMs} ms`,
          ),
      );
      const byId = new Map<string, Doc>();
      const keyed = this.o.keyed?.[collection];
      for (const d of docs) {
        const doc = unpackRead(d);
        byId.set(d._id, keyed ? toKeyed(doc, keyed) : doc);
      }
      for (const e of entries) {
        let value: Doc | null = byId.get(e.id) ?? null;
        for (const d of e.pending) value = applyDelta(value, d, keyed);
        e.value = value;
        e.readAt = this.now();
        e.version++;
      }
    } finally {
      for (const e of entries) e.loading = null;
    }
  }

  /**
   * Look a document up, together with every other document of its collection missed meanwhile:
   * one `find({_id: {$in: [...]}})` per collection instead of one `findOne` per document. On
   * FerretDB a command costs far more than a document (~0.3 ms of its CPU each, whatever it
   * finds), so while a collection's look-up is under way the misses that follow wait for it and
   * go together in the next one: one look-up at a time per collection, batches that grow with the
   * load, and no wait at all when idle. (Rampart's build pushes `_id: {$in}` down to the index.)
   */
  private load(e: Entry): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      let waiting = this.misses.get(e.collection);
      if (!waiting) {
        waiting = [];
        this.misses.set(e.collection, waiting);
      }
      waiting.push({ entry: e, resolve, reject });
      if (!this.missesScheduled && !this.finding.has(e.collection)) {
        this.missesScheduled = true;
        setImmediate(() => this.loadMisses());
      }
    });
  }

  /** Start a look-up for each collection with misses and none under way. */
  private loadMisses(): void {
    this.missesScheduled = false;
    for (const [collection, waiting] of [...this.misses]) {
      if (this.finding.has(collection)) continue;
      this.misses.delete(collection);
      this.finding.add(collection);
      const chunks: Miss[][] = [];
      for (let i = 0; i < waiting.length; i += MAX_IDS_PER_FIND)
        chunks.push(waiting.slice(i, i + MAX_IDS_PER_FIND));
      void Promise.all(
        chunks.map((chunk) =>
          this.loadMany(
            collection,
            chunk.map((w) => w.entry),
          ).then(
            () => chunk.forEach((w) => w.resolve()),
            (err: unknown) => chunk.forEach((w) => w.reject(err)),
          ),
        ),
      ).finally(() => {
        this.finding.delete(collection);
        if (this.misses.has(collection)) this.loadMisses();
      });
    }
  }

  /**
   * Know, without a look-up, that a document is not in the database (its caller can tell: see
   * created-here.ts): it is cached as absent, with the changes queued so far applied, and is then
   * answered and written whole like a document read. A document known already, or being read or
   * written, is left as it is.
   */
  knownAbsent(collection: string, id: string): void {
    const e = this.entry(collection, id);
    if (unknown(e)) this.settleAbsent(e);
  }

  /** The cached document without any I/O: undefined when not cached (or never read). */
  peek(collection: string, id: string): Doc | null | undefined {
    return this.entries.peek(collection, id)?.value;
  }

  /** How many times the cached document has changed (undefined: not cached): see StateLayer.version. */
  version(collection: string, id: string): number | undefined {
    return this.entries.peek(collection, id)?.version;
  }

  /**
   * A view derived from the cached document, recomputed only when the document changed. `make`
   * gets the document (null: does not exist).
   */
  view<T>(collection: string, id: string, make: (doc: Doc | null) => T): T | undefined {
    const e = this.entries.peek(collection, id);
    if (!e || e.value === undefined) return undefined;
    if (e.memo && e.memo.version === e.version) return e.memo.view as T;
    const view = make(e.value);
    e.memo = { version: e.version, view };
    return view;
  }

  /** Forget cached documents (after a purge deleted them in the database). Unwritten changes stay. */
  invalidate(match: (collection: string, id: string) => boolean): void {
    for (const [collection, id, e] of [...this.entries.entries()]) {
      if (!match(collection, id)) continue;
      if (busy(e)) {
        e.value = undefined;
        e.version++;
      } else this.entries.delete(collection, id);
    }
  }
}
