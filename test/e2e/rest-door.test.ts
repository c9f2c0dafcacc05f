/**
 * The REST door's plugins over real HTTP: the authentication hook covers every route the OpenAPI
 * document secures (read from the router, not from a list kept here), with the documented answers
 * for no secret, a wrong one and a disabled environment; the routes left open are the ones the
 * document leaves open; and whatever a handler throws reaches the one error serialiser
 * (doors/errors.ts), on REST and on the console alike.
 */
import type { FastifyInstance } from 'fastify';
import { buildRestServer } from '../../src/rest/server';
import { registerConsole } from '../../src/console/server';
import { createLogger } from '../../src/app/logger';
import { Forbidden, RateLimited, Unavailable } from '../../src/core/errors';
import type { Services } from '../../src/core/services';
import { startTestApp, call, type TestApp } from '../support/app';
import { routesOf } from '../support/routes';

type Doc = { paths: Record<string, Record<string, { security?: unknown[] }>> };

let app: TestApp;
let doc: Doc;
beforeAll(async () => {
  // Every secured route is called without a secret from one address: the throttle must not step in.
  app = await startTestApp({ grpc: false, authFailuresPerMinute: 1_000_000 });
  doc = (await call(app, 'GET', '/v1/openapi.json', undefined, { secret: null })).body as Doc;
});
afterAll(async () => {
  await app?.close();
});

/** The REST routes served (not GraphQL's, not the console's), each with what the document says of its security. */
function restRoutes(): { method: string; url: string; path: string; secured: boolean }[] {
  return routesOf(app.http)
    .filter(
      (r) =>
        r.method !== 'HEAD' && r.url !== '/graphql' && r.url !== '/console' && !r.url.startsWith('/console/'),
    )
    .map((r) => {
      const documented = r.url.replace(/:(\w+)/g, '{$1}');
      const op = doc.paths[documented]?.[r.method.toLowerCase()];
      if (!op) throw new Error(`${r.method} ${r.url} is served but not documented`);
      return {
        method: r.method,
        url: r.url,
        // A real path: each parameter given a value.
        path: r.url.replace(/:(\w+)/g, 'p-$1'),
        secured: JSON.stringify(op.security ?? []).includes('apiSecret'),
      };
    });
}

const bodyFor = (method: string) => (method === 'GET' || method === 'OPTIONS' ? undefined : {});

describe('the authentication hook', () => {
  it('covers every route the document secures: no secret is 401 with the documented body', async () => {
    const secured = restRoutes().filter((r) => r.secured);
    expect(secured.length).toBeGreaterThan(25);
    const answers = [];
    for (const r of secured) {
      const res = await call(app, r.method, r.path, bodyFor(r.method), { secret: null });
      answers.push({ route: `${r.method} ${r.url}`, status: res.status, body: res.body });
    }
    expect(answers).toEqual(
      secured.map((r) => ({
        route: `${r.method} ${r.url}`,
        status: 401,
        body: { type: 'unauthorized', message: 'missing or invalid API secret' },
      })),
    );
  });

  it('checks the caller in full on each of them: a wrong secret 401, a disabled environment 403 with its reason', async () => {
    const off = await app.newEnvironment('rest-door-disabled');
    await app.built.services.environments.setEnabled(off.env.id, false);
    const secured = restRoutes().filter((r) => r.secured);
    const answers = [];
    for (const r of secured) {
      const wrong = await call(app, r.method, r.path, bodyFor(r.method), { secret: 'sk_wrong_0123456789' });
      const disabled = await call(app, r.method, r.path, bodyFor(r.method), { secret: off.secret });
      answers.push({ route: `${r.method} ${r.url}`, wrong: wrong.status, disabled: disabled.body });
    }
    expect(answers).toEqual(
      secured.map((r) => ({
        route: `${r.method} ${r.url}`,
        wrong: 401,
        disabled: {
          type: 'forbidden',
          message: 'this environment is disabled',
          reason: 'environment_disabled',
        },
      })),
    );
  });

  it('leaves open exactly the routes the document leaves open', () => {
    const open = restRoutes()
      .filter((r) => !r.secured)
      .map((r) => `${r.method} ${r.url}`)
      .sort();
    expect(open).toEqual(
      [
        'GET /',
        'GET /healthz',
        'GET /readyz',
        'GET /metrics',
        'GET /v1/openapi.json',
        'GET /v1/privacy/exports/:jobId',
        'GET /client/v1/:file',
        'GET /client/demo',
        'POST /client/demo/login',
        'POST /v1/client/token',
        'POST /v1/client/challenge',
        'POST /v1/client/events',
        'OPTIONS /v1/client/token',
        'OPTIONS /v1/client/challenge',
        'OPTIONS /v1/client/events',
      ].sort(),
    );
  });

  it('reads the body before the credential, as before: an oversized body is 413 without a secret', async () => {
    const r = await call(app, 'POST', '/v1/risk', undefined, {
      secret: null,
      raw: JSON.stringify({ pad: 'x'.repeat(200 * 1024) }),
    });
    expect(r.status).toBe(413);
    expect(r.body).toEqual({
      type: 'payload_too_large',
      message: 'request body is larger than 102400 bytes',
    });
  });
});

describe('one error serialiser for what a handler throws', () => {
  let faulty: FastifyInstance;
  let base: string;
  beforeAll(async () => {
    const real = app.built.services;
    // devices.get and the console's session look-up throw what the token names.
    const fault = (token: string | null): Error | null =>
      token === 'fault-internal'
        ? new Error('boom: db-password=hunter2')
        : token === 'fault-limited'
          ? new RateLimited(7, 'slow down (RAMPART_RATE_LIMIT)')
          : token === 'fault-forbidden'
            ? new Forbidden('not this app', 'app_not_allowed')
            : token === 'fault-unavailable'
              ? new Unavailable('the database is unreachable', { retryAfterSeconds: 3 })
              : null;
    const devices = Object.create(real.devices) as Services['devices'];
    devices.get = async (env, token) => {
      const e = fault(token);
      if (e) throw e;
      return real.devices.get(env, token);
    };
    const sessions = Object.create(real.sessions) as Services['sessions'];
    sessions.resolve = async (token, csrf, opts) => {
      const e = fault(token);
      if (e) throw e;
      return real.sessions.resolve(token, csrf, opts);
    };
    const services: Services = { ...real, devices, sessions };
    const log = createLogger(process.env.RAMPART_TEST_LOG ?? 'silent');
    faulty = await buildRestServer({
      services,
      log,
      bodyLimit: 100 * 1024,
      trustProxy: false,
      requireHttps: false,
      register: async (a) => registerConsole(a, { services, log }),
    });
    await faulty.listen({ host: '127.0.0.1', port: 0 });
    const addr = faulty.server.address();
    base = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  });
  afterAll(async () => {
    await faulty?.close();
  });

  const rest = (token: string) => call({ baseUrl: base, secret: app.secret }, 'GET', `/v1/devices/${token}`);
  const consoleCall = async (token: string) => {
    const res = await fetch(`${base}/console/session`, { headers: { cookie: `rampart_session=${token}` } });
    return { status: res.status, headers: res.headers, body: (await res.json()) as unknown };
  };

  it('an internal error: 500, a correlation id on REST, nothing of the cause', async () => {
    const r = await rest('fault-internal');
    expect(r.status).toBe(500);
    expect(r.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(r.body).toEqual({
      type: 'server_error',
      message: expect.stringMatching(/^internal error \(correlation id [0-9a-f-]{36}\)$/),
      correlation_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
    });
    expect(JSON.stringify(r.body)).not.toContain('hunter2');
    const c = await consoleCall('fault-internal');
    expect(c.status).toBe(500);
    expect(c.headers.get('cache-control')).toBe('no-store');
    expect(c.body).toEqual({
      type: 'internal',
      message: expect.stringMatching(/^internal error \(correlation id [0-9a-f-]{36}\)$/),
    });
  });

  it('a rate limit and an outage: their status and Retry-After, on both', async () => {
    for (const [token, status, retryAfter, restType, consoleType] of [
      ['fault-limited', 429, '7', 'rate_limited', 'rate_limited'],
      ['fault-unavailable', 503, '3', 'service_unavailable', 'unavailable'],
    ] as const) {
      const r = await rest(token);
      expect([token, r.status, r.headers.get('retry-after'), r.body.type]).toEqual([
        token,
        status,
        retryAfter,
        restType,
      ]);
      const c = await consoleCall(token);
      expect([token, c.status, c.headers.get('retry-after'), (c.body as { type: string }).type]).toEqual([
        token,
        status,
        retryAfter,
        consoleType,
      ]);
    }
  });

  it('a refusal with its reason: 403 and the reason in the body, on both', async () => {
    const r = await rest('fault-forbidden');
    expect(r.status).toBe(403);
    expect(r.body).toEqual({ type: 'forbidden', message: 'not this app', reason: 'app_not_allowed' });
    const c = await consoleCall('fault-forbidden');
    expect(c.status).toBe(403);
    expect(c.body).toEqual({ type: 'forbidden', message: 'not this app', reason: 'app_not_allowed' });
  });

  it('a body over the limit: 413 from the one limit, in each door’s style', async () => {
    const big = JSON.stringify({ key: 'x'.repeat(200 * 1024) });
    const c = await fetch(`${base}/console/session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: big,
    });
    expect(c.status).toBe(413);
    expect(c.headers.get('cache-control')).toBe('no-store');
    expect(await c.json()).toEqual({
      type: 'payload_too_large',
      message: 'request body is larger than 102400 bytes',
    });
    const r = await call({ baseUrl: base, secret: app.secret }, 'POST', '/v1/risk', undefined, { raw: big });
    expect(r.status).toBe(413);
    expect(r.headers.get('cache-control')).toBeNull();
    expect(r.body).toEqual({
      type: 'payload_too_large',
      message: 'request body is larger than 102400 bytes',
    });
  });

  it("the console's sign-in body is read by the same JSON reader as REST's", async () => {
    for (const [raw, message] of [
      ['{"key":', 'request body is not valid JSON'],
      ['[1]', 'request body must be a JSON object'],
      [`${'{"a":'.repeat(40)}1${'}'.repeat(40)}`, 'request body is nested deeper than 32 levels'],
    ]) {
      const c = await fetch(`${base}/console/session`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: raw,
      });
      const r = await call({ baseUrl: base, secret: app.secret }, 'POST', '/v1/risk', undefined, { raw });
      expect([raw, c.status, await c.json()]).toEqual([raw, 400, { type: 'bad_request', message }]);
      expect([raw, r.status, r.body]).toEqual([raw, 400, { type: 'bad_request', message }]);
    }
  });
});
