/**
 * Authentication as a hostile client meets it, over real HTTP: a wrong secret and a read-only
 * analyst key get the same answer on the API, and a source address that keeps failing is
 * throttled (429 with Retry-After) on REST and GraphQL alike (other addresses: test/unit/core/access.test.ts).
 */
import { startTestApp, call, type TestApp } from '../support/app';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ grpc: false, authFailuresPerMinute: 5 });
});
afterAll(async () => {
  await app?.close();
});

const risk = { event: '$login', user: { id: 'auth-1' }, context: { ip: '81.2.69.142', headers: { 'User-Agent': 'Mozilla/5.0' } } };

it('a wrong secret and an analyst key get the same answer on the API', async () => {
  const other = await startTestApp({ grpc: false });
  try {
    const { secret: analyst } = await other.built.services.environments.addCredential(other.env.id, 'analyst', 'dashboards');
    const wrong = await call(other, 'POST', '/v1/risk', risk, { secret: 'sk_wrong_0123456789' });
    const readOnly = await call(other, 'POST', '/v1/risk', risk, { secret: analyst });
    expect(wrong.status).toBe(401);
    expect(readOnly.status).toBe(401);
    expect(readOnly.body).toEqual(wrong.body);
  } finally {
    await other.close();
  }
});

it('throttles an address that keeps failing, on REST and on GraphQL, until its minute ends', async () => {
  for (let i = 0; i < 3; i++) expect((await call(app, 'POST', '/v1/risk', risk, { secret: `sk_guess_${i}_0123456789` })).status).toBe(401);
  for (let i = 0; i < 2; i++) expect((await call(app, 'POST', '/graphql', { query: '{ __typename }' }, { secret: `ak_guess_${i}_0123456789` })).status).toBe(401);
  const throttled = await call(app, 'POST', '/v1/risk', risk, { secret: 'sk_guess_again_0123456789' });
  expect(throttled.status).toBe(429);
  expect(throttled.body.type).toEqual(expect.any(String));
  expect(Number(throttled.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  expect(Number(throttled.headers.get('retry-after'))).toBeLessThanOrEqual(60);
  // Even the right secret, from that address, waits: guessing must not be told apart.
  expect((await call(app, 'POST', '/v1/risk', risk)).status).toBe(429);
  expect((await call(app, 'POST', '/graphql', { query: '{ __typename }' })).status).toBe(429);
});
