/**
 * The webhook dispatcher (core/webhooks/dispatcher.ts) on its own, without sleeping: the in-memory
 * outbox store, fake time for the clock and the scheduler, and a poster whose answers the test
 * gives (or never gives). Leases, retries, lanes, shutdown and a hanging receiver.
 */
import type { EnvId, Environment } from '../../../src/core/model';
import { asEnvId } from '../../../src/core/model';
import type { HttpPost, HttpPoster, HttpPostResult } from '../../../src/core/ports';
import type { WebhookDelivery } from '../../../src/core/webhooks/model';
import { WebhookDispatcher, type WebhookDispatcherDeps } from '../../../src/core/webhooks/dispatcher';
import { createFakeLog } from '../../support/fakes/log';
import { createFakeTime, type FakeTime } from '../../support/fakes/time';
import { createFakeWebhookStore } from '../../support/fakes/stores';

const URL_A = 'https://a.example/hooks';
const URL_B = 'https://b.example/hooks';

/** A request the poster holds until the test answers it (or it is aborted, as fetch would be). */
interface Held {
  url: string;
  delivery: string;
  request: HttpPost;
  answer(result: HttpPostResult): void;
}

/** A receiver that answers only when the test says so; an aborted request rejects with the signal's reason. */
function heldPoster(): HttpPoster & { held: Held[]; sent: string[] } {
  const held: Held[] = [];
  const sent: string[] = [];
  return {
    held,
    sent,
    post(url, request) {
      const delivery = request.headers['X-Rampart-Delivery'] ?? '';
      sent.push(delivery);
      return new Promise<HttpPostResult>((resolve, reject) => {
        const entry: Held = {
          url,
          delivery,
          request,
          answer: (result) => {
            held.splice(held.indexOf(entry), 1);
            resolve(result);
          },
        };
        held.push(entry);
        request.signal.addEventListener('abort', () => {
          if (held.includes(entry)) held.splice(held.indexOf(entry), 1);
          reject(request.signal.reason);
        });
      });
    },
  };
}

/** A receiver that answers at once from a list (then 200). */
function answering(answers: HttpPostResult[]): HttpPoster & { sent: string[] } {
  const sent: string[] = [];
  return {
    sent,
    async post(_url, request) {
      sent.push(request.headers['X-Rampart-Delivery'] ?? '');
      return answers.shift() ?? { status: 200 };
    },
  };
}

interface World {
  time: FakeTime;
  store: ReturnType<typeof createFakeWebhookStore>;
  log: ReturnType<typeof createFakeLog>;
  envA: Environment;
  envB: Environment;
  attempts: { failure: string | null; gaveUp: boolean }[];
  delivery(env: Environment, userId: string | null, id: string): Promise<WebhookDelivery>;
  dispatcher(http: HttpPoster, opts?: Partial<WebhookDispatcherDeps>): WebhookDispatcher;
  get(id: string): WebhookDelivery;
}

function world(): World {
  const time = createFakeTime();
  const store = createFakeWebhookStore();
  const log = createFakeLog();
  const env = (id: string, webhookUrl: string): Environment => ({
    id: asEnvId(id),
    name: id,
    enabled: true,
    sandbox: true,
    publishableKey: 'pk_test',
    webhookUrl,
    privacyEmail: null,
    createdAt: time.clock.now(),
  });
  const envA = env('00000000-0000-4000-8000-00000000000a', URL_A);
  const envB = env('00000000-0000-4000-8000-00000000000b', URL_B);
  const envs = new Map<EnvId, Environment>([
    [envA.id, envA],
    [envB.id, envB],
  ]);
  const attempts: World['attempts'] = [];
  let seq = 0;
  return {
    time,
    store,
    log,
    envA,
    envB,
    attempts,
    async delivery(e, userId, id) {
      const now = time.clock.now();
      const d: WebhookDelivery = {
        id,
        envId: e.id,
        userId,
        deviceToken: null,
        type: '$incident.confirmed',
        trigger: 'verdict_deny',
        url: e.webhookUrl ?? '',
        body: `{"id":"${id}"}`,
        status: 'pending',
        attempts: [],
        maxAttempts: 10,
        nextAttemptAt: now,
        leaseOwner: null,
        leaseUntil: null,
        leaseVersion: 0,
        createdAt: now,
        seq: seq++,
        deliveredAt: null,
        lastError: null,
        test: false,
      };
      await store.insert(d);
      return d;
    },
    dispatcher(http, opts = {}) {
      return new WebhookDispatcher({
        store,
        signingSecret: async () => 'sk_test_dispatcher',
        environments: { byId: async (id) => envs.get(id) ?? null },
        clock: time.clock,
        http,
        scheduler: time.scheduler,
        instanceId: 'a',
        log,
        random: () => 0.5,
        observer: { attempted: (o) => void attempts.push(o) },
        ...opts,
      });
    },
    get(id) {
      const d = store.all.find((x) => x.id === id);
      if (!d) throw new Error(`no delivery ${id}`);
      return d;
    },
  };
}

describe('leases', () => {
  it('a lease that runs out lets another instance claim the delivery, never the instance still sending it', async () => {
    const w = world();
    const slowA = heldPoster();
    const b = answering([]);
    const a = w.dispatcher(slowA, { leaseMs: 30_000, requestTimeoutMs: 10_000 });
    const other = w.dispatcher(b, { instanceId: 'b', leaseMs: 30_000, requestTimeoutMs: 10_000 });
    // About no user, so no lane holds it back: only the attempt in flight does.
    await w.delivery(w.envA, null, 'd1');

    expect(await a.deliverDue()).toEqual({ started: 1, more: false });
    await w.time.settle();
    expect(slowA.held.map((h) => h.delivery)).toEqual(['d1']);
    expect(w.get('d1')).toMatchObject({ status: 'delivering', leaseOwner: 'a' });
    // While the lease holds, nobody else may take it.
    expect((await other.deliverDue()).started).toBe(0);

    await w.time.advance(30_001);
    // Past the lease, the instance still sending it does not take it again...
    expect((await a.deliverDue()).started).toBe(0);
    // ...and another instance does, and delivers it.
    expect((await other.deliverDue()).started).toBe(1);
    await w.time.settle();
    expect(b.sent).toEqual(['d1']);
    expect(w.get('d1')).toMatchObject({ status: 'delivered', leaseOwner: null });
    expect(w.get('d1').attempts.map((x) => [x.instance, x.statusCode])).toEqual([['b', 200]]);

    // The first instance's late answer finds its lease lost, and changes nothing.
    slowA.held[0]!.answer({ status: 200 });
    await w.time.settle();
    expect(w.log.lines.map((l) => l.msg)).toContain('webhooks: lease lost before the attempt was recorded');
    expect(w.get('d1').attempts).toHaveLength(1);
  });
});

describe('retries', () => {
  it('retries after an exponential backoff, not before, until a 2xx', async () => {
    const w = world();
    const http = answering([{ status: 500 }, { status: 503 }, { status: 200 }]);
    const d = w.dispatcher(http, { backoffBaseMs: 1000 });
    await w.delivery(w.envA, 'u1', 'd1');

    expect((await d.deliverDue()).started).toBe(1);
    await w.time.settle();
    expect(w.get('d1')).toMatchObject({ status: 'pending', lastError: 'HTTP 500' });
    // random() 0.5 takes the jitter out: 1 s, then 2 s.
    await w.time.advance(999);
    expect((await d.deliverDue()).started).toBe(0);
    await w.time.advance(1);
    expect((await d.deliverDue()).started).toBe(1);
    await w.time.settle();
    expect(w.get('d1')).toMatchObject({ status: 'pending', lastError: 'HTTP 503' });
    await w.time.advance(1999);
    expect((await d.deliverDue()).started).toBe(0);
    await w.time.advance(1);
    expect((await d.deliverDue()).started).toBe(1);
    await w.time.settle();
    expect(w.get('d1')).toMatchObject({ status: 'delivered', lastError: null });
    expect(w.get('d1').attempts.map((x) => x.statusCode)).toEqual([500, 503, 200]);
    expect(w.attempts).toEqual([
      { failure: '500', gaveUp: false },
      { failure: '503', gaveUp: false },
      { failure: null, gaveUp: false },
    ]);
  });

  it('after a timeout the retry waits at least the request timeout', async () => {
    const w = world();
    const d = w.dispatcher(answering([{ timedOut: true }]), {
      backoffBaseMs: 1000,
      requestTimeoutMs: 5000,
      leaseMs: 60_000,
    });
    await w.delivery(w.envA, 'u1', 'd1');
    await d.deliverDue();
    await w.time.settle();
    expect(w.get('d1')).toMatchObject({ status: 'pending', lastError: 'timed out after 5000 ms' });
    await w.time.advance(4999);
    expect((await d.deliverDue()).started).toBe(0);
    await w.time.advance(1);
    expect((await d.deliverDue()).started).toBe(1);
  });

  it('gives up after maxAttempts', async () => {
    const w = world();
    const d = w.dispatcher(answering([{ status: 500 }, { status: 500 }, { status: 500 }]), {
      backoffBaseMs: 1000,
    });
    const delivery = await w.delivery(w.envA, 'u1', 'd1');
    Object.assign(w.get(delivery.id), { maxAttempts: 2 });
    await d.deliverDue();
    await w.time.settle();
    await w.time.advance(1000);
    expect((await d.deliverDue()).started).toBe(1);
    await w.time.settle();
    expect(w.get('d1')).toMatchObject({ status: 'failed', nextAttemptAt: null });
    expect(w.attempts.at(-1)).toEqual({ failure: '500', gaveUp: true });
    await w.time.advance(3_600_000);
    expect((await d.deliverDue()).started).toBe(0);
  });
});

describe('lanes: one user at a time, in creation order', () => {
  it("holds a user's later delivery while the earlier one is retried, lets other users go, and lets it go once the earlier one failed for good", async () => {
    const w = world();
    const http = heldPoster();
    const d = w.dispatcher(http, { backoffBaseMs: 1000 });
    let woken = 0;
    d.onWork(() => void woken++);
    const first = await w.delivery(w.envA, 'alice', 'alice-1');
    Object.assign(w.get(first.id), { maxAttempts: 2 });
    await w.delivery(w.envA, 'alice', 'alice-2');
    await w.delivery(w.envA, 'bob', 'bob-1');

    expect((await d.deliverDue()).started).toBe(2);
    await w.time.settle();
    expect(http.held.map((h) => h.delivery).sort()).toEqual(['alice-1', 'bob-1']);
    // While alice-1 is under way, alice-2 is not sent.
    expect((await d.deliverDue()).started).toBe(0);
    http.held.find((h) => h.delivery === 'alice-1')!.answer({ status: 500 });
    http.held.find((h) => h.delivery === 'bob-1')!.answer({ status: 200 });
    await w.time.settle();
    expect(woken).toBeGreaterThan(0);
    // alice-1 waits for its retry: alice-2 waits behind it, parked until then.
    expect((await d.deliverDue()).started).toBe(0);
    expect(w.get('alice-2')).toMatchObject({
      status: 'pending',
      nextAttemptAt: w.get('alice-1').nextAttemptAt,
    });

    await w.time.advance(1000);
    expect((await d.deliverDue()).started).toBe(1);
    await w.time.settle();
    expect(http.held.map((h) => h.delivery)).toEqual(['alice-1']);
    http.held[0]!.answer({ status: 500 });
    await w.time.settle();
    expect(w.get('alice-1').status).toBe('failed');
    // Failed for good: alice's next delivery goes at once, without waiting for a pass.
    expect(http.held.map((h) => h.delivery)).toEqual(['alice-2']);
    expect((await d.deliverDue()).started).toBe(0);
    http.held[0]!.answer({ status: 200 });
    await w.time.settle();
    expect(http.sent).toEqual(expect.arrayContaining(['alice-1', 'bob-1']));
    expect(http.sent.filter((x) => x.startsWith('alice'))).toEqual(['alice-1', 'alice-1', 'alice-2']);
    expect(w.get('alice-2').status).toBe('delivered');
  });
});

describe('a backlog', () => {
  it("sends a user's deliveries back to back: the next goes as soon as the last one is over, without a pass", async () => {
    const w = world();
    const http = heldPoster();
    const d = w.dispatcher(http);
    for (let i = 0; i < 4; i++) await w.delivery(w.envA, 'alice', `alice-${i}`);
    expect((await d.deliverDue()).started).toBe(1);
    for (let i = 0; i < 4; i++) {
      await w.time.settle();
      expect(http.held.map((h) => h.delivery)).toEqual([`alice-${i}`]);
      http.held[0]!.answer({ status: 200 });
    }
    await d.idle();
    expect(http.sent).toEqual(['alice-0', 'alice-1', 'alice-2', 'alice-3']);
    expect(w.store.all.every((x) => x.status === 'delivered')).toBe(true);
  });

  it("reads a user's next deliveries with the first: one read for a backlog, and a fresh one when a copy changed meanwhile", async () => {
    const w = world();
    const http = heldPoster();
    const d = w.dispatcher(http);
    let reads = 0;
    const read = w.store.openOfUser.bind(w.store);
    w.store.openOfUser = (...args) => {
      reads++;
      return read(...args);
    };
    for (let i = 0; i < 5; i++) await w.delivery(w.envA, 'alice', `alice-${i}`);
    expect((await d.deliverDue()).started).toBe(1);
    await w.time.settle();
    expect(reads).toBe(1);
    http.held[0]!.answer({ status: 200 });
    await w.time.settle();
    // alice-1 went from what was read with alice-0.
    expect(http.held.map((h) => h.delivery)).toEqual(['alice-1']);
    expect(reads).toBe(1);
    // alice-2 is purged meanwhile: its copy cannot be claimed, so what is there now is read.
    w.store.all.splice(
      w.store.all.findIndex((x) => x.id === 'alice-2'),
      1,
    );
    http.held[0]!.answer({ status: 200 });
    await w.time.settle();
    expect(http.held.map((h) => h.delivery)).toEqual(['alice-3']);
    expect(reads).toBe(2);
    http.held[0]!.answer({ status: 200 });
    await w.time.settle();
    http.held[0]!.answer({ status: 200 });
    await d.idle();
    expect(http.sent).toEqual(['alice-0', 'alice-1', 'alice-3', 'alice-4']);
  });

  it("does not let one user's long backlog hide other users' deliveries: each pass reads on from where the last one stopped", async () => {
    const w = world();
    const http = heldPoster();
    const d = w.dispatcher(http, { concurrency: 2 });
    // 1,500 of alice's, then bob's: more than one pass reads while it skips alice's (her first is being sent).
    for (let i = 0; i < 1500; i++) await w.delivery(w.envA, 'alice', `alice-${String(i).padStart(4, '0')}`);
    await w.delivery(w.envB, 'bob', 'zz-bob');
    expect((await d.deliverDue()).started).toBe(1);
    let passes = 1;
    while (!http.sent.includes('zz-bob') && passes < 10) {
      await d.deliverDue();
      passes++;
    }
    await w.time.settle();
    expect(http.held.map((h) => h.delivery).sort()).toEqual(['alice-0000', 'zz-bob']);
    expect(passes).toBeGreaterThan(1);
  });
});

describe('shutdown', () => {
  it('waits for an attempt in flight and records its answer', async () => {
    const w = world();
    const http = heldPoster();
    const d = w.dispatcher(http, { shutdownGraceMs: 10_000 });
    await w.delivery(w.envA, 'u1', 'd1');
    await d.deliverDue();
    await w.time.settle();
    let stopped = false;
    const stopping = d.shutdown({ deliver: true }).then(() => (stopped = true));
    await w.time.settle();
    expect(stopped).toBe(false);
    http.held[0]!.answer({ status: 200 });
    await stopping;
    expect(w.get('d1')).toMatchObject({ status: 'delivered' });
    expect(w.get('d1').attempts).toHaveLength(1);
  });

  it('sends what is due at shutdown, and cuts short what is still under way when the grace ends', async () => {
    const w = world();
    const http = heldPoster();
    const d = w.dispatcher(http, { shutdownGraceMs: 10_000 });
    await w.delivery(w.envA, 'u1', 'd1');
    await d.deliverDue();
    await w.time.settle();
    // Recorded after the last pass: shutdown sends it too.
    await w.delivery(w.envB, 'u2', 'd2');
    let stopped = false;
    const stopping = d.shutdown({ deliver: true }).then(() => (stopped = true));
    await w.time.settle();
    expect(http.held.map((h) => h.delivery)).toEqual(['d1', 'd2']);
    http.held[1]!.answer({ status: 200 });
    await w.time.advance(9_999);
    expect(stopped).toBe(false);
    await w.time.advance(1);
    await stopping;
    // d1's own receiver never answered: cut short, due again at once, its attempt limit untouched.
    expect(w.get('d1')).toMatchObject({
      status: 'pending',
      leaseOwner: null,
      nextAttemptAt: w.time.clock.now(),
    });
    expect(w.get('d1').attempts).toEqual([
      expect.objectContaining({ statusCode: null, error: expect.stringContaining('cut short at shutdown') }),
    ]);
    expect(w.get('d2').status).toBe('delivered');
    expect(w.attempts).toEqual(
      expect.arrayContaining([
        { failure: 'shutdown', gaveUp: false },
        { failure: null, gaveUp: false },
      ]),
    );
    // Stopped: nothing under way.
    expect(http.held).toHaveLength(0);
  });
});

describe('a receiver that hangs', () => {
  it('spends only its own share of attempts: other receivers are served, and it is not sent again while it hangs', async () => {
    const w = world();
    const http = heldPoster();
    const d = w.dispatcher(http, {
      concurrency: 4,
      receiverConcurrency: 1,
      leaseMs: 30_000,
      requestTimeoutMs: 10_000,
    });
    await w.delivery(w.envA, 'a1', 'hang-1');
    await w.delivery(w.envA, 'a2', 'hang-2');
    await w.delivery(w.envB, 'b1', 'b-1');
    await w.delivery(w.envB, 'b2', 'b-2');

    expect((await d.deliverDue()).started).toBe(2);
    await w.time.settle();
    expect(http.held.map((h) => h.delivery).sort()).toEqual(['b-1', 'hang-1']);
    // B answers; A's receiver hangs. B's next delivery goes, A's waits for its share.
    http.held.find((h) => h.delivery === 'b-1')!.answer({ status: 200 });
    await w.time.settle();
    expect((await d.deliverDue()).started).toBe(1);
    await w.time.settle();
    http.held.find((h) => h.delivery === 'b-2')!.answer({ status: 204 });
    await w.time.settle();
    expect([w.get('b-1').status, w.get('b-2').status]).toEqual(['delivered', 'delivered']);
    // Past its lease the hanging attempt is still this instance's: never sent a second time.
    await w.time.advance(60_000);
    expect((await d.deliverDue()).started).toBe(0);
    expect(http.sent.filter((x) => x === 'hang-1')).toHaveLength(1);
    expect(http.sent).not.toContain('hang-2');

    // At shutdown the hanging attempt is cut short at the end of the grace.
    const stopping = d.shutdown({ deliver: false });
    await w.time.advance(10_000);
    await stopping;
    expect(http.held).toHaveLength(0);
    expect(w.get('hang-1').attempts).toEqual([
      expect.objectContaining({ statusCode: null, error: expect.stringContaining('cut short at shutdown') }),
    ]);
    expect(w.get('hang-2')).toMatchObject({ status: 'pending', attempts: [] });
  });
});
