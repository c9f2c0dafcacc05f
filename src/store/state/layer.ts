/**
 * The state layer: everything a verdict reads and writes, between the core and MongoDB.
 *
 * Reads come from a bounded in-process LRU cache of documents, backed by one `_id` look-up per
 * document on a miss (concurrent misses of one document share that look-up). Writes are deltas
 * (see delta.ts), applied to the cached copy at once and queued; a single flusher coalesces each
 * document's queued deltas and writes them behind in batches, one ordered `bulkWrite` per
 * collection per flush, plus one `insertMany` per collection for queued inserts (events, debugger
 * entries, token documents).
 *
 * Why this is correct under concurrency:
 * - In one process, a request reads (awaits) first and then computes and applies its deltas
 *   synchronously, so two requests never interleave between reading a document and changing it.
 * - Only one flush runs at a time and a document's deltas are written in order, so FerretDB (whose
 *   update is read-then-write) never sees two concurrent updates of one document from us.
 * - Across instances (on MongoDB) every write is a commutative delta, so concurrent instances
 *   never lose each other's increments; a cached copy may miss the other instances' changes for
 *   at most `maxAgeMs` (then it is read again), which velocity counts and profiles tolerate.
 *
 * A read is never issued while the document has deltas in flight (it waits for that flush), and
 * a document being read is skipped by the flusher, so the copy read plus the deltas still queued
 * is exactly the document plus our unwritten changes.
 *
 * Failures: a flush that fails for a transient reason (database unreachable, SQLITE_BUSY, a
 * duplicate-key race of two upserts) is retried with backoff, keeping the deltas in order;
 * nothing queued is dropped unless the database refuses the write itself (logged). The queue is
 * bounded twice: past `backpressureAt` writes, `admit()` holds new work back until the database
 * has caught up (or the caller's deadline), which bounds what a crash can lose to about a second
 * of traffic; past `queueLimit` (the database is down) it refuses new work (→ 503). Work still
 * held at its deadline goes in, unless the database is reachable and writing (its last flush
 * succeeded) and the backlog is past OVERLOAD × `backpressureAt`: then more work than the database
 * can write is arriving for good, and letting it in would only grow what a crash loses, so it is
 * refused (→ 503) and the backlog stays near the mark.
 */
import type { AnyBulkWriteOperation, Db, Document, UpdateFilter } from 'mongodb';

/** Backlog, in multiples of `backpressureAt`, past which held work is refused at its deadline while the database is writing. */
const OVERLOAD = 2;

/** Work held back by admit(), until the backlog goes down or its deadline. */
interface Held {
  resolve: () => void;
  reject: (err: unknown) => void;
  timer: NodeJS.Timeout;
}

/** Every state document is keyed by a string `_id` (`<env>:<key>`). */
interface StateDocument extends Document {
  _id: string;
}
import { applyDelta, clone, coalesce, replacement, toUpdateDocument, type Delta, type Doc, type OpEntry, type UpdateGroup } from './delta';
import { Generations } from './generations';
import { pack, unpack } from './pack';
import { isDuplicateKey } from '../database';
import { Unavailable } from '../../core/errors';
import type { WriteQueue } from '../../core/ports';

export interface StateOptions {
  /** Most documents kept in memory (documents with unwritten changes are never evicted). */
  maxEntries: number;
  /** Longest time a change waits before it is written. */
  flushIntervalMs: number;
  /** Most inserts per database command. */
  maxBatch: number;
  /**
   * Most update statements per database command. FerretDB 1.24 holds one SQLite connection (of
   * 100) per statement of an `update` command until the whole command ends, so a command of
   * more than ~100 statements waits forever for a connection; small commands, one at a time,
   * stay far from that on any FerretDB build and cost little on MongoDB.
   */
  maxUpdateBatch: number;
  /** Writes waiting before `admit()` refuses new work. */
  queueLimit: number;
  /** Writes waiting before `admit()` holds new work back until they go down. */
  backpressureAt: number;
  /** Re-read a cached document older than this (several instances on one database); null: never. */
  maxAgeMs: number | null;
  /** First and longest retry delay of a failed flush. */
  retryBaseMs: number;
  retryMaxMs: number;
  /**
   * How changed documents are written. `deltas` (the default; any MongoDB, several instances):
   * each document's coalesced deltas as an upsert. `snapshots` (only on a database this process
   * alone writes: the embedded FerretDB): each document as it now is, many in one
   * insert-or-replace command (`comment: "rampart:upsert"`, a feature of Rampart's FerretDB build),
   * because FerretDB's update reads, rewrites and commits one document at a time (~0.4 ms each)
   * while one multi-document insert costs a fraction of that per document, and a whole document
   * can be rewritten as often as needed after a failure (no increment counted twice).
   */
  writeMode: 'deltas' | 'snapshots';
  /**
   * In `snapshots` mode, collections whose documents are written packed (see pack.ts): the
   * top-level fields that queries filter on stay as they are, the rest goes into one string.
   */
  packed: Readonly<Record<string, readonly string[]>>;
  onError: (err: unknown, what: string) => void;
  observer?: StateObserver;
  now?: () => number;
}

/** Hooks for metrics (no metrics library here). */
export interface StateObserver {
  read(collection: string, outcome: 'hit' | 'miss' | 'stale'): void;
  flushed(stats: { seconds: number; updates: number; inserts: number; ok: boolean }): void;
  /** Queued writes of `collection` the database refused for good (logged through onError), and dropped. */
  dropped?(collection: string, count: number): void;
}

export const DEFAULT_STATE_OPTIONS: Omit<StateOptions, 'onError'> = {
  maxEntries: 50_000,
  flushIntervalMs: 20,
  maxBatch: 250,
  maxUpdateBatch: 50,
  queueLimit: 100_000,
  backpressureAt: 5_000,
  maxAgeMs: null,
  writeMode: 'deltas',
  packed: {},
  retryBaseMs: 50,
  retryMaxMs: 1000,
};

interface Entry {
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
  memo?: { version: number; view: unknown };
}

interface InsertItem {
  doc: Document;
  /**
   * Called once the document is written (`inserted`), or found already there (its `_id` existed)
   * or refused by the database, which is logged (not `inserted`).
   */
  done?: (inserted: boolean) => void;
}

interface CollectionQueue {
  inserts: InsertItem[];
}

/** A document with unwritten changes or a look-up under way: never dropped from the cache. */
const busy = (e: Entry): boolean => e.pending.length > 0 || e.inflight !== null || e.loading !== null;

/** The insert comment that makes Rampart's FerretDB build replace documents with the same _id. */
export const UPSERT_COMMENT = 'rampart:upsert';

/** Most _ids in one batched look-up (Rampart's FerretDB build pushes down at most 1,000). */
const MAX_IDS_PER_FIND = 500;

/** Thrown inside a read that did not finish within its deadline. */
const TIMED_OUT = Symbol('timed-out');

export class StateLayer implements WriteQueue {
  private readonly o: StateOptions;
  /** The cached documents, most recently used kept (see generations.ts). */
  private readonly entries: Generations<Entry>;
  private readonly dirty = new Set<Entry>();
  private readonly queues = new Map<string, CollectionQueue>();
  /** Work held back by admit() until the backlog goes down. */
  private readonly held = new Set<Held>();
  /** Documents missed this turn, per collection, waiting for their batched look-up. */
  private readonly misses = new Map<string, { entry: Entry; resolve: () => void; reject: (err: unknown) => void }[]>();
  /** Collections with a batched look-up under way (the next misses wait for it: see load()). */
  private readonly finding = new Set<string>();
  private missesScheduled = false;
  /** Deadlines of reads under way (epoch ms), each with the promise its timer resolves. */
  private readonly expiries = new Map<number, Promise<typeof TIMED_OUT>>();
  private queued = 0;
  private flushing: Promise<void> | null = null;
  private timer: NodeJS.Timeout | null = null;
  private failures = 0;
  private closed = false;
  /** Set once close() is over: no more flushes are scheduled. */
  private stopped = false;
  private lastError: string | null = null;
  private readonly now: () => number;

  constructor(private readonly db: Db, options: Partial<StateOptions> & Pick<StateOptions, 'onError'>) {
    this.o = { ...DEFAULT_STATE_OPTIONS, ...options };
    this.entries = new Generations<Entry>(this.o.maxEntries, busy);
    this.now = this.o.now ?? Date.now;
  }

  /** Writes waiting (queued deltas and inserts, and the flush under way). */
  get backlog(): number {
    return this.queued;
  }

  get cachedDocuments(): number {
    return this.entries.size;
  }

  /** The backlog's two marks (see StateOptions): for the metrics. */
  get limits(): { backpressureAt: number; queueLimit: number } {
    return { backpressureAt: this.o.backpressureAt, queueLimit: this.o.queueLimit };
  }

  /** Whether this layer writes every changed document whole (`snapshots` mode: it is the database's only writer). */
  get wholeDocuments(): boolean {
    return this.o.writeMode === 'snapshots';
  }

  /** The ids of a collection's cached documents (or documents with queued changes) that start with `prefix`. */
  /** Whether cached documents are read again after `maxAgeMs`: other instances write the database too. */
  get rereads(): boolean {
    return this.o.maxAgeMs !== null;
  }

  cachedIds(collection: string, prefix: string): string[] {
    const ids: string[] = [];
    for (const [id] of this.entries.space(collection)) if (id.startsWith(prefix)) ids.push(id);
    return ids;
  }

  /** Why the last flush failed, while flushes keep failing. */
  get failing(): string | null {
    return this.failures > 0 ? this.lastError : null;
  }

  get pressure(): 'ok' | 'behind' | 'full' {
    if (this.closed || this.queued >= this.o.queueLimit) return 'full';
    return this.queued >= this.o.backpressureAt ? 'behind' : 'ok';
  }

  /** See WriteQueue.admit: at once, after the database caught up (or at `waitUntil`), or Unavailable. */
  admit(waitUntil?: number): Promise<void> {
    if (this.closed) return Promise.reject(new Unavailable('shutting down'));
    if (this.queued >= this.o.queueLimit) {
      return Promise.reject(new Unavailable(`the write queue is full (${this.queued} writes waiting${this.lastError ? `; last error: ${this.lastError}` : ''})`));
    }
    if (this.queued < this.o.backpressureAt || waitUntil === undefined) return Promise.resolve();
    const wait = waitUntil - this.now();
    if (wait <= 0) return this.overloaded() ? Promise.reject(this.overload()) : Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const waiter: Held = { resolve, reject, timer: setTimeout(() => this.release(waiter, this.overloaded() ? this.overload() : null), wait) };
      this.held.add(waiter);
    });
  }

  /** The database is writing (its last flush succeeded) and still far behind: see OVERLOAD. */
  private overloaded(): boolean {
    return this.failures === 0 && this.queued >= OVERLOAD * this.o.backpressureAt;
  }

  private overload(): Unavailable {
    return new Unavailable(`the database is behind (${this.queued} writes waiting): more work is arriving than it can write`);
  }

  /** Stop holding `waiter`: let it in, or refuse it with `refusal`. */
  private release(waiter: Held, refusal: Unavailable | null = null): void {
    clearTimeout(waiter.timer);
    this.held.delete(waiter);
    if (refusal) waiter.reject(refusal);
    else waiter.resolve();
  }

  /** Let held work in once the backlog is below the backpressure mark (called after each flush). */
  private releaseHeld(): void {
    if (this.queued >= this.o.backpressureAt && !this.closed) return;
    for (const w of [...this.held]) this.release(w);
  }

  private entry(collection: string, id: string, create: true): Entry;
  private entry(collection: string, id: string, create: false): Entry | undefined;
  private entry(collection: string, id: string, create: boolean): Entry | undefined {
    let e = this.entries.get(collection, id);
    if (e) return e;
    if (!create) return undefined;
    e = { collection, id, value: undefined, pending: [], inflight: null, loading: null, readAt: 0, version: 0 };
    this.entries.add(collection, id, e);
    return e;
  }

  private fresh(e: Entry): boolean {
    if (e.value === undefined) return false;
    return this.o.maxAgeMs === null || this.now() - e.readAt <= this.o.maxAgeMs || e.pending.length > 0 || e.inflight !== null;
  }

  /**
   * The document as this process knows it (null: it does not exist), from the cache or with one
   * look-up. With `deadline` (epoch ms), resolves `undefined` if the look-up has not answered by
   * then; the look-up still completes and fills the cache. Rejects when the database fails.
   */
  async read(collection: string, id: string, deadline?: number): Promise<Doc | null | undefined> {
    const e = this.entry(collection, id, true);
    const loading = this.lookUp(e);
    if (loading && !(await this.inTime(loading, deadline))) return undefined;
    return e.value;
  }

  /** Count a read of `e`, and start its look-up unless the cached copy is fresh: the look-up to wait for, or null. */
  private lookUp(e: Entry): Promise<void> | null {
    if (this.fresh(e)) {
      this.o.observer?.read(e.collection, 'hit');
      return null;
    }
    this.o.observer?.read(e.collection, e.value === undefined ? 'miss' : 'stale');
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
    const outcome = expiry === null ? TIMED_OUT : await Promise.race([loading.then(() => null), expiry]);
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
   * counter documents. With `deadline`, resolves `undefined` unless every one is read by then (the
   * look-ups go on and fill the cache). Rejects when the database fails.
   */
  async readAll(collection: string, ids: readonly string[], deadline?: number): Promise<(Doc | null)[] | undefined> {
    const entries = ids.map((id) => this.entry(collection, id, true));
    const loads = entries.map((e) => this.lookUp(e)).filter((l): l is Promise<void> => l !== null);
    if (loads.length > 0 && !(await this.inTime(Promise.all(loads), deadline))) return undefined;
    // A look-up that ended sets its document; one that could not answer leaves it unknown.
    const docs = entries.map((e) => e.value);
    return docs.some((d) => d === undefined) ? undefined : (docs as (Doc | null)[]);
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

  private async loadMany(collection: string, entries: Entry[]): Promise<void> {
    try {
      while (entries.some((e) => e.inflight)) await this.flushing;
      const docs = await this.db
        .collection<StateDocument>(collection)
        .find({ _id: { $in: entries.map((e) => e.id) } })
        .toArray();
      const byId = new Map(docs.map(({ _id, ...rest }) => [_id, unpack(rest)]));
      for (const e of entries) {
        let value: Doc | null = byId.get(e.id) ?? null;
        for (const d of e.pending) value = applyDelta(value, d);
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
      const chunks: (typeof waiting)[] = [];
      for (let i = 0; i < waiting.length; i += MAX_IDS_PER_FIND) chunks.push(waiting.slice(i, i + MAX_IDS_PER_FIND));
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

  /** The cached document without any I/O: undefined when not cached (or never read). */
  peek(collection: string, id: string): Doc | null | undefined {
    return this.entries.peek(collection, id)?.value;
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

  /** Apply a delta now (to the cached copy, if any) and queue it for writing. Never awaits. */
  apply(collection: string, id: string, d: Delta | readonly OpEntry[]): void {
    const ops = 'ops' in d ? d.ops : d;
    if (ops.length === 0) return;
    const e = this.entry(collection, id, true);
    // A replacement makes the document known even when it was never read.
    if (e.value !== undefined || ops[0]?.op === 'replace') e.value = applyDelta(e.value ?? null, ops);
    e.version++;
    e.pending.push(ops);
    this.dirty.add(e);
    this.queued++;
    this.schedule();
  }

  /**
   * Write a whole document (its caller is its only author: a derived copy, a record written
   * once): known at once, written behind like any change, replacing what is stored.
   */
  put(collection: string, id: string, doc: Doc): void {
    this.apply(collection, id, replacement(doc));
  }

  /**
   * Queue a document for insertion; a document whose `_id` exists already is left as it is.
   * `done` is called once it is written (true), or once it is known to be there already or was
   * refused (false).
   */
  insert(collection: string, doc: Document, done?: (inserted: boolean) => void): void {
    let q = this.queues.get(collection);
    if (!q) {
      q = { inserts: [] };
      this.queues.set(collection, q);
    }
    q.inserts.push({ doc, done });
    this.queued++;
    this.schedule();
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

  private schedule(): void {
    if (this.stopped || this.flushing || this.timer) return;
    const delay = this.failures > 0 ? Math.min(this.o.retryMaxMs, this.o.retryBaseMs * 2 ** (this.failures - 1)) : this.queued >= this.o.maxBatch ? 0 : this.o.flushIntervalMs;
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.runFlush();
    }, delay);
  }

  private runFlush(): Promise<void> {
    if (this.flushing) return this.flushing;
    this.flushing = this.flushOnce()
      .then(
        () => {
          this.failures = 0;
          this.lastError = null;
        },
        (err: unknown) => {
          this.failures++;
          this.lastError = err instanceof Error ? err.message : String(err);
          this.o.onError(err, 'flush');
        },
      )
      .finally(() => {
        this.flushing = null;
        this.releaseHeld();
        if (this.queued > 0) this.schedule();
      });
    return this.flushing;
  }

  private readonly gatherers: (() => void)[] = [];

  /**
   * `gather` hands over what a writer gathers in memory before it queues it (rollups, event keys):
   * an explicit flush (shutdown, a purge, tests) calls it first, so that it writes those too.
   */
  addGatherer(gather: () => void): void {
    this.gatherers.push(gather);
  }

  /**
   * Write everything queued so far, and everything the gatherers hold. Resolves when it is
   * written; rejects with the last error if it cannot be written before `timeoutMs` (default:
   * keep retrying).
   */
  async flush(timeoutMs?: number): Promise<void> {
    for (const gather of this.gatherers) gather();
    if (timeoutMs === undefined) return this.flushUntilEmpty();
    // A flush stuck on a database that stopped answering must not hold the caller past its time.
    let timer: NodeJS.Timeout | undefined;
    const give = { up: false };
    const expired = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        give.up = true;
        reject(new Error(`could not write ${this.queued} queued changes within ${timeoutMs} ms: ${this.lastError ?? 'the database did not answer'}`));
      }, timeoutMs);
    });
    try {
      await Promise.race([this.flushUntilEmpty(give), expired]);
    } finally {
      clearTimeout(timer);
    }
  }

  private async flushUntilEmpty(give: { up: boolean } = { up: false }): Promise<void> {
    // Changes made while we wait are included: the loop ends only when nothing is left.
    while (!give.up) {
      if (this.flushing) await this.flushing;
      if (this.queued === 0) return;
      if (this.timer) {
        clearTimeout(this.timer);
        this.timer = null;
      }
      if (this.failures > 0) await new Promise((r) => setTimeout(r, Math.min(this.o.retryMaxMs, this.o.retryBaseMs * 2 ** (this.failures - 1))));
      await this.runFlush();
    }
  }

  /** Refuse new work and write everything queued (bounded by `timeoutMs` when the database is down). */
  async close(timeoutMs: number): Promise<void> {
    this.closed = true;
    try {
      await this.flush(timeoutMs);
    } finally {
      this.stopped = true;
      if (this.timer) clearTimeout(this.timer);
      this.timer = null;
    }
  }

  private async flushOnce(): Promise<void> {
    const started = process.hrtime.bigint();
    if (this.o.writeMode === 'snapshots') {
      // A document changed without being read (a verdict past its budget, a feedback on a token):
      // read it first, so it is written whole like the others; an update costs FerretDB several
      // times a read and a whole-document write together. (Nothing is in flight here.)
      const unknown = [...this.dirty].filter((e) => e.value === undefined && e.pending.length > 0);
      if (unknown.length > 0) await Promise.allSettled(unknown.map((e) => (e.loading ??= this.load(e))));
    }
    // Take the work: per collection, the changed documents (as snapshots where that is the mode
    // and the document is known, else as coalesced updates), and the inserts.
    const updates = new Map<string, { entry: Entry; groups: UpdateGroup[] }[]>();
    const snapshots = new Map<string, Entry[]>();
    for (const e of this.dirty) {
      if (e.loading || e.pending.length === 0) continue;
      this.dirty.delete(e);
      e.inflight = e.pending;
      e.pending = [];
      if (this.o.writeMode === 'snapshots' && e.value) {
        const list = snapshots.get(e.collection) ?? [];
        list.push(e);
        snapshots.set(e.collection, list);
        continue;
      }
      const list = updates.get(e.collection) ?? [];
      list.push({ entry: e, groups: coalesce(e.inflight) });
      updates.set(e.collection, list);
    }
    const inserts = new Map<string, InsertItem[]>();
    for (const [name, q] of this.queues) {
      if (q.inserts.length === 0) continue;
      inserts.set(name, q.inserts);
      q.inserts = [];
    }
    let nUpdates = 0;
    let nInserts = 0;
    for (const l of updates.values()) for (const u of l) nUpdates += u.groups.length;
    for (const l of snapshots.values()) nUpdates += l.length;
    for (const l of inserts.values()) nInserts += l.length;
    // Inserts in parallel; updates one command at a time (see maxUpdateBatch).
    const updating = (async () => {
      const failures: unknown[] = [];
      for (const [name, list] of updates) await this.writeUpdates(name, list).catch((err: unknown) => failures.push(err));
      if (failures.length) throw failures[0];
    })();
    const results = await Promise.allSettled([
      updating,
      ...[...snapshots].map(([name, list]) => this.writeSnapshots(name, list)),
      ...[...inserts].map(([name, items]) => this.writeInserts(name, items)),
    ]);
    this.o.observer?.flushed({ seconds: Number(process.hrtime.bigint() - started) / 1e9, updates: nUpdates, inserts: nInserts, ok: results.every((r) => r.status === 'fulfilled') });
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
  }

  /** One ordered bulk per chunk; what was not written goes back to the front of its document's queue. */
  private async writeUpdates(collection: string, list: { entry: Entry; groups: UpdateGroup[] }[]): Promise<void> {
    const ops: { entry: Entry; group: UpdateGroup }[] = [];
    for (const { entry, groups } of list) for (const group of groups) ops.push({ entry, group });
    let done = 0;
    let failure: unknown = null;
    try {
      while (done < ops.length) {
        const chunk = ops.slice(done, done + this.o.maxUpdateBatch);
        const bulk: AnyBulkWriteOperation<StateDocument>[] = chunk.map(({ entry, group }) =>
          group.replace
            ? { replaceOne: { filter: { _id: entry.id }, replacement: { ...group.replace, _id: entry.id }, upsert: true } }
            : { updateOne: { filter: { _id: entry.id }, update: toUpdateDocument(group) as UpdateFilter<StateDocument>, upsert: true } },
        );
        try {
          await this.db.collection<StateDocument>(collection).bulkWrite(bulk, { ordered: true });
          done += chunk.length;
        } catch (err) {
          const at = firstWriteError(err);
          if (at === null) throw err;
          // Ordered: everything before `at` was written, nothing after it was tried.
          done += at.index;
          if (isDuplicateKey(at.error)) throw err; // two upserts raced (another instance): retry
          const bad = ops[done];
          this.o.onError(at.error, `write refused by the database (${collection} ${bad?.entry.id}); change dropped`);
          this.o.observer?.dropped?.(collection, 1);
          done += 1;
        }
      }
    } catch (err) {
      failure = err;
    }
    // Requeue what was not written, in order, ahead of newer changes; release what was.
    const back = new Map<Entry, (readonly OpEntry[])[]>();
    for (let i = done; i < ops.length; i++) {
      const { entry, group } = ops[i] as { entry: Entry; group: UpdateGroup };
      const l = back.get(entry) ?? [];
      l.push(groupOps(group));
      back.set(entry, l);
    }
    for (const { entry } of list) {
      const requeued = back.get(entry);
      if (requeued) {
        entry.pending = [...requeued, ...entry.pending];
        this.dirty.add(entry);
      }
      // The backlog counts queued deltas: this entry's went out, or came back as (fewer) groups.
      this.queued -= entry.inflight?.length ?? 0;
      this.queued += requeued?.length ?? 0;
      entry.inflight = null;
    }
    if (failure) throw failure;
  }

  /** Whole documents, many per insert-or-replace command; a chunk that failed is written again later. */
  private async writeSnapshots(collection: string, list: Entry[]): Promise<void> {
    let written = 0;
    const keep = this.o.packed[collection];
    try {
      for (; written < list.length; ) {
        // Each chunk is serialised when it is sent, so a large backlog never blocks the event
        // loop (and the answers waiting on it) for longer than one chunk.
        const chunk = list.slice(written, written + this.o.maxBatch);
        await this.db.collection<StateDocument>(collection).insertMany(
          chunk.map((e) => ({ ...(keep ? pack(e.value ?? {}, keep) : clone(e.value ?? {})), _id: e.id })),
          { ordered: false, comment: UPSERT_COMMENT },
        );
        written += chunk.length;
      }
    } finally {
      list.forEach((entry, i) => {
        const inflight = entry.inflight ?? [];
        entry.inflight = null;
        if (i < written) {
          this.queued -= inflight.length;
          return;
        }
        // Not written: its changes are still in the cached document; keep them queued.
        entry.pending = [...inflight, ...entry.pending];
        this.dirty.add(entry);
      });
    }
  }

  private async writeInserts(collection: string, items: InsertItem[]): Promise<void> {
    let remaining = items;
    try {
      for (let i = 0; i < items.length; i += this.o.maxBatch) {
        const chunk = items.slice(i, i + this.o.maxBatch);
        const failed = new Set<number>();
        try {
          await this.db.collection(collection).insertMany(
            chunk.map((c) => c.doc),
            { ordered: false },
          );
        } catch (err) {
          // The driver reports a lost connection as a bulk write error without write errors:
          // then nothing is known to be written, and the whole chunk is tried again.
          const errors = writeErrors(err);
          if (errors === null || errors.length === 0) throw err;
          // Unordered: only the listed ones failed; a duplicate _id means it is there already.
          let refused = 0;
          for (const w of errors) {
            failed.add(w.index);
            if (isDuplicateKey(w.error)) continue;
            refused++;
            this.o.onError(w.error, `insert refused by the database (${collection}); document dropped`);
          }
          if (refused > 0) this.o.observer?.dropped?.(collection, refused);
        }
        remaining = items.slice(i + chunk.length);
        this.queued -= chunk.length;
        chunk.forEach((c, index) => c.done?.(!failed.has(index)));
      }
    } catch (err) {
      // Not written (or not known to be): back to the front of the queue, retried later.
      const q = this.queues.get(collection) as CollectionQueue;
      q.inserts = [...remaining, ...q.inserts];
      throw err;
    }
  }
}

/** A group back as operations (a requeued group is written as one update again). */
function groupOps(group: UpdateGroup): OpEntry[] {
  if (group.replace) return replacement(group.replace);
  return [...group.fields].map(([path, { op, value }]) => ({ op, path: path.split('.'), value: clone(value) }));
}

interface WriteErrorLike {
  index: number;
  error: unknown;
}

/** The write errors of a bulk write error (null when the error is not one). */
function writeErrors(err: unknown): WriteErrorLike[] | null {
  const e = err as { writeErrors?: unknown; name?: unknown } | null;
  if (!e || typeof e !== 'object' || e.name !== 'MongoBulkWriteError') return null;
  const list = Array.isArray(e.writeErrors) ? e.writeErrors : e.writeErrors ? [e.writeErrors] : [];
  return list.map((w: { index?: unknown; err?: unknown; code?: unknown; errmsg?: unknown }) => ({
    index: typeof w.index === 'number' ? w.index : 0,
    error: w.err ?? { code: w.code, message: String(w.errmsg ?? 'write error') },
  }));
}

function firstWriteError(err: unknown): WriteErrorLike | null {
  const list = writeErrors(err);
  if (!list || list.length === 0) return null;
  return list.reduce((a, b) => (b.index < a.index ? b : a));
}
