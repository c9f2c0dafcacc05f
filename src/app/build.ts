/**
 * Composition root: applies every repository's indexes, builds the stores and the state layer on
 * a database, hands them with the platform's adapters to the core's one wiring of the use cases
 * (createServices, core/create-services.ts), and builds the workers around it. main.ts, the
 * tests and the benchmark all start here.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Db } from 'mongodb';
import { Sealer } from '../core/crypto';
import { createServices } from '../core/create-services';
import type { Services } from '../core/services';
import type { SessionOptions } from '../core/sessions/service';
import type { WorkLimiterOptions } from '../core/work-limiter';
import type { Clock, Intel } from '../core/ports';
import { offlineIntel } from '../intel';
import { systemClock } from '../core/ports';
import { applyIndexes, type IndexSpec } from '../store/database';
import { environmentIndexes, MongoCredentialStore, MongoEnvironmentStore } from '../store/environments';
import {
  DEVICE_QUERY_FIELDS,
  DEVICES,
  StateUserStore,
  USER_KEYED,
  USER_QUERY_FIELDS,
  USER_WRITE_ORDER,
  USERS,
  userStateIndexes,
} from '../store/user-state';
import { StateLayer } from '../store/state/layer';
import { migrateLegacyDevices, migrateWebhookOutbox, unpackStored } from '../store/migrations';
import { indexesFor, serverKind, staleIndexes } from '../store/server-kind';
import { eventIndexes, MongoDebuggerStore, MongoEventStore } from '../store/events';
import {
  COUNTER_QUERY_FIELDS,
  COUNTERS,
  counterIndexes,
  lastBucketBefore,
  StateCounterStore,
} from '../store/counters';
import { CreatedHere } from '../store/created-here';
import { DEFAULT_KNOWN_IDS_MAX, knownIdsOf } from '../store/state/known-ids';
import { addressWindowFold, firstHourOf, windowHorizon } from '../core/scoring/counters';
import { clientObservationIndexes, StateClientObservationStore } from '../store/client-observations';
import { attestedKeyIndexes, MongoAttestedKeyStore } from '../store/attested-keys';
import { clientEventIndexes, StateClientEventStore } from '../store/client-events';
import { MongoPolicyStore, policyIndexes } from '../store/policies';
import { listIndexes, MongoListStore } from '../store/lists';
import type { ImportOptions } from '../core/lists/imports';
import { auditIndexes, MongoAuditLog } from '../store/audit';
import { MongoWebhookStore, webhookIndexes } from '../store/webhooks';
import { MongoPrivacyStore, privacyIndexes } from '../store/privacy';
import { createSmtpMailer, noMailer } from '../mail/smtp';
import { restExportLinks } from '../rest/privacy-links';
import { httpPoster } from '../workers/http';
import { timerScheduler } from '../workers/scheduler';
import { Sweeps } from '../workers/sweeps';
import { WebhookWorker } from '../workers/webhooks';
import { MongoQueryStore, queryIndexes } from '../store/queries';
import { MongoAnalyticsStore, analyticsIndexes } from '../store/analytics';
import { AnalystGate } from '../store/analyst-gate';
import { ROLLUP_QUERY_FIELDS, ROLLUPS, RollupReader, RollupWriter, rollupIndexes } from '../store/rollups';
import { translatingErrors as core } from '../store/errors';
import { MongoSessionStore, sessionIndexes } from '../store/sessions';
import { MongoRetentionStore, type RetentionStrategy } from '../store/retention';
import { EventKeyReader, EventKeyWriter, eventKeyIndexes } from '../store/event-keys';
import { EmbeddedEventSearch } from '../store/embedded-search';
import { RetentionService, retentionDaysOf } from '../core/retention';
import { RollupCompactor } from '../store/rollup-compactor';
import type { Logger } from './logger';
import { Metrics } from './metrics';
import type { StateConfig } from '../config';

export const ALL_INDEXES: readonly IndexSpec[] = [
  ...environmentIndexes,
  ...userStateIndexes,
  ...eventIndexes,
  ...counterIndexes,
  ...clientObservationIndexes,
  ...attestedKeyIndexes,
  ...clientEventIndexes,
  ...policyIndexes,
  ...webhookIndexes,
  ...privacyIndexes,
  ...queryIndexes,
  ...analyticsIndexes,
  ...sessionIndexes,
  ...eventKeyIndexes,
  ...rollupIndexes,
  ...listIndexes,
  ...auditIndexes,
];

/** Every index `specs` declares on one collection (several specs may name it). */
const mergedSpec = (specs: readonly IndexSpec[], collection: string): IndexSpec => ({
  collection,
  indexes: specs.filter((s) => s.collection === collection).flatMap((s) => s.indexes),
});

const COUNTER_SWEEP_MS = 10 * 60_000;
const PRIVACY_SWEEP_MS = 10 * 60_000;
/**
 * Retention is counted in days: a pass every 6 hours deletes a record within 6 hours of its
 * expiry. On FerretDB a pass reads the events once (~100 µs of its CPU per event, measured), so
 * it is not run more often than that precision needs.
 */
const RETENTION_SWEEP_MS = 6 * 60 * 60_000;
/** How often settled rollups are packed (see store/rollup-compactor.ts): an hour is packed within minutes of settling. */
const ROLLUP_PACK_MS = 5 * 60_000;

export interface BuildOptions {
  db: Db;
  log: Logger;
  masterKey: string;
  authCacheMs: number;
  rateLimitPerSecond: number;
  /** Browser-client collections per second per environment and source address (default 10, bursts of three times that). */
  clientRateLimitPerSecond?: number;
  /** The browser client's proof of work, in leading zero bits (default DEFAULT_POW_BITS; 0: trivial, for tests). */
  clientPowBits?: number;
  /** The App Attest trust anchor, PEM (default: Apple's App Attestation root; tests give their own). */
  appAttestRoot?: string;
  /** Failed authentications per minute from one address before it gets 429 (default 30). */
  authFailuresPerMinute?: number;
  publicUrl: string;
  smtpUrl: string | undefined;
  mailFrom: string;
  clock?: Clock;
  /** How often the overview's rollups hand their counts to the state layer (default 5 s; see RollupWriter). */
  rollupPushEveryMs?: number;
  /** How long the analysts' reader keeps settled rollups in memory (default 5 minutes; 0: never). */
  rollupCacheMs?: number;
  /** Candidates one dashboard search reads at most on the embedded database (default 2,000). */
  analystMaxExamined?: number;
  /** Reference data events are enriched with (default: the offline databases of src/intel). */
  intel?: Intel;
  /**
   * Webhook worker tuning (tests shorten these). `outboxEveryMs`: how often the open deliveries
   * are read again for the outbox metrics (default: 15 s on MongoDB, 10 min on FerretDB).
   */
  webhooks?: {
    pollMs?: number;
    backoffBaseMs?: number;
    maxAttempts?: number;
    dedupeWindowMs?: number;
    outboxEveryMs?: number;
  };
  /** How long a verdict may wait for its state (default 150 ms). */
  verdictBudgetMs?: number;
  /** The database as dashboards read it (searches, analytics): its own bounded pool (default: `db`). */
  analystDb?: Db;
  /** Longest one dashboard read may run in the database (`maxTimeMS`; default 10 s). */
  analystTimeoutMs?: number;
  /** Longest a dashboard read waits for its turn at the analysts' gate (default: the larger of `analystTimeoutMs` and 10 s). */
  analystWaitMs?: number;
  /** Dashboard reads at once (default 1), and the most of the time they may hold the database (default 0.5). */
  analystConcurrency?: number;
  analystShare?: number;
  /** Oldest event time a verdict accepts as such (older: scored as now, see VerdictService). */
  maxEventAgeMs?: number;
  /** State layer tuning (defaults in DEFAULT_STATE_OPTIONS). */
  state?: Partial<StateConfig> & { writeMode?: 'deltas' | 'snapshots' };
  /**
   * This process is the database's only writer (the embedded FerretDB it started): the state
   * layer may then write whole documents (see StateOptions.writeMode).
   */
  privateDatabase?: boolean;
  /** How long shutdown keeps trying to write what is queued when the database is down. Default 20 s. */
  drainTimeoutMs?: number;
  /**
   * The writer's own connections (the runtime's): the state layer's flushes go through `db()`,
   * and `stalled()` is told when the watchdog abandoned a flush (the runtime opens new ones).
   * Default: the flushes share `db`.
   */
  writer?: { db: () => Db; stalled: () => void };
  /** The verdicts' work limiter (defaults in DEFAULT_WORK_LIMITS: at most 128 at once, a second's wait). */
  workLimits?: Partial<Pick<WorkLimiterOptions, 'maxLimit' | 'maxWaitMs'>>;
  /** Console sessions' idle and absolute lifetimes (defaults 30 min, 12 h). */
  sessions?: SessionOptions;
  /**
   * The retention sweep: how it finds old records (default: `scan` on FerretDB, `per-environment`
   * on MongoDB, see store/retention.ts), how many one delete names (at most and by default
   * 1,000), and the pause between two deletes (default 20 ms).
   */
  retention?: { strategy?: RetentionStrategy; batchSize?: number; pauseMs?: number };
  /** CSV imports of list items: the size written before the answer, the batches and pauses of a job (core/lists/imports.ts). */
  listImports?: ImportOptions & { maxRows?: number };
}

export interface Built {
  services: Services;
  /** The state layer (cache and write-behind queue): for readiness and tests. */
  state: StateLayer;
  /** Prometheus metrics of this instance (GET /metrics). */
  metrics: Metrics;
  /** The retention sweep (run every 6 hours once started; tests run a pass themselves). */
  retention: RetentionService;
  /** Packs settled rollups (every 5 minutes once started, and at start; tests run a pass themselves). */
  rollupCompactor: RollupCompactor;
  /** Start background workers (webhook outbox, privacy sweeper). */
  start(): void;
  /** Drain track, flush events, stop workers. */
  stop(): Promise<void>;
}

/** Longest one dashboard read may run in the database by default. */
export const DEFAULT_ANALYST_TIMEOUT_MS = 10_000;
/** Dashboard reads at once by default. */
export const DEFAULT_ANALYST_CONCURRENCY = 1;
/** The most of the time dashboard reads may hold the database by default. */
export const DEFAULT_ANALYST_SHARE = 0.5;
/** How long shutdown keeps trying to write what is queued, by default. */
export const DEFAULT_DRAIN_TIMEOUT_MS = 20_000;
/** How often the open webhook deliveries are read for the metrics (see buildServices). */
const OUTBOX_READ_MS = { shared: 15_000, embedded: 10 * 60_000 };

export async function buildServices(o: BuildOptions): Promise<Built> {
  const clock = o.clock ?? systemClock;
  const intel = o.intel ?? offlineIntel;
  const db = o.db;
  const kind = await serverKind(db);
  const indexes = indexesFor(kind, ALL_INDEXES);
  // On FerretDB a non-unique index serves no read unless it is one of this build's (and costs
  // every write): those of an earlier version or build go.
  await applyIndexes(
    db,
    indexes,
    kind.ferretdb
      ? (collection, existing) => staleIndexes(existing, mergedSpec(indexes, collection))
      : undefined,
  );
  // Whole-document writes only where this process is the database's only writer, and the
  // server is Rampart's FerretDB build (see StateOptions.writeMode).
  const writeMode = o.state?.writeMode ?? (o.privateDatabase && kind.upsertInsert ? 'snapshots' : 'deltas');
  if (o.privateDatabase && !kind.upsertInsert)
    o.log.warn(
      'the embedded FerretDB cannot replace documents in an insert (an older build?): writing deltas, which is slower',
    );

  // The instance's metrics: the state layer, the verdicts and the webhooks report to them; their
  // gauges read the services built below (metrics.measure, once they exist).
  const metrics = new Metrics();
  // Where this process is the database's only writer, a user or counter document it never saw
  // (neither at start nor since) is known absent without a look-up (store/state/known-ids.ts).
  const knownIdsMax = o.state?.knownIdsMax ?? DEFAULT_KNOWN_IDS_MAX;
  const known =
    writeMode === 'snapshots' && knownIdsMax > 0 ? await knownIdsOf(db, [USERS, COUNTERS], knownIdsMax) : {};
  const state = new StateLayer(db, {
    known,
    ...(o.state?.cacheEntries !== undefined ? { maxEntries: o.state.cacheEntries } : {}),
    ...(o.state?.flushIntervalMs !== undefined ? { flushIntervalMs: o.state.flushIntervalMs } : {}),
    ...(o.state?.queueLimit !== undefined ? { queueLimit: o.state.queueLimit } : {}),
    ...(o.state?.maxUnwrittenMs !== undefined ? { maxUnwrittenMs: o.state.maxUnwrittenMs } : {}),
    ...(o.state?.writeTimeoutMs !== undefined
      ? { writeTimeoutMs: o.state.writeTimeoutMs, readTimeoutMs: o.state.writeTimeoutMs }
      : {}),
    ...(o.writer ? { writer: o.writer.db, onStall: o.writer.stalled } : {}),
    ...(o.state?.maxAgeMs !== undefined ? { maxAgeMs: o.state.maxAgeMs } : {}),
    writeMode,
    packed: {
      [USERS]: USER_QUERY_FIELDS,
      [COUNTERS]: COUNTER_QUERY_FIELDS,
      [DEVICES]: DEVICE_QUERY_FIELDS,
      [ROLLUPS]: ROLLUP_QUERY_FIELDS,
    },
    keyed: { [USERS]: USER_KEYED },
    writeOrder: USER_WRITE_ORDER,
    // The layer asks the time a few dozen times per verdict: the system's without a Date each.
    now: clock === systemClock ? Date.now : () => clock.now().getTime(),
    observer: metrics.stateObserver,
    onError: (err, what) =>
      o.log.error({ err: err instanceof Error ? err.message : String(err) }, `state layer: ${what}`),
  });
  // Their ids are read behind the start: until each collection's are, its documents are looked up.
  const scans = Promise.all(
    Object.values(known).map((k) => {
      const started = Date.now();
      return k.scan(db).then(
        () =>
          o.log.info({ collection: k.collection, ids: k.added, ms: Date.now() - started }, 'known ids read'),
        (err: unknown) =>
          o.log.warn(
            { collection: k.collection, err: err instanceof Error ? err.message : String(err) },
            'known ids not read: its documents are looked up',
          ),
      );
    }),
  );
  await migrateLegacyDevices(db, state, o.log);
  // Open webhook deliveries of an earlier version into the outbox (on MongoDB at every start:
  // older instances may still be recording into the history during an upgrade).
  await migrateWebhookOutbox(db, {
    everyStart: !kind.ferretdb,
    dedupeWindowMs: o.webhooks?.dedupeWindowMs,
    now: clock.now(),
    log: o.log,
  });
  // Documents packed by an embedded Rampart must be plain before anything writes deltas to them.
  if (writeMode === 'deltas' && kind.ferretdb)
    await unpackStored(db, [USERS, COUNTERS, DEVICES, ROLLUPS], o.log);
  // The analysts' bulkhead: dashboards' reads wait their turn and stop at their time limit.
  const analystTimeoutMs = o.analystTimeoutMs ?? DEFAULT_ANALYST_TIMEOUT_MS;
  const analyst = {
    maxTimeMS: analystTimeoutMs,
    gate: new AnalystGate({
      concurrency: o.analystConcurrency ?? DEFAULT_ANALYST_CONCURRENCY,
      share: o.analystShare ?? DEFAULT_ANALYST_SHARE,
      waitMs: o.analystWaitMs ?? Math.max(analystTimeoutMs, DEFAULT_ANALYST_TIMEOUT_MS),
    }),
  };
  const sealer = new Sealer(o.masterKey);
  // Every repository the core is given speaks the core's errors, never the driver's (`core`).
  const environmentsStore = core(new MongoEnvironmentStore({ db, eventKeys: kind.indexPushdown }));
  const rollups = new RollupWriter({ state, pushEveryMs: o.rollupPushEveryMs });
  // On Rampart's FerretDB build the values shared by many events are found through event keys.
  const eventKeys = kind.indexPushdown
    ? new EventKeyWriter({ state, pushEveryMs: o.rollupPushEveryMs })
    : undefined;
  // Where this process is the database's only writer, windows it never wrote are not looked up,
  // and an address's window is kept in its network's (one document written for both).
  const alone = writeMode === 'snapshots';
  const created = alone
    ? new CreatedHere(await lastBucketBefore(db, clock.now().getTime(), windowHorizon), firstHourOf)
    : undefined;
  const counters = core(
    new StateCounterStore({
      db,
      state,
      now: () => clock.now(),
      created,
      fold: alone ? addressWindowFold : undefined,
    }),
  );
  const observations = core(new StateClientObservationStore({ db, state }));
  const attestedKeys = core(new MongoAttestedKeyStore({ db }));
  const appEvents = core(new StateClientEventStore({ db, state }));
  // Rampart's FerretDB build serves the dashboards through a few indexes and the event keys;
  // MongoDB through its own indexes (docs/state.md, "The analysts' read path").
  const embeddedSearch = kind.indexPushdown
    ? new EmbeddedEventSearch({
        db: o.analystDb ?? db,
        limits: analyst,
        keys: new EventKeyReader({ db: o.analystDb ?? db, gate: analyst.gate, maxTimeMS: analyst.maxTimeMS }),
        maxExamined: o.analystMaxExamined,
      })
    : undefined;
  const { pollMs, outboxEveryMs, ...webhookTuning } = o.webhooks ?? {};
  // The use cases, wired once (core/create-services.ts) to the MongoDB stores and the platform;
  // the unit tests wire the same function to the fakes (test/support/fakes).
  const services = createServices(
    {
      stores: {
        environments: environmentsStore,
        credentials: core(new MongoCredentialStore({ db })),
        users: core(new StateUserStore({ db, state })),
        events: core(new MongoEventStore({ db, state, rollups, keys: eventKeys })),
        debuggerLog: core(new MongoDebuggerStore({ db, state })),
        counters,
        policies: core(new MongoPolicyStore({ db })),
        // Rampart's FerretDB build reads items through its indexes and replaces them in an insert.
        lists: core(new MongoListStore({ db, indexed: kind.indexPushdown, upsertInsert: kind.upsertInsert })),
        audit: core(new MongoAuditLog({ db })),
        // Claims without a claim document where findAndModify is atomic: MongoDB and Rampart's build.
        webhooks: core(
          new MongoWebhookStore({ db, state, atomicUpdates: !kind.ferretdb || kind.indexPushdown }),
        ),
        privacy: core(new MongoPrivacyStore({ db, state, eraseAfterPurge: kind.ferretdb, log: o.log })),
        observations,
        attestedKeys,
        appEvents,
        sessions: core(new MongoSessionStore({ db })),
        queries: core(
          new MongoQueryStore({ db: o.analystDb ?? db, limits: analyst, embedded: embeddedSearch }),
        ),
        analytics: core(
          new MongoAnalyticsStore({
            db: o.analystDb ?? db,
            limits: analyst,
            rollups: new RollupReader({
              db: o.analystDb ?? db,
              gate: analyst.gate,
              maxTimeMS: analyst.maxTimeMS,
              now: () => clock.now().getTime(),
              cacheMs: o.rollupCacheMs,
              indexed: kind.indexPushdown || !kind.ferretdb,
            }),
            embedded: embeddedSearch,
          }),
        ),
      },
      writes: core(state),
      clock,
      scheduler: timerScheduler,
      http: httpPoster,
      mailer: o.smtpUrl ? createSmtpMailer({ url: o.smtpUrl, from: o.mailFrom }) : noMailer,
      intel,
      links: restExportLinks(o.publicUrl),
      sealer,
      log: o.log,
      observers: { verdicts: metrics.verdictObserver, webhooks: metrics.webhookObserver },
    },
    {
      authCacheMs: o.authCacheMs,
      rateLimitPerSecond: o.rateLimitPerSecond,
      clientRateLimitPerSecond: o.clientRateLimitPerSecond,
      clientPowBits: o.clientPowBits,
      appAttestRoot: o.appAttestRoot,
      authFailuresPerMinute: o.authFailuresPerMinute,
      verdictBudgetMs: o.verdictBudgetMs,
      maxEventAgeMs: o.maxEventAgeMs,
      ackTimeoutMs: o.state?.ackTimeoutMs,
      workLimits: o.workLimits,
      sessions: o.sessions,
      listImports: o.listImports,
      webhooks: webhookTuning,
    },
  );
  const { track, webhooks, privacy, lists, sessions, verdicts } = services;
  // The outbox metrics (core/webhooks/outbox.ts) come from what the dispatcher does, corrected by
  // a read of the open deliveries: on MongoDB an index range, read every 15 s since other
  // instances share the outbox; on FerretDB a scan of the outbox (the backlog, never the
  // history), read every 10 minutes (the embedded database has no other writer).
  const outboxReadMs =
    outboxEveryMs ?? (kind.ferretdb || o.privateDatabase ? OUTBOX_READ_MS.embedded : OUTBOX_READ_MS.shared);
  // What the gauges read when scraped.
  metrics.measure({
    writeBacklog: () => state.backlog,
    writeLimits: () => state.limits,
    oldestUnwrittenMs: () => state.oldestUnwrittenMs(),
    writesStuckMs: () => state.stuckMs(),
    verdictWork: () => verdicts.work,
    cachedDocuments: () => state.cachedDocuments,
    trackPending: () => track.pending,
    outbox: () => webhooks.outbox(),
  });
  // FerretDB finds old records by reading each collection once, through the analysts' reader
  // (a lower CPU priority) when there is one; MongoDB through its (envId, time) indexes.
  const retention = new RetentionService({
    environments: environmentsStore,
    store: core(
      new MongoRetentionStore({
        db,
        strategy: o.retention?.strategy ?? (kind.ferretdb ? 'scan' : 'per-environment'),
        scanDb: o.analystDb ?? db,
      }),
    ),
    clock,
    scheduler: timerScheduler,
    log: o.log,
    ...(o.retention?.batchSize !== undefined ? { batchSize: o.retention.batchSize } : {}),
    ...(o.retention?.pauseMs !== undefined ? { pauseMs: o.retention.pauseMs } : {}),
  });
  const rollupCompactor = new RollupCompactor({
    db,
    environments: async () =>
      (await environmentsStore.list()).map((e) => ({ id: e.id, retentionDays: retentionDaysOf(e) })),
    now: () => clock.now().getTime(),
  });
  // The workers: when webhooks are delivered, and when expired data is swept.
  const webhookWorker = new WebhookWorker(webhooks, {
    scheduler: timerScheduler,
    log: o.log,
    pollMs,
    outboxEveryMs: outboxReadMs,
  });
  const sweeps = new Sweeps(
    [
      { name: 'privacy', everyMs: PRIVACY_SWEEP_MS, run: () => privacy.sweep() },
      { name: 'list imports', everyMs: PRIVACY_SWEEP_MS, atStart: false, run: () => lists.sweepImports() },
      { name: 'counters', everyMs: COUNTER_SWEEP_MS, atStart: false, run: () => counters.sweep(clock.now()) },
      {
        name: 'client observations',
        everyMs: COUNTER_SWEEP_MS,
        atStart: false,
        run: () => observations.sweep(clock.now()),
      },
      {
        name: 'attested keys',
        everyMs: RETENTION_SWEEP_MS,
        atStart: false,
        run: () => attestedKeys.sweep(clock.now()),
      },
      {
        name: 'app events',
        everyMs: COUNTER_SWEEP_MS,
        atStart: false,
        run: () => appEvents.sweep(clock.now()),
      },
      { name: 'console sessions', everyMs: COUNTER_SWEEP_MS, atStart: false, run: () => sessions.sweep() },
      // Not at start: an upgrade leaves 6 hours to set a longer retention than the default.
      {
        name: 'retention',
        everyMs: RETENTION_SWEEP_MS,
        atStart: false,
        run: () => retention.sweep(),
        stop: () => retention.stop(),
      },
      {
        name: 'rollup packing',
        everyMs: ROLLUP_PACK_MS,
        run: () => rollupCompactor.run(),
        stop: () => rollupCompactor.stop(),
      },
    ],
    { scheduler: timerScheduler, log: o.log },
  );
  return {
    services,
    state,
    metrics,
    retention,
    rollupCompactor,
    start() {
      webhookWorker.start();
      sweeps.start();
    },
    async stop() {
      // One deadline for the whole drain, so that a database that does not answer cannot hold
      // the exit past what a service manager allows (each step gets what is left of it).
      const until = Date.now() + (o.drainTimeoutMs ?? DEFAULT_DRAIN_TIMEOUT_MS);
      const left = () => Math.max(0, until - Date.now());
      const within = <T>(work: Promise<T>, what: string) =>
        new Promise<void>((resolve) => {
          const timer = setTimeout(() => {
            o.log.error({ what }, 'shutdown: gave up waiting');
            resolve();
          }, left());
          work
            .then(
              () => resolve(),
              (err: unknown) => {
                o.log.error(
                  { err: err instanceof Error ? err.message : String(err), what },
                  'shutdown: a step failed',
                );
                resolve();
              },
            )
            .finally(() => clearTimeout(timer));
        });
      await within(sweeps.stop(), 'background sweeps');
      for (const k of Object.values(known)) k.stop();
      await within(scans, 'reading known ids');
      // Track's queue first (it produces writes), then everything queued for the database.
      await within(track.drain(true, left()), 'the track queue');
      await within(webhookWorker.stop(), 'webhook deliveries in flight');
      await within(privacy.stop(), 'privacy jobs');
      await within(lists.stop(), 'list imports');
      rollups.drain();
      eventKeys?.drain();
      await state
        .close(left())
        .catch((err: unknown) =>
          o.log.error(
            { err: err instanceof Error ? err.message : String(err), lost: state.backlog },
            'shutdown: queued writes could not be written',
          ),
        );
    },
  };
}

/** The master key: configured, or (development) generated once and kept in the data directory. */
export function resolveMasterKey(configured: string | undefined, dataDir: string): string {
  if (configured) return configured.toLowerCase();
  const file = path.join(dataDir, 'master.key');
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  mkdirSync(dataDir, { recursive: true });
  const key = randomBytes(32).toString('hex');
  writeFileSync(file, `${key}\n`, { mode: 0o600 });
  return key;
}
