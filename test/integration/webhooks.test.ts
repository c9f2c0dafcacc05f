/**
 * Webhook outbox against the real test database and a real HTTP receiver on loopback:
 * signatures, body shape, dedupe, retries with backoff, attempt history, leases across instances,
 * the attempt limit, and survival across a restart.
 */
import { createHmac, randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { applyIndexes } from '../../src/store/database';
import { indexesFor, serverKind } from '../../src/store/server-kind';
import { StateLayer } from '../../src/store/state/layer';
import { MongoWebhookStore, webhookIndexes } from '../../src/store/webhooks';
import { WebhookService, backoffDelay, type WebhookServiceDeps } from '../../src/core/webhooks/service';
import { WebhookWorker, type WebhookWorkerOptions } from '../../src/workers/webhooks';
import { httpPoster } from '../../src/workers/http';
import { timerScheduler } from '../../src/workers/scheduler';
import { signRampart, verifyCastle, verifyRampart } from '../../src/core/webhooks/signature';
import type { WebhookNotice } from '../../src/core/webhooks/ports';
import type { WebhookDelivery } from '../../src/core/webhooks/model';
import type { WebhookDeliveryStore } from '../../src/core/webhooks/ports';
import { asEnvId, type Device, type EnvId, type Environment } from '../../src/core/model';
import { InvalidParameters } from '../../src/core/errors';
import { testDatabase, type TestDatabase } from '../support/db';
import { delay, waitFor } from '../support/wait';

jest.setTimeout(60_000);

const SECRET = 'sk_test_webhook_secret_0123456789';

interface Received {
  headers: http.IncomingHttpHeaders;
  body: string;
  at: number;
}

/** A webhook receiver that records every request and answers what `respond` says. */
class Receiver {
  readonly requests: Received[] = [];
  respond: (n: number, req: Received) => number = () => 200;
  delayMs = 0;
  /** Runs before the answer (after `delayMs`): a receiver that is busy with the request. */
  before: ((n: number, req: Received) => Promise<void> | void) | null = null;
  private readonly server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const n = this.requests.length;
      const received: Received = {
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        at: Date.now(),
      };
      this.requests.push(received);
      // The receiver's latency (`delayMs`), then its work (`before`), then its answer.
      void delay(this.delayMs)
        .then(() => this.before?.(n, received))
        .then(() => {
          res.statusCode = this.respond(n, received);
          res.end('ok');
        });
    });
  });
  url = '';
  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hooks/castle`;
  }
  reset(): void {
    this.requests.length = 0;
    this.respond = () => 200;
    this.delayMs = 0;
    this.before = null;
  }
  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** A fake receiver's "give up after `ms`", in a race against an event that may never come (does not keep the process alive). */
const atMost = (ms: number) => delay(ms, { unref: true });

let database: TestDatabase;
let store: MongoWebhookStore;
/** The same outbox, claimed through claim documents (any other FerretDB, whose findAndModify is not atomic). */
let claimingStore: MongoWebhookStore;
const receiver = new Receiver();
const envs = new Map<string, Environment>();
let skewMs = 0;
const clock = { now: () => new Date(Date.now() + skewMs) };
const logs: { level: string; msg: string; obj: object }[] = [];
const log = {
  warn: (obj: object, msg: string) => logs.push({ level: 'warn', msg, obj }),
  info: (obj: object, msg: string) => logs.push({ level: 'info', msg, obj }),
};
/**
 * A WebhookService with its delivery worker, as the composition root runs them, and how many
 * attempts it has made (heard as the metrics hear them, through its observer).
 */
type Running = WebhookService & { start(): void; stop(): Promise<void>; attempted(): number };
const services: Running[] = [];

function newEnv(webhookUrl: string | null = receiver.url): Environment {
  const env: Environment = {
    id: asEnvId(randomUUID()),
    name: `wh-${envs.size}`,
    enabled: true,
    sandbox: true,
    publishableKey: 'pk_test',
    webhookUrl,
    privacyEmail: null,
    createdAt: new Date(),
  };
  envs.set(env.id, env);
  return env;
}

function service(
  instanceId: string,
  opts: Partial<WebhookServiceDeps> & Pick<WebhookWorkerOptions, 'pollMs'> = {},
): Running {
  const { pollMs = 50, ...deps } = opts;
  let attempted = 0;
  const s = new WebhookService({
    store,
    signingSecret: async () => SECRET,
    environments: { byId: async (id: EnvId) => envs.get(id) ?? null },
    clock,
    http: httpPoster,
    scheduler: timerScheduler,
    instanceId,
    log,
    backoffBaseMs: 20,
    requestTimeoutMs: 2000,
    leaseMs: 5000,
    observer: { attempted: () => void attempted++ },
    ...deps,
  });
  const worker = new WebhookWorker(s, { scheduler: timerScheduler, log, pollMs });
  const running = Object.assign(s, {
    start: () => worker.start(),
    stop: () => worker.stop(),
    attempted: () => attempted,
  });
  services.push(running);
  return running;
}

/**
 * The worker's passes, driven by hand through the dispatcher's own API: a pass (`deliverDue`),
 * then a wait until every attempt it started (and each user's next delivery those started when
 * they ended) has been made and recorded, and again until a pass starts nothing or `passes` were
 * made. Returns the attempts made.
 */
async function sendDue(svc: Running, passes = Infinity): Promise<number> {
  const before = svc.attempted();
  for (let i = 0; i < passes; i++) {
    const { started } = await svc.deliverDue();
    if (started === 0) break;
    await svc.dispatcher.idle();
  }
  return svc.attempted() - before;
}

function device(env: Environment, userId: string, token = `dev_${randomUUID()}`): Device {
  return {
    token,
    envId: env.id,
    userId,
    identity: 'fingerprint',
    fingerprintKey: 'f:abc',
    createdAt: new Date(),
    lastSeenAt: new Date(),
    approvedAt: null,
    escalatedAt: new Date(),
    mitigatedAt: null,
    removedAt: null,
    riskScore: 100,
    feedback: 'reported',
    sightings: 1,
    machine: null,
    linkedKeys: [],
    context: {
      ip: '203.0.113.7',
      location: null,
      userAgent: {
        raw: 'UA',
        browser: 'Chrome',
        version: '120',
        os: 'Mac OS X',
        mobile: false,
        platform: 'Mac OS X',
        device: 'Unknown',
        family: 'Chrome',
        type: 'desktop',
        bot: false,
        headless: false,
        crawler: false,
      },
      type: 'desktop',
      properties: {},
    },
    lastEventRisk: 0.95,
  };
}

function notice(
  env: Environment,
  userId: string,
  dev: Device | null,
  type: WebhookNotice['type'] = '$incident.confirmed',
): WebhookNotice {
  return {
    type,
    env,
    userId,
    device: dev,
    trigger: 'verdict_deny',
    context: {
      ip: '203.0.113.7',
      userAgent: {
        raw: 'Mozilla/5.0 (Macintosh)',
        browser: 'Chrome',
        version: '120.0',
        os: 'Mac OS X 10.15',
        mobile: false,
        platform: 'Mac OS X',
        device: 'Unknown',
        family: 'Chrome',
        type: 'desktop',
        bot: false,
        headless: false,
        crawler: false,
      },
      location: {
        country_code: 'US',
        country: 'United States',
        region: 'California',
        region_code: null,
        city: 'San Francisco',
        lat: 37.77,
        lon: -122.42,
      },
    },
    policy: {
      id: '3b4a0c7e-0000-4000-8000-000000000001',
      revision: '3b4a0c7e-0000-4000-8000-000000000002',
      name: 'Deny high risk',
      action: 'deny',
    },
    userTraits: { email: 'ada@example.com' },
    properties: {},
    at: new Date(),
  };
}

async function deliveries(env: Environment): Promise<WebhookDelivery[]> {
  return store.list(env.id, { limit: 100 });
}

beforeAll(async () => {
  database = await testDatabase();
  await applyIndexes(database.db, indexesFor(await serverKind(database.db), webhookIndexes));
  const kind = await serverKind(database.db);
  const state = new StateLayer(database.db, {
    onError: (err) => {
      throw err;
    },
  });
  // As the composition root builds it: claims without a claim document where findAndModify is atomic.
  store = new MongoWebhookStore({
    db: database.db,
    state,
    atomicUpdates: !kind.ferretdb || kind.indexPushdown,
  });
  claimingStore = new MongoWebhookStore({ db: database.db, state, atomicUpdates: false });
  await receiver.start();
});

afterEach(async () => {
  await Promise.all(services.splice(0).map((s) => s.stop()));
  // Nothing a test leaves due may be sent (and counted) by the next one.
  await database.db.collection('webhook_outbox').deleteMany({ status: { $in: ['pending', 'delivering'] } });
  receiver.reset();
  skewMs = 0;
});

afterAll(async () => {
  await receiver.close();
  await database?.drop();
});

describe('signatures', () => {
  it('signs and verifies the replay-protected header', () => {
    const body = '{"a":1}';
    const now = new Date();
    const t = Math.floor(now.getTime() / 1000);
    const header = signRampart(SECRET, body, t);
    expect(header).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    expect(verifyRampart(SECRET, body, header, 300, now)).toBe(true);
    expect(verifyRampart('other', body, header, 300, now)).toBe(false);
    expect(verifyRampart(SECRET, '{"a":2}', header, 300, now)).toBe(false);
    expect(verifyRampart(SECRET, body, header, 300, new Date(now.getTime() + 301_000))).toBe(false);
    expect(verifyRampart(SECRET, body, 'garbage', 300, now)).toBe(false);
    expect(verifyRampart(SECRET, body, `t=${t},v1=${'0'.repeat(64)},${header.split(',')[1]}`, 300, now)).toBe(
      true,
    );
  });

  it('backs off exponentially with bounded jitter, capped', () => {
    expect(backoffDelay(1, 1000, 3_600_000, () => 0.5)).toBe(1000);
    expect(backoffDelay(4, 1000, 3_600_000, () => 0.5)).toBe(8000);
    expect(backoffDelay(30, 1000, 3_600_000, () => 0.99)).toBe(3_600_000);
    expect(backoffDelay(2, 1000, 3_600_000, () => 0)).toBe(1600);
    expect(backoffDelay(2, 1000, 3_600_000, () => 0.999)).toBeLessThanOrEqual(2400);
  });
});

describe('delivery', () => {
  it('POSTs the documented body with both signatures and records the attempt', async () => {
    const env = newEnv();
    const svc = service('a');
    const dev = device(env, 'user-1');
    await svc.emit(notice(env, 'user-1', dev));
    expect(await sendDue(svc)).toBe(1);
    expect(receiver.requests).toHaveLength(1);
    const req = receiver.requests[0]!;

    expect(req.headers['content-type']).toBe('application/json');
    expect(req.headers['user-agent']).toBe('Rampart-Webhooks/1');
    const castle = createHmac('sha256', SECRET).update(req.body).digest('base64');
    expect(req.headers['x-castle-signature']).toBe(castle);
    expect(verifyCastle(SECRET, req.body, String(req.headers['x-castle-signature']))).toBe(true);
    const rampart = String(req.headers['x-rampart-signature']);
    expect(verifyRampart(SECRET, req.body, rampart, 300, new Date())).toBe(true);
    const t = Number(/t=(\d+)/.exec(rampart)?.[1]);
    expect(rampart).toContain(`v1=${createHmac('sha256', SECRET).update(`${t}.${req.body}`).digest('hex')}`);

    const body = JSON.parse(req.body);
    expect(Object.keys(body)).toEqual([
      'api_version',
      'app_id',
      'type',
      'created_at',
      'data',
      'user_traits',
      'properties',
    ]);
    expect(Object.keys(body.data)).toEqual(['id', 'device_token', 'user_id', 'trigger', 'context', 'policy']);
    expect(body).toEqual({
      api_version: 'v1',
      app_id: env.id,
      type: '$incident.confirmed',
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      data: {
        id: req.headers['x-rampart-delivery'],
        device_token: dev.token,
        user_id: 'user-1',
        trigger: 'verdict_deny',
        context: {
          ip: '203.0.113.7',
          user_agent: {
            raw: 'Mozilla/5.0 (Macintosh)',
            browser: 'Chrome',
            version: '120.0',
            os: 'Mac OS X 10.15',
            mobile: false,
            platform: 'Mac OS X',
            device: 'Unknown',
            family: 'Chrome',
          },
          location: {
            country_code: 'US',
            country: 'United States',
            region: 'California',
            region_code: null,
            city: 'San Francisco',
            lat: 37.77,
            lon: -122.42,
          },
        },
        policy: {
          id: '3b4a0c7e-0000-4000-8000-000000000001',
          revision: '3b4a0c7e-0000-4000-8000-000000000002',
          name: 'Deny high risk',
          action: 'deny',
        },
      },
      user_traits: { email: 'ada@example.com' },
      properties: {},
    });

    const [d] = await deliveries(env);
    expect(d).toMatchObject({
      id: body.data.id,
      status: 'delivered',
      userId: 'user-1',
      deviceToken: dev.token,
      type: '$incident.confirmed',
      url: receiver.url,
      body: req.body,
      leaseOwner: null,
    });
    expect(d!.deliveredAt).toBeInstanceOf(Date);
    expect(d!.attempts).toHaveLength(1);
    expect(d!.attempts[0]).toMatchObject({ statusCode: 200, error: null, instance: 'a', url: receiver.url });
    expect(typeof d!.attempts[0]!.durationMs).toBe('number');
    expect(await svc.get(env.id, d!.id)).toMatchObject({ id: d!.id });
    expect(await svc.get(newEnv().id, d!.id)).toBeNull();
  });

  it('records nothing for an environment without a webhook URL', async () => {
    const env = newEnv(null);
    const svc = service('a');
    await svc.emit(notice(env, 'user-1', device(env, 'user-1')));
    expect(await deliveries(env)).toHaveLength(0);
    await expect(svc.sendTest(env)).rejects.toBeInstanceOf(InvalidParameters);
  });

  it('deduplicates per (user, device, type) within the window, atomically', async () => {
    const env = newEnv();
    const svc = service('a', { dedupeWindowMs: 3_600_000 });
    const dev = device(env, 'user-1');
    await Promise.all(Array.from({ length: 6 }, () => svc.emit(notice(env, 'user-1', dev))));
    await svc.emit(notice(env, 'user-1', dev));
    expect(await deliveries(env)).toHaveLength(1);
    await svc.emit(notice(env, 'user-1', dev, '$review.opened'));
    await svc.emit(notice(env, 'user-1', device(env, 'user-1')));
    await svc.emit(notice(env, 'user-2', dev));
    expect(await deliveries(env)).toHaveLength(4);
    // Another instance shares the dedupe state.
    await service('b', { dedupeWindowMs: 3_600_000 }).emit(notice(env, 'user-1', dev));
    expect(await deliveries(env)).toHaveLength(4);
    // A window later the same notice is sent again.
    skewMs = 3_600_000;
    await svc.emit(notice(env, 'user-1', dev));
    expect(await deliveries(env)).toHaveLength(5);
    expect(await sendDue(svc)).toBe(5);
    expect(receiver.requests).toHaveLength(5);
  });

  it('retries with backoff after a 500 and keeps the history of attempts', async () => {
    const env = newEnv();
    const svc = service('a', { backoffBaseMs: 200 });
    receiver.respond = (n) => (n === 0 ? 500 : 200);
    await svc.emit(notice(env, 'user-1', null));
    expect(await sendDue(svc)).toBe(1);
    let [d] = await deliveries(env);
    expect(d!.status).toBe('pending');
    expect(d!.lastError).toBe('HTTP 500');
    expect(d!.attempts).toEqual([expect.objectContaining({ statusCode: 500, error: null })]);
    const wait = d!.nextAttemptAt!.getTime() - d!.attempts[0]!.at.getTime();
    expect(wait).toBeGreaterThanOrEqual(160);
    expect(wait).toBeLessThanOrEqual(400);
    // Not due yet: nothing is sent.
    expect(await sendDue(svc)).toBe(0);
    // Sent once it is due.
    expect(await waitFor(() => sendDue(svc), { what: 'a pass that sends the retry once it is due' })).toBe(1);
    [d] = await deliveries(env);
    expect(d!.status).toBe('delivered');
    expect(d!.attempts.map((a) => a.statusCode)).toEqual([500, 200]);
    expect(receiver.requests).toHaveLength(2);
    expect(receiver.requests[1]!.at - receiver.requests[0]!.at).toBeGreaterThanOrEqual(160);
    // Same body and same Castle signature on every attempt.
    expect(receiver.requests[1]!.body).toBe(receiver.requests[0]!.body);
    expect(receiver.requests[1]!.headers['x-castle-signature']).toBe(
      receiver.requests[0]!.headers['x-castle-signature'],
    );
  });

  it('the background worker retries on its own until delivered', async () => {
    const env = newEnv();
    receiver.respond = (n) => (n < 2 ? 503 : 204);
    const svc = service('a', { backoffBaseMs: 20, pollMs: 20 });
    svc.start();
    await svc.emit(notice(env, 'user-1', null));
    const d = await waitFor(async () => (await deliveries(env)).find((x) => x.status === 'delivered'), {
      what: 'the delivery to be delivered',
    });
    expect(d.attempts.map((a) => a.statusCode)).toEqual([503, 503, 204]);
  });

  it('gives up after maxAttempts and records errors without a status code', async () => {
    const env = newEnv();
    receiver.respond = () => 500;
    const svc = service('a', { maxAttempts: 3, backoffBaseMs: 1 });
    await svc.emit(notice(env, 'user-1', null));
    await waitFor(
      async () => {
        await sendDue(svc);
        return (await deliveries(env))[0]?.status === 'failed';
      },
      { what: 'the delivery to fail for good' },
    );
    const [d] = await deliveries(env);
    expect(d!.attempts.map((a) => a.statusCode)).toEqual([500, 500, 500]);
    expect(d!.lastError).toBe('HTTP 500');
    expect(d!.nextAttemptAt).toBeNull();
    expect(await sendDue(svc)).toBe(0);
    expect(receiver.requests).toHaveLength(3);

    // Connection refused: the error is recorded in place of a status code.
    const closed = http.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    const dead = newEnv(`http://127.0.0.1:${port}/`);
    await svc.emit(notice(dead, 'user-1', null));
    // One pass: its retry is due a moment later.
    expect(await sendDue(svc, 1)).toBe(1);
    const [e] = await deliveries(dead);
    expect(e!.status).toBe('pending');
    expect(e!.attempts[0]).toMatchObject({
      statusCode: null,
      error: expect.stringContaining('ECONNREFUSED'),
    });
  });

  it.each([
    ['the lease version alone', () => store],
    ['claim documents', () => claimingStore],
  ])('never double-sends when several instances claim at once (claims by %s)', async (_how, storeOf) => {
    const env = newEnv();
    receiver.delayMs = 50;
    const seeder = service('seed');
    for (let i = 0; i < 12; i++) await seeder.emit(notice(env, `user-${i}`, null));
    const workers = ['a', 'b', 'c'].map((id) => service(id, { store: storeOf() }));
    const counts = await Promise.all(workers.map((w) => sendDue(w)));
    expect(counts.reduce((a, b) => a + b, 0)).toBe(12);
    expect(receiver.requests).toHaveLength(12);
    const ids = receiver.requests.map((r) => r.headers['x-rampart-delivery']);
    expect(new Set(ids).size).toBe(12);
    const all = await deliveries(env);
    expect(all.every((d) => d.status === 'delivered' && d.attempts.length === 1)).toBe(true);

    // The single-delivery case of the brief: two instances, one delivery, exactly one send.
    receiver.reset();
    await seeder.emit(notice(env, 'solo', null));
    const [x, y] = await Promise.all([
      sendDue(service('x', { store: storeOf() })),
      sendDue(service('y', { store: storeOf() })),
    ]);
    expect(x + y).toBe(1);
    expect(receiver.requests).toHaveLength(1);
  });

  it('survives a restart: pending deliveries and expired leases are picked up by a new instance', async () => {
    const env = newEnv();
    const first = service('first');
    await first.emit(notice(env, 'user-1', null));
    await first.emit(notice(env, 'user-2', null));
    // "first" claims user-2's delivery and dies before sending it.
    const [pending] = (await store.due(clock.now(), { limit: 10 })).deliveries.filter(
      (d) => d.userId === 'user-2' && d.envId === env.id,
    );
    const now = clock.now();
    const claimed = await store.claim(pending!, 'first', now, new Date(now.getTime() + 300));
    expect(claimed?.status).toBe('delivering');
    // Another claim of the same version fails while the lease holds.
    expect(await store.claim(pending!, 'other', clock.now(), new Date(Date.now() + 300))).toBeNull();

    const second = service('second', { pollMs: 25 });
    second.start();
    await waitFor(async () => (await deliveries(env)).filter((d) => d.status === 'delivered').length === 2, {
      what: 'both deliveries to be delivered by the second instance',
    });
    const all = await deliveries(env);
    expect(all.map((d) => d.attempts.map((a) => a.instance))).toEqual([['second'], ['second']]);
    expect(receiver.requests).toHaveLength(2);
  });

  it('stop() waits for the deliveries in flight', async () => {
    const env = newEnv();
    receiver.delayMs = 300;
    const svc = service('a', { pollMs: 10 });
    svc.start();
    await svc.emit(notice(env, 'user-1', null));
    await waitFor(() => receiver.requests.length === 1, { what: 'the request to reach the receiver' });
    await svc.stop();
    const [d] = await deliveries(env);
    expect(d!.status).toBe('delivered');
  });

  it('sends a test webhook once, without dedupe, and lists with cursors', async () => {
    const env = newEnv();
    const svc = service('a');
    const one = await svc.sendTest(env);
    const two = await svc.sendTest(env);
    expect(one.status).toBe('delivered');
    expect(two.status).toBe('delivered');
    expect(one.test).toBe(true);
    const body = JSON.parse(receiver.requests[0]!.body);
    expect(body).toMatchObject({
      type: '$incident.confirmed',
      app_id: env.id,
      data: { user_id: null, device_token: null, trigger: 'test', policy: null },
    });
    expect(
      verifyRampart(
        SECRET,
        receiver.requests[1]!.body,
        String(receiver.requests[1]!.headers['x-rampart-signature']),
        300,
        new Date(),
      ),
    ).toBe(true);

    receiver.respond = () => 500;
    const failed = await svc.sendTest(env);
    expect(failed.status).toBe('failed');
    expect(failed.attempts).toHaveLength(1);

    await svc.emit(notice(env, 'user-9', null));
    const page1 = await svc.list(env.id, { limit: 2 });
    const page2 = await svc.list(env.id, { limit: 2, after: page1[1]!.id });
    expect(page1).toHaveLength(2);
    expect(page2).toHaveLength(2);
    expect(new Set([...page1, ...page2].map((d) => d.id)).size).toBe(4);
    expect((await svc.list(env.id, { limit: 10, status: 'failed' })).map((d) => d.id)).toEqual([failed.id]);
    expect((await svc.list(env.id, { limit: 10, status: 'pending' })).map((d) => d.userId)).toEqual([
      'user-9',
    ]);
    expect((await svc.listForUser(env.id, 'user-9')).map((d) => d.userId)).toEqual(['user-9']);
    await expect(svc.list(env.id, { limit: 2, after: randomUUID() })).rejects.toBeInstanceOf(
      InvalidParameters,
    );
  });

  it('fails a delivery for good when the environment lost its webhook URL', async () => {
    const env = newEnv();
    const svc = service('a');
    await svc.emit(notice(env, 'user-1', null));
    envs.set(env.id, { ...env, webhookUrl: null });
    expect(await sendDue(svc)).toBe(1);
    const [d] = await deliveries(env);
    expect(d).toMatchObject({ status: 'failed', lastError: 'the environment no longer has a webhook URL' });
    expect(receiver.requests).toHaveLength(0);
  });
});

/** The delivery id a request carried, from the body (what receivers de-duplicate on). */
const idOf = (r: Received): string => (JSON.parse(r.body) as { data: { id: string } }).data.id;

describe('a slow receiver gets a delivery again only when an attempt failed', () => {
  it('an attempt that outlives its lease is not sent again by the instance making it', async () => {
    const env = newEnv();
    // The first request holds the attempt while the (injected) clock passes the end of its lease,
    // as a stalled database or a paused process would; the worker keeps polling meanwhile.
    receiver.before = async (n) => {
      if (n > 0) return;
      skewMs += 61_000;
      await delay(400);
    };
    // A request timeout far above the receiver's 400 ms, so that a busy machine does not make the
    // attempt fail (and rightly be sent again); the lease must exceed it.
    const svc = service('a', { leaseMs: 60_000, requestTimeoutMs: 30_000, pollMs: 10 });
    svc.start();
    await svc.emit(notice(env, 'user-1', null));
    const d = await waitFor(async () => (await deliveries(env)).find((x) => x.status === 'delivered'), {
      what: 'the delivery to be delivered',
    });
    await svc.stop();
    expect(receiver.requests.map(idOf)).toEqual([d.id]);
    expect(d.attempts.map((a) => a.statusCode)).toEqual([200]);
  });

  it('an attempt starts only if its whole timeout fits in its lease, so no other instance can send it meanwhile', async () => {
    const env = newEnv();
    receiver.delayMs = 1500;
    // Instance "a" is slow between its claim and its request (a stalled look-up): most of its lease is gone.
    let stalls = 1;
    const slow = service('a', {
      leaseMs: 5000,
      requestTimeoutMs: 2000,
      environments: {
        byId: async (id: EnvId) => {
          if (stalls-- > 0) skewMs += 4000;
          return envs.get(id) ?? null;
        },
      },
    });
    const other = service('b', { leaseMs: 5000, requestTimeoutMs: 2000, pollMs: 10 });
    await slow.emit(notice(env, 'user-1', null));
    // One pass of "a": it claims the delivery, finds its lease too short and gives it back.
    const mark = logs.length;
    expect((await slow.deliverDue()).started).toBe(1);
    other.start();
    await waitFor(
      () =>
        logs
          .slice(mark)
          .some((l) => l.msg === 'webhooks: lease too short for an attempt; given back without sending'),
      { what: 'instance a to give the delivery back' },
    );
    const d = await waitFor(async () => (await deliveries(env)).find((x) => x.status === 'delivered'), {
      what: 'the delivery to be delivered',
    });
    await other.stop();
    expect(receiver.requests.map(idOf)).toEqual([d.id]);
    expect(d.attempts.map((a) => [a.instance, a.statusCode])).toEqual([['b', 200]]);
  });

  it('a 2xx whose recording failed once is recorded, not sent again', async () => {
    const env = newEnv();
    let failures = 1;
    // The real store, with one failed write of the outcome (a database hiccup after the answer).
    const flaky = new Proxy(store, {
      get(target, prop, recv) {
        if (prop === 'complete') {
          return async (...args: Parameters<WebhookDeliveryStore['complete']>) => {
            if (failures-- > 0) throw new Error('connection reset');
            return target.complete(...args);
          };
        }
        const v: unknown = Reflect.get(target, prop, recv);
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
    const svc = service('a', { store: flaky, leaseMs: 5000, requestTimeoutMs: 2000 });
    await svc.emit(notice(env, 'user-1', null));
    expect(await sendDue(svc)).toBe(1);
    // Long after the lease: nothing is left to send.
    skewMs += 60_000;
    expect(await sendDue(svc)).toBe(0);
    const [d] = await deliveries(env);
    expect(receiver.requests.map(idOf)).toEqual([d!.id]);
    expect(d).toMatchObject({ status: 'delivered' });
    expect(d!.attempts.map((a) => a.statusCode)).toEqual([200]);
  });

  it('after a timeout the retry waits at least the timeout, so the first copy is answered and de-duplicated first', async () => {
    const env = newEnv();
    const timeoutMs = 1000;
    // A receiver that checks the id, works (longer than the timeout on the first copy), then
    // records the id: a second copy arriving while it works would be acted on twice.
    const done = new Set<string>();
    let actions = 0;
    receiver.before = async (n, req) => {
      const id = idOf(req);
      if (done.has(id)) return;
      actions++;
      if (n === 0) await delay(timeoutMs + 300);
      done.add(id);
    };
    const svc = service('a', {
      requestTimeoutMs: timeoutMs,
      leaseMs: 5000,
      backoffBaseMs: 20,
      pollMs: 20,
      random: () => 0.5,
    });
    svc.start();
    await svc.emit(notice(env, 'user-1', null));
    const d = await waitFor(async () => (await deliveries(env)).find((x) => x.status === 'delivered'), {
      what: 'the delivery to be delivered',
    });
    expect(d.attempts.map((a) => a.statusCode)).toEqual([null, 200]);
    expect(d.attempts[0]!.error).toBe(`timed out after ${timeoutMs} ms`);
    // The retry was scheduled a full timeout after the attempt ended (injected clock).
    const retry = logs.find(
      (l) =>
        l.msg === 'webhooks: attempt failed, will retry' &&
        (l.obj as { delivery?: string }).delivery === d.id,
    );
    const next = (retry!.obj as { nextAttemptAt: Date }).nextAttemptAt;
    expect(next.getTime() - d.attempts[0]!.at.getTime()).toBeGreaterThanOrEqual(2 * timeoutMs - 50);
    // Every copy carries the same id, in the body and the header, and the receiver acted once.
    expect(receiver.requests.map(idOf)).toEqual([d.id, d.id]);
    expect(receiver.requests.map((r) => r.headers['x-rampart-delivery'])).toEqual([d.id, d.id]);
    expect(receiver.requests[1]!.body).toBe(receiver.requests[0]!.body);
    expect(actions).toBe(1);
  });
});

/** What a request was about: user, device and type (tells apart the deliveries of one user). */
const keyOf = (r: Received): string => {
  const b = JSON.parse(r.body) as {
    type: string;
    data: { user_id: string | null; device_token: string | null };
  };
  return `${b.data.user_id}|${b.data.device_token}|${b.type}`;
};
const keyOfNotice = (n: WebhookNotice): string => `${n.userId}|${n.device?.token ?? null}|${n.type}`;

describe('ordered per user', () => {
  it("after an outage, each user's backlog arrives in the order it was created, with two instances sending", async () => {
    const env = newEnv();
    let down = true;
    receiver.respond = () => (down ? 503 : 200);
    const opts = { backoffBaseMs: 30, backoffMaxMs: 120, maxAttempts: 1000, pollMs: 10 };
    const a = service('a', opts);
    const b = service('b', opts);
    a.start();
    b.start();
    // Three users, interleaved; a challenge verdict makes two notices in the same turn
    // (`$incident.confirmed` then `$review.opened`), usually within the same millisecond.
    const users = ['u0', 'u1', 'u2'];
    const created = new Map<string, string[]>(users.map((u) => [u, []]));
    for (let k = 0; k < 3; k++) {
      for (const u of users) {
        const dev = device(env, u);
        const first = notice(env, u, dev, '$incident.confirmed');
        created.get(u)!.push(keyOfNotice(first));
        if (k < 2) {
          await (k % 2 ? b : a).emit(first);
          continue;
        }
        const second = notice(env, u, dev, '$review.opened');
        created.get(u)!.push(keyOfNotice(second));
        await Promise.all([a.emit(first), a.emit(second)]);
      }
    }
    // The receiver stays down until every user's first delivery has been retried.
    await waitFor(
      async () => {
        const all = await deliveries(env);
        return users.every((u) => all.some((d) => d.userId === u && d.attempts.length >= 2));
      },
      { what: "every user's first delivery to be retried" },
    );
    down = false;
    await waitFor(
      async () => {
        const all = await deliveries(env);
        return all.length === 12 && all.every((d) => d.status === 'delivered');
      },
      { what: 'all 12 deliveries to be delivered', timeoutMs: 20_000 },
    );
    for (const u of users) {
      const order = created.get(u)!;
      const seen = receiver.requests.map(keyOf).filter((k) => k.startsWith(`${u}|`));
      // Every attempt of a delivery comes before the first attempt of the user's next one.
      const positions = seen.map((k) => order.indexOf(k));
      expect(positions).toEqual([...positions].sort((x, y) => x - y));
      expect([...new Set(seen)]).toEqual(order);
    }
  });

  it('a later delivery waits while an earlier one of its user is retried, other users do not wait, and it goes once the earlier one failed for good', async () => {
    const env = newEnv();
    const alice = [device(env, 'alice'), ...Array.from({ length: 20 }, () => device(env, 'alice'))];
    const headKey = keyOfNotice(notice(env, 'alice', alice[0]!));
    let bobArrived: () => void = () => undefined;
    const bob = new Promise<void>((resolve) => (bobArrived = resolve));
    let headRequestsWhenBobArrived = -1;
    receiver.respond = (_n, req) => (keyOf(req) === headKey ? 503 : 200);
    receiver.before = async (_n, req) => {
      if (keyOf(req).startsWith('bob|')) {
        headRequestsWhenBobArrived = receiver.requests.filter((r) => keyOf(r) === headKey).length;
        bobArrived();
      }
      // Alice's first delivery is stuck on the receiver until Bob's arrived (or the attempt times out).
      if (keyOf(req) === headKey) await Promise.race([bob, atMost(2500)]);
    };
    const svc = service('a', {
      maxAttempts: 4,
      backoffBaseMs: 30,
      backoffMaxMs: 30,
      pollMs: 10,
      concurrency: 2,
      requestTimeoutMs: 3000,
      leaseMs: 8000,
    });
    for (const dev of alice) await svc.emit(notice(env, 'alice', dev));
    await svc.emit(notice(env, 'bob', device(env, 'bob')));
    svc.start();
    await waitFor(
      async () => {
        const all = await deliveries(env);
        return all.length === 22 && all.every((d) => d.status === 'delivered' || d.status === 'failed');
      },
      { what: 'all 22 deliveries to be delivered or failed', timeoutMs: 20_000 },
    );
    // Bob was neither held up by Alice's failing delivery nor by her twenty waiting ones.
    expect(headRequestsWhenBobArrived).toBe(1);
    const aliceSeen = receiver.requests.map(keyOf).filter((k) => k.startsWith('alice|'));
    expect(aliceSeen).toEqual([
      headKey,
      headKey,
      headKey,
      headKey,
      ...alice.slice(1).map((dev) => keyOfNotice(notice(env, 'alice', dev))),
    ]);
    const all = await deliveries(env);
    expect(all.filter((d) => d.status === 'failed').map((d) => d.deviceToken)).toEqual([alice[0]!.token]);
  });
});

describe('shutdown', () => {
  const extra: Receiver[] = [];
  afterEach(async () => {
    await Promise.all(extra.splice(0).map((r) => r.close()));
  });
  async function another(): Promise<Receiver> {
    const r = new Receiver();
    await r.start();
    extra.push(r);
    return r;
  }

  it('stop() sends what is due to every receiver at once, within the grace, and cuts short what is left', async () => {
    const slow = await another();
    const dead = await another();
    const envA = newEnv(slow.url);
    const envB = newEnv(receiver.url);
    const envC = newEnv(dead.url);
    let bArrived: () => void = () => undefined;
    const bHere = new Promise<void>((resolve) => (bArrived = resolve));
    receiver.before = () => bArrived();
    // A's receiver is slow: it answers 200 once B's receiver got its delivery, 503 if that never happens.
    slow.before = async () => {
      slow.respond = () => 200;
      const inTime = await Promise.race([bHere.then(() => true), atMost(3500).then(() => false)]);
      if (!inTime) slow.respond = () => 503;
    };
    // C's receiver never answers.
    const hang = new Promise<void>(() => undefined);
    dead.before = () => hang;

    const opts = { concurrency: 2, requestTimeoutMs: 8000, leaseMs: 30_000, shutdownGraceMs: 4000 };
    // The worker's first pass ends with a sweep: once it has, nothing is looked for until stop().
    let swept = 0;
    const sweeping = new Proxy(store, {
      get(target, prop, recv) {
        if (prop === 'sweep') {
          return async (...args: Parameters<WebhookDeliveryStore['sweep']>) => {
            const done = await target.sweep(...args);
            swept++;
            return done;
          };
        }
        const v: unknown = Reflect.get(target, prop, recv);
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
    const svc = service('a', { ...opts, store: sweeping, pollMs: 60_000 });
    svc.start();
    await waitFor(() => swept > 0, { what: "the worker's first sweep" });
    // Recorded by another instance, so this one's worker is not woken: all of it is due at stop().
    const seeder = service('seed', opts);
    for (let i = 0; i < 4; i++) await seeder.emit(notice(envA, `a-${i}`, null));
    await seeder.emit(notice(envC, 'c-0', null));
    await seeder.emit(notice(envB, 'b-0', null));
    // And one notice still being written when stop() is called (as track's drain makes them).
    void svc.emit(notice(envB, 'b-1', null));
    await svc.stop();

    const a = await deliveries(envA);
    const b = await deliveries(envB);
    const [c] = await deliveries(envC);
    expect(b.map((d) => [d.userId, d.status]).sort()).toEqual([
      ['b-0', 'delivered'],
      ['b-1', 'delivered'],
    ]);
    // A's slow receiver did not hold B up: its first attempts were answered only after B arrived.
    expect(a.map((d) => d.status)).toEqual(['delivered', 'delivered', 'delivered', 'delivered']);
    expect(a.every((d) => d.attempts.length === 1 && d.attempts[0]!.statusCode === 200)).toBe(true);
    // C's attempt was cut short at the end of the grace; it stays due for the next instance.
    expect(c).toMatchObject({ status: 'pending', leaseOwner: null });
    expect(c!.attempts).toEqual([
      expect.objectContaining({ statusCode: null, error: expect.stringContaining('cut short at shutdown') }),
    ]);
    expect(dead.requests).toHaveLength(1);
  });
});
