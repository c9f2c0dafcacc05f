/**
 * createFakeServices(): the core's use cases wired to in-memory fakes of every port (fake time,
 * the state layer in memory, fake stores, intel, HTTP and mail), as app/build.ts wires them to
 * MongoDB and the platform. No database, no network, no timer: a unit test runs in milliseconds
 * and waits only on `time.advance()`.
 */
import { randomBytes } from 'node:crypto';
import { asEnvId, type Environment, type Principal } from '../../../src/core/model';
import { VerdictService } from '../../../src/core/verdicts/evaluate';
import { TrackService } from '../../../src/core/track';
import { DeviceService } from '../../../src/core/devices/service';
import { PolicyService } from '../../../src/core/policies/service';
import { WebhookService } from '../../../src/core/webhooks/service';
import { PrivacyService } from '../../../src/core/privacy/service';
import { ListService } from '../../../src/core/lists/service';
import type { ImportOptions } from '../../../src/core/lists/imports';
import { createFakeLog } from './log';
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
  createFakeUserStateStore,
  type FakeStateLayer,
} from './state';
import {
  createFakeAuditLog,
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

export interface FakeServices {
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

export function createFakeServices(
  opts: { http?: FakeHttpPoster; budgetMs?: number; listImports?: ImportOptions & { maxRows?: number } } = {},
): FakeServices {
  const time = createFakeTime();
  const clock = time.clock;
  const state = createFakeStateLayer();
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
  const policies = new PolicyService({
    store: createFakePolicyStore(),
    clock,
    listIds: (env) => lists.ids(env),
  });
  const listStore = createFakeListStore();
  const audit = createFakeAuditLog();
  const lists: ListService = new ListService({
    store: listStore,
    audit,
    clock,
    policiesUsing: (env, id) => policies.usingList(env, id),
    scheduler: time.scheduler,
    writes: state,
    log,
    ...(opts.listImports ? { imports: opts.listImports } : {}),
  });
  const webhookAttempts: FakeServices['webhookAttempts'] = [];
  const webhooks = new WebhookService({
    store: webhookStore,
    signingSecret: async () => 'sk_test_fake_signing_secret',
    environments,
    clock,
    http,
    scheduler: time.scheduler,
    instanceId: 'unit',
    log,
    random: () => 0.5,
    observer: { attempted: (outcome) => void webhookAttempts.push(outcome) },
  });
  const devices = new DeviceService({ users, webhooks, clock });
  const verdicts = new VerdictService({
    users,
    events,
    counters,
    writes: state,
    policies,
    lists,
    webhooks,
    clock,
    intel,
    log,
    budgetMs: opts.budgetMs,
  });
  const track = new TrackService({
    users,
    events,
    counters,
    debuggerLog,
    deviceService: devices,
    webhooks,
    writes: state,
    clock,
    scheduler: time.scheduler,
    intel,
    log,
  });
  const privacy = new PrivacyService({
    store: privacyStore,
    users,
    writes: state,
    webhooks,
    mailer,
    sealer: { macKey: (purpose) => Buffer.from(`fake-mac-key-${purpose}`) },
    clock,
    links: {
      downloadUrl: (jobId, q) =>
        `https://rampart.test/v1/privacy/exports/${jobId}?expires=${q.expires}&signature=${q.signature}`,
    },
    log,
  });
  return {
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
    policies,
    lists,
    listStore,
    audit,
    devices,
    webhooks,
    webhookAttempts,
    verdicts,
    track,
    privacy,
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
      await policies.createDefaults(env.id);
      return { env, principal: { env, kind: 'secret', credentialHash: 'unit' } };
    },
  };
}
