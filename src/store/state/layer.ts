/**
 * The state layer: everything a verdict reads and writes, between the core and MongoDB. It is the
 * composition the repositories use; each of its three jobs is a class of its own:
 *
 * - cache.ts (`StateCache`): reads, from a bounded in-process LRU cache of documents, backed by
 *   one batched `_id` look-up per collection on a miss (concurrent misses share it);
 * - flusher.ts (`WriteBehind`): writes, as deltas (see delta.ts) applied to the cached copy at
 *   once and queued; a single flusher coalesces each document's queued deltas and writes them
 *   behind in batches, plus queued inserts (events, debugger entries, token documents);
 * - admission.ts (`AdmissionGate`): backpressure by age, holding new work back while the oldest
 *   unwritten change is getting old and refusing it (→ 503) once it is `maxUnwrittenMs` old or
 *   the queue is full.
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
 */
import type { Db, Document } from 'mongodb';
import { AdmissionGate, type AdmissionOptions } from './admission';
import { StateCache, type CacheObserver, type CacheOptions } from './cache';
import { NO_OPS, replacement, type Delta, type Doc, type OpEntry } from './delta';
import { WriteBehind, type FlushObserver, type FlushOptions, type Lateness } from './flusher';
import type { WriteQueue } from '../../core/ports';

export { UPSERT_COMMENT } from './flusher';

/** Hooks for metrics (no metrics library here). */
export interface StateObserver extends CacheObserver, FlushObserver {}

/** Each collaborator's options (see cache.ts, flusher.ts and admission.ts), and the clock they share. */
export interface StateOptions
  extends
    Omit<CacheOptions, 'observer' | 'now'>,
    Omit<FlushOptions, 'observer'>,
    Omit<AdmissionOptions, 'now' | 'scheduler'> {
  observer?: StateObserver;
  now?: () => number;
}

/**
 * Documents the cache holds by default (RAMPART_STATE_CACHE_ENTRIES). Its two generations keep
 * between half and all of them, so a working set past half the bound starts to be read again:
 * at 50,000 the bench's 10,000 users (~6 documents each, counting their windows and devices)
 * were, and Rampart and FerretDB paid for the reads (docs/decisions.md, "The state cache's size").
 */
export const DEFAULT_CACHE_ENTRIES = 100_000;

export const DEFAULT_STATE_OPTIONS: Omit<StateOptions, 'onError'> = {
  maxEntries: DEFAULT_CACHE_ENTRIES,
  flushIntervalMs: 20,
  maxBatch: 250,
  maxUpdateBatch: 50,
  queueLimit: 100_000,
  maxUnwrittenMs: 1000,
  writeTimeoutMs: 10_000,
  readTimeoutMs: 10_000,
  maxAgeMs: null,
  writeMode: 'deltas',
  packed: {},
  retryBaseMs: 50,
  retryMaxMs: 1000,
  lateMs: 1000,
  longLateMs: 10_000,
};

export class StateLayer implements WriteQueue {
  private readonly o: StateOptions;
  private readonly cache: StateCache;
  private readonly writes: WriteBehind;
  private readonly gate: AdmissionGate;

  constructor(db: Db, options: Partial<StateOptions> & Pick<StateOptions, 'onError'>) {
    this.o = { ...DEFAULT_STATE_OPTIONS, ...options };
    this.cache = new StateCache(db, this.o, () => this.writes.inflight);
    this.writes = new WriteBehind(db, this.o, {
      fill: (e) => this.cache.fill(e),
      flushed: () => this.gate.releaseHeld(),
    });
    this.gate = new AdmissionGate(this.writes, this.o);
  }

  /** Writes waiting (queued deltas and inserts, and the flush under way). */
  get backlog(): number {
    return this.writes.backlog;
  }

  get cachedDocuments(): number {
    return this.cache.size;
  }

  /** The backlog's bounds (see StateOptions): for the metrics. */
  get limits(): { maxUnwrittenMs: number; queueLimit: number } {
    return { maxUnwrittenMs: this.o.maxUnwrittenMs, queueLimit: this.o.queueLimit };
  }

  /** How long ago the oldest change not yet written was queued (late statistics aside); 0: none. */
  oldestUnwrittenMs(): number {
    return this.writes.oldestUnwrittenMs();
  }

  /** How long writes have been due without a flush writing them (0: writing, or nothing to write). */
  stuckMs(): number {
    return this.writes.stuckMs();
  }

  /** Flushes the watchdog abandoned so far. */
  get stalls(): number {
    return this.writes.stalled;
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
    return this.cache.cachedIds(collection, prefix);
  }

  /** Why the last flush failed, while flushes keep failing. */
  get failing(): string | null {
    return this.writes.failing;
  }

  get pressure(): 'ok' | 'behind' | 'full' {
    return this.gate.pressure;
  }

  /** See WriteQueue.admit: at once, after the database caught up (or at `waitUntil`), or Unavailable. */
  admit(waitUntil?: number): Promise<void> {
    return this.gate.admit(waitUntil);
  }

  /** See WriteQueue.check: throws Unavailable where admit() would refuse. */
  check(): void {
    const refused = this.gate.refusal();
    if (refused) throw refused;
  }

  /** See WriteQueue.durable: resolves once everything queued so far (late statistics aside) is written. */
  durable(deadline?: number): Promise<void> {
    return this.writes.durable(deadline);
  }

  /** See StateCache.read: the document (null: none), or undefined when not read by `deadline`. */
  read(collection: string, id: string, deadline?: number): Promise<Doc | null | undefined> {
    return this.cache.read(collection, id, deadline);
  }

  /** See StateCache.cached: a fresh cached copy without I/O, or undefined. */
  cached(collection: string, id: string): Doc | null | undefined {
    return this.cache.cached(collection, id);
  }

  /** See StateCache.readAll: several documents of one collection with one promise. */
  readAll(
    collection: string,
    ids: readonly string[],
    deadline?: number,
  ): Promise<(Doc | null)[] | undefined> {
    return this.cache.readAll(collection, ids, deadline);
  }

  /** See StateCache.readMany: several documents (dashboards), missing ones null. */
  readMany(collection: string, ids: readonly string[]): Promise<Map<string, Doc | null>> {
    return this.cache.readMany(collection, ids);
  }

  /** See StateCache.knownAbsent: a document its caller knows is not in the database. */
  knownAbsent(collection: string, id: string): void {
    this.cache.knownAbsent(collection, id);
  }

  /** The cached document without any I/O: undefined when not cached (or never read). */
  peek(collection: string, id: string): Doc | null | undefined {
    return this.cache.peek(collection, id);
  }

  /** See StateCache.view: a view of the cached document, recomputed only when it changed. */
  view<T>(collection: string, id: string, make: (doc: Doc | null) => T): T | undefined {
    return this.cache.view(collection, id, make);
  }

  /**
   * The cached document's version: it changes with every change of the document (an `edit`, an
   * `apply`, a look-up's answer), so a part of a view its writer keeps up to date itself is known
   * current while the version is the one it noted. Undefined when the document is not cached.
   */
  version(collection: string, id: string): number | undefined {
    return this.cache.version(collection, id);
  }

  /**
   * Apply a delta now (to the cached copy, if any) and queue it for writing. Never awaits.
   * `late`: a statistic many events touch, which may reach the database up to `lateMs` later
   * (`long`: `longLateMs`), written once per interval however often it changes (this process
   * reads it at once).
   */
  apply(collection: string, id: string, d: Delta | readonly OpEntry[], late: Lateness = false): void {
    const ops = 'ops' in d ? d.ops : d;
    if (ops.length === 0) return;
    this.writes.enqueue(this.cache.change(collection, id, ops), ops, late);
  }

  /**
   * The cached document itself, for its caller to change in place now, when this layer writes
   * documents whole (`snapshots` mode) and holds this one (a document known absent is made
   * empty): the change is queued as applying `apply` would (`late` alike), but no delta is built
   * or kept, since only the document is ever written. Undefined when the change must be a delta
   * (`deltas` mode, or a document not read): then `apply` it. The caller changes it before it
   * awaits anything, as it would apply a delta.
   */
  edit(collection: string, id: string, late: Lateness = false): Doc | undefined {
    if (this.o.writeMode !== 'snapshots') return undefined;
    const e = this.cache.editable(collection, id);
    if (!e) return undefined;
    this.writes.enqueue(e, NO_OPS, late);
    return e.value as Doc;
  }

  /**
   * Write a whole document (its caller is its only author: a derived copy, a record written
   * once): known at once, written behind like any change, replacing what is stored. The layer
   * keeps `doc` itself where it writes documents whole (`snapshots` mode): its caller changes
   * neither it nor anything in it afterwards. (Elsewhere it is copied into a replacement.)
   */
  put(collection: string, id: string, doc: Doc): void {
    const e = this.o.writeMode === 'snapshots' ? this.cache.replaced(collection, id, doc) : undefined;
    if (e) this.writes.enqueue(e, NO_OPS);
    else this.apply(collection, id, replacement(doc));
  }

  /**
   * Queue a document for insertion; a document whose `_id` exists already is left as it is.
   * `done` is called once it is written (true), or once it is known to be there already or was
   * refused (false).
   */
  insert(collection: string, doc: Document, done?: (inserted: boolean) => void): void {
    this.writes.insert(collection, doc, done);
  }

  /** Forget cached documents (after a purge deleted them in the database). Unwritten changes stay. */
  invalidate(match: (collection: string, id: string) => boolean): void {
    this.cache.invalidate(match);
  }

  /**
   * `gather` hands over what a writer gathers in memory before it queues it (rollups, event keys):
   * an explicit flush (shutdown, a purge, tests) calls it first, so that it writes those too.
   */
  addGatherer(gather: () => void): void {
    this.writes.addGatherer(gather);
  }

  /**
   * Write everything queued so far, and everything the gatherers hold. Resolves when it is
   * written; rejects with the last error if it cannot be written before `timeoutMs` (default:
   * keep retrying).
   */
  flush(timeoutMs?: number): Promise<void> {
    return this.writes.flush(timeoutMs);
  }

  /** Refuse new work and write everything queued (bounded by `timeoutMs` when the database is down). */
  close(timeoutMs: number): Promise<void> {
    this.gate.close();
    return this.writes.close(timeoutMs);
  }
}
