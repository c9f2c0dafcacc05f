/**
 * Load shedding at the REST door, over real HTTP: while the process runs too far behind (its
 * event loop's delay past RAMPART_MAX_LOOP_DELAY_MS, app/loop-lag.ts), every route but the
 * operational ones answers 503 with Retry-After at once, in Rampart's error body, and nothing of
 * it is recorded; the probes and the metrics still answer; once it catches up,
 * requests are served again. And a request whose client left before it was read gets no work.
 */
import net from 'node:net';
import { startTestApp, call, type TestApp } from '../support/app';
import { waitFor } from '../support/wait';

const UA =
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36';
const context = { ip: '81.2.69.160', headers: { 'User-Agent': UA } };

let app: TestApp;
let behind: string | null = null;

beforeAll(async () => {
  app = await startTestApp({ grpc: false, overloaded: () => behind });
});
afterAll(async () => {
  await app?.close();
});
afterEach(() => {
  behind = null;
});

const countEvents = async (userId: string) => {
  await app.built.state.flush();
  return app.database.db.collection('events').countDocuments({ userId });
};

describe('while the process runs behind', () => {
  const refused: [string, string, string, unknown][] = [
    [
      'POST',
      '/v1/risk',
      'a verdict',
      { event: '$login', status: '$succeeded', user: { id: 'shed-1' }, context },
    ],
    [
      'POST',
      '/v1/filter',
      'a filter',
      { event: '$registration', status: '$attempted', params: { email: 'a@example.com' }, context },
    ],
    [
      'POST',
      '/v1/track',
      'a track event',
      { event: '$login', status: '$failed', user: { id: 'shed-1' }, context },
    ],
    [
      'POST',
      '/v1/log',
      'a log event',
      { event: '$login', status: '$failed', user: { id: 'shed-1' }, context },
    ],
    ['GET', '/v1/users/shed-1/devices', 'a device list', undefined],
    ['POST', '/graphql', 'a GraphQL query', { query: '{ analytics { total } }' }],
  ];
  it.each(refused)(
    '%s %s (%s) answers 503 with Retry-After at once, and records nothing',
    async (method, path, _what, body) => {
      behind = 'overloaded: the service is running 812 ms behind';
      const res = await call(app, method, path, body);
      expect(res.status).toBe(503);
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(res.body).toEqual({
        type: 'service_unavailable',
        message: 'overloaded: the service is running 812 ms behind',
      });
      expect(await countEvents('shed-1')).toBe(0);
    },
  );

  it('still answers /healthz and /metrics', async () => {
    behind = 'overloaded: the service is running 812 ms behind';
    expect((await fetch(`${app.baseUrl}/healthz`)).status).toBe(200);
    expect((await fetch(`${app.baseUrl}/metrics`)).status).toBe(200);
  });

  it('serves requests again once it has caught up', async () => {
    behind = 'overloaded: the service is running 812 ms behind';
    expect(
      (
        await call(app, 'POST', '/v1/risk', {
          event: '$login',
          status: '$succeeded',
          user: { id: 'shed-2' },
          context,
        })
      ).status,
    ).toBe(503);
    behind = null;
    expect(
      (
        await call(app, 'POST', '/v1/risk', {
          event: '$login',
          status: '$succeeded',
          user: { id: 'shed-2' },
          context,
        })
      ).status,
    ).toBe(201);
    expect(await countEvents('shed-2')).toBe(1);
  });
});

describe('a request whose client left before it was read', () => {
  // Credentials verified once and kept, as in production: nothing then waits on the database
  // before the verdict, and only the door's own look can see the client gone.
  let own: TestApp;
  beforeAll(async () => {
    own = await startTestApp({ grpc: false, authCacheMs: 600_000 });
    expect(
      (
        await call(own, 'POST', '/v1/risk', {
          event: '$login',
          status: '$succeeded',
          user: { id: 'warm' },
          context,
        })
      ).status,
    ).toBe(201);
  });
  afterAll(async () => {
    await own?.close();
  });
  const ownEvents = async (userId: string) => {
    await own.built.state.flush();
    return own.database.db.collection('events').countDocuments({ userId });
  };

  it.each([['/v1/risk'], ['/v1/track']])('%s gets no work: no verdict, no event', async (path) => {
    const app = own;
    const countEvents = ownEvents;
    const body = JSON.stringify({
      event: '$login',
      status: '$succeeded',
      user: { id: `gone-${path.slice(4)}` },
      context,
    });
    const auth = `Basic ${Buffer.from(`:${app.secret}`).toString('base64')}`;
    // The request and the client's FIN together, as a client that gave up leaves them in the
    // socket of a process that reads late.
    const sent = 20;
    await Promise.all(
      Array.from(
        { length: sent },
        () =>
          new Promise<void>((resolve) => {
            const port = Number(new URL(app.baseUrl).port);
            const socket = net.connect(port, '127.0.0.1', () => {
              socket.end(
                `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAuthorization: ${auth}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
              );
            });
            socket.resume();
            socket.on('close', () => resolve());
            socket.on('error', () => resolve());
          }),
      ),
    );
    // A live request for the same user afterwards, answered: the door is working.
    expect((await call(app, 'POST', path, JSON.parse(body))).status).toBe(path === '/v1/risk' ? 201 : 204);
    await waitFor(async () => (await countEvents(`gone-${path.slice(4)}`)) >= 1, {
      what: 'the live event stored',
    });
    // The live one; of those whose client had left, none (on a busy machine, a client preempted
    // between its request and its FIN may leave one read before it was seen going: a few at most).
    expect(await countEvents(`gone-${path.slice(4)}`)).toBeLessThan(1 + sent / 2);
  });
});
