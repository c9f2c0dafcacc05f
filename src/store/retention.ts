/**
 * Retention on MongoDB and FerretDB: deletes each environment's raw records older than its
 * cutoff, a bounded batch of `_id`s per delete with a pause between two. Two ways of finding
 * them, one per kind of server:
 *
 * - `per-environment` (MongoDB): for each environment, the `_id`s of its oldest records through
 *   the (envId, time) index every swept collection has, `batchSize` at a time.
 * - `scan` (FerretDB): FerretDB's SQLite backend pushes only `_id` equality and `_id: {$in}` down
 *   to storage; any other filter (a time range, an environment, even an `_id` range) reads the
 *   whole table, and a per-environment query would read it once per environment and batch. So
 *   one cursor reads each collection once, through `scanDb` (the analysts' reader, a second
 *   FerretDB at a lower CPU priority), keeping only `_id`, envId and the time; the records past
 *   their environment's cutoff are deleted by `_id: {$in: [...]}`, which uses the `_id` index.
 *
 * There is no TTL index (see docs/privacy.md#retention): a TTL index has one lifetime per
 * collection, FerretDB refuses the option, and a per-document expiry date written with each event
 * would cost every event an index entry and could not follow a retention made longer.
 */
import type { Db, Document, Filter } from 'mongodb';
import type { EnvId } from '../core/model';
import type { RetainedKind, RetentionCounts, RetentionStore, RetentionSweepOptions } from '../core/retention';
import { DEBUGGER, EVENTS } from './events';
import { ROLLUPS } from './rollups';
import { EVENT_KEYS } from './event-keys';
import { PRIVACY_COLLECTIONS } from './privacy';
import { WEBHOOK_COLLECTIONS } from './webhooks';
import { AUDIT_LOG } from './audit';
import type { StoreDeps } from './deps';

export type RetentionStrategy = 'per-environment' | 'scan';

interface Retained {
  kind: RetainedKind;
  collection: string;
  /** The record's time its age is counted from. */
  time: string;
  /** Only records that also match this (e.g. privacy requests that have ended). */
  only?: Document;
  /** Deleted with `kind` but not counted as such (an index of its records). */
  uncounted?: boolean;
}

/** What the sweep deletes, and by which time (docs/privacy.md#retention). */
export const RETAINED: readonly Retained[] = [
  { kind: 'events', collection: EVENTS, time: 'occurredAt' },
  { kind: 'debugger', collection: DEBUGGER, time: 'receivedAt' },
  // A request's export lives 48 hours whatever the retention; the job is its record, kept until
  // the retention once it has ended (its export is gone by then: PrivacyService.sweep).
  {
    kind: 'privacyJobs',
    collection: PRIVACY_COLLECTIONS.jobs,
    time: 'createdAt',
    only: { status: { $in: ['failed', 'expired'] } },
  },
  // The overview's rollups count addresses: they go with the events they counted (not the
  // record of when rollups began, which has no count).
  { kind: 'rollups', collection: ROLLUPS, time: 'at', only: { n: { $exists: true } } },
  // The embedded database's event keys go with the events they find (counted with neither).
  { kind: 'events', collection: EVENT_KEYS, time: 't', only: { k: { $exists: true } }, uncounted: true },
  // Finished webhook deliveries (open ones are in the outbox, webhook_outbox), with their bodies
  // and attempts: at most 30 days (RetentionSweepOptions.oldest).
  {
    kind: 'webhooks',
    collection: WEBHOOK_COLLECTIONS.history,
    time: 'createdAt',
    only: { status: { $in: ['delivered', 'failed'] } },
  },
  // Who changed which list or item, and how (an item's value may name a user).
  { kind: 'audit', collection: AUDIT_LOG, time: 'at' },
];

interface Row {
  _id: string;
  envId?: unknown;
  [time: string]: unknown;
}

/** Each environment's cutoff, moved up to `oldest` where that is later. */
function capped(cutoffs: ReadonlyMap<EnvId, Date>, oldest: Date | undefined): ReadonlyMap<EnvId, Date> {
  if (!oldest) return cutoffs;
  return new Map(
    [...cutoffs].map(([env, cutoff]) => [env, cutoff.getTime() < oldest.getTime() ? oldest : cutoff]),
  );
}

export class MongoRetentionStore implements RetentionStore {
  private readonly db: Db;
  private readonly o: { strategy: RetentionStrategy; scanDb?: Db };
  /**
   * `db` deletes; `scanDb` is read by the `scan` strategy (default `db`). The strategy follows the
   * server: `scan` on FerretDB, `per-environment` on MongoDB.
   */
  constructor({ db, ...o }: StoreDeps & { strategy: RetentionStrategy; scanDb?: Db }) {
    this.db = db;
    this.o = o;
  }

  async sweep(cutoffs: ReadonlyMap<EnvId, Date>, o: RetentionSweepOptions): Promise<RetentionCounts> {
    const counts: RetentionCounts = {
      events: 0,
      debugger: 0,
      privacyJobs: 0,
      rollups: 0,
      webhooks: 0,
      audit: 0,
    };
    if (cutoffs.size === 0) return counts;
    for (const r of RETAINED) {
      if (o.stopped()) break;
      const kindCutoffs = capped(cutoffs, o.oldest?.[r.kind]);
      const deleted =
        this.o.strategy === 'scan'
          ? await this.scan(r, kindCutoffs, o)
          : await this.perEnvironment(r, kindCutoffs, o);
      if (!r.uncounted) counts[r.kind] += deleted;
    }
    return counts;
  }

  /**
   * Delete the records named, by `_id` alone: each was read with its environment and checked
   * against that environment's own cutoff, and naming the environment here too would make
   * FerretDB read the whole table for every delete (it uses its `_id` index only for a filter on
   * `_id` and nothing else).
   */
  private async deleteIds(r: Retained, ids: string[]): Promise<number> {
    if (ids.length === 0) return 0;
    return (await this.db.collection<Row>(r.collection).deleteMany({ _id: { $in: ids } })).deletedCount;
  }

  private async perEnvironment(
    r: Retained,
    cutoffs: ReadonlyMap<EnvId, Date>,
    o: RetentionSweepOptions,
  ): Promise<number> {
    const col = this.db.collection<Row>(r.collection);
    let deleted = 0;
    let first = true;
    for (const [env, cutoff] of cutoffs) {
      for (;;) {
        if (o.stopped()) return deleted;
        if (!first) await o.pause();
        first = false;
        const filter: Filter<Row> = { envId: env, [r.time]: { $lt: cutoff }, ...r.only };
        const ids = (
          await col
            .find(filter, { projection: { _id: 1 } })
            .sort({ [r.time]: 1 })
            .limit(o.batchSize)
            .toArray()
        ).map((d) => d._id);
        if (ids.length === 0) break;
        // The `_id`s were just read within this environment: the delete names the environment too.
        deleted += (await col.deleteMany({ _id: { $in: ids }, envId: env })).deletedCount;
        if (ids.length < o.batchSize) break;
      }
    }
    return deleted;
  }

  private async scan(
    r: Retained,
    cutoffs: ReadonlyMap<EnvId, Date>,
    o: RetentionSweepOptions,
  ): Promise<number> {
    // Nothing is older than the newest cutoff but what some environment may delete.
    let newest = 0;
    for (const c of cutoffs.values()) newest = Math.max(newest, c.getTime());
    const cursor = (this.o.scanDb ?? this.db)
      .collection<Row>(r.collection)
      .find(
        { [r.time]: { $lt: new Date(newest) }, ...r.only },
        { projection: { _id: 1, envId: 1, [r.time]: 1 }, batchSize: o.batchSize },
      );
    let deleted = 0;
    let ids: string[] = [];
    try {
      for await (const d of cursor) {
        // Each record against its own environment's cutoff; another environment's never counts.
        const cutoff = typeof d.envId === 'string' ? cutoffs.get(d.envId as EnvId) : undefined;
        const at = d[r.time];
        if (!cutoff || !(at instanceof Date) || at.getTime() >= cutoff.getTime()) continue;
        ids.push(d._id);
        if (ids.length < o.batchSize) continue;
        deleted += await this.deleteIds(r, ids);
        ids = [];
        if (o.stopped()) return deleted;
        await o.pause();
      }
      deleted += await this.deleteIds(r, ids);
    } finally {
      await cursor.close();
    }
    return deleted;
  }
}
