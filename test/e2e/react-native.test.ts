/**
 * @rampart/react-native against the real service, end to end, over loopback: the library runs
 * over a platform with in-memory storage, an app state the test moves and a scripted phone, but
 * the real network, clock and randomness. An app installs and opens (events flushed), shows
 * screens, logs in to its own backend through the library's fetch (the header only on the app's
 * API), the backend forwards the header to Rampart and gets the verdict, the app identifies the
 * user, the phone appears in the registry with its model, OS and app version, and the app closes
 * and flushes. Then it restarts: no second install, the same device. Castle's React Native
 * names: custom events, the signed user (userJwt, verified with the API secret), and Castle's
 * header read by a backend that forwards the request's headers as Castle's SDKs do. A token
 * replayed beyond its login flow, or altered, is denied.
 */
import { createHmac, randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startTestApp, call, type TestApp } from '../support/app';
import { createRampart } from '../../src/react-native';
import type { RampartClient, RampartConfig } from '../../src/react-native';
import type { DeviceInfo, Platform } from '../../src/react-native/platform';
import { FakeAppState, MemoryStorage } from '../support/react-native';

let app: TestApp;
let backend: http.Server;
let backendUrl = '';
let other: http.Server;
let otherUrl = '';
let castleBackend: http.Server;
let castleUrl = '';
/** What the app's backend and another site received, and what Rampart answered the backend. */
const received: { path: string; clientId: string | undefined }[] = [];
const verdicts: Record<string, unknown>[] = [];

const PHONE_IP = '81.2.69.142';
const OKHTTP = 'okhttp/4.12.0';

/** The application's backend: checks the password, then asks Rampart, forwarding the app's header as Castle's SDKs forward a client id. */
function startBackend(castle = false): Promise<http.Server> {
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const clientId = req.headers[castle ? 'x-castle-request-token' : 'x-service-client-id'] as
        string | undefined;
      received.push({ path: req.url ?? '', clientId });
      if (req.url !== '/api/login')
        return res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { user: string; password: string };
      if (body.password !== 'right') return res.writeHead(401).end();
      const r = await call(app, 'POST', '/v1/risk', {
        type: '$login',
        status: '$succeeded',
        user: { id: body.user, email: `${body.user}@example.com` },
        // Castle's SDKs forward the request's headers, and Rampart finds X-Castle-Request-Token among them.
        ...(castle ? {} : { request_token: clientId }),
        context: {
          ip: PHONE_IP,
          headers: {
            'User-Agent': req.headers['user-agent'] ?? '',
            Accept: 'application/json',
            'Accept-Encoding': 'gzip',
            ...(castle && clientId ? { 'X-Castle-Request-Token': clientId } : {}),
          },
        },
      });
      verdicts.push(r.body as Record<string, unknown>);
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(r.body));
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

const PHONE: DeviceInfo = {
  platform: 'android',
  osVersion: '14',
  model: 'Pixel 8',
  manufacturer: 'Google',
  app: { id: 'com.example.shop', name: 'ShopApp', version: '3.2.1', build: '321' },
  locale: 'en-GB',
  timezone: 'Europe/London',
  timezoneOffset: 0,
  screen: { width: 1080, height: 2400, scale: 2.625 },
  vendorId: randomBytes(8).toString('hex'),
  integrity: [],
};

/** A phone: its storage survives the app's restarts, as the app's private storage and the Keystore do. */
const phone = { storage: new MemoryStorage(), secure: new MemoryStorage(), appState: new FakeAppState() };
function platform(): Platform {
  return {
    storage: phone.storage,
    secureStorage: phone.secure,
    appState: phone.appState,
    deviceInfo: async () => PHONE,
    fetch: (url, init) => fetch(url, init),
    clock: {
      now: () => Date.now(),
      setTimeout: (f, ms) => setTimeout(f, ms),
      clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
    },
    randomBytes: (n) => new Uint8Array(randomBytes(n)),
    logger: { debug: () => undefined },
  };
}

beforeAll(async () => {
  app = await startTestApp({ grpc: false });
  backend = await startBackend();
  backendUrl = `http://127.0.0.1:${(backend.address() as AddressInfo).port}`;
  other = await startBackend();
  otherUrl = `http://127.0.0.1:${(other.address() as AddressInfo).port}`;
  castleBackend = await startBackend(true);
  castleUrl = `http://127.0.0.1:${(castleBackend.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((r) => backend?.close(r));
  await new Promise((r) => other?.close(r));
  await new Promise((r) => castleBackend?.close(r));
  await app?.close();
});

const appEvents = async (filter: Record<string, unknown> = {}) => {
  await app.built.state.flush();
  return app.database.db
    .collection('client_events')
    .find({ envId: app.env.id, ...filter })
    .sort({ at: 1 })
    .toArray();
};

async function open(config: Partial<RampartConfig> = {}): Promise<RampartClient> {
  const client = createRampart(platform());
  await client.configure({
    publishableKey: app.env.publishableKey,
    baseUrl: app.baseUrl,
    baseURLAllowList: [`${backendUrl}/api/`],
    ...config,
  });
  await client.idle();
  return client;
}

describe('@rampart/react-native against the real service', () => {
  const user = `rn-user-${Date.now()}`;
  let client: RampartClient;
  let deviceToken = '';

  it('install and open: the lifecycle events reach Rampart at once', async () => {
    client = await open();
    const events = await appEvents({ appId: 'com.example.shop' });
    expect(events.map((e) => e.type)).toEqual(['app_installed', 'app_opened']);
    expect(events[0]).toMatchObject({
      platform: 'android',
      appVersion: '3.2.1',
      properties: { version: '3.2.1', build: '321' },
    });
    expect(client.queueSize()).toBe(0);
  });

  it("screens wait in the queue; a login carries a fresh token to the app's API only, the backend gets an allow, and the request flushes the screens", async () => {
    await client.screen('Welcome');
    await client.screen('Login');
    expect(client.queueSize()).toBe(2);
    const appFetch = client.wrapFetch(fetch);
    const headers = { 'content-type': 'application/json', 'user-agent': OKHTTP };
    const login = await appFetch(`${backendUrl}/api/login`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ user, password: 'right' }),
    });
    const verdict = (await login.json()) as {
      policy: { action: string };
      signals: Record<string, unknown>;
      device: { token: string };
    };
    expect(verdict.policy.action).toBe('allow');
    expect(verdict.signals).not.toHaveProperty('bot_behavior');
    expect(verdict.signals).not.toHaveProperty('invalid_token');
    expect(verdict.signals).not.toHaveProperty('no_app_activity');
    deviceToken = verdict.device.token;
    await appFetch(`${backendUrl}/api/profile`, { method: 'POST', headers, body: '{}' });
    await appFetch(`${otherUrl}/api/profile`, { method: 'POST', headers, body: '{}' });
    const tokens = received.filter((r) => r.path !== '/' && r.clientId).map((r) => r.clientId as string);
    expect(received.find((r) => r.path === '/api/login')?.clientId).toMatch(/^rpm1\./);
    // A fresh token per request; none to a site outside the allow list.
    expect(new Set(tokens).size).toBe(tokens.length);
    expect(received.filter((r) => r.clientId === undefined)).toHaveLength(1);
    // The allow-listed requests flushed the queued screens.
    await client.idle();
    expect(client.queueSize()).toBe(0);
    expect((await appEvents({ appId: 'com.example.shop', type: 'screen' })).map((e) => e.name)).toEqual([
      'Welcome',
      'Login',
    ]);
  });

  it('a token the library minted, replayed beyond its login flow or altered, is denied', async () => {
    const used = received.find((r) => r.path === '/api/login')?.clientId as string;
    const risk = async (token: string) => {
      // Another account (a stolen token is used against someone else's), so that this user's registry stays the phone's.
      const r = await call(app, 'POST', '/v1/risk', {
        type: '$login',
        status: '$succeeded',
        user: { id: `${user}-x`, email: `${user}-x@example.com` },
        request_token: token,
        context: {
          ip: PHONE_IP,
          headers: { 'User-Agent': OKHTTP, Accept: 'application/json', 'Accept-Encoding': 'gzip' },
        },
      });
      return r.body as { policy: { action: string }; signals: Record<string, unknown> };
    };
    // The login used it once; two more calls are within its flow, a fourth is a replay.
    await risk(used);
    await risk(used);
    const replayed = await risk(used);
    expect(replayed.signals).toHaveProperty('replayed_token');
    expect(replayed.policy.action).toBe('deny');
    const fresh = await client.createRequestToken();
    const forged = await risk(`${fresh.slice(0, -4)}${fresh.endsWith('AAAA') ? 'BBBB' : 'AAAA'}`);
    expect(forged.signals).toMatchObject({ invalid_token: { reason: 'forged' } });
    expect(forged.policy.action).toBe('deny');
  });

  it('identify flushes the screens and the identify, with the user on them', async () => {
    await client.identify(user);
    await client.idle();
    expect(client.queueSize()).toBe(0);
    const events = await appEvents({ appId: 'com.example.shop', type: { $in: ['screen', 'identify'] } });
    expect(events.map((e) => [e.type, e.name, e.userId])).toEqual([
      ['screen', 'Welcome', null],
      ['screen', 'Login', null],
      ['identify', null, user],
    ]);
  });

  it("custom events, and the signed user (Castle's userJwt) verified with the API secret", async () => {
    const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
    const signed = `${b64({ alg: 'HS256', typ: 'JWT' })}.${b64({ id: user, exp: Math.floor(Date.now() / 1000) + 600 })}`;
    // What the app's backend hands the app after the login: a JWT signed with the environment's API secret.
    const jwt = `${signed}.${createHmac('sha256', app.secret).update(signed).digest('base64url')}`;
    await client.customWithProperties('Added to cart', { sku: 'A-1', qty: 2 });
    await client.userJwt(jwt);
    await client.idle();
    const events = await appEvents({ appId: 'com.example.shop', type: { $in: ['custom', 'identify'] } });
    expect(events.map((e) => [e.type, e.name, e.userId, e.verified])).toEqual([
      ['identify', null, user, false],
      ['custom', 'Added to cart', user, false],
      ['identify', null, user, true],
    ]);
    expect(events[1]!.properties).toEqual({ sku: 'A-1', qty: 2 });
  });

  it('the phone is in the registry with its model, OS and app version', async () => {
    const devices = await call(app, 'GET', `/v1/users/${user}/devices`);
    expect(devices.body.total_count).toBe(1);
    expect(devices.body.data[0]).toMatchObject({
      token: deviceToken,
      context: {
        type: 'mobile',
        user_agent: { raw: OKHTTP, os: 'Android 14', device: 'Google Pixel 8' },
        properties: {
          platform: 'android',
          model: 'Pixel 8',
          os: 'Android 14',
          app_id: 'com.example.shop',
          app_version: '3.2.1',
          app_build: '321',
        },
      },
    });
  });

  it('close flushes; a restart is no new install, and the same device', async () => {
    await client.screen('Home');
    phone.appState.emit('background');
    await client.idle();
    const closed = await appEvents({
      appId: 'com.example.shop',
      type: { $in: ['screen', 'app_closed'] },
      userId: user,
    });
    expect(closed.map((e) => e.type)).toEqual(['screen', 'app_closed']);
    client.destroy();

    phone.appState.state = 'active';
    const again = await open();
    const all = await appEvents({ appId: 'com.example.shop' });
    expect(all.filter((e) => e.type === 'app_installed')).toHaveLength(1);
    expect(all.filter((e) => e.type === 'app_opened')).toHaveLength(2);
    // The identified user is remembered across the restart.
    expect(all[all.length - 1]).toMatchObject({ type: 'app_opened', userId: user });
    const login = await again.wrapFetch(fetch)(`${backendUrl}/api/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'user-agent': OKHTTP },
      body: JSON.stringify({ user, password: 'right' }),
    });
    const verdict = (await login.json()) as { policy: { action: string }; device: { token: string } };
    expect(verdict.device.token).toBe(deviceToken);
    expect(verdict.policy.action).toBe('allow');
    again.destroy();
  });

  it("with Castle's header name and option spellings, a backend that forwards the headers as Castle's SDKs do gets the same device", async () => {
    const castle = await open({
      baseURLAllowList: [`${castleUrl}/api/`],
      requestTokenHeaderName: 'X-Castle-Request-Token',
      lifeCycleEventsEnabled: true,
    });
    expect(castle.requestTokenHeaderName()).toBe('X-Castle-Request-Token');
    const login = await castle.wrapFetch(fetch)(`${castleUrl}/api/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'user-agent': OKHTTP },
      body: JSON.stringify({ user, password: 'right' }),
    });
    const verdict = (await login.json()) as {
      policy: { action: string };
      device: { token: string };
      signals: Record<string, unknown>;
    };
    expect(received.at(-1)?.clientId).toMatch(/^rpm1\./);
    expect(verdict.signals).not.toHaveProperty('invalid_token');
    expect(verdict.device.token).toBe(deviceToken);
    expect(verdict.policy.action).toBe('allow');
    castle.destroy();
  });
});
