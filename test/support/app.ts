/**
 * Starts the whole service for e2e tests: a fresh test database, the core, REST+GraphQL on one
 * loopback listener and gRPC on another, both on port 0. Returns the sandbox secret.
 */
import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { Db } from 'mongodb';
import { buildServices, type Built, type BuildOptions } from '../../src/app/build';
import { offlineIntel } from '../../src/intel/offline';
import { grpcMetrics, restMetrics } from '../../src/app/metrics';
import { createLogger } from '../../src/app/logger';
import { buildRestServer } from '../../src/rest/server';
import { registerGraphql } from '../../src/graphql/server';
import { registerConsole } from '../../src/console/server';
import { startGrpcServer, type GrpcServerHandle } from '../../src/grpc/server';
import type { Environment } from '../../src/core/model';
import { testDatabase, type TestDatabase } from './db';

export interface TestApp {
  baseUrl: string;
  grpcAddress: string;
  secret: string;
  env: Environment;
  built: Built;
  database: TestDatabase;
  http: FastifyInstance;
  /** Create another environment; returns its secret. */
  newEnvironment(name: string): Promise<{ env: Environment; secret: string }>;
  close(): Promise<void>;
}

export interface TestAppOptions extends Partial<Omit<BuildOptions, 'db' | 'log'>> {
  bodyLimit?: number;
  grpc?: boolean;
  metricsToken?: string;
  /** Proxies whose X-Forwarded-* headers (and gRPC's x-forwarded-for) are believed, as CIDRs; none unless given. */
  trustProxy?: readonly string[];
  /** Why new requests are refused at once (the REST door's load shedding), or null; none unless given. */
  overloaded?: () => string | null;
  /** Runs on the fresh database before the service is built (e.g. to write an older version's data). */
  beforeBuild?: (db: Db) => Promise<void>;
  monitorCommands?: Parameters<typeof testDatabase>[0] extends infer O
    ? O extends { monitorCommands?: infer M }
      ? M
      : never
    : never;
}

export async function startTestApp(opts: TestAppOptions = {}): Promise<TestApp> {
  const database = await testDatabase({ monitorCommands: opts.monitorCommands });
  await opts.beforeBuild?.(database.db);
  const log = createLogger(process.env.RAMPART_TEST_LOG ?? 'silent');
  const built = await buildServices({
    db: database.db,
    log,
    masterKey: randomBytes(32).toString('hex'),
    authCacheMs: 0,
    rateLimitPerSecond: 100_000,
    publicUrl: 'http://127.0.0.1',
    smtpUrl: undefined,
    mailFrom: 'rampart@localhost',
    // A loaded CI machine must not turn verdicts degraded where a test expects the full answer;
    // the budget itself is tested with a budget of its own.
    verdictBudgetMs: 10_000,
    // Tests rewrite past periods and read them again at once; the cache is tested on its own.
    rollupCacheMs: 0,
    // The suite's own embedded FerretDB is written by this process only (one database per file).
    privateDatabase: process.env.RAMPART_TEST_EMBEDDED === '1',
    ...opts,
    // Likewise for the writes: a flush slowed by a loaded machine must not turn a test's calls
    // into 503s (refusing past a second of unwritten changes, and track answering once written,
    // are tested with the defaults by the state layer's, fault and overload tests). A track call
    // still answers only once written.
    state: { maxUnwrittenMs: 60_000, ackTimeoutMs: 60_000, ...opts.state },
    // And for the verdicts' work limiter: a burst answered slowly by a loaded machine waits its
    // turn instead of being refused (test/unit/core/work-limiter.spec.ts tests the limiter).
    workLimits: { maxWaitMs: 600_000, ...opts.workLimits },
  });
  const secret = `sk_test_${randomBytes(16).toString('hex')}`;
  const { env } = await built.services.environments.ensureSandbox(secret, undefined);
  const http = await buildRestServer({
    services: built.services,
    log,
    bodyLimit: opts.bodyLimit ?? 100 * 1024,
    trustProxy: opts.trustProxy ?? false,
    requireHttps: false,
    demo: true,
    register: async (app) => {
      await registerGraphql(app, { services: built.services, log });
      registerConsole(app, { services: built.services, log });
    },
    metrics: restMetrics(built.metrics, opts.metricsToken),
    overloaded: opts.overloaded,
  });
  // As the runtime does: the reference data is loaded before the listeners open, not by the
  // first verdict (which an SDK's 5 s timeout would then measure on a loaded machine).
  if (!opts.intel) offlineIntel.load();
  await http.listen({ host: '127.0.0.1', port: 0 });
  const addr = http.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  let grpc: GrpcServerHandle | null = null;
  if (opts.grpc !== false)
    grpc = await startGrpcServer({
      services: built.services,
      log,
      host: '127.0.0.1',
      port: 0,
      tls: undefined,
      metrics: grpcMetrics(built.metrics),
      trustProxy: opts.trustProxy,
    });
  built.start();
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    grpcAddress: grpc?.address ?? '',
    secret,
    env,
    built,
    database,
    http,
    newEnvironment: (name) => built.services.environments.create(name, { sandbox: false }),
    close: async () => {
      await http.close();
      await grpc?.stop();
      await built.stop();
      await database.drop();
    },
  };
}

/** `Authorization` header value for a secret, as Castle's SDKs send it. */
export const basic = (secret: string) => `Basic ${Buffer.from(`:${secret}`).toString('base64')}`;

/** JSON over real HTTP. */
export async function call(
  app: Pick<TestApp, 'baseUrl' | 'secret'>,
  method: string,
  path: string,
  body?: unknown,
  opts: { secret?: string | null; raw?: string; headers?: Record<string, string> } = {},
) {
  const headers: Record<string, string> = { 'content-type': 'application/json', ...opts.headers };
  const secret = opts.secret === undefined ? app.secret : opts.secret;
  if (secret !== null) headers.authorization = basic(secret);
  const res = await fetch(`${app.baseUrl}${path}`, {
    method,
    headers,
    body: opts.raw ?? (body === undefined ? undefined : JSON.stringify(body)),
  });
  const text = await res.text();
  let json: unknown = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    json = text;
  }
  return { status: res.status, headers: res.headers, body: json as any };
}
