/**
 * createFakeServices(): the core's use cases wired to in-memory fakes of every port (fake time,
 * the state layer in memory, fake stores, intel, HTTP and mail) by the one wiring production
 * uses, createServices (core/create-services.ts), to which app/build.ts gives MongoDB and the
 * platform. No database, no network, no timer: a unit test runs in milliseconds
 * and waits only on `time.advance()`.
 */
import { randomBytes } from 'node:crypto';
import { asEnvId, type Environment, type Principal } from '../../../src/core/model';
import type { VerdictService } from '../../../src/core/verdicts/evaluate';
import type { TrackService } from '../../../src/core/track';
import type { DeviceService } from '../../../src/core/devices/service';
import type { PolicyService } from '../../../src/core/policies/service';
import type { WebhookService } from '../../../src/core/webhooks/service';
import type { PrivacyService } from '../../../src/core/privacy/service';
import type { ListService } from '../../../src/core/lists/service';
import type { ImportOptions } from '../../../src/core/lists/imports';
import { createFakeLog } from './log';
import type { Services } from '../../../src/core/services';
import { createServices } from '../../../src/core/create-services';
import { Sealer } from '../../../src/core/crypto';
import { createFakeTime, type FakeTime } from './time';
import {
  createFakeHttpPoster,
  createFakeIntel,
  createFakeMailer,
  type FakeHttpPoster,
  type FakeIntel,
  type FakeMailer,
} from './outside';
import {
  createFakeCounterStore,
  createFakeStateLayer,
  fakeDeviceCopies,
  createFakeUserStateStore,
  type FakeStateLayer,
} from './state';
import { createFakeAnalyticsStore, createFakeQueryStore, type FakeReadSources } from './reads';
import {
  createFakeAttestedKeyStore,
  createFakeAuditLog,
  createFakeClientEventSink,
  createFakeCredentialStore,
  createFakeObservationSink,
  createFakeSessionStore,
  createFakeDebuggerStore,
  createFakeListStore,
  createFakeEnvironmentStore,
  createFakeEventStore,
  createFakePolicyStore,
  createFakePrivacyStore,
  createFakeWebhookStore,
  type FakeDebuggerStore,
  type FakeEventStore,
  type FakePrivacyStore,
} from './stores';

export * from './log';
export * from './time';
export * from './outside';
export * from './state';
export * from './stores';
export * from './reads';

export interface FakeServices {
  /** Every use case, as the doors get them (the fields below name the ones unit tests drive). */
  services: Services;
  time: FakeTime;
  state: FakeStateLayer;
  intel: FakeIntel;
  http: FakeHttpPoster;
  mailer: FakeMailer;
  events: FakeEventStore;
  debuggerLog: FakeDebuggerStore;
  privacyStore: FakePrivacyStore;
  webhookStore: ReturnType<typeof createFakeWebhookStore>;
  log: ReturnType<typeof createFakeLog>;
  users: ReturnType<typeof createFakeUserStateStore>;
  counters: ReturnType<typeof createFakeCounterStore>;
  policies: PolicyService;
  lists: ListService;
  listStore: ReturnType<typeof createFakeListStore>;
  audit: ReturnType<typeof createFakeAuditLog>;
  devices: DeviceService;
  webhooks: WebhookService;
  /** What the webhook service told its observer (the metrics) of each attempt. */
  webhookAttempts: { failure: string | null; gaveUp: boolean }[];
  verdicts: VerdictService;
  track: TrackService;
  privacy: PrivacyService;
  /** A sandbox environment with its default policies, and a caller of it. */
  environment(opts?: Partial<Environment>): Promise<{ env: Environment; principal: Principal }>;
}

/** The API secret createFakeServices' environments sign their webhooks with. */
export const FAKE_SIGNING_SECRET = 'sk_test_fake_signing_secret';

export function createFakeServices(
  opts: { http?: FakeHttpPoster; budgetMs?: number; listImports?: ImportOptions & { maxRows?: number } } = {},
): FakeServices {
  const time = createFakeTime();
  const clock = time.clock;
  const state = createFakeStateLayer(time);
  const intel = createFakeIntel();
  const http = opts.http ?? createFakeHttpPoster();
  const mailer = createFakeMailer();
  const log = createFakeLog();
  const events = createFakeEventStore();
  const debuggerLog = createFakeDebuggerStore();
  const environments = createFakeEnvironmentStore();
  const webhookStore = createFakeWebhookStore();
  const privacyStore = createFakePrivacyStore({ events, debuggerLog });
  const users = createFakeUserStateStore(state);
  const counters = createFakeCounterStore(state, () => clock.now());
  const listStore = createFakeListStore();
  const audit = createFakeAuditLog();
  const webhookAttempts: FakeServices['webhookAttempts'] = [];
  // The dashboards read what the fakes above hold, as the MongoDB stores read their collections.
  const reads: FakeReadSources = {
    events: () => events.all,
    rejected: () => debuggerLog.all,
    devices: () => fakeDeviceCopies(state),
  };
  // The one wiring production uses (core/create-services.ts), given the fakes.
  const services = createServices(
    {
      stores: {
        environments,
        credentials: createFakeCredentialStore(),
        users,
        events,
        debuggerLog,
        counters,
        policies: createFakePolicyStore(),
        lists: listStore,
        audit,
        webhooks: webhookStore,
        privacy: privacyStore,
        observations: createFakeObservationSink(),
        attestedKeys: createFakeAttestedKeyStore(),
        appEvents: createFakeClientEventSink(),
        sessions: createFakeSessionStore(),
        queries: createFakeQueryStore(reads),
        analytics: createFakeAnalyticsStore(reads),
      },
      writes: state,
      clock,
      scheduler: time.scheduler,
      http,
      mailer,
      intel,
      links: {
        downloadUrl: (jobId, q) =>
          `https://rampart.test/v1/privacy/exports/${jobId}?expires=${q.expires}&signature=${q.signature}`,
      },
      sealer: new Sealer('11'.repeat(32)),
      log,
      observers: { webhooks: { attempted: (outcome) => void webhookAttempts.push(outcome) } },
      random: () => 0.5,
    },
    {
      verdictBudgetMs: opts.budgetMs,
      webhooks: { instanceId: 'unit' },
      ...(opts.listImports ? { listImports: opts.listImports } : {}),
    },
  );
  return {
    services,
    time,
    state,
    intel,
    http,
    mailer,
    events,
    debuggerLog,
    privacyStore,
    webhookStore,
    log,
    users,
    counters,
    policies: services.policies,
    lists: services.lists,
    listStore,
    audit,
    devices: services.devices,
    webhooks: services.webhooks,
    webhookAttempts,
    verdicts: services.verdicts,
    track: services.track,
    privacy: services.privacy,
    async environment(o = {}) {
      const env: Environment = {
        id: asEnvId(randomBytes(8).toString('hex')),
        name: 'sandbox',
        enabled: true,
        sandbox: true,
        publishableKey: `pk_${randomBytes(8).toString('hex')}`,
        webhookUrl: null,
        privacyEmail: null,
        createdAt: clock.now(),
        ...o,
      };
      await environments.create(env);
      await services.policies.createDefaults(env.id);
      // Its API secret, which signs its webhooks.
      const { credential } = await services.environments.addCredential(
        env.id,
        'secret',
        'unit',
        FAKE_SIGNING_SECRET,
      );
      return { env, principal: { env, kind: 'secret', credentialHash: credential.hash } };
    },
  };
}
