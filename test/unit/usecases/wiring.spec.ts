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

it('refuses a dashboard search by name: the unit fakes have no query store', async () => {
  const s = createFakeServices();
  const { env } = await s.environment();
  await expect(s.services.queries.events(env.id, {}, { first: 5 })).rejects.toThrow(/QueryStore\./);
});
