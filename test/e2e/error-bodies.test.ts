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
import { waitFor } from '../support/wait';

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
      resolve({
        status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head ?? '')?.[1] ?? 0),
        body: JSON.parse(rest.join('\r\n\r\n') || 'null') as unknown,
      });
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
  const hung = await buildRestServer({
    services: app.built.services,
    log: createLogger('silent'),
    bodyLimit: 1024,
    trustProxy: false,
    requireHttps: false,
    ready: () => new Promise<boolean>(() => undefined),
  });
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

it("a request that arrives on an open connection once the server is closing: 503 in Rampart's body, the connection closed", async () => {
  const own = await startTestApp({ grpc: false });
  try {
    const u = new URL(own.baseUrl);
    const auth = `Basic ${Buffer.from(`:${own.secret}`).toString('base64')}`;
    const body = JSON.stringify({
      event: '$login.failed',
      user_id: 'closing-1',
      context: { ip: '81.2.69.142', headers: { 'User-Agent': 'x' } },
    });
    const head = (contentLength: number) =>
      `POST /v1/track HTTP/1.1\r\nHost: ${u.host}\r\nAuthorization: ${auth}\r\nContent-Type: application/json\r\nContent-Length: ${contentLength}\r\nConnection: keep-alive\r\n\r\n`;
    let out = '';
    const socket = net.connect(Number(u.port), u.hostname);
    socket.on('data', (d: Buffer) => (out += d.toString('utf8')));
    const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    // A first request under way (its body not all sent) keeps the connection busy while the close
    // begins: the server has parsed its head (Node's 'request' event) before the close is called.
    const underWay = new Promise<void>((resolve) => own.http.server.once('request', () => resolve()));
    socket.write(head(Buffer.byteLength(body)) + body.slice(0, 10));
    await underWay;
    const closing = own.http.close();
    // The close has begun (Rampart's preClose ran, then the listener closed) before the rest is sent.
    await waitFor(() => !own.http.server.listening, { what: 'the listener to close' });
    // The rest of the first body, and a second request pipelined behind it.
    socket.write(body.slice(10) + head(Buffer.byteLength(body)) + body);
    await closed;
    await closing;
    const answers = out.split(/(?=HTTP\/1\.1 )/).filter(Boolean);
    expect(answers.map((a) => Number(/^HTTP\/1\.1 (\d{3})/.exec(a)?.[1]))).toEqual([204, 503]);
    const second = answers[1] as string;
    expect(second).toMatch(/\r\nconnection: close\r\n/i);
    expect(JSON.parse(second.split('\r\n\r\n')[1] ?? '')).toEqual({
      type: 'service_unavailable',
      message: 'the service is shutting down',
    });
  } finally {
    await own.built.stop();
    await own.database.drop();
  }
});
