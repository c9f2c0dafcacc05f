/**
 * Prometheus metrics (prom-client): requests per door (REST, gRPC, GraphQL, the console) and
 * route, authentication failures and rate limits per door, verdicts and their latency, the state
 * layer's cache, write queue and flushes, the track queue, the webhook outbox and its deliveries,
 * and the database's health probe; plus the process's own (memory, CPU, event-loop lag). Served
 * at GET /metrics on the HTTP listener; docs/operations.md lists every metric.
 *
 * No label carries a tenant, a user, an address or any request data (routes are templates, gRPC
 * methods their full names), so the number of series stays fixed. A scrape reads memory only:
 * every gauge is computed from counters the services keep, never from the database, so a hung
 * database never holds a scrape.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { StateObserver } from '../store/state/layer';
import type { VerdictObserver } from '../core/verdicts/evaluate';
import type { WebhookObserver } from '../core/webhooks/service';

/** Latency buckets from 0.5 ms to 10 s: verdicts are expected in single-digit milliseconds. */
const LATENCY = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.15, 0.25, 0.5, 1, 2.5, 5, 10];

const READ_OUTCOMES = ['hit', 'absent', 'miss', 'stale'] as const;
type ReadOutcome = (typeof READ_OUTCOMES)[number];

/** The doors requests come through: REST `/v1`, gRPC, GraphQL `/graphql`, the web console `/console`. */
export const DOORS = ['rest', 'grpc', 'graphql', 'console'] as const;
export type Door = (typeof DOORS)[number];

/** Statuses that mean "authentication failed" and "rate-limited", over HTTP and gRPC. */
const UNAUTHENTICATED = new Set<string | number>([401, 'UNAUTHENTICATED']);
const RATE_LIMITED = new Set<string | number>([429, 'RESOURCE_EXHAUSTED']);

export interface MetricsSources {
  /** Writes waiting in the state layer. */
  writeBacklog(): number;
  /** Documents held in the state cache. */
  cachedDocuments(): number;
  /** Track events accepted and not yet applied. */
  trackPending(): number;
  /** The state layer's bounds (RAMPART_MAX_UNWRITTEN_MS, RAMPART_WRITE_QUEUE_LIMIT). */
  writeLimits(): { maxUnwrittenMs: number; queueLimit: number };
  /** How long ago the oldest unwritten change was queued (ms; 0: none). */
  oldestUnwrittenMs(): number;
  /** How long writes have been due without a flush writing them (ms; 0: writing). */
  writesStuckMs(): number;
  /** Verdicts computing now, their adaptive bound, and those waiting for a turn (core/work-limiter.ts). */
  verdictWork(): { inFlight: number; limit: number; waiting: number };
  /** The webhook outbox as the dispatcher knows it (WebhookService.outbox: memory only). */
  outbox(): { depth: number; oldestAgeSeconds: number };
}

/** What the embedded database's size gauges read: the file sizes last read (store/embedded-wal.ts). */
export interface EmbeddedFilesSource {
  sizes(): { databaseBytes: number; walBytes: number } | null;
}

/** What the up gauge reads: whether the database answers now (store/health.ts). */
export interface DatabaseStatusSource {
  down(): string | null;
}

/** What the gauges read until the services are built and given (Metrics.measure). */
const NOTHING_YET: MetricsSources = {
  writeBacklog: () => 0,
  cachedDocuments: () => 0,
  trackPending: () => 0,
  writeLimits: () => ({ maxUnwrittenMs: 0, queueLimit: 0 }),
  oldestUnwrittenMs: () => 0,
  writesStuckMs: () => 0,
  verdictWork: () => ({ inFlight: 0, limit: 0, waiting: 0 }),
  outbox: () => ({ depth: 0, oldestAgeSeconds: 0 }),
};

/**
 * The instance's Prometheus metrics. Built first (the state layer, the verdicts and the webhooks
 * report to its observers); the gauges read the services given to `measure` once they exist.
 */
export class Metrics {
  private sources: MetricsSources = NOTHING_YET;

  /** The services the gauges read when scraped. */
  measure(sources: MetricsSources): void {
    this.sources = sources;
  }

  readonly registry = new Registry();
  private readonly requests: Histogram<'door' | 'route' | 'status'>;
  private readonly authFailures: Counter<'door'>;
  private readonly rateLimited: Counter<'door'>;
  private readonly verdicts: Counter<'endpoint' | 'action' | 'degraded'>;
  private readonly verdictSeconds: Histogram<'endpoint'>;
  private readonly reads: Counter<'collection' | 'outcome'>;
  /** State reads not yet handed to `reads`, per collection. */
  private readonly pendingReads = new Map<string, Record<ReadOutcome, number>>();
  private readonly flushSeconds: Histogram<'outcome'>;
  private readonly flushWrites: Counter<'kind'>;
  private readonly flushBytes: Counter<'collection'>;
  private readonly flushErrors: Counter;
  private readonly flushStalls: Counter;
  private readonly droppedWrites: Counter<'collection'>;
  private readonly webhookAttempts: Counter;
  private readonly webhookFailures: Counter<'status'>;
  private readonly webhooksGivenUp: Counter;
  /** Registered once a database status is attached (the runtime's health probe): see watchDatabase. */
  private readonly databaseUp: Gauge;
  private readonly probeSeconds: Histogram;
  private databaseStatus: DatabaseStatusSource | null = null;
  private readonly walCheckpoints: Counter<'outcome'>;
  private embeddedFiles: { source: EmbeddedFilesSource; database: string; limitBytes: number } | null = null;

  constructor() {
    const sources = (): MetricsSources => this.sources;
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry, prefix: 'rampart_' });
    this.requests = new Histogram({
      name: 'rampart_request_duration_seconds',
      help: 'Requests by door (rest, grpc, graphql, console), route (gRPC: the full method name) and status (HTTP status, or gRPC status code name)',
      labelNames: ['door', 'route', 'status'],
      buckets: LATENCY,
      registers,
    });
    this.authFailures = new Counter({
      name: 'rampart_auth_failures_total',
      help: 'Requests refused because their credential was missing or wrong (HTTP 401, gRPC UNAUTHENTICATED), by door',
      labelNames: ['door'],
      registers,
    });
    this.rateLimited = new Counter({
      name: 'rampart_rate_limited_total',
      help: 'Requests refused by a rate limit (HTTP 429, gRPC RESOURCE_EXHAUSTED), by door',
      labelNames: ['door'],
      registers,
    });
    // Every door's series exist from the start (at 0), so that rate() and alerts see them.
    for (const door of DOORS) {
      this.authFailures.inc({ door }, 0);
      this.rateLimited.inc({ door }, 0);
    }
    this.verdicts = new Counter({
      name: 'rampart_verdicts_total',
      help: 'Verdicts by endpoint, action and whether they were degraded',
      labelNames: ['endpoint', 'action', 'degraded'],
      registers,
    });
    this.verdictSeconds = new Histogram({
      name: 'rampart_verdict_duration_seconds',
      help: 'Time the core took for a verdict (reads, scoring, recording), by endpoint',
      labelNames: ['endpoint'],
      buckets: LATENCY,
      registers,
    });
    // A verdict makes ~30 state reads: they are counted in plain numbers and handed to the counter
    // when it is scraped (a labelled inc() hashes its labels, ~3% of the hot path's allocation).
    const pending = this.pendingReads;
    this.reads = new Counter({
      name: 'rampart_state_reads_total',
      help: 'State reads by collection and outcome (hit: from the cache; absent: known not to exist, without a look-up; miss and stale: one database look-up)',
      labelNames: ['collection', 'outcome'],
      registers,
      collect() {
        for (const [collection, counts] of pending) {
          for (const outcome of READ_OUTCOMES) {
            if (counts[outcome] > 0) this.inc({ collection, outcome }, counts[outcome]);
            counts[outcome] = 0;
          }
        }
      },
    });
    this.flushSeconds = new Histogram({
      name: 'rampart_state_flush_duration_seconds',
      help: 'Duration of write-behind flushes, by outcome',
      labelNames: ['outcome'],
      buckets: LATENCY,
      registers,
    });
    this.flushWrites = new Counter({
      name: 'rampart_state_flushed_writes_total',
      help: 'Writes sent by flushes: coalesced document updates and inserts',
      labelNames: ['kind'],
      registers,
    });
    this.flushBytes = new Counter({
      name: 'rampart_state_flushed_bytes_total',
      help: 'Bytes (BSON) of the documents and updates flushes wrote, by collection',
      labelNames: ['collection'],
      registers,
    });
    this.flushErrors = new Counter({
      name: 'rampart_state_flush_errors_total',
      help: 'Write-behind flushes that failed (the database unreachable or refusing); their writes stay queued and are retried',
      registers,
    });
    this.droppedWrites = new Counter({
      name: 'rampart_state_dropped_writes_total',
      help: 'Queued writes the database refused for good (logged) and that were dropped, by collection',
      labelNames: ['collection'],
      registers,
    });
    new Gauge({
      name: 'rampart_state_write_backlog',
      help: 'Writes waiting to be flushed (the bound is RAMPART_WRITE_QUEUE_LIMIT)',
      registers,
      collect() {
        this.set(sources().writeBacklog());
      },
    });
    this.flushStalls = new Counter({
      name: 'rampart_state_flush_stalls_total',
      help: 'Write-behind flushes abandoned by the watchdog (no answer within RAMPART_WRITE_TIMEOUT_MS); their writes are retried on a new connection',
      registers,
    });
    new Gauge({
      name: 'rampart_state_oldest_unwritten_seconds',
      help: 'Age of the oldest acknowledged change not yet written (statistics held back on purpose aside); at RAMPART_MAX_UNWRITTEN_MS new work is refused',
      registers,
      collect() {
        this.set(sources().oldestUnwrittenMs() / 1000);
      },
    });
    new Gauge({
      name: 'rampart_state_max_unwritten_seconds',
      help: 'RAMPART_MAX_UNWRITTEN_MS: the age of the oldest unwritten change at which Rampart refuses new work (503)',
      registers,
      collect() {
        this.set(sources().writeLimits().maxUnwrittenMs / 1000);
      },
    });
    new Gauge({
      name: 'rampart_state_writes_stuck_seconds',
      help: 'How long writes have been due without a flush writing them (0 while writing); /readyz answers 503 past RAMPART_WRITE_STALL_MS',
      registers,
      collect() {
        this.set(sources().writesStuckMs() / 1000);
      },
    });
    new Gauge({
      name: 'rampart_state_write_queue_limit',
      help: 'Backlog past which Rampart answers 503 (RAMPART_WRITE_QUEUE_LIMIT)',
      registers,
      collect() {
        this.set(sources().writeLimits().queueLimit);
      },
    });
    new Gauge({
      name: 'rampart_state_cached_documents',
      help: 'Documents in the state cache',
      registers,
      collect() {
        this.set(sources().cachedDocuments());
      },
    });
    new Gauge({
      name: 'rampart_verdicts_in_flight',
      help: 'Verdicts computing now',
      registers,
      collect() {
        this.set(sources().verdictWork().inFlight);
      },
    });
    new Gauge({
      name: 'rampart_verdicts_waiting',
      help: 'Verdicts waiting for a turn (refused after RAMPART_QUEUE_WAIT_MS)',
      registers,
      collect() {
        this.set(sources().verdictWork().waiting);
      },
    });
    new Gauge({
      name: 'rampart_verdict_concurrency_limit',
      help: 'Verdicts that may compute at once: adapts to how quickly they are answered, at most RAMPART_MAX_CONCURRENT_VERDICTS',
      registers,
      collect() {
        this.set(sources().verdictWork().limit);
      },
    });
    new Gauge({
      name: 'rampart_track_queue_depth',
      help: 'Track events accepted and not yet applied',
      registers,
      collect() {
        this.set(sources().trackPending());
      },
    });

    // The outbox as the webhook dispatcher knows it (WebhookService.outbox): no database read here.
    new Gauge({
      name: 'rampart_webhook_outbox_depth',
      help: 'Webhook deliveries not yet delivered or given up (pending or being sent)',
      registers,
      collect() {
        this.set(sources().outbox().depth);
      },
    });
    new Gauge({
      name: 'rampart_webhook_outbox_oldest_age_seconds',
      help: 'Age of the oldest webhook delivery not yet delivered or given up (0: none)',
      registers,
      collect() {
        this.set(sources().outbox().oldestAgeSeconds);
      },
    });
    this.webhookAttempts = new Counter({
      name: 'rampart_webhook_attempts_total',
      help: 'Webhook delivery attempts recorded',
      registers,
    });
    this.webhookFailures = new Counter({
      name: 'rampart_webhook_delivery_failures_total',
      help: 'Webhook delivery attempts that failed, by status: the HTTP status the receiver answered, or the error class (timeout, connection_refused, dns, tls, connection_reset, invalid_url, network, no_signing_secret, environment_gone, no_webhook_url, shutdown, other)',
      labelNames: ['status'],
      registers,
    });
    this.webhooksGivenUp = new Counter({
      name: 'rampart_webhook_deliveries_given_up_total',
      help: 'Webhook deliveries given up for good (attempts exhausted, or undeliverable): status failed',
      registers,
    });

    this.databaseUp = new Gauge({
      name: 'rampart_database_up',
      help: "Whether the database answers (1) or is known to be down or hung (0), from the driver's monitoring and the health probe",
      registers: [],
      collect: () => this.databaseUp.set(this.databaseStatus?.down() === null ? 1 : 0),
    });
    // Families always there (the alerting rules name them), with a series only on the embedded
    // database: the sizes its file watcher last read, never a database query at scrape.
    const files = () => this.embeddedFiles;
    new Gauge({
      name: 'rampart_embedded_database_bytes',
      help: "Size of the embedded database's SQLite file, by database name (none on MONGODB_URI)",
      labelNames: ['database'],
      registers,
      collect() {
        const f = files();
        const s = f?.source.sizes();
        if (f && s) this.set({ database: f.database }, s.databaseBytes);
      },
    });
    new Gauge({
      name: 'rampart_embedded_wal_bytes',
      help: "Size of the embedded database's write-ahead log (RAMPART_EMBEDDED_WAL_LIMIT_MB: past it, it is checkpointed and truncated), by database name",
      labelNames: ['database'],
      registers,
      collect() {
        const f = files();
        const s = f?.source.sizes();
        if (f && s) this.set({ database: f.database }, s.walBytes);
      },
    });
    new Gauge({
      name: 'rampart_embedded_wal_limit_bytes',
      help: 'RAMPART_EMBEDDED_WAL_LIMIT_MB in bytes: past it, the write-ahead log is checkpointed and truncated, by database name',
      labelNames: ['database'],
      registers,
      collect() {
        const f = files();
        if (f) this.set({ database: f.database }, f.limitBytes);
      },
    });
    this.walCheckpoints = new Counter({
      name: 'rampart_embedded_wal_checkpoints_total',
      help: 'Checkpoints Rampart sent because the write-ahead log was past its limit, by outcome: truncated, busy (a read still held older frames: tried again later), failed',
      labelNames: ['outcome'],
      registers,
    });
    this.probeSeconds = new Histogram({
      name: 'rampart_database_probe_duration_seconds',
      help: "Time the database took to answer the health probe's ping (RAMPART_DB_PROBE_MS); a hung database answers none (see rampart_database_up)",
      buckets: LATENCY,
      registers: [],
    });
  }

  /**
   * Follow the database's health (the runtime's probe, store/health.ts): `rampart_database_up`
   * and the probe's latency appear from then on. Apps built without a probe (tests, tools) have
   * neither, rather than a gauge that would say "down".
   */
  watchDatabase(status: DatabaseStatusSource): void {
    if (this.databaseStatus) return;
    this.databaseStatus = status;
    this.registry.registerMetric(this.databaseUp);
    this.registry.registerMetric(this.probeSeconds);
  }

  /** Report the embedded database's file sizes (its watcher, store/embedded-wal.ts) and the log's limit under the database's name. */
  watchEmbeddedFiles(source: EmbeddedFilesSource, database: string, limitBytes: number): void {
    this.embeddedFiles = { source, database, limitBytes };
  }

  /** One checkpoint the WAL watcher sent, and how it ended. */
  readonly walCheckpointed = (outcome: 'truncated' | 'busy' | 'failed'): void => {
    this.walCheckpoints.inc({ outcome });
  };

  /** The health probe's hook: one ping answered, after `seconds`. */
  readonly databaseProbed = (seconds: number): void => {
    if (this.databaseStatus) this.probeSeconds.observe(seconds);
  };

  /**
   * One request answered by a door: `status` is the HTTP status, or a gRPC status code's name.
   * Refused credentials and rate limits are counted per door as well.
   */
  request(door: Door, route: string, status: string | number, seconds: number): void {
    this.requests.observe({ door, route, status: String(status) }, seconds);
    if (UNAUTHENTICATED.has(status)) this.authFailures.inc({ door });
    else if (RATE_LIMITED.has(status)) this.rateLimited.inc({ door });
  }

  readonly verdictObserver: VerdictObserver = {
    verdict: (endpoint, action, degraded, seconds) => {
      this.verdicts.inc({ endpoint, action, degraded: String(degraded) });
      this.verdictSeconds.observe({ endpoint }, seconds);
    },
  };

  readonly stateObserver: StateObserver = {
    read: (collection, outcome) => {
      let counts = this.pendingReads.get(collection);
      if (!counts) {
        counts = { hit: 0, absent: 0, miss: 0, stale: 0 };
        this.pendingReads.set(collection, counts);
      }
      counts[outcome]++;
    },
    flushed: ({ seconds, updates, inserts, ok }) => {
      this.flushSeconds.observe({ outcome: ok ? 'ok' : 'failed' }, seconds);
      if (!ok) this.flushErrors.inc();
      if (updates) this.flushWrites.inc({ kind: 'update' }, updates);
      if (inserts) this.flushWrites.inc({ kind: 'insert' }, inserts);
    },
    dropped: (collection, count) => {
      this.droppedWrites.inc({ collection }, count);
    },
    wrote: (collection, bytes) => {
      this.flushBytes.inc({ collection }, bytes);
    },
    stalled: () => {
      this.flushErrors.inc();
      this.flushStalls.inc();
    },
  };

  readonly webhookObserver: WebhookObserver = {
    attempted: ({ failure, gaveUp }) => {
      this.webhookAttempts.inc();
      if (failure !== null) this.webhookFailures.inc({ status: failure });
      if (gaveUp) this.webhooksGivenUp.inc();
    },
  };

  /** The exposition text and its content type. */
  async expose(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}

/** The REST listener's view of the metrics: GET /metrics and per-request observations. */
export function restMetrics(metrics: Metrics, token: string | undefined) {
  return {
    expose: () => metrics.expose(),
    request: (door: 'rest' | 'graphql' | 'console', route: string, status: number, seconds: number) =>
      metrics.request(door, route, status, seconds),
    token,
  };
}

/** The gRPC listener's view of the metrics: one observation per call (a VerdictStream's calls each). */
export function grpcMetrics(metrics: Metrics) {
  return {
    call: (method: string, code: string, seconds: number) => metrics.request('grpc', method, code, seconds),
  };
}
