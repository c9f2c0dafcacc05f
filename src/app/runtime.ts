/**
 * Runs Rampart: the database (MONGODB_URI or the embedded FerretDB), the core, and the doors on
 * their listeners; and stops them in order on shutdown (listeners first, then queues, then the
 * database) so that no accepted event is lost.
 */
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config';
import { ipListsInstalled, offlineIntel } from '../intel';
import { MongoClient, type Db } from 'mongodb';
import { connect, uriOptionNames, type Database } from '../store/database';
import { watchDatabase } from '../store/health';
import {
  embeddedSqliteDir,
  freePort,
  recordEmbedded,
  startEmbedded,
  startEmbeddedReader,
  type EmbeddedDatabase,
} from '../store/embedded';
import { WalGuard } from '../store/embedded-wal';
import { buildRestServer } from '../rest/server';
import { buildServices, resolveMasterKey, type Built } from './build';
import { deliverGeneratedSecret } from './first-start';
import { grpcMetrics, restMetrics } from './metrics';
import type { Logger } from './logger';
import { LoopLag } from './loop-lag';
import { startGrpcServer, type GrpcServerHandle } from '../grpc/server';
import { registerGraphql } from '../graphql/server';
import { registerConsole } from '../console/server';

export interface Running {
  httpUrl: string;
  grpcAddress: string;
  built: Built;
  stop(): Promise<void>;
}

export async function run(config: Config, log: Logger): Promise<Running> {
  // What has started so far, stopped in reverse order if a later step fails (a port in use, a
  // database that refuses us): a failed start leaves no FerretDB or listener behind.
  const started: (() => Promise<unknown>)[] = [];
  // A secret generated for the sandbox is shown once the listeners are open (with their URL), or
  // if a later step fails, then: it is stored only hashed, so it must never go unshown.
  const secret: { generated: string | null } = { generated: null };
  try {
    return await start(config, log, started, secret);
  } catch (err) {
    if (secret.generated) showSecret(secret.generated, null, config, log);
    for (const stop of started.reverse()) await stop().catch(() => undefined);
    throw err;
  }
}

async function start(
  config: Config,
  log: Logger,
  started: (() => Promise<unknown>)[],
  secret: { generated: string | null },
): Promise<Running> {
  let embedded: EmbeddedDatabase | null = null;
  let reader: EmbeddedDatabase | null = null;
  let uri = config.mongoUri;
  if (!uri) {
    const primary = await startEmbedded(config.dataDir, {
      log,
      // Start-up never downloads or builds: the install put FerretDB in place (scripts/setup.sh).
      install: false,
      // The CLI finds the running database (and an orphan is stopped) through this record.
      onRestart: () => recordEmbedded(config.dataDir, primary, reader),
      memoryMb: config.embedded.memoryMb,
    });
    embedded = primary;
    started.push(() => primary.stop());
    uri = primary.uri;
    recordEmbedded(config.dataDir, primary);
    log.info({ dataDir: config.dataDir }, 'started embedded FerretDB (SQLite) on loopback');
  }
  // The driver's heartbeat times out after connectTimeoutMS, and a heartbeat that times out makes
  // it cut every connection in use (writes half-sent included). On a busy machine a loopback
  // database can take seconds to answer one, so the heartbeat is given ten: a database that hangs
  // is the health probe's to notice (store/health.ts), which cuts nothing.
  const connectTimeoutMS = embedded ? 10_000 : undefined;
  const database: Database = await connect(uri, config.dbName, { connectTimeoutMS });
  started.push(() => database.close());
  // The write-behind flusher's own connections: each answer waited for at most a little more than
  // RAMPART_WRITE_TIMEOUT_MS, and replaced when the flusher's watchdog abandons a flush (a
  // connection that went silent is closed, not waited on).
  const writer = new Writer(
    uri,
    config.dbName,
    { connectTimeoutMS, socketTimeoutMS: config.state.writeTimeoutMs + 5000 },
    log,
  );
  started.push(() => writer.close());
  // A bulkhead: dashboards read through their own few connections (each read time-limited: see
  // buildServices), so the heaviest analyst query can neither take scoring's connections nor
  // run for minutes; on the embedded database through their own FerretDB at a lower CPU
  // priority (started once the database exists, below), so that their scans take only the CPU
  // scoring leaves; on MONGODB_URI through RAMPART_ANALYST_MONGODB_URI when given.
  const readerPort =
    embedded && config.analyst.reader === 'separate' && !config.analyst.uri ? await freePort() : null;
  const analystUri = config.analyst.uri ?? (readerPort !== null ? `mongodb://127.0.0.1:${readerPort}/` : uri);
  const analyst: Database = await connect(analystUri, config.dbName, {
    maxPoolSize: config.analyst.pool,
    connectTimeoutMS,
    lazy: readerPort !== null,
  });
  started.push(() => analyst.close());

  // Loaded before the listeners open, so that no verdict waits for the databases.
  offlineIntel.load();
  if (!ipListsInstalled())
    log.warn(
      'the address lists (VPN, Tor, hosting ranges) are not installed: run `npm run setup`; until then no address is recognised as one',
    );
  const built = await buildServices({
    db: database.db,
    analystDb: analyst.db,
    analystTimeoutMs: config.analyst.timeoutMs,
    analystWaitMs: config.analyst.waitMs,
    analystConcurrency: config.analyst.pool,
    analystShare: config.analyst.share,
    log,
    masterKey: resolveMasterKey(config.masterKey, config.dataDir),
    authCacheMs: config.authCacheMs,
    rateLimitPerSecond: config.rateLimitPerSecond,
    clientRateLimitPerSecond: config.clientRateLimitPerSecond,
    clientPowBits: config.clientPowBits,
    authFailuresPerMinute: config.authFailuresPerMinute,
    publicUrl:
      config.publicUrl ?? `${config.tls ? 'https' : 'http'}://${hostForUrl(config.host)}:${config.httpPort}`,
    smtpUrl: config.smtpUrl,
    mailFrom: config.mailFrom,
    verdictBudgetMs: config.verdictBudgetMs,
    maxEventAgeMs: config.maxEventAgeMs,
    state: config.state,
    workLimits: { maxLimit: config.work.maxConcurrent, maxWaitMs: config.work.queueWaitMs },
    privateDatabase: embedded !== null,
    writer: {
      db: () => writer.db,
      stalled: () => writer.renew(),
    },
  });
  started.push(() => built.stop());
  // Writes that make no progress, whether their flushes hang (the watchdog renews the writer's
  // connections each time) or keep failing: new connections after one watchdog period, and on the
  // embedded database, after three, a new FerretDB (one that answers pings but no longer writes is
  // wedged; the supervisor starts it again on the same files, as after a crash).
  const unstick = new Unsticker(
    config.state.writeTimeoutMs,
    () => built.state.stuckMs(),
    () => writer.renew(),
    embedded?.restart ? (why) => embedded?.restart?.(why) : null,
  );
  started.push(async () => unstick.stop());
  const { generatedSecret, env } = await built.services.environments.ensureSandbox(
    config.apiSecret,
    config.webhookUrl,
  );
  secret.generated = generatedSecret;
  log.info({ environment: env.name }, 'default environment ready');
  if (embedded && readerPort !== null) {
    const primary = embedded;
    const analysts = await startEmbeddedReader(config.dataDir, {
      port: readerPort,
      nice: config.analyst.nice,
      memoryMb: config.analyst.readerMemoryMb,
      log,
      install: false,
      onRestart: () => recordEmbedded(config.dataDir, primary, reader),
    });
    reader = analysts;
    started.push(() => analysts.stop());
    recordEmbedded(config.dataDir, primary, reader);
    log.info({ nice: config.analyst.nice }, "started the analysts' FerretDB reader on the same files");
  }

  // The embedded database's files: their sizes for the metrics, and the write-ahead log kept
  // under its limit (store/embedded-wal.ts).
  let walGuard: WalGuard | null = null;
  if (embedded) {
    const guard = new WalGuard({
      db: database.db,
      dir: embeddedSqliteDir(config.dataDir),
      dbName: config.dbName,
      limitBytes: config.embedded.walLimitMb * 1024 * 1024,
      onCheckpoint: built.metrics.walCheckpointed,
      log,
    });
    walGuard = guard;
    guard.start();
    started.push(() => guard.stop());
    built.metrics.watchEmbeddedFiles(guard, config.dbName, guard.limitBytes);
  }

  if (config.mode === 'development' && !config.tls)
    log.warn('plain HTTP on loopback: development only; configure TLS for production');

  const health = await watchDatabase(database.client, uri, config.dbName, {
    ...config.databaseHealth,
    onChange: (why) =>
      why
        ? log.warn({ why }, 'database down: requests that need it answer 503')
        : log.info('database answers again'),
    onProbe: built.metrics.databaseProbed,
  });
  started.push(() => health.close());
  // rampart_database_up reads the probe's verdict at each scrape: memory, never the database.
  built.metrics.watchDatabase(health);
  const http: FastifyInstance = await buildRestServer({
    services: built.services,
    log,
    bodyLimit: config.bodyLimit,
    tls: config.tls,
    trustProxy: config.trustProxy,
    requireHttps: config.mode === 'production' && !config.tls,
    demo: config.mode === 'development',
    ready: async () => {
      await database.db.command({ ping: 1 });
      return true;
    },
    // Ready means work is progressing, not that the process is up: a load balancer stops sending
    // while writes are stuck or Rampart refuses new work, and sends again when they recover.
    notReady: () => notReady(built, config) ?? lag.behind(),
    overloaded: () => lag.overloaded(),
    database: health,
    register: async (app) => {
      await registerGraphql(app, { services: built.services, log, database: health });
      registerConsole(app, { services: built.services, log });
    },
    metrics: restMetrics(built.metrics, config.metricsToken),
  });
  started.push(() => http.close());
  // Requests refused at once while the process runs too far behind (app/loop-lag.ts); measured
  // from here, so that the start's own work (the reference data) does not count.
  const lag = new LoopLag(config.work.maxLoopDelayMs);
  started.push(async () => lag.stop());
  await http.listen({ host: config.host, port: config.httpPort });
  const addr = http.server.address();
  const httpPort = typeof addr === 'object' && addr ? addr.port : config.httpPort;
  const grpc: GrpcServerHandle = await startGrpcServer({
    services: built.services,
    log,
    host: config.host,
    port: config.grpcPort,
    tls: config.tls,
    maxMessageBytes: config.bodyLimit,
    database: health,
    metrics: grpcMetrics(built.metrics),
    trustProxy: config.trustProxy,
  });
  started.push(() => grpc.stop());
  built.start();
  const httpUrl = `${config.tls ? 'https' : 'http'}://${hostForUrl(config.host)}:${httpPort}`;
  log.info({ http: httpUrl, grpc: grpc.address }, 'rampart listening');
  if (secret.generated) {
    showSecret(secret.generated, config.publicUrl ?? httpUrl, config, log);
    secret.generated = null;
  }

  let stopping: Promise<void> | null = null;
  return {
    httpUrl,
    grpcAddress: grpc.address,
    built,
    stop: () =>
      (stopping ??= (async () => {
        const began = Date.now();
        const step = async (what: string, work: () => Promise<unknown>) => {
          await work();
          log.info({ what, ms: Date.now() - began }, 'shutdown: step done');
        };
        // Listeners first: no new work. Requests in flight finish (a verdict waits at most its
        // turn and an acknowledgement at most RAMPART_ACK_TIMEOUT_MS); a connection still open
        // after LISTENER_CLOSE_MS is cut, so that a client that keeps sending cannot hold the exit.
        await step('listeners', () => Promise.allSettled([closeHttp(http, LISTENER_CLOSE_MS), grpc.stop()]));
        await step('queues and writes', () => built.stop());
        unstick.stop();
        lag.stop();
        await walGuard?.stop();
        await step('connections', () =>
          Promise.allSettled([health.close(), database.close(), analyst.close(), writer.close()]),
        );
        await reader?.stop();
        await step('database', async () => embedded?.stop());
      })()),
  };
}

/** How long the HTTP listener waits for its connections to finish on shutdown before it cuts them. */
const LISTENER_CLOSE_MS = 5_000;

/**
 * Fastify's close, bounded. A connection kept alive whose request was in flight when the close
 * began would otherwise stay open, and a busy client would keep sending on it (each request
 * refused): it is closed as soon as it falls idle, and whatever is still open after `limitMs` is cut.
 */
async function closeHttp(http: FastifyInstance, limitMs: number): Promise<void> {
  const idle = setInterval(() => http.server.closeIdleConnections(), 100);
  const cut = setTimeout(() => http.server.closeAllConnections(), limitMs);
  try {
    await http.close();
  } finally {
    clearInterval(idle);
    clearTimeout(cut);
  }
}

/** The generated secret, on the terminal or in an owner-only file: never in the log (first-start.ts). */
function showSecret(generated: string, httpUrl: string | null, config: Config, log: Logger): void {
  try {
    deliverGeneratedSecret({ secret: generated, httpUrl, dataDir: config.dataDir }, log);
  } catch (err) {
    log.error(
      { err: err instanceof Error ? err.message : String(err) },
      'the generated API secret of the sandbox could not be shown: add one with `npx rampart secret add sandbox`',
    );
  }
}

const hostForUrl = (h: string) => (h.includes(':') ? `[${h}]` : h);

/** Why this instance should get no new work now (/readyz 503), or null: writes stuck, or new work refused. */
function notReady(built: Built, config: Config): string | null {
  const stuck = built.state.stuckMs();
  if (stuck >= config.state.writeStallMs) return `writes have not progressed for ${stuck} ms`;
  if (built.state.pressure === 'full')
    return `refusing new work: the oldest unwritten change is ${built.state.oldestUnwrittenMs()} ms old`;
  return null;
}

/** Watches the writes; see its use in start(). */
class Unsticker {
  private readonly timer: NodeJS.Timeout;
  private renewedAt = 0;
  private restartedAt = 0;

  constructor(
    private readonly periodMs: number,
    stuckMs: () => number,
    renew: () => void,
    restart: ((why: string) => void) | null,
  ) {
    this.timer = setInterval(
      () => {
        const stuck = stuckMs();
        const now = Date.now();
        if (stuck < this.periodMs) return;
        if (now - this.renewedAt >= this.periodMs) {
          this.renewedAt = now;
          renew();
        }
        if (restart && stuck >= 3 * this.periodMs && now - this.restartedAt >= 3 * this.periodMs) {
          this.restartedAt = now;
          restart(`no write has succeeded for ${stuck} ms`);
        }
      },
      Math.min(5000, this.periodMs),
    );
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }
}

/**
 * The state layer's writer: a MongoClient of its own (a few connections, each answer waited for
 * at most `socketTimeoutMS`), which renew() replaces at once (the old one is closed behind, its
 * connections cut) when a flush stalled on it.
 */
class Writer {
  private client: MongoClient;
  private closed = false;

  constructor(
    private readonly uri: string,
    private readonly dbName: string,
    private readonly options: { connectTimeoutMS: number | undefined; socketTimeoutMS: number },
    private readonly log: Logger,
  ) {
    this.client = this.open();
  }

  /** The database on the current client (made once per client: the flusher asks for it on every write). */
  private database: Db | null = null;

  get db(): Db {
    return (this.database ??= this.client.db(this.dbName));
  }

  private open(): MongoClient {
    const given = uriOptionNames(this.uri);
    const pick = (name: string, value: number | undefined) =>
      value !== undefined && !given.has(name.toLowerCase()) ? { [name]: value } : {};
    return new MongoClient(this.uri, {
      maxPoolSize: 4,
      heartbeatFrequencyMS: 1000,
      ...pick('connectTimeoutMS', this.options.connectTimeoutMS),
      ...pick('socketTimeoutMS', this.options.socketTimeoutMS),
      ...pick('serverSelectionTimeoutMS', 5000),
    });
  }

  renew(): void {
    if (this.closed) return;
    const old = this.client;
    this.client = this.open();
    this.database = null;
    this.log.warn('state layer: the writer opens new connections after a stalled flush');
    void old.close(true).catch(() => undefined);
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.client.close(true).catch(() => undefined);
  }
}
