/**
 * The state layer's write-behind flusher. One job: get every queued change and insert into the
 * database, in order, whatever it takes, and say what is not written yet.
 *
 * Changed documents (cache.ts's entries, marked dirty) and inserts are written by one flush at a
 * time, every `flushIntervalMs` (at once past `maxBatch` writes): each document's deltas coalesced
 * into ordered `bulkWrite`s (in `snapshots` mode, documents whole in insert-or-replace commands),
 * and the inserts many per command (on the embedded database, plain `insert` commands without
 * the driver's bulk-write machinery, database.ts's insertCommand). A flush that fails for a transient reason (database
 * unreachable, a duplicate-key race of two upserts) puts what it took back in front of the queue
 * and is retried with backoff; only what the database refuses for good is dropped (logged).
 *
 * What is not written yet is known by age: every change that may not wait (late changes aside)
 * and every insert takes a sequence number and the time it was queued. After each flush the
 * oldest of those still queued is found again, which answers both questions the service asks:
 * how old the oldest unwritten change is (`oldestUnwrittenMs`: the admission gate refuses new
 * work past a second, which bounds what a crash can lose by age), and whether everything queued
 * before a moment is written (`durable()`: a track event is acknowledged only then; while
 * someone waits, flushes run one after another, each answering every request that arrived
 * during the one before: a group commit).
 *
 * Nothing waits forever: every database command of a flush has a deadline (`writeTimeoutMs`),
 * and a watchdog abandons a flush that made no progress for that long. Its work goes back to the
 * queue, the stall is reported (`onStall`: the runtime opens the writer a new connection), and
 * the next flush retries. A write the abandoned flush still completes later is harmless: whole
 * documents it carried are written again after it (`snapshots`), inserts are idempotent by `_id`.
 */
import {
  BSON,
  type AnyBulkWriteOperation,
  type Collection,
  type Db,
  type Document,
  type UpdateFilter,
} from 'mongodb';
import { coalesce, groupOps, NO_OPS, toUpdateDocument, type OpEntry, type UpdateGroup } from './delta';
import { NOTHING_PENDING, type Entry, type StateDocument } from './cache';
import { pack } from './pack';
import {
  firstWriteError,
  insertCommand,
  isDuplicateKey,
  writeErrors,
  type WriteErrorLike,
} from '../database';
import { Unavailable } from '../../core/errors';

export interface FlushObserver {
  flushed(stats: { seconds: number; updates: number; inserts: number; ok: boolean }): void;
  /** Queued writes of `collection` the database refused for good (logged through onError), and dropped. */
  dropped?(collection: string, count: number): void;
  /** A flush made no progress within `writeTimeoutMs` and was abandoned (its work is queued again). */
  stalled?(): void;
  /** A command of a flush wrote `bytes` (BSON: the documents, or the updates, sent) to `collection`. */
  wrote?(collection: string, bytes: number): void;
}

export interface FlushOptions {
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
  /** First and longest retry delay of a failed flush. */
  retryBaseMs: number;
  retryMaxMs: number;
  /**
   * How long one database command of a flush may take before the flush is abandoned (the
   * watchdog): its work is queued again and retried, on a new connection where the writer has
   * one (`onStall`).
   */
  writeTimeoutMs: number;
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
   * How long late changes (StateLayer.apply's `late`: statistics many events touch, such as how
   * common a network or a browser is) wait before a timed flush writes them: their document is
   * written once per this interval however often it changes, instead of once per flush. Changes
   * that are not late are written within `flushIntervalMs` as ever, and an explicit flush (flush(),
   * close()) writes everything. What a crash can lose of late changes is this long.
   */
  lateMs: number;
  /**
   * How long `long` late changes wait (statistics counted over months, such as how common a
   * network is among legitimate logins): a crash can lose this long of them.
   */
  longLateMs: number;
  /** The clock (ms) late changes are held by. */
  now?: () => number;
  /**
   * In `snapshots` mode, collections whose documents are written packed (see pack.ts): the
   * top-level fields that queries filter on stay as they are, the rest goes into one string.
   */
  packed: Readonly<Record<string, readonly string[]>>;
  /**
   * Collections written only after others (collection → the collections it waits for): in each
   * flush, a collection named here is written only once every write of the collections it waits
   * for has succeeded, and not at all while one of their changed documents stays out of the
   * flush (held back, or being looked up). A device's dashboard copy and token document wait for
   * the users: after any failure or crash, a token is never found without its user document
   * (state.md).
   */
  writeOrder?: Readonly<Record<string, readonly string[]>>;
  /**
   * The database the flusher writes to (default: the layer's). The runtime gives it a connection
   * pool of its own, which it replaces when a flush stalls (`onStall`).
   */
  writer?: () => Db;
  /** Told when a flush was abandoned by the watchdog (after the stall was counted and logged). */
  onStall?: () => void;
  onError: (err: unknown, what: string) => void;
  observer?: FlushObserver;
}

/** Whether a change may wait: false (written within the flush interval), true (`lateMs`), `long` (`longLateMs`). */
export type Lateness = boolean | 'long';

/** What the flusher needs besides the database: reading a document first, and saying when a flush ended. */
export interface FlushHooks {
  /** Read a changed document never read (`snapshots` mode writes documents whole). */
  fill(e: Entry): Promise<void>;
  /** Called after every flush, written or failed (the admission gate lets held work in). */
  flushed(): void;
}

interface InsertItem {
  doc: Document;
  /**
   * Called once the document is written (`inserted`), or found already there (its `_id` existed)
   * or refused by the database, which is logged (not `inserted`).
   */
  done?: (inserted: boolean) => void;
  /** Its sequence number and when it was queued (see `oldest`). */
  seq: number;
  at: number;
}

/** The oldest change not yet written (late ones aside): its sequence number and when it was queued. */
interface Mark {
  seq: number;
  at: number;
}

/** Someone waiting (durable()) for every change up to `ticket` to be written. */
interface Waiter {
  ticket: number;
  resolve: () => void;
  reject: (err: unknown) => void;
  timer: NodeJS.Timeout | null;
}

/** One flush: what it took, so that a watchdog can put it back if the flush never ends. */
interface FlushRun {
  /** When it began, or last made progress (a command answered). */
  started: number;
  /** Whether it found anything to write. */
  tookAny: boolean;
  /** Whether it was run at once for waiters (not after the interval). */
  atOnce: boolean;
  /** Resolves when it ends: written, failed, or abandoned. */
  end: Promise<void>;
  done: () => void;
  /** Set when the watchdog gave up on this flush: what it still does once it ends changes nothing. */
  abandoned: boolean;
  /** Documents it took, with their changes in `inflight`. */
  entries: Entry[];
  /** Inserts it took, per collection, not yet written. */
  inserts: Map<string, InsertItem[]>;
}

/** The insert comment that makes Rampart's FerretDB build replace documents with the same _id. */
export const UPSERT_COMMENT = 'rampart:upsert';

/** Queued changes of a held document past which they are merged (compact). */
const COMPACT_AT = 16;

/**
 * The queue of a document changed in place and nothing else (StateLayer.edit): one mark, shared
 * by every such document rather than an array made for each. Never changed: a change that joins
 * it makes the document a queue of its own.
 */
const ONE_MARK = Object.freeze([NO_OPS]) as unknown as (readonly OpEntry[])[];

export class WriteBehind {
  private readonly dirty = new Set<Entry>();
  private readonly queues = new Map<string, InsertItem[]>();
  private readonly gatherers: (() => void)[] = [];
  private queued = 0;
  private flushing: Promise<void> | null = null;
  private run: FlushRun | null = null;
  private timer: NodeJS.Timeout | null = null;
  /** Whether `timer` runs the next flush at once (not after the interval). */
  private timerAtOnce = false;
  /** Whether the last flush ran at once for waiters and found nothing to write. */
  private idleAtOnce = false;
  private watchdog: NodeJS.Timeout | null = null;
  private failures = 0;
  /** Set once close() is over: no more flushes are scheduled. */
  private stopped = false;
  private lastError: string | null = null;
  /** Queued changes of documents held back (late ones, see enqueue). */
  private held = 0;
  /** The last sequence number given to a change (see `oldest`). */
  private seq = 0;
  /** The oldest change not yet written (late ones aside), null when every change is written. */
  private oldest: Mark | null = null;
  /** When the last sequence number was given (see `mark`). */
  private markedAt = 0;
  /** Waiting for their changes to be written, in ticket order. */
  private readonly waiters: Waiter[] = [];
  /** When a flush last wrote everything it took (or when writes last had nothing to do). */
  private lastProgress: number;
  private stalls = 0;
  private readonly now: () => number;

  constructor(
    private readonly db: Db,
    private readonly o: FlushOptions,
    private readonly hooks: FlushHooks,
  ) {
    this.now = o.now ?? Date.now;
    this.lastProgress = this.now();
  }

  /** Writes waiting (queued deltas and inserts, and the flush under way). */
  get backlog(): number {
    return this.queued;
  }

  /**
   * Writes due: the backlog without late changes held back on purpose (what decides a flush at
   * once: they are not the database falling behind).
   */
  get due(): number {
    return this.queued - this.held;
  }

  /** Why the last flush failed, while flushes keep failing (null: the database is writing). */
  get failing(): string | null {
    return this.failures > 0 ? this.lastError : null;
  }

  /** The flush under way, if any (it ends written or failed, never rejects). */
  get inflight(): Promise<void> | null {
    return this.flushing;
  }

  /** Flushes abandoned by the watchdog so far. */
  get stalled(): number {
    return this.stalls;
  }

  /** How long ago (ms) the oldest change not yet written was queued (late changes aside); 0 when none. */
  oldestUnwrittenMs(): number {
    return this.oldest === null ? 0 : Math.max(0, this.now() - this.oldest.at);
  }

  /**
   * How long (ms) writes have been due without a flush writing them: 0 while there is nothing to
   * write or a flush succeeded since the oldest unwritten change was queued.
   */
  stuckMs(): number {
    if (this.oldest === null) return 0;
    return Math.max(0, this.now() - Math.max(this.lastProgress, this.oldest.at));
  }

  /**
   * Resolves once every change queued so far (late ones aside) is written: a group commit, one
   * flush for everything that arrived during the one before (a flush starts at once for it).
   * With `deadline` (epoch ms), rejects with Unavailable if that has not happened by then (the
   * changes stay queued and are written later: the caller must not say they were).
   */
  durable(deadline?: number): Promise<void> {
    const ticket = this.seq;
    if (this.oldest === null || this.oldest.seq > ticket) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = { ticket, resolve, reject, timer: null };
      if (deadline !== undefined) {
        waiter.timer = setTimeout(
          () => {
            const i = this.waiters.indexOf(waiter);
            if (i >= 0) this.waiters.splice(i, 1);
            reject(
              new Unavailable(
                `the database did not write this in time${this.lastError ? ` (${this.lastError})` : ''}`,
              ),
            );
          },
          Math.max(0, deadline - this.now()),
        );
      }
      this.waiters.push(waiter);
      this.schedule();
    });
  }

  /**
   * Queue `ops`, already applied to the cached copy of `e`, for writing; `late`: they may wait
   * `lateMs` (`long`: `longLateMs`; see FlushOptions) unless the document has changes that may
   * not. A document held is written when its earliest deadline comes.
   */
  enqueue(e: Entry, ops: readonly OpEntry[], late: Lateness = false): void {
    const before = e.pending.length;
    const waiting = before > 0;
    // A change made in place (StateLayer.edit) right after another adds nothing to write: the
    // document goes whole as it then is, so one mark stands for both.
    const merged = ops === NO_OPS && e.pending[before - 1] === NO_OPS;
    if (!merged) {
      // A first change makes an array of one, not an empty one grown (which reserves 17); a
      // first change in place, none.
      if (!waiting) e.pending = ops === NO_OPS ? ONE_MARK : [ops];
      else if (e.pending === ONE_MARK) e.pending = [NO_OPS, ops];
      else e.pending.push(ops);
      this.queued++;
    }
    this.dirty.add(e);
    const holdMs = late === 'long' ? this.o.longLateMs : late ? this.o.lateMs : 0;
    if (holdMs <= 0) {
      // A change that may not wait takes the document's held changes along.
      if (e.holdUntil !== undefined) this.held -= before;
      e.holdUntil = undefined;
      if (e.dueSeq === undefined || this.oldest === null) {
        const seq = this.mark();
        if (e.dueSeq === undefined) {
          e.dueSeq = seq;
          e.dueAt = this.markedAt;
        }
      } else {
        // The document is due already (its oldest change is marked): a number, no mark to keep.
        ++this.seq;
      }
    } else if (!waiting) {
      e.holdUntil = this.now() + holdMs;
      this.held++;
    } else if (e.holdUntil !== undefined) {
      if (!merged) this.held++;
      e.holdUntil = Math.min(e.holdUntil, this.now() + holdMs);
      if (e.pending.length >= COMPACT_AT) this.compact(e);
    }
    this.schedule();
  }

  /**
   * A new sequence number for a change that may not wait (its time: `markedAt`); the oldest
   * unwritten one if none was.
   */
  private mark(): number {
    const seq = ++this.seq;
    const at = this.now();
    this.markedAt = at;
    if (this.oldest === null) {
      this.oldest = { seq, at };
      // Writes had nothing to do until now: a stall is measured from here.
      if (!this.flushing) this.lastProgress = at;
    }
    return seq;
  }

  /**
   * Put changes that were not written back in front of the document's queue. They were due, so
   * the document is due again, with any late changes that joined it meanwhile.
   */
  private requeue(e: Entry, ops: readonly (readonly OpEntry[])[]): void {
    if (e.holdUntil !== undefined) this.held -= e.pending.length;
    e.holdUntil = undefined;
    e.pending = [...ops, ...e.pending];
    if (e.inflightSeq !== undefined && (e.dueSeq === undefined || e.inflightSeq < e.dueSeq)) {
      e.dueSeq = e.inflightSeq;
      e.dueAt = e.inflightAt;
    }
    e.inflightSeq = undefined;
    e.inflightAt = undefined;
    this.dirty.add(e);
  }

  /** Merge a held document's queued changes into as few as apply the same (they pile up while held). */
  private compact(e: Entry): void {
    const before = e.pending.length;
    const merged = coalesce(e.pending).map(groupOps);
    // Changes made in place (StateLayer.edit) leave no operation: one mark keeps the document queued.
    e.pending = merged.length > 0 ? merged : ONE_MARK;
    this.queued -= before - e.pending.length;
    this.held -= before - e.pending.length;
  }

  /** Queue a document for insertion (see StateLayer.insert). */
  insert(collection: string, doc: Document, done?: (inserted: boolean) => void): void {
    const seq = this.mark();
    addTo(this.queues, collection, { doc, done, seq, at: this.markedAt });
    this.queued++;
    this.schedule();
  }

  /** The backoff after `failures` failed flushes in a row. */
  private retryDelay(): number {
    return Math.min(this.o.retryMaxMs, this.o.retryBaseMs * 2 ** (this.failures - 1));
  }

  /**
   * The next flush: after the interval, which gathers many verdicts' changes into one write; at
   * once when a batch is full or someone waits for its changes to be written (a track call is
   * answered only then), as a database's group commit does: the calls that arrive while one flush
   * runs are written together by the next, so a flush never waits for nothing while callers wait.
   */
  private schedule(): void {
    if (this.stopped || this.flushing) return;
    // (After a flush run at once for waiters that found nothing to write, their changes held
    // behind look-ups say, the next waits the interval: flushes never follow each other idle.)
    const now =
      this.failures === 0 && (this.due >= this.o.maxBatch || (this.waiters.length > 0 && !this.idleAtOnce));
    if (this.timer) {
      if (!now || this.timerAtOnce) return;
      clearTimeout(this.timer);
    }
    const delay = this.failures > 0 ? this.retryDelay() : now ? 0 : this.o.flushIntervalMs;
    this.timerAtOnce = delay === 0;
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.runFlush(false, this.timerAtOnce);
    }, delay);
  }

  /**
   * One flush; `all`: late changes too, held back or not (an explicit flush). Resolves when it
   * ends, written, failed or abandoned by the watchdog; never rejects.
   */
  private runFlush(all = false, atOnce = false): Promise<void> {
    if (this.flushing) return this.flushing;
    let done = () => undefined as void;
    const end = new Promise<void>((resolve) => (done = resolve));
    const run: FlushRun = {
      started: this.now(),
      end,
      done,
      abandoned: false,
      entries: [],
      inserts: new Map(),
      tookAny: false,
      atOnce,
    };
    this.run = run;
    this.flushing = end;
    this.armWatchdog(run);
    void this.flushOnce(run, all)
      .then(
        () => {
          if (run.abandoned) return this.rewriteAfterAbandoned(run);
          this.failures = 0;
          this.lastError = null;
          this.lastProgress = this.now();
        },
        (err: unknown) => {
          if (run.abandoned) return;
          this.failures++;
          this.lastError = err instanceof Error ? err.message : String(err);
          this.o.onError(err, 'flush');
        },
      )
      .finally(() => {
        if (!run.abandoned) this.ended(run);
      });
    return end;
  }

  /** A command of `run` answered: the watchdog starts again. */
  private progress(run: FlushRun): void {
    if (run.abandoned || this.run !== run) return;
    run.started = this.now();
    this.armWatchdog(run);
  }

  /** After a flush (written, failed, or abandoned): find the oldest unwritten change, answer waiters, go on. */
  private ended(run: FlushRun): void {
    run.done();
    if (this.run === run) this.run = null;
    if (this.watchdog) clearTimeout(this.watchdog);
    this.watchdog = null;
    this.flushing = null;
    this.idleAtOnce = run.atOnce && !run.tookAny;
    this.findOldest();
    this.answerWaiters();
    this.hooks.flushed();
    if (this.queued > 0 || this.waiters.length > 0) this.schedule();
  }

  /**
   * The watchdog of one flush: abandons it when no command of it has answered for
   * `writeTimeoutMs` (every database command of a flush has that deadline).
   */
  private armWatchdog(run: FlushRun): void {
    if (this.watchdog) clearTimeout(this.watchdog);
    this.watchdog = setTimeout(() => {
      this.watchdog = null;
      if (this.run === run && !run.abandoned) this.abandon(run);
    }, this.o.writeTimeoutMs);
    this.watchdog.unref?.();
  }

  /**
   * Give up on a flush that made no progress: its documents and inserts go back to the front of
   * the queue, the stall is counted and reported, and the next flush retries (after backoff).
   */
  private abandon(run: FlushRun): void {
    run.abandoned = true;
    for (const e of run.entries) {
      if (e.inflight === null) continue;
      // Still counted in the backlog: they go back to the front of the document's queue.
      const inflight = e.inflight;
      e.inflight = null;
      this.requeue(e, inflight);
    }
    for (const [collection, items] of run.inserts) {
      if (items.length === 0) continue;
      this.queues.set(collection, [...items, ...(this.queues.get(collection) ?? [])]);
    }
    run.inserts.clear();
    this.failures++;
    this.stalls++;
    this.lastError = `a flush made no progress for ${this.now() - run.started} ms; abandoned and retried on a new connection`;
    this.o.onError(new Error(this.lastError), 'flush stalled');
    this.o.observer?.stalled?.();
    this.o.onStall?.();
    this.ended(run);
  }

  /**
   * An abandoned flush that ended after all: what it wrote may have landed after a newer write of
   * the same documents, so in `snapshots` mode those documents are written whole again.
   */
  private rewriteAfterAbandoned(run: FlushRun): void {
    if (this.o.writeMode !== 'snapshots') return;
    for (const e of run.entries) {
      if (!e.value) continue;
      this.enqueue(e, []);
    }
  }

  /** Set `oldest` to the oldest change still queued (late ones aside); null when none is. */
  private findOldest(): void {
    // The oldest so far as two numbers (one object at the end, not one per candidate).
    let seq = Infinity;
    let at: number | undefined;
    this.dirty.forEach((e) => {
      if (e.dueSeq !== undefined && e.dueSeq < seq) {
        seq = e.dueSeq;
        at = e.dueAt;
      }
    });
    for (const q of this.queues.values()) {
      const first = q[0];
      if (first && first.seq < seq) {
        seq = first.seq;
        at = first.at;
      }
    }
    if (this.run) {
      // A flush under way (the watchdog abandoned the one before): what it carries is unwritten.
      for (const e of this.run.entries)
        if (e.inflightSeq !== undefined && e.inflightSeq < seq) {
          seq = e.inflightSeq;
          at = e.inflightAt;
        }
      for (const q of this.run.inserts.values())
        for (const i of q)
          if (i.seq < seq) {
            seq = i.seq;
            at = i.at;
          }
    }
    this.oldest = seq === Infinity ? null : { seq, at: at ?? this.now() };
  }

  /** Resolve the waiters whose changes are all written now. */
  private answerWaiters(): void {
    while (this.waiters.length > 0) {
      const w = this.waiters[0] as Waiter;
      if (this.oldest !== null && this.oldest.seq <= w.ticket) break;
      this.waiters.shift();
      if (w.timer) clearTimeout(w.timer);
      w.resolve();
    }
  }

  /** See StateLayer.addGatherer. */
  addGatherer(gather: () => void): void {
    this.gatherers.push(gather);
  }

  /** See StateLayer.flush. */
  async flush(timeoutMs?: number): Promise<void> {
    for (const gather of this.gatherers) gather();
    if (timeoutMs === undefined) return this.flushUntilEmpty();
    // A flush stuck on a database that stopped answering must not hold the caller past its time.
    let timer: NodeJS.Timeout | undefined;
    const give = { up: false };
    const expired = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        give.up = true;
        reject(
          new Error(
            `could not write ${this.queued} queued changes within ${timeoutMs} ms: ${this.lastError ?? 'the database did not answer'}`,
          ),
        );
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
      if (this.failures > 0) await new Promise((r) => setTimeout(r, this.retryDelay()));
      await this.runFlush(true);
    }
  }

  /** Write everything queued (bounded by `timeoutMs`), then schedule no more flushes. */
  async close(timeoutMs: number): Promise<void> {
    try {
      await this.flush(timeoutMs);
    } finally {
      this.stopped = true;
      if (this.timer) clearTimeout(this.timer);
      this.timer = null;
      if (this.watchdog) clearTimeout(this.watchdog);
      this.watchdog = null;
    }
  }

  /** The database the writes go to (the writer's own connections when the runtime gave some). */
  private target(collection: string) {
    return this.database().collection<StateDocument>(collection);
  }

  private database(): Db {
    return this.o.writer?.() ?? this.db;
  }

  private async flushOnce(run: FlushRun, all: boolean): Promise<void> {
    const started = process.hrtime.bigint();
    const now = this.now();
    const holding = (e: Entry) => !all && e.holdUntil !== undefined && e.holdUntil > now;
    if (this.o.writeMode === 'snapshots') {
      // A document changed without being read (a verdict past its budget, a feedback on a token):
      // read it first, so it is written whole like the others; an update costs FerretDB several
      // times a read and a whole-document write together. (Nothing is in flight here.)
      // (forEach: the set holds every document held back too, and is walked without an iterator.)
      const unknown: Promise<void>[] = [];
      this.dirty.forEach((e) => {
        if (e.value === undefined && e.pending.length > 0 && !holding(e)) unknown.push(this.hooks.fill(e));
      });
      if (unknown.length > 0) await Promise.allSettled(unknown);
      if (run.abandoned) return;
      this.progress(run);
    }
    // Take the work: per collection, the changed documents (as snapshots where that is the mode
    // and the document is known, else as coalesced updates), and the inserts.
    const updates = new Map<string, { entry: Entry; groups: UpdateGroup[] }[]>();
    const snapshots = new Map<string, Entry[]>();
    // Changes of a document being looked up wait for its look-up (which adds them to what it read).
    const lookingUp: Promise<void>[] = [];
    const order = this.o.writeOrder ?? {};
    // Collections with a changed document left out of this flush: what waits for them waits more.
    const leftOut = new Set<string>();
    const take = (e: Entry) => {
      if (e.pending.length === 0) return;
      if (holding(e)) {
        leftOut.add(e.collection);
        return;
      }
      if (e.loading) {
        lookingUp.push(e.loading);
        leftOut.add(e.collection);
        return;
      }
      this.dirty.delete(e);
      if (e.holdUntil !== undefined) this.held -= e.pending.length;
      e.holdUntil = undefined;
      e.inflight = e.pending;
      e.pending = NOTHING_PENDING;
      e.inflightSeq = e.dueSeq;
      e.inflightAt = e.dueAt;
      e.dueSeq = undefined;
      e.dueAt = undefined;
      run.entries.push(e);
      if (this.o.writeMode === 'snapshots' && e.value) addTo(snapshots, e.collection, e);
      else addTo(updates, e.collection, { entry: e, groups: coalesce(e.inflight) });
    };
    const waiting: Entry[] = [];
    this.dirty.forEach((e) => {
      if (order[e.collection]) waiting.push(e);
      else take(e);
    });
    // What waits for another collection is taken only when all of that one's changes are.
    for (const e of waiting) if (!order[e.collection]?.some((c) => leftOut.has(c))) take(e);
    const inserts = new Map<string, InsertItem[]>();
    for (const [name, q] of this.queues) {
      if (q.length === 0) continue;
      inserts.set(name, q);
      run.inserts.set(name, [...q]);
      this.queues.set(name, []);
    }
    let nUpdates = 0;
    let nInserts = 0;
    run.tookAny = updates.size > 0 || snapshots.size > 0 || inserts.size > 0;
    if (!run.tookAny) {
      // Nothing to write but changes behind look-ups: wait for those, or a caller looping until the
      // queue is empty (flush, close) would spin on resolved promises and the look-ups' answers
      // would never be read.
      await Promise.allSettled(lookingUp);
      return;
    }
    for (const l of updates.values()) for (const u of l) nUpdates += u.groups.length;
    for (const l of snapshots.values()) nUpdates += l.length;
    for (const l of inserts.values()) nInserts += l.length;
    // Collections that wait for others (writeOrder) are written once those are (below).
    const second = (map: Map<string, unknown>) => {
      const later = new Map<string, never>();
      for (const name of map.keys()) if (order[name]) later.set(name, map.get(name) as never);
      for (const name of later.keys()) map.delete(name);
      return later;
    };
    const laterUpdates = second(updates) as Map<string, { entry: Entry; groups: UpdateGroup[] }[]>;
    const laterSnapshots = second(snapshots) as Map<string, Entry[]>;
    const failing = new Set<string>();
    const writes = this.writeStep(run, updates, snapshots, inserts, failing);
    // Each collection that waits starts once the collections it waits for are written (those that
    // wait in turn included), not once every other write of the flush is: a device's copy need not
    // wait for the events' insert.
    const toStart = new Set([...laterSnapshots.keys(), ...laterUpdates.keys()]);
    const writeOf = (name: string): Promise<void> | undefined => {
      const known = writes.get(name);
      if (known || !toStart.has(name)) return known;
      toStart.delete(name); // (a cycle in writeOrder waits for nothing more)
      const prerequisites = (order[name] ?? []).flatMap((c) => writeOf(c) ?? []);
      const write = Promise.allSettled(prerequisites).then(() => {
        const snapshotList = laterSnapshots.get(name);
        const updateList = laterUpdates.get(name);
        if (run.abandoned) return;
        if (order[name]?.some((c) => failing.has(c))) {
          // Not written: a prerequisite's write failed (or was not made); they go back to the
          // queue as they were, and what waits for them waits too (the flush failed already:
          // they are retried with what failed by the next one).
          failing.add(name);
          for (const e of snapshotList ?? []) this.putBack(e);
          for (const { entry } of updateList ?? []) this.putBack(entry);
          return;
        }
        const step = this.writeStep(
          run,
          updateList ? new Map([[name, updateList]]) : new Map(),
          snapshotList ? new Map([[name, snapshotList]]) : new Map(),
          new Map(),
          failing,
        );
        return step.get(name);
      });
      writes.set(name, write);
      return write;
    };
    for (const name of [...toStart]) writeOf(name);
    const results = await Promise.allSettled(writes.values());
    if (run.abandoned) return;
    this.o.observer?.flushed({
      seconds: Number(process.hrtime.bigint() - started) / 1e9,
      updates: nUpdates,
      inserts: nInserts,
      ok: results.every((r) => r.status === 'fulfilled'),
    });
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
  }

  /**
   * Start writing what was taken: inserts and each collection's snapshots in parallel, updates one
   * collection after another (see maxUpdateBatch for their commands). Returns each collection's
   * write; the collections whose writes failed are added to `failed` before theirs rejects.
   */
  private writeStep(
    run: FlushRun,
    updates: Map<string, { entry: Entry; groups: UpdateGroup[] }[]>,
    snapshots: Map<string, Entry[]>,
    inserts: Map<string, InsertItem[]>,
    failed: Set<string>,
  ): Map<string, Promise<void>> {
    const noting = (name: string, p: Promise<void>) =>
      p.catch((err: unknown) => {
        failed.add(name);
        throw err;
      });
    const writes = new Map<string, Promise<void>>();
    // A collection can have updates and snapshots (documents changed blind and known ones): its
    // write is both, failed when either failed.
    const add = (name: string, write: Promise<void>) => {
      const before = writes.get(name);
      writes.set(
        name,
        before
          ? Promise.allSettled([before, write]).then((settled) => {
              for (const r of settled) if (r.status === 'rejected') throw r.reason;
            })
          : write,
      );
    };
    let previous: Promise<unknown> = Promise.resolve();
    for (const [name, list] of updates) {
      const write = previous.then(() => noting(name, this.writeUpdates(run, name, list)));
      add(name, write);
      previous = write.catch(() => undefined);
    }
    for (const [name, list] of snapshots) add(name, noting(name, this.writeSnapshots(run, name, list)));
    for (const [name, items] of inserts) add(name, noting(name, this.writeInserts(run, name, items)));
    return writes;
  }

  /** A document taken by this flush and not written: its changes go back to the front of its queue. */
  private putBack(e: Entry): void {
    const inflight = e.inflight ?? [];
    e.inflight = null;
    this.requeue(e, inflight);
  }

  /** One ordered bulk per chunk; what was not written goes back to the front of its document's queue. */
  private async writeUpdates(
    run: FlushRun,
    collection: string,
    list: { entry: Entry; groups: UpdateGroup[] }[],
  ): Promise<void> {
    const ops: { entry: Entry; group: UpdateGroup }[] = [];
    for (const { entry, groups } of list) for (const group of groups) ops.push({ entry, group });
    let done = 0;
    let failure: unknown = null;
    try {
      while (done < ops.length) {
        if (run.abandoned) return;
        const chunk = ops.slice(done, done + this.o.maxUpdateBatch);
        const bulk: AnyBulkWriteOperation<StateDocument>[] = chunk.map(({ entry, group }) =>
          group.replace
            ? {
                replaceOne: {
                  filter: { _id: entry.id },
                  replacement: { ...group.replace, _id: entry.id },
                  upsert: true,
                },
              }
            : {
                updateOne: {
                  filter: { _id: entry.id },
                  update: toUpdateDocument(group) as UpdateFilter<StateDocument>,
                  upsert: true,
                },
              },
        );
        try {
          await this.target(collection).bulkWrite(bulk, { ordered: true });
          if (run.abandoned) return;
          this.progress(run);
          this.count(collection, bulk);
          done += chunk.length;
        } catch (err) {
          if (run.abandoned) return;
          const at = firstWriteError(err);
          if (at === null) throw err;
          // Ordered: everything before `at` was written, nothing after it was tried.
          done += at.index;
          if (isDuplicateKey(at.error)) throw err; // two upserts raced (another instance): retry
          const bad = ops[done];
          this.o.onError(
            at.error,
            `write refused by the database (${collection} ${bad?.entry.id}); change dropped`,
          );
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
      addTo(back, entry, groupOps(group));
    }
    for (const { entry } of list) {
      const requeued = back.get(entry);
      // The backlog counts queued deltas: this entry's went out, or come back as (fewer) groups.
      this.queued -= entry.inflight?.length ?? 0;
      this.queued += requeued?.length ?? 0;
      entry.inflight = null;
      if (requeued) this.requeue(entry, requeued);
      else this.written(entry);
    }
    if (failure) throw failure;
  }

  /** Tell the observer how many bytes a command wrote to `collection` (only when it asks). */
  private count(collection: string, sent: readonly object[]): void {
    const wrote = this.o.observer?.wrote;
    if (!wrote) return;
    let bytes = 0;
    for (const x of sent) bytes += bsonSize(x as Document);
    wrote(collection, bytes);
  }

  /** `e`'s changes of this flush are written. */
  private written(e: Entry): void {
    e.inflightSeq = undefined;
    e.inflightAt = undefined;
  }

  /** Whole documents, many per insert-or-replace command; a chunk that failed is written again later. */
  private async writeSnapshots(run: FlushRun, collection: string, list: Entry[]): Promise<void> {
    let written = 0;
    const keep = this.o.packed[collection];
    try {
      for (; written < list.length;) {
        if (run.abandoned) return;
        // Each chunk is serialised when it is sent, so a large backlog never blocks the event
        // loop (and the answers waiting on it) for longer than one chunk.
        const chunk = list.slice(written, written + this.o.maxBatch);
        // No deep copy: a change applied before the driver serialises the document only makes
        // this write newer, and the change, still queued, writes the document whole again.
        const docs = chunk.map((e) => {
          const doc = keep ? pack(e.value ?? {}, keep) : { ...e.value };
          doc._id = e.id;
          return doc as StateDocument;
        });
        // One insert-or-replace command: a document the database refused fails the chunk, which
        // is written again (whole, so a document written meanwhile is only written again).
        const sent = await insertCommand(this.database(), collection, docs, {
          comment: UPSERT_COMMENT,
          sizeOf: bsonSize,
        });
        if (sent.errors.length > 0) throw refusedError(collection, sent.errors);
        if (run.abandoned) return;
        this.progress(run);
        this.o.observer?.wrote?.(collection, sent.bytes);
        written += chunk.length;
      }
    } finally {
      if (!run.abandoned) {
        list.forEach((entry, i) => {
          const inflight = entry.inflight ?? [];
          entry.inflight = null;
          if (i < written) {
            this.queued -= inflight.length;
            this.written(entry);
            return;
          }
          // Not written: its changes are still in the cached document; keep them queued.
          this.requeue(entry, inflight);
        });
      }
    }
  }

  private async writeInserts(run: FlushRun, collection: string, items: InsertItem[]): Promise<void> {
    let remaining = items;
    try {
      for (let i = 0; i < items.length; i += this.o.maxBatch) {
        if (run.abandoned) return;
        const chunk = items.slice(i, i + this.o.maxBatch);
        const failed = new Set<number>();
        let errors: WriteErrorLike[] | null;
        /** The bytes sent, when insertCommand sized them already. */
        let bytes: number | undefined;
        const docs = chunk.map((c) => c.doc);
        try {
          // Alone on the embedded database: one insert command, without the driver's bulk-write
          // machinery; on MongoDB, insertMany (its write concern and retryable writes).
          if (this.o.writeMode === 'snapshots')
            ({ errors, bytes } = await insertCommand(this.database(), collection, docs, {
              sizeOf: bsonSize,
            }));
          else {
            await (this.target(collection) as unknown as Collection).insertMany(docs, { ordered: false });
            errors = [];
          }
        } catch (err) {
          if (run.abandoned) return;
          // The driver reports a lost connection as a bulk write error without write errors:
          // then nothing is known to be written, and the whole chunk is tried again.
          errors = writeErrors(err);
          if (errors === null || errors.length === 0) throw err;
        }
        if (run.abandoned) return;
        if (errors.length === 0) {
          this.progress(run);
          if (bytes === undefined) this.count(collection, docs);
          else this.o.observer?.wrote?.(collection, bytes);
        } else {
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
        run.inserts.set(collection, remaining);
        this.queued -= chunk.length;
        chunk.forEach((c, index) => c.done?.(!failed.has(index)));
      }
    } catch (err) {
      if (run.abandoned) return;
      // Not written (or not known to be): back to the front of the queue, retried later.
      this.queues.set(collection, [...remaining, ...(this.queues.get(collection) ?? [])]);
      run.inserts.set(collection, []);
      throw err;
    }
  }
}

/** A chunk of whole documents some of which the database refused: the chunk is written again. */
function refusedError(collection: string, refused: readonly WriteErrorLike[]): Error {
  const first = refused[0]?.error as { message?: unknown } | undefined;
  return new Error(
    `${refused.length} document(s) of ${collection} refused: ${String(first?.message ?? 'write error')}`,
  );
}

/**
 * The BSON size of a document, as `BSON.calculateObjectSize` counts it: computed here for a
 * document of scalars, strings and dates (a packed document: a handful of fields beside one
 * long string) without the key arrays that function makes; anything else is handed to it.
 */
export function bsonSize(doc: Document): number {
  let size = 4 + 1;
  for (const name in doc) {
    const v: unknown = doc[name];
    let payload: number;
    // (Counted as calculateObjectSize counts by default: an undefined field not at all.)
    if (v === undefined) continue;
    if (typeof v === 'string') payload = 4 + Buffer.byteLength(v, 'utf8') + 1;
    else if (typeof v === 'number')
      payload = Number.isInteger(v) && v >= -0x80000000 && v <= 0x7fffffff ? 4 : 8;
    else if (typeof v === 'boolean') payload = 1;
    else if (v === null) payload = 0;
    else if (v instanceof Date) payload = 8;
    else return BSON.calculateObjectSize(doc);
    size += 1 + Buffer.byteLength(name, 'utf8') + 1 + payload;
  }
  return size;
}

/** Add `value` to the list of `key`. */
function addTo<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}
