/**
 * The one wiring of the use cases (core/create-services.ts), as the fakes give it their ports:
 * the services reach each other as production's do.
 */
import { createHmac } from 'node:crypto';
import { createFakeServices, FAKE_SIGNING_SECRET } from '../../support/fakes';

const URL = 'https://hooks.example/rampart';
const ROTATED = 'sk_test_rotated_signing_secret';

it("signs a webhook with the environment's newest API secret (environments wired to webhooks)", async () => {
  const s = createFakeServices();
  const { env } = await s.environment({ webhookUrl: URL });
  await s.time.advance(1000);
  await s.services.environments.addCredential(env.id, 'secret', 'rotated', ROTATED);
  await s.services.webhooks.sendTest(env);
  await s.time.settle();
  expect(s.http.requests).toHaveLength(1);
  const [{ request }] = s.http.requests;
  const signed = (secret: string) => createHmac('sha256', secret).update(request.body).digest('base64');
  expect(request.headers['X-Castle-Signature']).toBe(signed(ROTATED));
  expect(request.headers['X-Castle-Signature']).not.toBe(signed(FAKE_SIGNING_SECRET));
});

it("opens a console session with the environment's API secret (access, environments and sessions wired)", async () => {
  const s = createFakeServices();
  const { env } = await s.environment();
  const opened = await s.services.sessions.signIn(FAKE_SIGNING_SECRET, '10.0.0.1');
  expect(opened.principal.env.id).toBe(env.id);
  await expect(s.services.sessions.signIn('sk_test_not_a_secret_of_it', '10.0.0.1')).rejects.toThrow();
});

it('reads in the dashboards what a verdict recorded (the read fakes follow the other fakes)', async () => {
  const s = createFakeServices();
  const { env, principal } = await s.environment();
  const v = await s.verdicts.evaluate(principal, 'risk', {
    event: '$login',
    status: '$succeeded',
    user: { id: 'u1', email: 'u1@example.com' },
    context: {
      ip: '81.2.69.142',
      headers: { 'User-Agent': 'Mozilla/5.0 (X11; Linux x86_64) Firefox/126.0' },
    },
    requestToken: 'laptop-fingerprint-0001',
  });
  const events = await s.services.queries.events(env.id, { userId: 'u1' }, { first: 5 });
  expect(events.edges.map((e) => e.node.id)).toEqual(s.events.all.map((e) => e.id));
  expect(events.edges).toHaveLength(1);
  const devices = await s.services.queries.devices(env.id, {}, { first: 5 });
  expect(devices.edges.map((e) => e.node.token)).toEqual([v.device?.token]);
  expect(await s.services.analytics.total(env.id, { action: 'allow' })).toBe(1);
  expect(await s.services.analytics.actions(env.id, {})).toEqual([{ action: 'allow', count: 1 }]);
});
