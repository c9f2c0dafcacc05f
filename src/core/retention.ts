/**
 * Retention: how long an environment keeps its raw records (stored events, the debugger's
 * rejected payloads, finished privacy requests, the webhooks' history, the audit log), and the
 * sweep that deletes what is older. What
 * the model learnt from those records (the users' profiles and devices, the counters) is state,
 * not a raw record, and is never touched here.
 */
import type { EnvId, Environment } from './model';
import type { Clock, Scheduler } from './ports';
import { InvalidParameters } from './errors';

export const DEFAULT_RETENTION_DAYS = 90;
export const MIN_RETENTION_DAYS = 1;
export const MAX_RETENTION_DAYS = 3650;
export const DAY_MS = 86_400_000;

/** The environment's retention in days (an environment stored before retention existed has the default). */
export const retentionDaysOf = (env: Pick<Environment, 'retentionDays'>): number =>
  env.retentionDays ?? DEFAULT_RETENTION_DAYS;

/** A retention as given by a caller, checked: a whole number of days within the bounds. */
export function checkRetentionDays(days: number): number {
  if (!Number.isInteger(days) || days < MIN_RETENTION_DAYS || days > MAX_RETENTION_DAYS) {
    throw new InvalidParameters([
      {
        field: 'retentionDays',
        message: `must be a whole number of days from ${MIN_RETENTION_DAYS} to ${MAX_RETENTION_DAYS}`,
      },
    ]);
  }
  return days;
}

/** The kinds of raw record a retention applies to, each by its own time. */
export type RetainedKind = 'events' | 'debugger' | 'privacyJobs' | 'rollups' | 'webhooks' | 'audit';
export type RetentionCounts = Record<RetainedKind, number>;
export const RETAINED_KINDS: readonly RetainedKind[] = [
  'events',
  'debugger',
  'privacyJobs',
  'rollups',
  'webhooks',
  'audit',
];

/** Finished webhook deliveries are kept for the environment's retention, and at most this long. */
export const WEBHOOK_HISTORY_MAX_DAYS = 30;

export interface RetentionSweepOptions {
  /**
   * Kinds kept at most until a time whatever the environment's retention: records of such a kind
   * older than it go too (the webhooks' history: WEBHOOK_HISTORY_MAX_DAYS).
   */
  oldest?: Partial<Record<RetainedKind, Date>>;
  /** Most records one delete names. */
  batchSize: number;
  /** Awaited between two deletes, so that a long sweep leaves the database to the hot path. */
  pause(): Promise<void>;
  /** True once the sweep should end early (shutdown): checked between two deletes. */
  stopped(): boolean;
}

/** Deletes raw records by age, per environment. */
export interface RetentionStore {
  /**
   * Delete every record of each environment in `cutoffs` older than its cutoff (events by
   * `occurredAt`, rejected payloads by `receivedAt`, ended privacy requests, finished webhook
   * deliveries by `createdAt`, audit entries by `at`), or than the kind's `oldest`, in deletes of
   * at most `batchSize` records with a pause between two. Records of an environment not in
   * `cutoffs` are left alone. Returns how many records of each kind were deleted.
   */
  sweep(cutoffs: ReadonlyMap<EnvId, Date>, o: RetentionSweepOptions): Promise<RetentionCounts>;
}

export interface RetentionDeps {
  environments: { list(): Promise<Environment[]> };
  store: RetentionStore;
  clock: Clock;
  scheduler: Scheduler;
  log: { info(obj: object, msg: string): void };
  /** Most records one delete names (default 1,000). */
  batchSize?: number;
  /** Pause between two deletes (default 20 ms). */
  pauseMs?: number;
}

export const DEFAULT_RETENTION_BATCH = 1_000;

export class RetentionService {
  private stopping = false;

  constructor(private readonly d: RetentionDeps) {}

  /** The cutoff of every environment now: records before it are past their retention. */
  async cutoffs(): Promise<Map<EnvId, Date>> {
    const now = this.d.clock.now().getTime();
    return new Map(
      (await this.d.environments.list()).map((e) => [e.id, new Date(now - retentionDaysOf(e) * DAY_MS)]),
    );
  }

  /** One pass: delete every environment's raw records past its retention. */
  async sweep(): Promise<RetentionCounts> {
    const cutoffs = await this.cutoffs();
    const pauseMs = this.d.pauseMs ?? 20;
    const now = this.d.clock.now().getTime();
    const counts = await this.d.store.sweep(cutoffs, {
      oldest: { webhooks: new Date(now - WEBHOOK_HISTORY_MAX_DAYS * DAY_MS) },
      batchSize: Math.max(1, Math.min(this.d.batchSize ?? DEFAULT_RETENTION_BATCH, DEFAULT_RETENTION_BATCH)),
      pause: () =>
        new Promise<void>((resolve) => this.d.scheduler.after(pauseMs, resolve, { background: true })),
      stopped: () => this.stopping,
    });
    if (RETAINED_KINDS.some((kind) => counts[kind] > 0))
      this.d.log.info({ ...counts }, "retention: records past their environment's retention deleted");
    return counts;
  }

  /** End a pass under way after its current delete (what is left goes at the next start's passes). */
  stop(): void {
    this.stopping = true;
  }
}
