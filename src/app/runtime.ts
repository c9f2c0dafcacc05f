/**
 * Runs Rampart: the database (MONGODB_URI or the embedded FerretDB), the core, and the doors on
 * their listeners; and stops them in order on shutdown (listeners first, then queues, then the
 * database) so that no accepted event is lost.
 */
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config';
import { initIntel } from '../intel';
import { connect, watchDatabase, type Database } from '../store/database';
import { recordEmbedded, startEmbedded, type EmbeddedDatabase } from '../store/embedded';
import { buildRestServer } from '../rest/server';
import { buildServices, resolveMasterKey, type Built } from './build';
import { restMetrics } from './metrics';
import type { Logger } from './logger';
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
  let embedded: EmbeddedDatabase | null = null;
  let uri = config.mongoUri;
  if (!uri) {
    embedded = await startEmbedded(config.dataDir, {
      log,
      // The CLI finds the running database (and an orphan is stopped) through this record.
      onRestart: () => embedded && recordEmbedded(config.dataDir, embedded),
    });
    uri = embedded.uri;
    recordEmbedded(config.dataDir, embedded);
    log.info({ dataDir: config.dataDir }, 'started embedded FerretDB (SQLite) on loopback');
  }
  let database: Database;
  let analyst: Database;
  try {
    // On loopback (the embedded database) a heartbeat that takes a second means it hangs.
    const connectTimeoutMS = embedded ? 1000 : undefined;
    database = await connect(uri, config.dbName, { connectTimeoutMS });
    // A bulkhead: dashboards read through their own few connections (each read time-limited: see
    // buildServices), so the heaviest analyst query can neither take scoring's connections nor
    // run for minutes.
    analyst = await connect(uri, config.dbName, { maxPoolSize: config.analyst.pool, connectTimeoutMS }).catch(async (err: unknown) => {
      await database.close();
      throw err;
    });
  } catch (err) {
    await embedded?.stop();
    throw err;
  }
  initIntel();
  const built = await buildServices({
    db: database.db,
    analystDb: analyst.db,
    analystTimeoutMs: config.analyst.timeoutMs,
    analystConcurrency: config.analyst.pool,
    analystShare: config.analyst.share,
    log,
    masterKey: resolveMasterKey(config.masterKey, config.dataDir),
    authCacheMs: config.authCacheMs,
    rateLimitPerSecond: config.rateLimitPerSecond,
    clientRateLimitPerSecond: config.clientRateLimitPerSecond,
    authFailuresPerMinute: config.authFailuresPerMinute,
    publicUrl: config.publicUrl ?? `${config.tls ? 'https' : 'http'}://${hostForUrl(config.host)}:${config.httpPort}`,
    smtpUrl: config.smtpUrl,
    mailFrom: config.mailFrom,
    verdictBudgetMs: config.verdictBudgetMs,
    maxEventAgeMs: config.maxEventAgeMs,
    state: config.state,
    privateDatabase: embedded !== null,
  });
  const { generatedSecret, env } = await built.services.environments.ensureSandbox(config.apiSecret, config.webhookUrl);
  if (generatedSecret) {
    // Printed once, on the terminal only; never logged.
    process.stdout.write(`\nRampart created the "sandbox" environment. Its API secret (shown only now):\n\n  ${generatedSecret}\n\n`);
  }
  log.info({ environment: env.name }, 'default environment ready');

  if (config.mode === 'development' && !config.tls) log.warn('plain HTTP on loopback: development only; configure TLS for production');

  const databaseDown = watchDatabase(database.client);
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
    databaseDown,
    register: async (app) => {
      await registerGraphql(app, { services: built.services, log, databaseDown });
      registerConsole(app, { services: built.services, log });
    },
    metrics: restMetrics(built.metrics, config.metricsToken),
  });
  await http.listen({ host: config.host, port: config.httpPort });
  const addr = http.server.address();
  const httpPort = typeof addr === 'object' && addr ? addr.port : config.httpPort;
  const grpc: GrpcServerHandle = await startGrpcServer({ services: built.services, log, host: config.host, port: config.grpcPort, tls: config.tls, maxMessageBytes: config.bodyLimit });
  built.start();
  const httpUrl = `${config.tls ? 'https' : 'http'}://${hostForUrl(config.host)}:${httpPort}`;
  log.info({ http: httpUrl, grpc: grpc.address }, 'rampart listening');

  let stopping: Promise<void> | null = null;
  return {
    httpUrl,
    grpcAddress: grpc.address,
    built,
    stop: () =>
      (stopping ??= (async () => {
        await Promise.allSettled([http.close(), grpc.stop()]);
        await built.stop();
        await Promise.allSettled([database.close(), analyst.close()]);
        await embedded?.stop();
      })()),
  };
}

const hostForUrl = (h: string) => (h.includes(':') ? `[${h}]` : h);
