/**
 * Webhook delivery (WebhookService) on in-memory fakes: the delivery store, an HttpPoster that
 * answers from a table, and fake time for the retries (no receiver, no sleep). And what the
 * metrics read of it: the outbox from memory, and each attempt's outcome.
 */
import { createHmac } from 'node:crypto';
import type { Device } from '../../../src/core/model';
import type { HttpPostResult } from '../../../src/core/ports';
import { verifyRampart } from '../../../src/core/webhooks/signature';
import { failureClass, WebhookService } from '../../../src/core/webhooks/service';
import { createFakeHttpPoster, createFakeServices, type FakeServices } from '../../support/fakes';

const URL = 'https://hooks.example/rampart';
const SECRET = 'sk_test_fake_signing_secret';

async function reportedDevice(s: FakeServices) {
  const { principal, env } = await s.environment({ webhookUrl: URL });
  const v = await s.verdicts.evaluate(principal, 'risk', {
    event: '$login',
    status: '$succeeded',
    user: { id: 'w1' },
    context: {
      ip: '81.2.69.142',
      headers: {
        'User-Agent':
          'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36',
        'Accept-Language': 'en-GB',
      },
    },
    requestToken: 'cli-fingerprint-0001',
  });
  await s.devices.report(env, v.device?.token ?? '');
  await s.time.settle();
  return env;
}

/** One delivery pass, and the attempts it started, finished. */
async function pass(s: FakeServices): Promise<number> {
  const { started } = await s.webhooks.deliverDue();
  await s.time.settle();
  return started;
}

describe('webhook delivery', () => {
  it('posts a due delivery once, signed both ways, and marks it delivered', async () => {
    const s = createFakeServices();
    await reportedDevice(s);
    expect(await pass(s)).toBe(1);
    expect(s.http.requests).toHaveLength(1);
    const [{ url, request }] = s.http.requests;
    expect(url).toBe(URL);
    expect(request.headers['X-Castle-Signature']).toBe(
      createHmac('sha256', SECRET).update(request.body).digest('base64'),
    );
    expect(
      verifyRampart(
        SECRET,
        request.body,
        request.headers['X-Rampart-Signature'] ?? '',
        300,
        s.time.clock.now(),
      ),
    ).toBe(true);
    expect(JSON.parse(request.body)).toMatchObject({
      type: '$incident.confirmed',
      data: { trigger: 'device_reported' },
    });
    expect(s.webhookStore.all.map((d) => [d.status, d.attempts.length])).toEqual([['delivered', 1]]);
    expect(await pass(s)).toBe(0);
  });

  it('retries a failed attempt after its back-off, and not before', async () => {
    const answers: HttpPostResult[] = [{ status: 500 }, { timedOut: true }, { status: 204 }];
    const s = createFakeServices({ http: createFakeHttpPoster(() => answers.shift() ?? { status: 200 }) });
    await reportedDevice(s);
    expect(await pass(s)).toBe(1);
    const [delivery] = s.webhookStore.all;
    expect(delivery?.status).toBe('pending');
    const wait = (delivery?.nextAttemptAt?.getTime() ?? 0) - s.time.clock.now().getTime();
    expect(wait).toBeGreaterThan(0);
    await s.time.advance(wait - 1);
    expect(await pass(s)).toBe(0);
    await s.time.advance(1);
    expect(await pass(s)).toBe(1);
    await s.time.advance(60 * 60_000);
    expect(await pass(s)).toBe(1);
    expect(s.webhookStore.all.map((d) => [d.status, d.attempts.map((a) => a.statusCode)])).toEqual([
      ['delivered', [500, null, 204]],
    ]);
  });

  it('records nothing for an environment without a webhook URL', async () => {
    const s = createFakeServices();
    const { env } = await s.environment();
    await s.webhooks.emit({
      type: '$incident.confirmed',
      env,
      userId: 'u',
      device: null,
      trigger: 'test',
      context: { ip: null, userAgent: null, location: null },
      policy: null,
      userTraits: {},
      properties: {},
      at: s.time.clock.now(),
    });
    expect(s.webhookStore.all).toEqual([]);
  });
});

describe('the outbox and the attempts, as the metrics read them', () => {
  /** The store, counting the outbox reads made through it. */
  function countReads(s: FakeServices): { reads: number } {
    const counted = { reads: 0 };
    const read = s.webhookStore.openDeliveries.bind(s.webhookStore);
    s.webhookStore.openDeliveries = (limit) => {
      counted.reads++;
      return read(limit);
    };
    return counted;
  }

  it('knows the open deliveries and the oldest one from what it records and finishes, without reading the outbox', async () => {
    const answers: HttpPostResult[] = [{ status: 503 }, { status: 204 }];
    const s = createFakeServices({ http: createFakeHttpPoster(() => answers.shift() ?? { status: 200 }) });
    const counted = countReads(s);
    expect(s.webhooks.outbox()).toEqual({ depth: 0, oldestAgeSeconds: 0 });
    await reportedDevice(s);
    expect(s.webhooks.outbox()).toEqual({ depth: 1, oldestAgeSeconds: 0 });
    await s.time.advance(30_000);
    expect(s.webhooks.outbox()).toEqual({ depth: 1, oldestAgeSeconds: 30 });
    expect(await pass(s)).toBe(1);
    expect(s.webhookAttempts).toEqual([{ failure: '503', gaveUp: false }]);
    expect(s.webhooks.outbox().depth).toBe(1);
    await s.time.advance(60 * 60_000);
    expect(await pass(s)).toBe(1);
    expect(s.webhookAttempts).toEqual([
      { failure: '503', gaveUp: false },
      { failure: null, gaveUp: false },
    ]);
    expect(s.webhooks.outbox()).toEqual({ depth: 0, oldestAgeSeconds: 0 });
    expect(counted.reads).toBe(0);
  });

  it('does not count a notice the outbox already had (repeated after a restart), and counts a new one', async () => {
    const s = createFakeServices();
    const env = await reportedDevice(s);
    expect(await pass(s)).toBe(1);
    const [first] = s.webhookStore.all;
    expect(first?.status).toBe('delivered');
    // The same process started again on the same outbox: it remembers no dedupe slot.
    const restarted = new WebhookService({
      store: s.webhookStore,
      signingSecret: async () => 'sk_test_fake_signing_secret',
      environments: { byId: async () => env },
      clock: s.time.clock,
      http: s.http,
      scheduler: s.time.scheduler,
      instanceId: 'restarted',
      log: s.log,
    });
    const notice = (type: '$incident.confirmed' | '$review.opened') => ({
      type,
      env,
      userId: first?.userId ?? '',
      device: { token: first?.deviceToken ?? '' } as unknown as Device,
      trigger: 'device_reported',
      context: { ip: null, userAgent: null, location: null },
      policy: null,
      userTraits: {},
      properties: {},
      at: s.time.clock.now(),
    });
    await restarted.emit(notice('$incident.confirmed'));
    expect(s.webhookStore.all).toHaveLength(1);
    expect(restarted.outbox().depth).toBe(0);
    await restarted.emit(notice('$review.opened'));
    expect(s.webhookStore.all).toHaveLength(2);
    expect(restarted.outbox().depth).toBe(1);
  });

  it('reads the outbox again when told: what another instance recorded, and what a purge deleted', async () => {
    const s = createFakeServices({ http: createFakeHttpPoster(() => ({ status: 500 })) });
    const counted = countReads(s);
    await reportedDevice(s);
    const [mine] = s.webhookStore.all;
    // Another instance's delivery, a minute older, written straight into the shared outbox.
    s.webhookStore.all.push({
      ...(mine as NonNullable<typeof mine>),
      id: 'from-another-instance',
      userId: 'w2',
      attempts: [],
      createdAt: new Date(s.time.clock.now().getTime() - 60_000),
    });
    expect(s.webhooks.outbox()).toEqual({ depth: 1, oldestAgeSeconds: 0 });
    await s.webhooks.reconcileOutbox();
    expect(counted.reads).toBe(1);
    expect(s.webhooks.outbox()).toEqual({ depth: 2, oldestAgeSeconds: 60 });
    // A privacy purge deletes them behind the dispatcher's back: known at the next read.
    s.webhookStore.all.splice(0);
    expect(s.webhooks.outbox().depth).toBe(2);
    await s.webhooks.reconcileOutbox();
    expect(s.webhooks.outbox()).toEqual({ depth: 0, oldestAgeSeconds: 0 });
  });

  it('says when a delivery is given up, after its last attempt', async () => {
    const s = createFakeServices({ http: createFakeHttpPoster(() => ({ status: 410 })) });
    await reportedDevice(s);
    for (let i = 0; i < 10; i++) {
      expect(await pass(s)).toBe(1);
      await s.time.advance(60 * 60_000);
    }
    expect(await pass(s)).toBe(0);
    expect(s.webhookAttempts.map((a) => a.failure)).toEqual(Array(10).fill('410'));
    expect(s.webhookAttempts.map((a) => a.gaveUp)).toEqual([...Array(9).fill(false), true]);
    expect(s.webhooks.outbox()).toEqual({ depth: 0, oldestAgeSeconds: 0 });
  });

  it('names why an attempt got no answer by a class of error, never by its message', async () => {
    const refused = Object.assign(new TypeError('fetch failed'), {
      cause: Object.assign(new Error('connect ECONNREFUSED 10.1.2.3:443'), { code: 'ECONNREFUSED' }),
    });
    const answers: (HttpPostResult | Error)[] = [refused, { timedOut: true }];
    const s = createFakeServices({
      http: createFakeHttpPoster(() => {
        const next = answers.shift() ?? { status: 200 };
        if (next instanceof Error) throw next;
        return next;
      }),
    });
    await reportedDevice(s);
    expect(await pass(s)).toBe(1);
    await s.time.advance(60 * 60_000);
    expect(await pass(s)).toBe(1);
    expect(s.webhookAttempts.map((a) => a.failure)).toEqual(['connection_refused', 'timeout']);

    const withCause = (code: string) => Object.assign(new TypeError('fetch failed'), { cause: { code } });
    expect(failureClass(withCause('ENOTFOUND'))).toBe('dns');
    expect(failureClass(withCause('EAI_AGAIN'))).toBe('dns');
    expect(failureClass(withCause('ECONNRESET'))).toBe('connection_reset');
    expect(failureClass(withCause('UND_ERR_SOCKET'))).toBe('connection_reset');
    expect(failureClass(withCause('CERT_HAS_EXPIRED'))).toBe('tls');
    expect(failureClass(withCause('UNABLE_TO_VERIFY_LEAF_SIGNATURE'))).toBe('tls');
    expect(failureClass(withCause('UND_ERR_CONNECT_TIMEOUT'))).toBe('timeout');
    expect(failureClass(withCause('EHOSTUNREACH'))).toBe('network');
    expect(failureClass(Object.assign(new TypeError('Invalid URL'), { code: 'ERR_INVALID_URL' }))).toBe(
      'invalid_url',
    );
    expect(failureClass(Object.assign(new Error('aborted'), { name: 'AbortError' }))).toBe('timeout');
    expect(failureClass(new Error('the database is unreachable'))).toBe('other');
    expect(failureClass('a string')).toBe('other');
  });
});
