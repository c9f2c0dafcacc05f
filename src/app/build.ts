/**
 * Composition root: builds the stores on a database, the core services on the stores, and
 * applies every repository's indexes. main.ts, the tests and the benchmark all start here.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Db } from 'mongodb';
import { Sealer } from '../core/crypto';
import { EnvironmentService } from '../core/environments';
import { DeviceService } from '../core/devices/service';
import { PolicyService } from '../core/policies/service';
import { VerdictService } from '../core/verdicts/evaluate';
import { TrackService } from '../core/track';
import { RateLimiter } from '../core/ratelimit';
import { AccessService } from '../core/access';
import type { Clock } from '../core/ports';
import type { EnvId } from '../core/model';
import { systemClock } from '../core/ports';
import type { Services } from '../core/services';
import { WebhookService } from '../core/webhooks/service';
import { PrivacyService } from '../core/privacy/service';
import { applyIndexes, type IndexSpec } from '../store/database';
import { environmentIndexes, MongoCredentialStore, MongoEnvironmentStore } from '../store/environments';
import { deviceIndexes, MongoDeviceStore } from '../store/devices';
import { MongoUserStore, userIndexes } from '../store/users';
import { eventIndexes, MongoDebuggerStore, MongoEventStore } from '../store/events';
import { counterIndexes, MongoCounterStore } from '../store/counters';
import { MongoPolicyStore, policyIndexes } from '../store/policies';
import { MongoWebhookStore, webhookIndexes } from '../store/webhooks';
import { MongoPrivacyStore, privacyIndexes } from '../store/privacy';
import { createSmtpMailer } from '../mail/smtp';
import { QueryService } from '../core/queries/service';
import { AnalyticsService } from '../core/analytics/service';
import { MongoQueryStore, queryIndexes } from '../store/queries';
import { MongoAnalyticsStore, analyticsIndexes } from '../store/analytics';
import type { Logger } from './logger';

export const ALL_INDEXES: readonly IndexSpec[] = [
  ...environmentIndexes,
  ...deviceIndexes,
  ...userIndexes,
  ...eventIndexes,
  ...counterIndexes,
  ...policyIndexes,
  ...webhookIndexes,
  ...privacyIndexes,
  ...queryIndexes,
  ...analyticsIndexes,
];

const COUNTER_SWEEP_MS = 10 * 60_000;

export interface BuildOptions {
  db: Db;
  log: Logger;
  masterKey: string;
  authCacheMs: number;
  rateLimitPerSecond: number;
  publicUrl: string;
  smtpUrl: string | undefined;
  mailFrom: string;
  clock?: Clock;
  /** Webhook worker tuning (tests shorten these). */
  webhooks?: { pollMs?: number; backoffBaseMs?: number; maxAttempts?: number; dedupeWindowMs?: number };
}

export interface Built {
  services: Services;
  /** Start background workers (webhook outbox, privacy sweeper). */
  start(): void;
  /** Drain track, flush events, stop workers. */
  stop(): Promise<void>;
}

export async function buildServices(o: BuildOptions): Promise<Built> {
  const clock = o.clock ?? systemClock;
  const db = o.db;
  await applyIndexes(db, ALL_INDEXES);
  const onBackgroundError = (err: unknown) => o.log.error({ err }, 'background write failed');

  const sealer = new Sealer(o.masterKey);
  const environmentsStore = new MongoEnvironmentStore(db);
  const credentials = new MongoCredentialStore(db);
  const devicesStore = new MongoDeviceStore(db);
  const users = new MongoUserStore(db);
  const events = new MongoEventStore(db);
  const debuggerLog = new MongoDebuggerStore(db);
  const counters = new MongoCounterStore(db);
  const policies = new PolicyService(new MongoPolicyStore(db), clock);
  const environments = new EnvironmentService({ environments: environmentsStore, credentials, policies, sealer, clock, authCacheMs: o.authCacheMs });
  const webhooks = new WebhookService({
    store: new MongoWebhookStore(db),
    signingSecret: (env: EnvId) => environments.signingSecret(env),
    environments: environmentsStore,
    clock,
    instanceId: randomUUID(),
    log: o.log,
    ...o.webhooks,
  });
  const devices = new DeviceService(devicesStore, users, webhooks, clock);
  const verdicts = new VerdictService({ users, events, counters, deviceService: devices, policies, webhooks, clock, onBackgroundError });
  const track = new TrackService({ users, events, counters, debuggerLog, deviceService: devices, clock, onBackgroundError });
  const privacy = new PrivacyService({
    store: new MongoPrivacyStore(db),
    users,
    devices: devicesStore,
    webhooks,
    mailer: o.smtpUrl ? createSmtpMailer({ url: o.smtpUrl, from: o.mailFrom }) : null,
    sealer,
    clock,
    publicUrl: o.publicUrl,
    log: o.log,
  });
  const services: Services = {
    environments,
    verdicts,
    track,
    devices,
    policies,
    webhooks,
    privacy,
    access: new AccessService(environments, new RateLimiter(o.rateLimitPerSecond)),
    queries: new QueryService(new MongoQueryStore(db)),
    analytics: new AnalyticsService(new MongoAnalyticsStore(db), clock),
    read: { events, debuggerLog, users, devices: devicesStore },
  };
  let sweeper: NodeJS.Timeout | null = null;
  return {
    services,
    start() {
      webhooks.start();
      privacy.start();
      sweeper = setInterval(() => counters.sweep(clock.now()).catch(onBackgroundError), COUNTER_SWEEP_MS);
      sweeper.unref();
    },
    async stop() {
      if (sweeper) clearInterval(sweeper);
      await track.drain();
      await verdicts.idle();
      await events.flush();
      await webhooks.stop();
      await privacy.stop();
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
