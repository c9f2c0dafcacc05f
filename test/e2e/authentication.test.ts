/**
 * Authentication as a hostile client meets it, over real HTTP: a wrong secret and a read-only
 * analyst key get the same answer on the API, and a source address that keeps failing is
 * throttled (429 with Retry-After) on REST and GraphQL alike, and on gRPC (RESOURCE_EXHAUSTED)
 * (other addresses: test/unit/core/access.test.ts).
 */
import { startTestApp, call, type TestApp } from '../support/app';
import { failure } from '../support/grpc';
import { createRampartClient } from '../../src/client';
import { addressOfPeer } from '../../src/grpc/call';

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

it('throttles on gRPC too: RESOURCE_EXHAUSTED with type rate_limited, the right secret included', async () => {
  const grpcApp = await startTestApp({ authFailuresPerMinute: 3 });
  const clients = [];
  try {
    for (let i = 0; i < 3; i++) {
      const wrong = createRampartClient({ address: grpcApp.grpcAddress, secret: `sk_grpc_guess_${i}_0123456789` });
      clients.push(wrong);
      expect((await failure(wrong.risk(risk))).codeName).toBe('UNAUTHENTICATED');
    }
    const right = createRampartClient({ address: grpcApp.grpcAddress, secret: grpcApp.secret, deadlineMs: 10_000 });
    clients.push(right);
    const e = await failure(right.risk({ event: '$login', user: { id: 'auth-grpc' }, context: { ip: '81.2.69.142', headers: { 'User-Agent': 'Mozilla/5.0' } } }));
    expect(e.codeName).toBe('RESOURCE_EXHAUSTED');
    expect(e.type).toBe('rate_limited');
  } finally {
    for (const c of clients) c.close();
    await grpcApp.close();
  }
});

it.each([
  ['127.0.0.1:51234', '127.0.0.1'],
  ['::1:51234', '::1'],
  ['::ffff:127.0.0.1:51234', '::ffff:127.0.0.1'],
  ['2001:db8::7:443', '2001:db8::7'],
  ['ipv4:127.0.0.1:51234', '127.0.0.1'],
  ['ipv6:[::1]:51234', '::1'],
  ['unix:/tmp/sock', null],
  ['unknown', null],
  ['', null],
])('the address of the gRPC peer %s is %s', (peer, address) => {
  expect(addressOfPeer(peer)).toBe(address);
});
