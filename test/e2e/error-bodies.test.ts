/**
 * Every error carries the `{type, message}` body, whatever produced it: Fastify's router (a path
 * that is not valid percent-encoding), Node's HTTP parser (a malformed request, headers or a URL
 * too large), and GraphQL operations the schema does not have (a subscription). And the readiness
 * probe answers 503 at once when the database does not answer, rather than hanging.
 */
import net from 'node:net';
import { createLogger } from '../../src/app/logger';
import { buildRestServer } from '../../src/rest/server';
import { startTestApp, call, type TestApp } from '../support/app';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ grpc: false });
});
afterAll(async () => {
  await app?.close();
});

/** Bytes straight to the listener, the answer as text (the parser's refusals never reach Fastify). */
const raw = (text: string) =>
  new Promise<{ status: number; body: unknown }>((resolve, reject) => {
    const u = new URL(app.baseUrl);
    let out = '';
    const s = net.connect(Number(u.port), u.hostname, () => s.end(text));
    s.on('data', (d: Buffer) => (out += d.toString('utf8')));
    s.on('error', reject);
    s.on('close', () => {
      const [head, ...rest] = out.split('\r\n\r\n');
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head ?? '')?.[1] ?? 0), body: JSON.parse(rest.join('\r\n\r\n') || 'null') as unknown });
    });
  });

it.each([
  ['a path that is not valid percent-encoding', '/v1/devices/%zz'],
  ['a truncated percent-encoding', '/v1/%E0%A4%A'],
])('%s: 400 with a type', async (_name, path) => {
  const r = await call(app, 'GET', path);
  expect(r.status).toBe(400);
  expect(r.body).toEqual({ type: 'bad_request', message: expect.any(String) });
});

it.each([
  ['headers too large', `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(100_000)}\r\n\r\n`, 431],
  ['a URL too large', `GET /v1/devices/${'a'.repeat(100_000)} HTTP/1.1\r\nHost: x\r\n\r\n`, 431],
  ['a malformed header line', 'GET /healthz HTTP/1.1\r\nHost x\r\n\r\n', 400],
  ['not HTTP at all', 'HELLO\r\n\r\n', 400],
])('%s: its status, with a type', async (_name, text, status) => {
  const r = await raw(text);
  expect(r.status).toBe(status);
  expect(r.body).toEqual({ type: 'bad_request', message: expect.any(String) });
});

it('a GraphQL subscription is a bad request, not a server error', async () => {
  const r = await call(app, 'POST', '/graphql', { query: 'subscription { events { id } }' });
  expect(r.status).toBe(400);
  expect(r.body.errors[0].extensions.code).toBe('BAD_REQUEST');
  expect(r.body.errors[0].message).toMatch(/subscriptions are not supported/);
});

it('the readiness probe answers 503 when the database does not answer its ping, instead of hanging', async () => {
  const hung = await buildRestServer({ services: app.built.services, log: createLogger('silent'), bodyLimit: 1024, trustProxy: false, requireHttps: false, ready: () => new Promise<boolean>(() => undefined) });
  await hung.listen({ host: '127.0.0.1', port: 0 });
  try {
    const port = (hung.server.address() as { port: number }).port;
    const res = await fetch(`http://127.0.0.1:${port}/readyz`);
    expect(res.status).toBe(503);
    expect(await res.json()).toEqual({ status: 'unavailable' });
  } finally {
    await hung.close();
  }
});
