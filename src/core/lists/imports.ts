/**
 * Writing a checked CSV import into its list, batch by batch, as a job the caller follows
 * (`ListImport`) or, for a small one, before the answer. This instance writes one import per
 * list at a time (later ones wait, `queued`), so what an import reports as created is what it
 * created.
 *
 * Each batch waits for the state layer's admission (the verdicts' writes come first: while they
 * are behind, the import waits), reads which of its items the list holds (one `_id` look-up per
 * batch, to keep their creation time and skip those it would leave as they are), writes the
 * rest, and is then followed by a pause as long as the batch took (`pauseRatio`), so that an
 * import takes at most about half of the database's time, however long it is. Progress is
 * recorded after every batch. While the database is unavailable a batch is tried again (for
 * `retryForMs`); past that, or on any other failure, the job ends `failed` saying how many items
 * it wrote. Items are upserted by value, so the same CSV imported again finishes a failed import
 * (and rewrites nothing that is already as the CSV says).
 */
import type { Actor } from '../audit/model';
import { uuid } from '../crypto';
import { DomainError, NotFound, RateLimited, Unavailable } from '../errors';
import type { EnvId } from '../model';
import { monotonicMs, type Clock, type Scheduler, type WriteQueue } from '../ports';
import type { List, ListImport, ListItem } from './model';
import type { ListStore } from './ports';

export interface ImportOptions {
  /** An import of at most this many items is written before the answer (201); a larger one is a job (202). Default 1,000. */
  syncItems?: number;
  /** Items per write. Default 500. */
  batch?: number;
  /** The pause after a batch, as a share of the time the batch took. Default 1. */
  pauseRatio?: number;
  /** Bounds of that pause (ms). Defaults 5 and 2,000. */
  minPauseMs?: number;
  maxPauseMs?: number;
  /** How long a batch is tried again while the database is unavailable (ms). Default 120,000. */
  retryForMs?: number;
  /** A queued or running job whose instance has not recorded anything for this long was interrupted (ms). Default 60,000. */
  staleMs?: number;
  /** Finished jobs are kept this long, then swept (ms). Default 7 days. */
  keepMs?: number;
  /** Jobs one instance holds at once (queued or running, each with its items in memory); more are refused (429). Default 10. */
  maxJobs?: number;
}

/** What an import did (a small one's answer). */
export interface ImportReport {
  rows: number;
  created: number;
  updated: number;
  /** Items of the list the CSV did not name, archived by an import that replaces the list's items. */
  archived?: number;
}

/** Run after every item is written, before the import is recorded as done (a replacing import's archiving). */
export type AfterImport = (job: ListImport) => Promise<void>;

/** What the importer needs of the list service. */
export interface ImportHost {
  store: Pick<ListStore, 'getItems' | 'putImport' | 'getImport' | 'sweepImports'>;
  clock: Clock;
  /** Pauses and retries. Without one, imports are written without pauses (small ones only). */
  scheduler?: Scheduler;
  /** The state layer's admission: an import waits while the verdicts' writes are behind. */
  writes?: Pick<WriteQueue, 'admit' | 'pressure'>;
  log?: { warn(obj: object, msg: string): void };
  /** The list as stored now (null: deleted). */
  listOf(env: EnvId, listId: string): Promise<List | null>;
  /** Store items of the list, count the change, and apply it to the compiled lists. */
  write(env: EnvId, list: List, items: readonly ListItem[]): Promise<void>;
  audit(env: EnvId, actor: Actor, detail: Record<string, unknown>, listId: string): Promise<void>;
}

/** An import that ends early: the list was deleted, or the service is stopping. */
class Stopped extends Error {}
const DELETED = 'the list was deleted';

const RETRY_FIRST_MS = 250;
const RETRY_MAX_MS = 5000;
/** How long an import waits for admission before it asks again. */
const ADMIT_WAIT_MS = 500;
/** How often a job that waits (for its turn, for admission) records that its instance is alive. */
const HEARTBEAT_MS = 15_000;

const message = (e: unknown): string => (e instanceof Error ? e.message : String(e));
/** The database cannot take the write now: worth trying again. */
const transient = (e: unknown): boolean =>
  e instanceof DomainError && (e.kind === 'unavailable' || e.kind === 'deadline_exceeded');

/** The stored item `k` is exactly what writing `i` would leave (so it is not rewritten). */
const unchanged = (k: ListItem, i: ListItem): boolean =>
  !k.archived &&
  k.secondaryValue === i.secondaryValue &&
  k.comment === i.comment &&
  (k.expiresAt?.getTime() ?? null) === (i.expiresAt?.getTime() ?? null) &&
  k.author.type === i.author.type &&
  k.author.identifier === i.author.identifier;

interface Running {
  job: ListImport;
  /** Set when the job is to end early, with why. */
  stop: string | null;
  done: Promise<void>;
}

export class ListImports {
  readonly syncItems: number;
  private readonly batch: number;
  private readonly o: Required<Omit<ImportOptions, 'syncItems' | 'batch'>>;
  /** The last import of each list in this instance (`env \0 list`): the next waits for it. */
  private readonly tails = new Map<string, Promise<void>>();
  private readonly running = new Map<string, Running>();
  /** Jobs that ended here while their outcome could not be recorded (the database was unavailable): recorded at the next chance. */
  private readonly unrecorded = new Map<string, ListImport>();
  private readonly sleepers = new Set<() => void>();
  private stopping = false;

  constructor(
    private readonly h: ImportHost,
    o: ImportOptions = {},
  ) {
    this.syncItems = o.syncItems ?? 1000;
    this.batch = Math.max(1, Math.min(o.batch ?? 500, 1000));
    this.o = {
      pauseRatio: o.pauseRatio ?? 1,
      minPauseMs: o.minPauseMs ?? 5,
      maxPauseMs: o.maxPauseMs ?? 2000,
      retryForMs: o.retryForMs ?? 120_000,
      staleMs: o.staleMs ?? 60_000,
      keepMs: o.keepMs ?? 7 * 86_400_000,
      maxJobs: o.maxJobs ?? 10,
    };
  }

  /**
   * Write the items now (a small import, not waiting for a job of the list to end): the report
   * once written; a failure (503, …) is the caller's, who may send the same CSV again.
   */
  async now(
    env: EnvId,
    actor: Actor,
    list: List,
    rows: number,
    items: ListItem[],
    after?: AfterImport,
  ): Promise<ImportReport> {
    const job = this.newJob(env, actor, list, rows, items);
    await this.write(job, items, false);
    await after?.(job);
    await this.finish(job, null);
    return {
      rows,
      created: job.created,
      updated: job.updated,
      ...(job.archived !== undefined ? { archived: job.archived } : {}),
    };
  }

  /** Record a job for the items and start it; answers the job as recorded (queued or running). */
  async start(
    env: EnvId,
    actor: Actor,
    list: List,
    rows: number,
    items: ListItem[],
    after?: AfterImport,
  ): Promise<ListImport> {
    if (this.stopping) throw new Unavailable('the service is shutting down');
    if (this.running.size >= this.o.maxJobs) throw new RateLimited(Math.ceil(HEARTBEAT_MS / 1000));
    const job = this.newJob(env, actor, list, rows, items);
    await this.h.store.putImport(job);
    const entry: Running = { job, stop: null, done: Promise.resolve() };
    this.running.set(job.id, entry);
    entry.done = this.inTurn(job, entry, async () => {
      job.state = 'running';
      await this.save(job);
      await this.write(job, items, true, entry);
      if (after) {
        if (entry.stop) throw new Stopped(entry.stop);
        await after(job);
      }
      await this.finish(job, null);
    })
      .catch(async (e: unknown) => {
        const done = `${job.written} of ${job.items} items were written`;
        const error =
          e instanceof Stopped && e.message === DELETED
            ? `the list was deleted; ${done} before`
            : `${e instanceof Stopped ? e.message : transient(e) ? `the database did not take the writes (${message(e)})` : message(e)}; ${done}: import the same CSV again to finish`;
        await this.finish(job, error).catch((err: unknown) => {
          this.h.log?.warn(
            { env, import: job.id, err: message(err) },
            'list import: the outcome could not be recorded yet',
          );
          this.unrecorded.set(job.id, { ...job });
        });
      })
      .finally(() => this.running.delete(job.id));
    return { ...job };
  }

  /** A job of the list: as this instance runs it, or as recorded (one whose instance went silent is failed then). */
  async get(env: EnvId, listId: string, id: string): Promise<ListImport> {
    const here = this.running.get(id)?.job ?? this.unrecorded.get(id);
    if (here && here.envId === env && here.listId === listId) {
      if (this.unrecorded.has(id)) await this.record(here);
      return { ...here };
    }
    const job = typeof id === 'string' && id.length <= 64 ? await this.h.store.getImport(env, id) : null;
    if (!job || job.listId !== listId) throw new NotFound('no such import');
    const now = this.h.clock.now();
    if (
      (job.state === 'queued' || job.state === 'running') &&
      now.getTime() - job.updatedAt.getTime() > this.o.staleMs
    ) {
      job.state = 'failed';
      job.error = `interrupted: the instance writing it stopped; ${job.written} of ${job.items} items were written: import the same CSV again to finish`;
      job.finishedAt = now;
      job.updatedAt = now;
      await this.h.store.putImport(job);
    }
    return job;
  }

  /** Stop the imports of a list (it is being deleted) and wait for them to end. */
  async cancel(env: EnvId, listId: string): Promise<void> {
    const mine = [...this.running.values()].filter((r) => r.job.envId === env && r.job.listId === listId);
    for (const r of mine) r.stop = DELETED;
    this.wake();
    await Promise.allSettled(mine.map((r) => r.done));
    await this.tails.get(`${env}\u0000${listId}`);
  }

  /** Record the outcomes not recorded yet; delete jobs finished longer than `keepMs` ago. */
  async sweep(): Promise<number> {
    for (const job of [...this.unrecorded.values()]) await this.record(job);
    return this.h.store.sweepImports(new Date(this.h.clock.now().getTime() - this.o.keepMs));
  }

  /** Record an outcome that could not be recorded when the job ended (kept for later if it still cannot). */
  private async record(job: ListImport): Promise<void> {
    try {
      await this.h.store.putImport({ ...job });
      this.unrecorded.delete(job.id);
    } catch {
      // Still unavailable: the next read or sweep tries again.
    }
  }

  /** Refuse new jobs, end the running ones after their batch (recorded as interrupted), and wait for them. */
  async stop(): Promise<void> {
    this.stopping = true;
    for (const r of this.running.values()) r.stop ??= 'interrupted: the service stopped';
    this.wake();
    await Promise.allSettled([...this.running.values()].map((r) => r.done));
  }

  private newJob(env: EnvId, actor: Actor, list: List, rows: number, items: readonly ListItem[]): ListImport {
    const now = this.h.clock.now();
    return {
      id: uuid(),
      envId: env,
      listId: list.id,
      state: 'queued',
      rows,
      items: items.length,
      written: 0,
      created: 0,
      updated: 0,
      unchanged: 0,
      error: null,
      actor,
      createdAt: now,
      updatedAt: now,
      finishedAt: null,
    };
  }

  /**
   * Run `work` once the jobs of the same list before it have ended, keeping the job's record alive
   * meanwhile; a job told to stop while it waits ends at once.
   */
  private async inTurn(job: ListImport, entry: Running, work: () => Promise<void>): Promise<void> {
    const key = `${job.envId}\u0000${job.listId}`;
    const before = this.tails.get(key);
    const turn = (async () => {
      if (before) {
        let ended = false;
        void before.finally(() => (ended = true));
        while (!ended) {
          if (entry.stop) throw new Stopped(entry.stop);
          await Promise.race([before, this.sleep(HEARTBEAT_MS)]);
          if (!ended && !entry.stop) await this.alive(job);
        }
      }
      if (entry.stop) throw new Stopped(entry.stop);
      await work();
    })();
    const tail = turn.then(
      () => undefined,
      () => undefined,
    );
    this.tails.set(key, tail);
    try {
      await turn;
    } finally {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    }
  }

  /** Write every item, batch by batch (see the file's comment); `paced`: wait for admission, pause, retry. */
  private async write(job: ListImport, items: ListItem[], paced: boolean, entry?: Running): Promise<void> {
    let failingSince: number | null = null;
    let retryMs = RETRY_FIRST_MS;
    for (let at = 0; at < items.length;) {
      if (entry?.stop) throw new Stopped(entry.stop);
      if (paced) await this.admitted(job, entry);
      const started = monotonicMs(this.h.clock);
      try {
        const list = await this.h.listOf(job.envId, job.listId);
        if (!list) throw new Stopped(DELETED);
        const batch = items.slice(at, at + this.batch);
        const known = new Map(
          (
            await this.h.store.getItems(
              job.envId,
              job.listId,
              batch.map((i) => i.id),
            )
          ).map((k) => [k.id, k]),
        );
        const writing: ListItem[] = [];
        let same = 0;
        for (const i of batch) {
          const k = known.get(i.id);
          if (k) i.createdAt = k.createdAt;
          if (k && unchanged(k, i)) same++;
          else writing.push(i);
        }
        if (writing.length) await this.h.write(job.envId, list, writing);
        job.written += batch.length;
        job.created += batch.length - known.size;
        job.updated += known.size;
        job.unchanged += same;
        at += batch.length;
        failingSince = null;
        retryMs = RETRY_FIRST_MS;
      } catch (e) {
        if (!paced || !transient(e)) throw e;
        const now = this.h.clock.now().getTime();
        failingSince ??= now;
        if (now - failingSince >= this.o.retryForMs) throw e;
        await this.sleep(retryMs);
        retryMs = Math.min(retryMs * 2, RETRY_MAX_MS);
        continue;
      }
      if (!paced) continue;
      // Progress is recorded on the way; a record that fails now is made by the next one.
      job.updatedAt = this.h.clock.now();
      await this.h.store.putImport({ ...job }).catch(() => undefined);
      const took = monotonicMs(this.h.clock) - started;
      if (at < items.length)
        await this.sleep(Math.min(this.o.maxPauseMs, Math.max(this.o.minPauseMs, took * this.o.pauseRatio)));
    }
  }

  /** Wait until the verdicts' writes are not behind (recording the job alive while it waits). */
  private async admitted(job: ListImport, entry?: Running): Promise<void> {
    const writes = this.h.writes;
    if (!writes) return;
    let since = this.h.clock.now().getTime();
    const behind = (): boolean => writes.pressure !== 'ok';
    while (behind() && !entry?.stop) {
      // Admission holds work until the backlog goes down or the deadline; an import asks again
      // after a pause as long as the writes are behind (it never takes a refusal as final).
      await writes.admit(this.h.clock.now().getTime() + ADMIT_WAIT_MS).catch(() => undefined);
      if (behind()) await this.sleep(ADMIT_WAIT_MS);
      if (this.h.clock.now().getTime() - since >= HEARTBEAT_MS) {
        await this.alive(job);
        since = this.h.clock.now().getTime();
      }
    }
  }

  /**
   * Record the outcome, succeeded (no error) or failed, and its audit entry. A job's record comes
   * first (its audit entry is then only logged if it cannot be written); a small import's audit
   * entry is part of it.
   */
  private async finish(job: ListImport, error: string | null): Promise<void> {
    const now = this.h.clock.now();
    job.state = error === null ? 'succeeded' : 'failed';
    job.error = error;
    job.finishedAt = now;
    job.updatedAt = now;
    const detail = {
      import_id: job.id,
      state: job.state,
      rows: job.rows,
      items: job.items,
      written: job.written,
      created: job.created,
      updated: job.updated,
      unchanged: job.unchanged,
      ...(job.archived !== undefined ? { archived: job.archived } : {}),
      ...(error ? { error } : {}),
    };
    if (!this.running.has(job.id)) return this.h.audit(job.envId, job.actor, detail, job.listId);
    await this.save(job);
    await this.h
      .audit(job.envId, job.actor, detail, job.listId)
      .catch((err: unknown) =>
        this.h.log?.warn(
          { env: job.envId, import: job.id, err: message(err) },
          'list import: the audit entry could not be written',
        ),
      );
  }

  /** Record the job, trying again while the database is unavailable (for `retryForMs`). */
  private async save(job: ListImport): Promise<void> {
    const since = this.h.clock.now().getTime();
    for (let wait = RETRY_FIRST_MS; ; wait = Math.min(wait * 2, RETRY_MAX_MS)) {
      try {
        await this.h.store.putImport({ ...job });
        return;
      } catch (e) {
        if (!transient(e) || this.h.clock.now().getTime() - since >= this.o.retryForMs) throw e;
        await this.sleep(wait);
      }
    }
  }

  /** Record that the job's instance is alive (a failure is of no consequence). */
  private async alive(job: ListImport): Promise<void> {
    job.updatedAt = this.h.clock.now();
    await this.h.store.putImport({ ...job }).catch(() => undefined);
  }

  /** Wait `ms` on the scheduler; stop() and cancel() end every wait at once. */
  private sleep(ms: number): Promise<void> {
    const scheduler = this.h.scheduler;
    if (!scheduler || this.stopping) return Promise.resolve();
    return new Promise((resolve) => {
      const wake = () => {
        this.sleepers.delete(wake);
        cancel();
        resolve();
      };
      const cancel = scheduler.after(ms, wake);
      this.sleepers.add(wake);
    });
  }

  private wake(): void {
    for (const wake of [...this.sleepers]) wake();
  }
}
