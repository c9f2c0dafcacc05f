/**
 * createServices(ports, options): the one wiring of the core's use cases. It takes every port
 * the use cases need (stores, clock, scheduler, HTTP poster, mailer, intel, …) and the numbers
 * they may be tuned by, and returns the `Services` the doors use.
 *
 * Production and the unit tests call it alike, with their own ports: app/build.ts gives the
 * MongoDB repositories of src/store and the platform's adapters (src/workers, src/mail,
 * src/intel), test/support/fakes gives the in-memory fakes. ServicePorts says, port by port,
 * which of each is given; so the real and the fake wiring of a feature differ only in what is
 * passed here.
 */
import { X509Certificate } from 'node:crypto';
import { AccessService, DEFAULT_FAILED_AUTHENTICATION_LIMIT } from './access';
import { AnalyticsService } from './analytics/service';
import type { AnalyticsStore } from './analytics/ports';
import type { AuditLog } from './audit/model';
import { APPLE_APP_ATTESTATION_ROOT_PEM } from './client/attestation/apple-root';
import { AttestationVerifier, type AttestedKeyStore } from './client/attestation/verifier';
import { ClientEventsService, type ClientEventSink } from './client/events';
import { ClientService, type ClientObservationSink } from './client/service';
import { Sealer, uuid } from './crypto';
import { DeviceService } from './devices/service';
import { EnvironmentService } from './environments';
import type { ImportOptions } from './lists/imports';
import type { ListStore } from './lists/ports';
import { ListService } from './lists/service';
import type { EnvId } from './model';
import { PolicyDryRunService } from './policies/dry-run';
import { PolicyService } from './policies/service';
import type {
  Clock,
  CounterStore,
  CredentialStore,
  DebuggerStore,
  EnvironmentStore,
  EventStore,
  HttpPoster,
  Intel,
  PolicyStore,
  Scheduler,
  UserStateStore,
  WriteQueue,
} from './ports';
import type { Mailer, PrivacyStore } from './privacy/ports';
import { PrivacyService, type ExportLinks } from './privacy/service';
import type { QueryStore } from './queries/ports';
import { QueryService } from './queries/service';
import { RateLimiter } from './ratelimit';
import type { Services } from './services';
import { SessionService, type SessionOptions, type SessionStore } from './sessions/service';
import { TrackService } from './track';
import type { VerdictObserver } from './verdicts/evaluate';
import { VerdictService } from './verdicts/evaluate';
import type { WebhookDeliveryStore } from './webhooks/ports';
import { WebhookService, type WebhookObserver, type WebhookServiceDeps } from './webhooks/service';
import { DEFAULT_WORK_LIMITS, WorkLimiter, type WorkLimiterOptions } from './work-limiter';

/** What the use cases log through (the process logger in production, a recorder in tests). */
export interface ServiceLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/**
 * The storage ports. Production: the MongoDB repositories of src/store, each wrapped by
 * translatingErrors (app/build.ts). Unit tests: the maps of test/support/fakes (stores.ts,
 * state.ts).
 */
export interface ServiceStores {
  /** Environments (tenants). MongoEnvironmentStore; createFakeEnvironmentStore. */
  environments: EnvironmentStore;
  /** API secrets and analyst keys. MongoCredentialStore; createFakeCredentialStore. */
  credentials: CredentialStore;
  /** Profiles, devices and behaviour, one state per user. StateUserStore; createFakeUserStateStore. */
  users: UserStateStore;
  /** Stored events. MongoEventStore; createFakeEventStore. */
  events: EventStore;
  /** Payloads that could not be read (the debugger). MongoDebuggerStore; createFakeDebuggerStore. */
  debuggerLog: DebuggerStore;
  /** Velocity counters. StateCounterStore; createFakeCounterStore. */
  counters: CounterStore;
  /** Policies. MongoPolicyStore; createFakePolicyStore. */
  policies: PolicyStore;
  /** Lists and their items. MongoListStore; createFakeListStore. */
  lists: ListStore;
  /** The lists' audit log. MongoAuditLog; createFakeAuditLog. */
  audit: AuditLog;
  /** The webhook outbox and history. MongoWebhookStore; createFakeWebhookStore. */
  webhooks: WebhookDeliveryStore;
  /** Privacy jobs, exports and purges. MongoPrivacyStore; createFakePrivacyStore. */
  privacy: PrivacyStore;
  /** What the collector saw of each client. StateClientObservationStore; createFakeObservationSink. */
  observations: ClientObservationSink;
  /** Apps' attested keys. MongoAttestedKeyStore; createFakeAttestedKeyStore. */
  attestedKeys: AttestedKeyStore;
  /** Native apps' events. StateClientEventStore; createFakeClientEventSink. */
  appEvents: ClientEventSink;
  /** Console sessions. MongoSessionStore; createFakeSessionStore. */
  sessions: SessionStore;
  /** Dashboard searches. MongoQueryStore; createFakeQueryStore (reads the fake events, debugger and devices). */
  queries: QueryStore;
  /** Analytics and the dry run's stored verdicts. MongoAnalyticsStore; createFakeAnalyticsStore (likewise). */
  analytics: AnalyticsStore;
}

/** Every port the use cases need. Production: app/build.ts; unit tests: createFakeServices(). */
export interface ServicePorts {
  stores: ServiceStores;
  /** Admission and write-behind of the state layer. StateLayer; createFakeStateLayer. */
  writes: WriteQueue;
  /** systemClock; createFakeTime().clock. */
  clock: Clock;
  /** timerScheduler (workers/scheduler.ts); createFakeTime().scheduler. */
  scheduler: Scheduler;
  /** Webhook attempts. httpPoster (workers/http.ts); createFakeHttpPoster. */
  http: HttpPoster;
  /** Privacy export e-mails. createSmtpMailer or noMailer (mail/smtp.ts); createFakeMailer. */
  mailer: Mailer;
  /** IP, ASN and user-agent data. offlineIntel (src/intel); createFakeIntel. */
  intel: Intel;
  /** Where a signed privacy download points. restExportLinks (rest/privacy-links.ts); a fixed URL in tests. */
  links: ExportLinks;
  /** Seals secrets and derives the MAC keys (tokens, CSRF, export links) from the master key. */
  sealer: Sealer;
  log: ServiceLog;
  /** Metrics' hooks (app/metrics.ts); tests may record what they hear. */
  observers?: { verdicts?: VerdictObserver; webhooks?: WebhookObserver };
  /** The webhook back-off's jitter, 0–1 (default Math.random; tests fix it). */
  random?: () => number;
}

/** Requests per second per environment by default (RAMPART_RATE_LIMIT). */
export const DEFAULT_RATE_LIMIT_PER_SECOND = 5000;
/** Client collections per second per environment and address by default (RAMPART_CLIENT_RATE_LIMIT). */
export const DEFAULT_CLIENT_RATE_LIMIT_PER_SECOND = 10;
/** A client's burst, in seconds of its rate: a page asks once per form submission. */
export const CLIENT_BURST_SECONDS = 3;
/** How long a verified credential is reused by default (RAMPART_AUTH_CACHE_MS). */
export const DEFAULT_AUTH_CACHE_MS = 2000;
/** The window failed authentications are counted in (RAMPART_AUTH_FAILURE_LIMIT is per this). */
export const FAILED_AUTHENTICATION_WINDOW_MS = 60_000;

/** The numbers the use cases may be tuned by; each is optional, its default named beside it. */
export interface ServiceOptions {
  /** How long a verified credential is reused (default DEFAULT_AUTH_CACHE_MS). */
  authCacheMs?: number;
  /** Requests per second per environment (default DEFAULT_RATE_LIMIT_PER_SECOND; bursts of twice that). */
  rateLimitPerSecond?: number;
  /**
   * Browser and app collections, and app event batches, per second per environment and source
   * address (default DEFAULT_CLIENT_RATE_LIMIT_PER_SECOND; bursts of CLIENT_BURST_SECONDS times that).
   */
  clientRateLimitPerSecond?: number;
  /** The browser client's proof of work, in leading zero bits (default DEFAULT_POW_BITS; 0: trivial). */
  clientPowBits?: number;
  /** The App Attest trust anchor, PEM (default: Apple's App Attestation root). */
  appAttestRoot?: string;
  /** Failed authentications per FAILED_AUTHENTICATION_WINDOW_MS from one address before 429 (default 30). */
  authFailuresPerMinute?: number;
  /** How long a verdict may wait for its state (default DEFAULT_VERDICT_BUDGET_MS, 150 ms). */
  verdictBudgetMs?: number;
  /** Oldest event time a verdict or an app event accepts as such (default DEFAULT_MAX_EVENT_AGE_MS). */
  maxEventAgeMs?: number;
  /** Longest track and app events wait to be written before their call answers 503 (default 2 s). */
  ackTimeoutMs?: number;
  /** The verdicts' work limiter (defaults in DEFAULT_WORK_LIMITS: at most 128 at once, a second's wait). */
  workLimits?: Partial<Pick<WorkLimiterOptions, 'maxLimit' | 'maxWaitMs'>>;
  /** Console sessions' idle and absolute lifetimes (defaults 30 min, 12 h). */
  sessions?: SessionOptions;
  /** CSV imports of list items (core/lists/imports.ts). */
  listImports?: ImportOptions & { maxRows?: number };
  /**
   * Webhook delivery tuning (defaults in core/webhooks), and this process's name as the holder
   * of a delivery's lease (default: a random UUID).
   */
  webhooks?: Partial<
    Pick<
      WebhookServiceDeps,
      | 'backoffBaseMs'
      | 'backoffMaxMs'
      | 'maxAttempts'
      | 'dedupeWindowMs'
      | 'leaseMs'
      | 'requestTimeoutMs'
      | 'concurrency'
      | 'receiverConcurrency'
      | 'shutdownGraceMs'
      | 'shutdownConcurrency'
      | 'instanceId'
    >
  >;
}

/** Drops the keys whose value is undefined (a deps object then gets its own defaults). */
const defined = <T extends object>(o: T): Partial<T> =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;

export function createServices(ports: ServicePorts, options: ServiceOptions = {}): Services {
  const { stores, writes, clock, scheduler, intel, log, sealer } = ports;
  const o = options;

  // Policies and lists refer to each other (a policy may name only the environment's lists; a
  // list a policy names cannot be deleted): each reaches the other through a late-bound function.
  const policies: PolicyService = new PolicyService({
    store: stores.policies,
    clock,
    listIds: (env) => lists.ids(env),
  });
  const lists: ListService = new ListService({
    store: stores.lists,
    audit: stores.audit,
    clock,
    policiesUsing: (env, id) => policies.usingList(env, id),
    scheduler,
    writes,
    log,
    ...(o.listImports ? { imports: o.listImports } : {}),
  });
  // Environments before webhooks: deliveries are signed with the environment's newest secret.
  const environments = new EnvironmentService({
    environments: stores.environments,
    credentials: stores.credentials,
    policies,
    sealer,
    clock,
    authCacheMs: o.authCacheMs ?? DEFAULT_AUTH_CACHE_MS,
    scheduler,
  });
  const webhooks = new WebhookService({
    ...defined(o.webhooks ?? {}),
    store: stores.webhooks,
    signingSecret: (env: EnvId) => environments.signingSecret(env),
    environments: stores.environments,
    clock,
    http: ports.http,
    scheduler,
    instanceId: o.webhooks?.instanceId ?? uuid(),
    log,
    ...(ports.random ? { random: ports.random } : {}),
    ...(ports.observers?.webhooks ? { observer: ports.observers.webhooks } : {}),
  });

  // The collector before the devices, track and verdicts: they read its client tokens.
  const clientPerSecond = o.clientRateLimitPerSecond ?? DEFAULT_CLIENT_RATE_LIMIT_PER_SECOND;
  const clientLimiter = () =>
    new RateLimiter({
      perSecond: clientPerSecond,
      burst: CLIENT_BURST_SECONDS * clientPerSecond,
      limit: { per: 'per environment and source address', setting: 'RAMPART_CLIENT_RATE_LIMIT' },
    });
  const client = new ClientService({
    environments: stores.environments,
    key: sealer.macKey('client-token'),
    clock,
    observations: stores.observations,
    limiter: clientLimiter(),
    powBits: o.clientPowBits,
    attestation: new AttestationVerifier({
      keys: stores.attestedKeys,
      appleRoot: new X509Certificate(o.appAttestRoot ?? APPLE_APP_ATTESTATION_ROOT_PEM),
      open: (sealed) => sealer.open(sealed),
    }),
  });
  // App events: an install flushes on each open, close and identify, and every 20 events.
  const clientEvents = new ClientEventsService({
    keys: client.keys,
    key: sealer.macKey('client-token'),
    clock,
    limiter: clientLimiter(),
    sink: stores.appEvents,
    counters: stores.counters,
    secrets: (env: EnvId) => environments.liveSecrets(env),
    maxEventAgeMs: o.maxEventAgeMs,
    writes,
    ackTimeoutMs: o.ackTimeoutMs,
  });

  const devices = new DeviceService({ users: stores.users, webhooks, clock, clientTokens: client });
  const track = new TrackService({
    users: stores.users,
    events: stores.events,
    counters: stores.counters,
    debuggerLog: stores.debuggerLog,
    deviceService: devices,
    webhooks,
    writes,
    clock,
    scheduler,
    intel,
    log,
    clientTokens: client,
    ackTimeoutMs: o.ackTimeoutMs,
  });
  // At most so many verdicts at once, the bound adapting to how quickly they are answered: a
  // process given less CPU than its traffic needs answers what it admits in time and refuses the
  // rest early, instead of answering everything too late (core/work-limiter.ts).
  const limiter = new WorkLimiter({ ...DEFAULT_WORK_LIMITS, ...o.workLimits, clock, scheduler });
  const verdicts = new VerdictService({
    users: stores.users,
    events: stores.events,
    counters: stores.counters,
    writes,
    policies,
    lists,
    webhooks,
    clock,
    intel,
    log,
    budgetMs: o.verdictBudgetMs,
    maxEventAgeMs: o.maxEventAgeMs,
    ...(ports.observers?.verdicts ? { observer: ports.observers.verdicts } : {}),
    clientTokens: client,
    deviceTokenKey: sealer.macKey('device-token'),
    limiter,
  });
  const privacy = new PrivacyService({
    store: stores.privacy,
    users: stores.users,
    writes,
    webhooks,
    mailer: ports.mailer,
    sealer,
    clock,
    links: ports.links,
    log,
  });
  const access = new AccessService({
    environments,
    limiter: new RateLimiter({
      perSecond: o.rateLimitPerSecond ?? DEFAULT_RATE_LIMIT_PER_SECOND,
      limit: { per: 'per environment', setting: 'RAMPART_RATE_LIMIT' },
    }),
    failedLimit: {
      limit: o.authFailuresPerMinute ?? DEFAULT_FAILED_AUTHENTICATION_LIMIT.limit,
      windowMs: FAILED_AUTHENTICATION_WINDOW_MS,
    },
    now: () => clock.now().getTime(),
  });
  const sessions = new SessionService({
    ...o.sessions,
    store: stores.sessions,
    access,
    environments,
    clock,
    csrfKey: sealer.macKey('console-csrf'),
  });
  return {
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
    queries: new QueryService({ store: stores.queries, userStates: stores.users }),
    analytics: new AnalyticsService({ store: stores.analytics, clock }),
    dryRun: new PolicyDryRunService({ policies, events: stores.analytics, clock, lists }),
    sessions,
    read: { users: stores.users },
  };
}
