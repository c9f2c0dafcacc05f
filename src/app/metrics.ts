/**
 * Prometheus metrics (prom-client): requests per door and route, verdicts and their latency,
 * the state layer's cache, write queue and flushes, and the track queue; plus the process's own
 * (memory, CPU, event-loop lag). Served at GET /metrics on the HTTP listener. No label carries a
 * tenant, a user or any request data, so the cardinality stays fixed.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { StateObserver } from '../store/state/layer';
import type { VerdictObserver } from '../core/verdicts/evaluate';

/** Latency buckets from 0.5 ms to 10 s: verdicts are expected in single-digit milliseconds. */
const LATENCY = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.15, 0.25, 0.5, 1, 2.5, 5, 10];

const READ_OUTCOMES = ['hit', 'miss', 'stale'] as const;
type ReadOutcome = (typeof READ_OUTCOMES)[number];

export interface MetricsSources {
  /** Writes waiting in the state layer. */
  writeBacklog(): number;
  /** Documents held in the state cache. */
  cachedDocuments(): number;
  /** Track events accepted and not yet applied. */
  trackPending(): number;
}

export class Metrics {
  readonly registry = new Registry();
  private readonly requests: Histogram<'door' | 'route' | 'status'>;
  private readonly verdicts: Counter<'endpoint' | 'action' | 'degraded'>;
  private readonly verdictSeconds: Histogram<'endpoint'>;
  private readonly reads: Counter<'collection' | 'outcome'>;
  /** State reads not yet handed to `reads`, per collection. */
  private readonly pendingReads = new Map<string, Record<ReadOutcome, number>>();
  private readonly flushSeconds: Histogram<'outcome'>;
  private readonly flushWrites: Counter<'kind'>;

  constructor(sources: MetricsSources) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry, prefix: 'rampart_' });
    this.requests = new Histogram({ name: 'rampart_request_duration_seconds', help: 'Requests by door (rest, grpc, graphql), route and status', labelNames: ['door', 'route', 'status'], buckets: LATENCY, registers });
    this.verdicts = new Counter({ name: 'rampart_verdicts_total', help: 'Verdicts by endpoint, action and whether they were degraded', labelNames: ['endpoint', 'action', 'degraded'], registers });
    this.verdictSeconds = new Histogram({ name: 'rampart_verdict_duration_seconds', help: 'Time the core took for a verdict (reads, scoring, recording), by endpoint', labelNames: ['endpoint'], buckets: LATENCY, registers });
    // A verdict makes ~30 state reads: they are counted in plain numbers and handed to the counter
    // when it is scraped (a labelled inc() hashes its labels, ~3% of the hot path's allocation).
    const pending = this.pendingReads;
    this.reads = new Counter({
      name: 'rampart_state_reads_total',
      help: 'State reads by collection and outcome (hit: from the cache; miss and stale: one database look-up)',
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
    this.flushSeconds = new Histogram({ name: 'rampart_state_flush_duration_seconds', help: 'Duration of write-behind flushes, by outcome', labelNames: ['outcome'], buckets: LATENCY, registers });
    this.flushWrites = new Counter({ name: 'rampart_state_flushed_writes_total', help: 'Writes sent by flushes: coalesced document updates and inserts', labelNames: ['kind'], registers });
    new Gauge({ name: 'rampart_state_write_backlog', help: 'Writes waiting to be flushed (the bound is RAMPART_WRITE_QUEUE_LIMIT)', registers, collect() { this.set(sources.writeBacklog()); } });
    new Gauge({ name: 'rampart_state_cached_documents', help: 'Documents in the state cache', registers, collect() { this.set(sources.cachedDocuments()); } });
    new Gauge({ name: 'rampart_track_queue_depth', help: 'Track events accepted and not yet applied', registers, collect() { this.set(sources.trackPending()); } });
  }

  /** One request answered by a door. */
  request(door: 'rest' | 'grpc' | 'graphql', route: string, status: string | number, seconds: number): void {
    this.requests.observe({ door, route, status: String(status) }, seconds);
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
        counts = { hit: 0, miss: 0, stale: 0 };
        this.pendingReads.set(collection, counts);
      }
      counts[outcome]++;
    },
    flushed: ({ seconds, updates, inserts, ok }) => {
      this.flushSeconds.observe({ outcome: ok ? 'ok' : 'failed' }, seconds);
      if (updates) this.flushWrites.inc({ kind: 'update' }, updates);
      if (inserts) this.flushWrites.inc({ kind: 'insert' }, inserts);
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
    request: (door: 'rest' | 'graphql', route: string, status: number, seconds: number) => metrics.request(door, route, status, seconds),
    token,
  };
}
