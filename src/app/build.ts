/**
 * Composition root: builds the stores on a database, the core services on the stores, and
 * applies every repository's indexes. main.ts, the tests and the benchmark all start here.
 */
import { randomBytes, randomUUID, X509Certificate } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Db } from 'mongodb';
import { Sealer } from '../core/crypto';
import { EnvironmentService } from '../core/environments';
import { DeviceService } from '../core/devices/service';
import { PolicyService } from '../core/policies/service';
import { VerdictService } from '../core/verdicts/evaluate';
import { TrackService } from '../core/track';
import { DEFAULT_WORK_LIMITS, WorkLimiter, type WorkLimiterOptions } from '../core/work-limiter';
import { RateLimiter } from '../core/ratelimit';
import { AccessService, DEFAULT_FAILED_AUTHENTICATION_LIMIT } from '../core/access';
import type { Clock, Intel } from '../core/ports';
import { offlineIntel } from '../intel';
import type { EnvId } from '../core/model';
import { systemClock } from '../core/ports';
import type { Services } from '../core/services';
import { WebhookService } from '../core/webhooks/service';
import { PrivacyService } from '../core/privacy/service';
import { applyIndexes, type IndexSpec } from '../store/database';
import { environmentIndexes, MongoCredentialStore, MongoEnvironmentStore } from '../store/environments';
import {
  DEVICE_QUERY_FIELDS,
  DEVICES,
  StateUserStore,
  USER_QUERY_FIELDS,
  USERS,
  userStateIndexes,
} from '../store/user-state';
import { StateLayer, type StateObserver } from '../store/state/layer';
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
import { addressWindowFold, firstHourOf, windowHorizon } from '../core/scoring/counters';
import { clientObservationIndexes, StateClientObservationStore } from '../store/client-observations';
import { attestedKeyIndexes, MongoAttestedKeyStore } from '../store/attested-keys';
import { AttestationVerifier } from '../core/client/attestation/verifier';
import { APPLE_APP_ATTESTATION_ROOT_PEM } from '../core/client/attestation/apple-root';
import { clientEventIndexes, StateClientEventStore } from '../store/client-events';
import { ClientEventsService } from '../core/client/events';
import { ClientService } from '../core/client/service';
import { MongoPolicyStore, policyIndexes } from '../store/policies';
import { listIndexes, MongoListStore } from '../store/lists';
import type { ImportOptions } from '../core/lists/imports';
import { auditIndexes, MongoAuditLog } from '../store/audit';
import { ListService } from '../core/lists/service';
import { MongoWebhookStore, webhookIndexes } from '../store/webhooks';
import { MongoPrivacyStore, privacyIndexes } from '../store/privacy';
import { createSmtpMailer, noMailer } from '../mail/smtp';
import { restExportLinks } from '../rest/privacy-links';
import { httpPoster } from '../workers/http';
import { timerScheduler } from '../workers/scheduler';
import { Sweeps } from '../workers/sweeps';
import { WebhookWorker } from '../workers/webhooks';
import { QueryService } from '../core/queries/service';
import { AnalyticsService } from '../core/analytics/service';
import { MongoQueryStore, queryIndexes } from '../store/queries';
import { MongoAnalyticsStore, analyticsIndexes } from '../store/analytics';
import { AnalystGate } from '../store/analyst-gate';
import { RollupReader, RollupWriter, rollupIndexes } from '../store/rollups';
import { translatingErrors as core } from '../store/errors';
import { SessionService, type SessionOptions } from '../core/sessions/service';
import { PolicyDryRunService } from '../core/policies/dry-run';
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

  // The metrics read from the services built below; their hooks are called only once requests flow.
  const stateObserver: StateObserver = {
    read: (c, outcome) => metrics.stateObserver.read(c, outcome),
    flushed: (stats) => metrics.stateObserver.flushed(stats),
    dropped: (c, count) => metrics.stateObserver.dropped?.(c, count),
    stalled: () => metrics.stateObserver.stalled?.(),
  };
  const state = new StateLayer(db, {
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
    packed: { [USERS]: USER_QUERY_FIELDS, [COUNTERS]: COUNTER_QUERY_FIELDS, [DEVICES]: DEVICE_QUERY_FIELDS },
    now: () => clock.now().getTime(),
    observer: stateObserver,
    onError: (err, what) =>
      o.log.error({ err: err instanceof Error ? err.message : String(err) }, `state layer: ${what}`),
  });
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
  if (writeMode === 'deltas' && kind.ferretdb) await unpackStored(db, [USERS, COUNTERS, DEVICES], o.log);
  // The analysts' bulkhead: dashboards' reads wait their turn and stop at their time limit.
  const analystTimeoutMs = o.analystTimeoutMs ?? DEFAULT_ANALYST_TIMEOUT_MS;
  const analyst = {
    maxTimeMS: analystTimeoutMs,
    gate: new AnalystGate({
      concurrency: o.analystConcurrency ?? 1,
      share: o.analystShare ?? 0.5,
      waitMs: o.analystWaitMs ?? Math.max(analystTimeoutMs, DEFAULT_ANALYST_TIMEOUT_MS),
    }),
  };
  const sealer = new Sealer(o.masterKey);
  // Every repository the core is given speaks the core's errors, never the driver's (`core`).
  const writes = core(state);
  const environmentsStore = core(new MongoEnvironmentStore(db, { eventKeys: kind.indexPushdown }));
  const credentials = core(new MongoCredentialStore(db));
  const users = core(new StateUserStore(db, state));
  const rollups = new RollupWriter(state, { pushEveryMs: o.rollupPushEveryMs });
  // On Rampart's FerretDB build the values shared by many events are found through event keys.
  const eventKeys = kind.indexPushdown
    ? new EventKeyWriter(state, { pushEveryMs: o.rollupPushEveryMs })
    : undefined;
  const events = core(new MongoEventStore(db, state, rollups, eventKeys));
  const debuggerLog = core(new MongoDebuggerStore(db, state));
  // Where this process is the database's only writer, windows it never wrote are not looked up,
  // and an address's window is kept in its network's (one document written for both).
  const alone = writeMode === 'snapshots';
  const created = alone
    ? new CreatedHere(await lastBucketBefore(db, clock.now().getTime(), windowHorizon), firstHourOf)
    : undefined;
  const counters = core(
    new StateCounterStore(db, state, () => clock.now(), created, alone ? addressWindowFold : undefined),
  );
  // Policies may name only the environment's lists; a list a policy names cannot be deleted.
  const policies = new PolicyService({
    store: core(new MongoPolicyStore(db)),
    clock,
    listIds: (env) => lists.ids(env),
  });
  const audit = core(new MongoAuditLog(db));
  // Rampart's FerretDB build reads items through its indexes and replaces them in an insert.
  const lists: ListService = new ListService({
    store: core(new MongoListStore(db, { indexed: kind.indexPushdown, upsertInsert: kind.upsertInsert })),
    audit,
    clock,
    policiesUsing: (env, id) => policies.usingList(env, id),
    scheduler: timerScheduler,
    writes,
    log: o.log,
    ...(o.listImports ? { imports: o.listImports } : {}),
  });
  const environments = new EnvironmentService({
    environments: environmentsStore,
    credentials,
    policies,
    sealer,
    clock,
    authCacheMs: o.authCacheMs,
    scheduler: timerScheduler,
  });
  // At most so many verdicts at once, the bound adapting to how quickly they are answered: a
  // process given less CPU than its traffic needs answers what it admits in time and refuses the
  // rest early, instead of answering everything too late (core/work-limiter.ts).
  const limiter = new WorkLimiter({
    ...DEFAULT_WORK_LIMITS,
    ...o.workLimits,
    clock,
    scheduler: timerScheduler,
  });
  // The instance's metrics: read when scraped, from the services built below (track, webhooks).
  const metrics: Metrics = new Metrics({
    writeBacklog: () => state.backlog,
    writeLimits: () => state.limits,
    oldestUnwrittenMs: () => state.oldestUnwrittenMs(),
    writesStuckMs: () => state.stuckMs(),
    verdictWork: () => ({ inFlight: limiter.inFlight, limit: limiter.limit, waiting: limiter.waiting }),
    cachedDocuments: () => state.cachedDocuments,
    trackPending: () => track.pending,
    outbox: () => webhooks.outbox(),
  });
  const { pollMs, outboxEveryMs, ...webhookTuning } = o.webhooks ?? {};
  // The outbox metrics (core/webhooks/outbox.ts) come from what the dispatcher does, corrected by
  // a read of the open deliveries: on MongoDB an index range, read every 15 s since other
  // instances share the outbox; on FerretDB a scan of the outbox (the backlog, never the
  // history), read every 10 minutes (the embedded database has no other writer).
  const outboxReadMs = outboxEveryMs ?? (kind.ferretdb || o.privateDatabase ? 10 * 60_000 : 15_000);
  const webhooks = new WebhookService({
    // Claims without a claim document where findAndModify is atomic: MongoDB and Rampart's build.
    store: core(new MongoWebhookStore(db, state, { atomicUpdates: !kind.ferretdb || kind.indexPushdown })),
    signingSecret: (env: EnvId) => environments.signingSecret(env),
    environments: environmentsStore,
    clock,
    http: httpPoster,
    scheduler: timerScheduler,
    instanceId: randomUUID(),
    log: o.log,
    observer: metrics.webhookObserver,
    ...webhookTuning,
  });
  const observations = core(new StateClientObservationStore(db, state));
  // Collections per environment and source address: a page asks once per form submission.
  const attestedKeys = core(new MongoAttestedKeyStore(db));
  const attestation = new AttestationVerifier({
    keys: attestedKeys,
    appleRoot: new X509Certificate(o.appAttestRoot ?? APPLE_APP_ATTESTATION_ROOT_PEM),
    open: (sealed) => sealer.open(sealed),
  });
  const CLIENT_LIMIT = { per: 'per environment and source address', setting: 'RAMPART_CLIENT_RATE_LIMIT' };
  const client = new ClientService({
    environments: environmentsStore,
    key: sealer.macKey('client-token'),
    clock,
    observations,
    limiter: new RateLimiter(
      o.clientRateLimitPerSecond ?? 10,
      3 * (o.clientRateLimitPerSecond ?? 10),
      CLIENT_LIMIT,
    ),
    powBits: o.clientPowBits,
    attestation,
  });
  const appEvents = core(new StateClientEventStore(db, state));
  // App events per environment and source address: an install flushes on each open, close and
  // identify, and every 20 events.
  const clientEvents = new ClientEventsService({
    keys: client.keys,
    key: sealer.macKey('client-token'),
    clock,
    limiter: new RateLimiter(
      o.clientRateLimitPerSecond ?? 10,
      3 * (o.clientRateLimitPerSecond ?? 10),
      CLIENT_LIMIT,
    ),
    sink: appEvents,
    counters,
    secrets: (env: EnvId) => environments.liveSecrets(env),
    maxEventAgeMs: o.maxEventAgeMs,
    writes,
    ackTimeoutMs: o.state?.ackTimeoutMs,
  });
  const devices = new DeviceService({ users, webhooks, clock, clientTokens: client });
  const track = new TrackService({
    users,
    events,
    counters,
    debuggerLog,
    deviceService: devices,
    webhooks,
    writes,
    clock,
    scheduler: timerScheduler,
    intel,
    log: o.log,
    clientTokens: client,
    ackTimeoutMs: o.state?.ackTimeoutMs,
  });
  const verdicts = new VerdictService({
    users,
    events,
    counters,
    writes,
    policies,
    lists,
    webhooks,
    clock,
    intel,
    log: o.log,
    budgetMs: o.verdictBudgetMs,
    maxEventAgeMs: o.maxEventAgeMs,
    observer: metrics.verdictObserver,
    clientTokens: client,
    deviceTokenKey: sealer.macKey('device-token'),
    limiter,
  });
  const privacy = new PrivacyService({
    store: core(new MongoPrivacyStore(db, state, { eraseAfterPurge: kind.ferretdb, log: o.log })),
    users,
    writes,
    webhooks,
    mailer: o.smtpUrl ? createSmtpMailer({ url: o.smtpUrl, from: o.mailFrom }) : noMailer,
    sealer,
    clock,
    links: restExportLinks(o.publicUrl),
    log: o.log,
  });
  const access = new AccessService({
    environments,
    limiter: new RateLimiter(o.rateLimitPerSecond, undefined, {
      per: 'per environment',
      setting: 'RAMPART_RATE_LIMIT',
    }),
    failedLimit: {
      limit: o.authFailuresPerMinute ?? DEFAULT_FAILED_AUTHENTICATION_LIMIT.limit,
      windowMs: 60_000,
    },
    now: () => clock.now().getTime(),
  });
  const sessions = new SessionService(
    {
      store: core(new MongoSessionStore(db)),
      access,
      environments,
      clock,
      csrfKey: sealer.macKey('console-csrf'),
    },
    o.sessions,
  );
  // Rampart's FerretDB build serves the dashboards through a few indexes and the event keys;
  // MongoDB through its own indexes (docs/state.md, "The analysts' read path").
  const embeddedSearch = kind.indexPushdown
    ? new EmbeddedEventSearch(
        o.analystDb ?? db,
        analyst,
        new EventKeyReader(o.analystDb ?? db, analyst.gate, analyst.maxTimeMS),
        { maxExamined: o.analystMaxExamined },
      )
    : undefined;
  const analyticsStore = core(
    new MongoAnalyticsStore(
      o.analystDb ?? db,
      analyst,
      new RollupReader(o.analystDb ?? db, analyst.gate, analyst.maxTimeMS, {
        now: () => clock.now().getTime(),
        cacheMs: o.rollupCacheMs,
        indexed: kind.indexPushdown || !kind.ferretdb,
      }),
      embeddedSearch,
    ),
  );
  const services: Services = {
    environments,
    verdicts,
    track,
    devices,
    policies,
    lists,
    webhooks,
    privacy,
    client,
    clientEvents,
    access,
    queries: new QueryService(core(new MongoQueryStore(o.analystDb ?? db, analyst, embeddedSearch)), users),
    analytics: new AnalyticsService(analyticsStore, clock),
    dryRun: new PolicyDryRunService({ policies, events: analyticsStore, clock, lists }),
    sessions,
    read: { users },
  };
  // FerretDB finds old records by reading each collection once, through the analysts' reader
  // (a lower CPU priority) when there is one; MongoDB through its (envId, time) indexes.
  const retention = new RetentionService({
    environments: environmentsStore,
    store: core(
      new MongoRetentionStore(db, {
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
  const rollupCompactor = new RollupCompactor(db, {
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
      const until = Date.now() + (o.drainTimeoutMs ?? 20_000);
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
