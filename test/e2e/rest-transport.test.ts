/**
 * Transport guarantees of the REST door: TLS 1.2+ when configured (plain HTTP never succeeds
 * there), HTTPS enforced behind a trusted proxy, the per-environment rate limit, and 503 when
 * the database is unreachable.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import https from 'node:https';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { buildRestServer } from '../../src/rest/server';
import { createLogger } from '../../src/app/logger';
import { startTestApp, call, basic, type TestApp } from '../support/app';

let app: TestApp;
const servers: FastifyInstance[] = [];
let cert: Buffer;
let key: Buffer;

beforeAll(async () => {
  app = await startTestApp({ grpc: false, rateLimitPerSecond: 2 });
  const dir = mkdtempSync(path.join(tmpdir(), 'rampart-tls-'));
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      path.join(dir, 'key.pem'),
      '-out',
      path.join(dir, 'cert.pem'),
      '-days',
      '1',
      '-subj',
      '/CN=localhost',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
    ],
    { stdio: 'ignore' },
  );
  cert = readFileSync(path.join(dir, 'cert.pem'));
  key = readFileSync(path.join(dir, 'key.pem'));
});
afterAll(async () => {
  for (const s of servers) await s.close();
  await app?.close();
});

async function serve(opts: {
  tls?: boolean;
  requireHttps?: boolean;
  trustProxy?: readonly string[];
}): Promise<number> {
  const s = await buildRestServer({
    services: app.built.services,
    log: createLogger('silent'),
    bodyLimit: 100 * 1024,
    tls: opts.tls ? { cert, key } : undefined,
    trustProxy: opts.trustProxy ?? false,
    requireHttps: opts.requireHttps ?? false,
  });
  await s.listen({ host: '127.0.0.1', port: 0 });
  servers.push(s);
  return (s.server.address() as AddressInfo).port;
}

function request(
  mod: typeof http | typeof https,
  port: number,
  options: https.RequestOptions,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = mod.request(
      {
        host: '127.0.0.1',
        port,
        path: '/v1/devices/none',
        method: 'GET',
        headers: { authorization: basic(app.secret) },
        ...options,
      },
      (res) => {
        let body = '';
        res.on('data', (c) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

describe('TLS', () => {
  it('answers over TLS 1.2+ and refuses plain HTTP and TLS 1.1', async () => {
    const port = await serve({ tls: true });
    const ok = await request(https, port, { ca: cert });
    expect(ok.status).toBe(404);
    expect(JSON.parse(ok.body)).toMatchObject({ type: 'not_found' });
    await expect(request(http, port, {})).rejects.toThrow();
    await expect(
      request(https, port, { ca: cert, maxVersion: 'TLSv1.1', minVersion: 'TLSv1' }),
    ).rejects.toThrow();
  });
});

describe('behind a trusted TLS-terminating proxy', () => {
  it('refuses requests that did not arrive over HTTPS', async () => {
    const port = await serve({ requireHttps: true, trustProxy: ['127.0.0.1'] });
    const plain = await request(http, port, {});
    expect(plain.status).toBe(400);
    expect(JSON.parse(plain.body)).toMatchObject({ type: 'bad_request', message: 'HTTPS is required' });
    const proxied = await request(http, port, {
      headers: { authorization: basic(app.secret), 'x-forwarded-proto': 'https' },
    });
    expect(proxied.status).toBe(404);
  });

  it('answers the probes over plain HTTP, as the kubelet and a container health check reach each instance', async () => {
    const port = await serve({ requireHttps: true, trustProxy: ['127.0.0.1'] });
    for (const path of ['/healthz', '/readyz'])
      expect([path, (await request(http, port, { path, headers: {} })).status]).toEqual([path, 200]);
    // Anything else still needs HTTPS, a route that does not exist included.
    expect((await request(http, port, { path: '/v1/openapi.json', headers: {} })).status).toBe(400);
    expect((await request(http, port, { path: '/healthz/../v1/openapi.json', headers: {} })).status).toBe(
      400,
    );
    expect((await request(http, port, { path: '/nowhere', headers: {} })).status).toBe(400);
  });

  it('believes X-Forwarded-Proto only from a trusted proxy', async () => {
    // The test connects from 127.0.0.1, which is not among this listener's proxies.
    const port = await serve({ requireHttps: true, trustProxy: ['10.0.0.0/8'] });
    const claimed = await request(http, port, {
      headers: { authorization: basic(app.secret), 'x-forwarded-proto': 'https' },
    });
    expect(claimed.status).toBe(400);
    expect(JSON.parse(claimed.body)).toMatchObject({ message: 'HTTPS is required' });
  });
});

describe('rate limit', () => {
  it('answers 429 rate_limited with Retry-After once the environment exceeds its rate', async () => {
    const results = await Promise.all(Array.from({ length: 12 }, () => call(app, 'GET', '/v1/devices/none')));
    const limited = results.filter((r) => r.status === 429);
    expect(limited.length).toBeGreaterThan(0);
    expect(limited[0]?.body).toMatchObject({ type: 'rate_limited' });
    expect(Number(limited[0]?.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(results.filter((r) => r.status === 404).length).toBeGreaterThan(0);
  });
});

describe('database unreachable', () => {
  it('answers 503 service_unavailable without internals', async () => {
    const other = await startTestApp({ grpc: false });
    try {
      await other.database.connection.client.close(true);
      const r = await call(other, 'GET', '/v1/users/anyone/devices', undefined, { secret: other.secret });
      expect(r.status).toBe(503);
      expect(r.body).toEqual({ type: 'service_unavailable', message: expect.any(String) });
    } finally {
      await other.http.close();
      await other.built.stop().catch(() => undefined);
    }
  });
});
