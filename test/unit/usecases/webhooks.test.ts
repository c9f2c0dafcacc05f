/**
 * Webhook delivery (WebhookService) on in-memory fakes: the delivery store, an HttpPoster that
 * answers from a table, and fake time for the retries (no receiver, no sleep).
 */
import { createHmac } from 'node:crypto';
import type { HttpPostResult } from '../../../src/core/ports';
import { verifyRampart } from '../../../src/core/webhooks/signature';
import { createFakeHttpPoster, createFakeServices, type FakeServices } from '../../support/fakes';

const URL = 'https://hooks.example/rampart';
const SECRET = 'sk_test_fake_signing_secret';

async function reportedDevice(s: FakeServices) {
  const { principal, env } = await s.environment({ webhookUrl: URL });
  const v = await s.verdicts.evaluate(principal, 'risk', { event: '$login', status: '$succeeded', user: { id: 'w1' }, context: { ip: '81.2.69.142', headers: { 'User-Agent': 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36', 'Accept-Language': 'en-GB' } }, requestToken: 'cli-fingerprint-0001' });
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
    expect(request.headers['X-Castle-Signature']).toBe(createHmac('sha256', SECRET).update(request.body).digest('base64'));
    expect(verifyRampart(SECRET, request.body, request.headers['X-Rampart-Signature'] ?? '', 300, s.time.clock.now())).toBe(true);
    expect(JSON.parse(request.body)).toMatchObject({ type: '$incident.confirmed', data: { trigger: 'device_reported' } });
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
    expect(s.webhookStore.all.map((d) => [d.status, d.attempts.map((a) => a.statusCode)])).toEqual([['delivered', [500, null, 204]]]);
  });

  it('records nothing for an environment without a webhook URL', async () => {
    const s = createFakeServices();
    const { env } = await s.environment();
    await s.webhooks.emit({ type: '$incident.confirmed', env, userId: 'u', device: null, trigger: 'test', context: { ip: null, userAgent: null, location: null }, policy: null, userTraits: {}, properties: {}, at: s.time.clock.now() });
    expect(s.webhookStore.all).toEqual([]);
  });
});
