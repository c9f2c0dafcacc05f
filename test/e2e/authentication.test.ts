/**
 * Authentication as a hostile client meets it, over real HTTP: a wrong secret and a read-only
 * analyst key get the same answer on the API, and a source address that keeps failing is
 * throttled (429 with Retry-After) on REST, GraphQL and the console alike, and on gRPC
 * (RESOURCE_EXHAUSTED), while a valid credential from that address still gets in (other
 * addresses: test/unit/core/access.spec.ts). Behind a trusted proxy the address is the right-most
 * hop of X-Forwarded-For that is not a proxy: a client can neither escape the throttle by writing
 * a new address per request nor lock another address out by writing it.
 */
import * as grpc from '@grpc/grpc-js';
import { startTestApp, call, type TestApp } from '../support/app';
import { failure } from '../support/grpc';
import { createRampartClient } from '../../src/client';
import { addressOfPeer } from '../../src/grpc/call';
import { loadRampartProto } from '../../src/grpc/loader';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ grpc: false, authFailuresPerMinute: 5 });
});
afterAll(async () => {
  await app?.close();
});

const risk = {
  event: '$login',
  user: { id: 'auth-1' },
  context: { ip: '81.2.69.142', headers: { 'User-Agent': 'Mozilla/5.0' } },
};

it('a wrong secret and an analyst key get the same answer on the API', async () => {
  const other = await startTestApp({ grpc: false });
  try {
    const { secret: analyst } = await other.built.services.environments.addCredential(
      other.env.id,
      'analyst',
      'dashboards',
    );
    const wrong = await call(other, 'POST', '/v1/risk', risk, { secret: 'sk_wrong_0123456789' });
    const readOnly = await call(other, 'POST', '/v1/risk', risk, { secret: analyst });
    expect(wrong.status).toBe(401);
    expect(readOnly.status).toBe(401);
    expect(readOnly.body).toEqual(wrong.body);
  } finally {
    await other.close();
  }
});

it('throttles the failures of an address that keeps failing, on REST and on GraphQL, until its minute ends', async () => {
  for (let i = 0; i < 3; i++)
    expect((await call(app, 'POST', '/v1/risk', risk, { secret: `sk_guess_${i}_0123456789` })).status).toBe(
      401,
    );
  for (let i = 0; i < 2; i++)
    expect(
      (
        await call(
          app,
          'POST',
          '/graphql',
          { query: '{ __typename }' },
          { secret: `ak_guess_${i}_0123456789` },
        )
      ).status,
    ).toBe(401);
  const throttled = await call(app, 'POST', '/v1/risk', risk, { secret: 'sk_guess_again_0123456789' });
  expect(throttled.status).toBe(429);
  expect(throttled.body.type).toEqual(expect.any(String));
  expect(Number(throttled.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  expect(Number(throttled.headers.get('retry-after'))).toBeLessThanOrEqual(60);
  expect(
    (
      await call(
        app,
        'POST',
        '/graphql',
        { query: '{ __typename }' },
        { secret: 'ak_guess_again_0123456789' },
      )
    ).status,
  ).toBe(429);
  expect((await call(app, 'POST', '/v1/risk', risk, { secret: null })).status).toBe(429);
});

it('never refuses a valid credential for the failures of others at its address: REST, GraphQL, the console', async () => {
  const shared = await startTestApp({ grpc: false, authFailuresPerMinute: 3 });
  try {
    for (let i = 0; i < 4; i++)
      await call(shared, 'POST', '/v1/risk', risk, { secret: `sk_guess_${i}_0123456789` });
    expect(
      (await call(shared, 'POST', '/v1/risk', risk, { secret: 'sk_guess_more_0123456789' })).status,
    ).toBe(429);
    // The application's backend at the same address (a NAT, a proxy) goes on working.
    expect((await call(shared, 'POST', '/v1/risk', risk)).status).toBe(201);
    expect((await call(shared, 'POST', '/graphql', { query: '{ __typename }' })).status).toBe(200);
    const signIn = (key: string) =>
      fetch(`${shared.baseUrl}/console/session`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ key }),
      });
    expect((await signIn(shared.secret)).status).toBe(201);
    expect((await signIn('sk_wrong_0123456789')).status).toBe(429);
    // And its success lifts nothing: the guesses go on answering 429.
    expect(
      (await call(shared, 'POST', '/v1/risk', risk, { secret: 'sk_guess_last_0123456789' })).status,
    ).toBe(429);
  } finally {
    await shared.close();
  }
});

it('throttles on gRPC too: RESOURCE_EXHAUSTED with type rate_limited for the guesses, the right secret let through', async () => {
  const grpcApp = await startTestApp({ authFailuresPerMinute: 3 });
  const clients = [];
  try {
    for (let i = 0; i < 3; i++) {
      const wrong = createRampartClient({
        address: grpcApp.grpcAddress,
        secret: `sk_grpc_guess_${i}_0123456789`,
      });
      clients.push(wrong);
      expect((await failure(wrong.risk(risk))).codeName).toBe('UNAUTHENTICATED');
    }
    const again = createRampartClient({
      address: grpcApp.grpcAddress,
      secret: 'sk_grpc_guess_again_0123456789',
    });
    clients.push(again);
    const e = await failure(again.risk(risk));
    expect(e.codeName).toBe('RESOURCE_EXHAUSTED');
    expect(e.type).toBe('rate_limited');
    const right = createRampartClient({
      address: grpcApp.grpcAddress,
      secret: grpcApp.secret,
      deadlineMs: 10_000,
    });
    clients.push(right);
    expect(
      (
        await right.risk({
          event: '$login',
          user: { id: 'auth-grpc' },
          context: { ip: '81.2.69.142', headers: { 'User-Agent': 'Mozilla/5.0' } },
        })
      ).risk,
    ).toEqual(expect.any(Number));
  } finally {
    for (const c of clients) c.close();
    await grpcApp.close();
  }
});

describe('behind a trusted proxy', () => {
  let proxied: TestApp;
  beforeAll(async () => {
    // The test's connections come from 127.0.0.1: the proxy. What it appended to X-Forwarded-For
    // is the client's address; what stands left of it, the client wrote.
    proxied = await startTestApp({ authFailuresPerMinute: 3, trustProxy: ['127.0.0.1'] });
  });
  afterAll(async () => {
    await proxied?.close();
  });
  const via = (chain: string) => ({ 'x-forwarded-for': chain });

  it('throttles the client the proxy saw, whatever address the client writes in front of it', async () => {
    const statuses = [];
    for (let i = 0; i < 5; i++) {
      statuses.push(
        (
          await call(proxied, 'POST', '/v1/risk', risk, {
            secret: `sk_rotate_${i}_0123456789`,
            headers: via(`203.0.113.${i + 1}, 198.51.100.7`),
          })
        ).status,
      );
    }
    expect(statuses).toEqual([401, 401, 401, 429, 429]);
    // GraphQL and the console read the same address.
    expect(
      (
        await call(
          proxied,
          'POST',
          '/graphql',
          { query: '{ __typename }' },
          { secret: 'ak_rotate_0123456789', headers: via('203.0.113.99, 198.51.100.7') },
        )
      ).status,
    ).toBe(429);
    const console = await fetch(`${proxied.baseUrl}/console/session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...via('198.51.100.7') },
      body: JSON.stringify({ key: 'sk_rotate_console_0123456789' }),
    });
    expect(console.status).toBe(429);
    // Another client behind the same proxy is not affected.
    expect(
      (
        await call(proxied, 'POST', '/v1/risk', risk, {
          secret: 'sk_other_0123456789',
          headers: via('198.51.100.200'),
        })
      ).status,
    ).toBe(401);
  });

  it("cannot lock a backend out by writing the backend's address", async () => {
    for (let i = 0; i < 5; i++)
      await call(proxied, 'POST', '/v1/risk', risk, {
        secret: `sk_forge_${i}_0123456789`,
        headers: via('192.0.2.10, 198.51.100.8'),
      });
    expect(
      (
        await call(proxied, 'POST', '/v1/risk', risk, {
          secret: 'sk_forge_more_0123456789',
          headers: via('192.0.2.10, 198.51.100.8'),
        })
      ).status,
    ).toBe(429);
    // The backend, at 192.0.2.10, has failed nothing: a mistake of its own is a 401, its secret works.
    expect(
      (
        await call(proxied, 'POST', '/v1/risk', risk, {
          secret: 'sk_backend_typo_0123456789',
          headers: via('192.0.2.10'),
        })
      ).status,
    ).toBe(401);
    expect((await call(proxied, 'POST', '/v1/risk', risk, { headers: via('192.0.2.10') })).status).toBe(201);
  });

  it('reads the client from x-forwarded-for on gRPC too, where the peer is the proxy', async () => {
    const { proto } = loadRampartProto();
    const scoring = new proto.rampart.v1.Scoring(proxied.grpcAddress, grpc.credentials.createInsecure());
    const track = (secret: string, chain: string) => {
      const md = new grpc.Metadata();
      md.set('authorization', `Bearer ${secret}`);
      md.set('x-forwarded-for', chain);
      return new Promise<number>((resolve) =>
        scoring.track(
          { event: '$login.failed', user: { id: 'grpc-proxied' }, context: { ip: '81.2.69.142' } },
          md,
          { deadline: Date.now() + 10_000 },
          (e) => resolve(e?.code ?? grpc.status.OK),
        ),
      );
    };
    try {
      const codes = [];
      for (let i = 0; i < 5; i++)
        codes.push(await track(`sk_grpc_rotate_${i}_0123456789`, `203.0.113.${i + 1}, 198.51.100.9`));
      expect(codes).toEqual([
        grpc.status.UNAUTHENTICATED,
        grpc.status.UNAUTHENTICATED,
        grpc.status.UNAUTHENTICATED,
        grpc.status.RESOURCE_EXHAUSTED,
        grpc.status.RESOURCE_EXHAUSTED,
      ]);
      // Another client behind the proxy (the peer every call shares) is not throttled with it.
      expect(await track('sk_grpc_other_0123456789', '198.51.100.10')).toBe(grpc.status.UNAUTHENTICATED);
      expect(await track(proxied.secret, '198.51.100.9')).toBe(grpc.status.OK);
    } finally {
      scoring.close();
    }
  });
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
