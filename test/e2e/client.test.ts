/**
 * The browser client's server side over real HTTP on a real database: the collector (publishable
 * key, origin allow-list, components) answers a signed token; an application forwards it to a
 * verdict as `request_token`, and Rampart reads the device and the evidence from it, once.
 */
import { startTestApp, call, type TestApp } from '../support/app';
import { LAPTOP_UA, laptopComponents } from '../support/components';
import { runCommand } from '../../src/cli/main';
import { waitFor } from '../support/wait';

let app: TestApp;
beforeAll(async () => {
  // Tokens by the dozen from one loopback address: the collector's limit is tested with an app of its own.
  app = await startTestApp({ grpc: false, clientRateLimitPerSecond: 1000 });
});
afterAll(async () => {
  await app?.close();
});

const UA = LAPTOP_UA;
const context = {
  ip: '81.2.69.142',
  headers: { 'User-Agent': UA, Accept: 'text/html', 'Accept-Language': 'en-GB' },
};
const laptop = laptopComponents;

/** What the browser script does: post its components with the publishable key, as text/plain. */
async function collect(
  components: Record<string, unknown>,
  opts: { pk?: string; origin?: string | null } = {},
) {
  const origin = opts.origin === undefined ? 'https://shop.example' : opts.origin;
  return call(
    app,
    'POST',
    '/v1/client/token',
    { publishable_key: opts.pk ?? app.env.publishableKey, components },
    { secret: null, headers: { 'content-type': 'text/plain', ...(origin === null ? {} : { origin }) } },
  );
}
async function token(components = laptop()): Promise<string> {
  const r = await collect(components);
  expect(r.status).toBe(201);
  return r.body.token as string;
}
let n = 0;
const uid = () => `client-user-${++n}`;
async function risk(user: string, requestToken: string, over: Record<string, unknown> = {}) {
  const r = await call(app, 'POST', '/v1/risk', {
    event: '$login',
    user: { id: user },
    request_token: requestToken,
    context,
    ...over,
  });
  expect(r.status).toBe(201);
  return r.body as {
    risk: number;
    signals: Record<string, unknown>;
    device: { token: string };
    policy: { action: string };
  };
}

describe('collector', () => {
  it('answers a signed token for the publishable key, with CORS for the page', async () => {
    const r = await collect(laptop());
    expect(r.status).toBe(201);
    expect(r.body.token).toMatch(/^rpt1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    expect(r.body.expires_in).toBe(300);
    expect(r.headers.get('access-control-allow-origin')).toBe('https://shop.example');
    expect(r.headers.get('cache-control')).toBe('no-store');
    const pre = await fetch(`${app.baseUrl}/v1/client/token`, {
      method: 'OPTIONS',
      headers: { origin: 'https://shop.example', 'access-control-request-method': 'POST' },
    });
    expect(pre.status).toBe(204);
    expect(pre.headers.get('access-control-allow-methods')).toBe('POST');
  });

  it.each([
    ['an unknown publishable key', { pk: 'pk_unknown_key_123456' }, {}, 401],
    ['a secret instead of a publishable key', { pk: 'sk_live_123' }, {}, 401],
    ['no components', {}, { components: undefined }, 422],
    ['components of the wrong type', {}, { components: 'chrome' }, 422],
    ['an oversized component', {}, { components: laptop({ canvas: 'x'.repeat(5000) }) }, 422],
    ['hostile automation names', {}, { components: laptop({ automation: ['$where', '<img src=x>'] }) }, 422],
    ['an unknown component', {}, { components: laptop({ evil: '1' }) }, 422],
    [
      'an unknown member of the screen',
      {},
      { components: laptop({ screen: { width: 1, height: 1, depth: 24, pixelRatio: 1, refresh: 120 } }) },
      422,
    ],
  ])('refuses %s', async (_name, opts: { pk?: string }, body: Record<string, unknown>, status) => {
    const r = await call(
      app,
      'POST',
      '/v1/client/token',
      { publishable_key: opts.pk ?? app.env.publishableKey, components: laptop(), ...body },
      { secret: null, headers: { origin: 'https://shop.example' } },
    );
    expect(r.status).toBe(status);
    expect(typeof r.body.type).toBe('string');
  });

  it('is rate-limited per environment and source address (429 with Retry-After)', async () => {
    const limited = await startTestApp({ grpc: false, clientRateLimitPerSecond: 1 });
    try {
      const post = () =>
        call(
          limited,
          'POST',
          '/v1/client/token',
          { publishable_key: limited.env.publishableKey, components: laptop() },
          { secret: null },
        );
      const statuses: number[] = [];
      for (let i = 0; i < 5; i++) statuses.push((await post()).status);
      expect(statuses.slice(0, 3)).toEqual([201, 201, 201]);
      const refused = await post();
      expect(refused.status).toBe(429);
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      // The refusal names the setting that raises the limit, for the token, the challenge and the events alike.
      expect(refused.body).toMatchObject({
        type: 'rate_limited',
        message: expect.stringContaining('RAMPART_CLIENT_RATE_LIMIT'),
      });
      const challenge = () =>
        call(
          limited,
          'POST',
          '/v1/client/challenge',
          { publishable_key: limited.env.publishableKey },
          { secret: null },
        );
      let last = await challenge();
      for (let i = 0; i < 20 && last.status !== 429; i++) last = await challenge();
      expect(last.status).toBe(429);
      expect(last.body.message).toContain('RAMPART_CLIENT_RATE_LIMIT');
      const events = () =>
        call(
          limited,
          'POST',
          '/v1/client/events',
          {
            publishable_key: limited.env.publishableKey,
            request_token: 'rpt1.x.y',
            events: [{ type: 'page', timestamp: new Date().toISOString() }],
          },
          { secret: null },
        );
      let sent = await events();
      for (let i = 0; i < 20 && sent.status !== 429; i++) sent = await events();
      expect(sent.status).toBe(429);
      expect(sent.body.message).toContain('RAMPART_CLIENT_RATE_LIMIT');
    } finally {
      await limited.close();
    }
  });

  it('in production, only from the origins the environment allows', async () => {
    const { env: unset } = await app.newEnvironment(`unset-${Date.now()}`);
    const none = await collect(laptop(), { pk: unset.publishableKey });
    expect(none.status).toBe(403);
    expect(none.body).toMatchObject({
      type: 'forbidden',
      reason: 'no_origins_listed',
      message: expect.stringMatching(/set-origins/),
    });
    const { env } = await app.newEnvironment(`shop-${Date.now()}`);
    await app.built.services.environments.setClientOrigins(env.id, ['https://shop.example']);
    const post = (origin: string) => collect(laptop(), { pk: env.publishableKey, origin });
    expect((await post('https://shop.example')).status).toBe(201);
    const evil = await post('https://evil.example');
    expect(evil.status).toBe(403);
    expect(evil.body).toMatchObject({
      type: 'forbidden',
      reason: 'origin_not_allowed',
      message: expect.stringMatching(/https:\/\/evil\.example.*set-origins/),
    });
    await expect(
      app.built.services.environments.setClientOrigins(env.id, ['https://shop.example/login']),
    ).rejects.toThrow(/not an origin/);
  });

  it('takes a request without an Origin as a native or server-side client, whatever origins are listed', async () => {
    const { env, secret } = await app.newEnvironment(`no-origin-${Date.now()}`);
    // (Set before the first call: the collector caches an environment for 5 seconds.)
    await app.built.services.environments.setClientApps(env.id, ['com.example.shop']);
    // Production, no origins listed: a page is refused, a client that sends no Origin is not.
    expect((await collect(laptop(), { pk: env.publishableKey })).status).toBe(403);
    const bare = await collect(laptop(), { pk: env.publishableKey, origin: null });
    expect(bare.status).toBe(201);
    expect(bare.headers.get('access-control-allow-origin')).toBeNull();
    await app.built.services.environments.setClientOrigins(env.id, ['https://shop.example']);
    await waitFor(async () => (await collect(laptop(), { pk: env.publishableKey })).status === 201, {
      what: 'the listed origin reaching the collector',
      timeoutMs: 30_000,
      intervalMs: 500,
    });
    expect((await collect(laptop(), { pk: env.publishableKey, origin: null })).status).toBe(201);
    // An opaque origin ("null": a sandboxed frame, a file) is a page's, and refused.
    expect((await collect(laptop(), { pk: env.publishableKey, origin: 'null' })).status).toBe(403);
    const challenge = await call(
      app,
      'POST',
      '/v1/client/challenge',
      { publishable_key: env.publishableKey },
      { secret: null },
    );
    expect(challenge.status).toBe(201);
    // Its token names the device in a verdict as a page's does.
    const verdict = await call(
      app,
      'POST',
      '/v1/risk',
      {
        event: '$login',
        user: { id: uid() },
        request_token: bare.body.token,
        context: { ip: '81.2.69.142', headers: { 'User-Agent': 'Mozilla/5.0' } },
      },
      { secret },
    );
    expect(verdict.status).toBe(201);
    expect(verdict.body.signals).not.toHaveProperty('invalid_token');
    // The mobile protocol, with origins listed and none sent.
    const mobile = {
      platform: 'android',
      osVersion: '14',
      model: 'Pixel 8',
      app: { id: 'com.example.shop', version: '1.0' },
      installId: 'install-id-no-origin-1',
    };
    expect(
      (
        await call(
          app,
          'POST',
          '/v1/client/token',
          { publishable_key: env.publishableKey, mobile },
          { secret: null },
        )
      ).status,
    ).toBe(201);
  });
});

describe('command line', () => {
  it('env set-origins sets, lists and clears the allow-list', async () => {
    const { env } = await app.newEnvironment(`cli-${Date.now()}`);
    const lines: string[] = [];
    expect(
      await runCommand(
        app.built.services,
        ['env', 'set-origins', env.name, 'https://a.example', 'https://b.example:8443'],
        (l) => lines.push(l),
      ),
    ).toBe(0);
    expect(lines.pop()).toContain('https://a.example https://b.example:8443');
    await runCommand(app.built.services, ['env', 'list'], (l) => lines.push(l));
    expect(lines.find((l) => l.startsWith(`${env.name}\t`))).toContain(
      'origins=https://a.example,https://b.example:8443',
    );
    await expect(
      runCommand(app.built.services, ['env', 'set-origins', env.name, 'javascript:alert(1)'], (l) =>
        lines.push(l),
      ),
    ).rejects.toThrow(/not an origin/);
    expect(
      await runCommand(app.built.services, ['env', 'set-origins', env.name, 'none'], (l) => lines.push(l)),
    ).toBe(0);
    expect((await app.built.services.environments.byName(env.name)).clientOrigins).toEqual([]);
  });
});

describe('a token forwarded to a verdict', () => {
  it('names the device by its components: the same browser twice is one device, another browser another', async () => {
    const user = uid();
    const first = await risk(user, await token());
    const again = await risk(
      user,
      await token(
        laptop({
          userAgent: UA,
          languages: ['fr-FR'],
          screen: { width: 2560, height: 1440, depth: 30, pixelRatio: 1 },
        }),
      ),
    );
    const other = await risk(
      user,
      await token(
        laptop({
          webgl: { vendor: 'Google Inc. (Intel)', renderer: 'ANGLE (Intel, Intel(R) UHD Graphics 620)' },
          canvas: '99ff00',
        }),
      ),
    );
    expect(again.device.token).toBe(first.device.token);
    expect(other.device.token).not.toBe(first.device.token);
    expect(first.signals).not.toHaveProperty('invalid_token');
    expect(first.signals).not.toHaveProperty('replayed_token');
  });

  it('serves one login flow (pre-auth check, verdict, track), and a further use is a replay', async () => {
    const user = uid();
    const t = await token();
    const pre = await call(app, 'POST', '/v1/filter', {
      event: '$login.attempted',
      user: { id: user },
      request_token: t,
      context,
    });
    expect(pre.status).toBe(201);
    expect(pre.body.signals).not.toHaveProperty('replayed_token');
    expect((await risk(user, t)).signals).not.toHaveProperty('replayed_token');
    expect(
      (
        await call(app, 'POST', '/v1/track', {
          event: '$login.succeeded',
          user_id: user,
          request_token: t,
          context,
        })
      ).status,
    ).toBe(204);
    await app.built.services.track.drain(false);
    const replay = await risk(user, t);
    expect(replay.signals).toHaveProperty('replayed_token');
    expect(replay.policy.action).not.toBe('allow');
  });

  it('from another address, a token used once is a replay', async () => {
    const user = uid();
    const t = await token();
    await risk(user, t);
    const stolen = await risk(user, t, { context: { ...context, ip: '203.0.113.77' } });
    expect(stolen.signals).toHaveProperty('replayed_token');
  });

  it('a tampered token is invalid, and gives no device identity', async () => {
    const t = await token();
    const [prefix, claims, mac] = t.split('.') as [string, string, string];
    const decoded = JSON.parse(Buffer.from(claims, 'base64url').toString('utf8')) as Record<string, unknown>;
    const tampered = `${prefix}.${Buffer.from(JSON.stringify({ ...decoded, auto: [], dk: 'victims-device-key' })).toString('base64url')}.${mac}`;
    const r = await risk(uid(), tampered);
    expect(r.signals).toMatchObject({ invalid_token: { reason: 'forged' } });
    expect(r.policy.action).not.toBe('allow');
  });

  it('a token of another environment is invalid here', async () => {
    const { env, secret } = await app.newEnvironment(`other-${Date.now()}`);
    await app.built.services.environments.setClientOrigins(env.id, ['https://shop.example']);
    const theirs = (await collect(laptop(), { pk: env.publishableKey })).body.token as string;
    const r = await risk(uid(), theirs);
    expect(r.signals).toMatchObject({ invalid_token: { reason: 'other_environment' } });
    expect(secret).toMatch(/^sk_/);
  });

  it('automation the browser showed, and a user agent swapped between the page and the login', async () => {
    const bot = await risk(uid(), await token(laptop({ automation: ['webdriver'] })));
    expect(bot.signals).toMatchObject({ bot_behavior: { reason: 'browser_automation' } });
    expect(bot.policy.action).toBe('deny');
    const headless = await risk(
      uid(),
      await token(laptop({ userAgent: UA.replace('Chrome/', 'HeadlessChrome/') })),
    );
    expect(headless.signals).toHaveProperty('headless_browser');
    const swapped = await risk(
      uid(),
      await token(laptop({ userAgent: 'Mozilla/5.0 (X11; Linux x86_64) Firefox/133.0' })),
    );
    expect(swapped.signals).toMatchObject({ spoofed_device: { reason: 'token_user_agent_mismatch' } });
    // The page's browser speaks Russian; the login request says English first.
    const otherLanguage = await risk(uid(), await token(laptop({ languages: ['ru-RU', 'ru'] })));
    expect(otherLanguage.signals).toMatchObject({ spoofed_device: { reason: 'token_language_mismatch' } });
    // A clock nine hours from London (the request's address): a remote machine or a proxy.
    const farClock = await risk(uid(), await token(laptop({ timezoneOffset: -540 })));
    expect(farClock.signals).toMatchObject({ spoofed_device: { reason: 'token_timezone_far_from_ip' } });
    const homeClock = await risk(uid(), await token(laptop({ timezoneOffset: 0 })));
    expect(homeClock.signals).not.toHaveProperty('spoofed_device');
  });

  it('track reads the token too (a failed login names the same device)', async () => {
    const user = uid();
    const t = await token();
    const r = await risk(user, t);
    const tracked = await call(app, 'POST', '/v1/track', {
      event: '$login.failed',
      user_id: user,
      request_token: t,
      context,
    });
    expect(tracked.status).toBe(204);
    await app.built.services.track.drain(false);
    const devices = await call(app, 'GET', `/v1/users/${user}/devices`);
    expect(devices.body.data.map((d: { token: string }) => d.token)).toEqual([r.device.token]);
  });
});

/**
 * Where Castle's server SDKs put the client id (the `__cid` cookie or the `castle_client_id` field
 * that Rampart's script fills with Castle's names): `context.client_id` (Node, Python 6.x, Java),
 * a top-level `client_id`, or the `X-Castle-Client-Id` header among the forwarded headers (Go,
 * and SDKs that pass an SPA's header along). Each is verified as `request_token` is.
 */
describe("a token where Castle's SDKs put the client id", () => {
  const places: [string, (t: string) => Record<string, unknown>][] = [
    ['context.client_id', (t) => ({ context: { ...context, client_id: t } })],
    ['client_id', (t) => ({ client_id: t })],
    [
      'context.headers X-Castle-Client-Id',
      (t) => ({ context: { ...context, headers: { ...context.headers, 'X-Castle-Client-Id': t } } }),
    ],
    [
      'context.client_id beside a scrubbed Cookie header',
      (t) => ({ context: { ...context, client_id: t, headers: { ...context.headers, Cookie: true } } }),
    ],
  ];
  const alter = (t: string) => {
    const [prefix, claims, mac] = t.split('.') as [string, string, string];
    const decoded = JSON.parse(Buffer.from(claims, 'base64url').toString('utf8')) as Record<string, unknown>;
    return `${prefix}.${Buffer.from(JSON.stringify({ ...decoded, auto: [], dk: 'another-device' })).toString('base64url')}.${mac}`;
  };
  const post = async (path: string, body: Record<string, unknown>) => {
    const r = await call(app, 'POST', path, body);
    expect(r.status).toBe(201);
    return r.body as { signals: Record<string, unknown>; device_token?: string; device?: { token: string } };
  };

  it.each(places)(
    '%s: risk, filter and authenticate read the device, and catch an altered token',
    async (_place, put) => {
      const user = uid();
      const named = (await risk(user, await token())).device.token;
      const viaRisk = await post('/v1/risk', {
        event: '$login',
        user: { id: user },
        context,
        ...put(await token()),
      });
      expect(viaRisk.device?.token).toBe(named);
      expect(viaRisk.signals).not.toHaveProperty('invalid_token');
      const viaAuthenticate = await post('/v1/authenticate', {
        event: '$login.succeeded',
        user_id: user,
        context,
        ...put(await token()),
      });
      expect(viaAuthenticate.device_token).toBe(named);
      const viaFilter = await post('/v1/filter', {
        event: '$login.attempted',
        user: { id: user },
        context,
        ...put(await token(laptop({ automation: ['webdriver'] }))),
      });
      expect(viaFilter.signals).toMatchObject({ bot_behavior: { reason: 'browser_automation' } });
      const altered = await post('/v1/risk', {
        event: '$login',
        user: { id: user },
        context,
        ...put(alter(await token())),
      });
      expect(altered.signals).toMatchObject({ invalid_token: { reason: 'forged' } });
    },
  );

  it.each(places)('%s: one login flow, then a replay', async (_place, put) => {
    const user = uid();
    const t = await token();
    for (let i = 0; i < 2; i++)
      expect(
        (await post('/v1/risk', { event: '$login', user: { id: user }, context, ...put(t) })).signals,
      ).not.toHaveProperty('replayed_token');
    const elsewhere = await post('/v1/risk', {
      event: '$login',
      user: { id: user },
      ...put(t),
      context: { ...((put(t).context as object | undefined) ?? context), ip: '203.0.113.78' },
    });
    expect(elsewhere.signals).toHaveProperty('replayed_token');
  });

  it('track reads it from context.client_id (a failed login names the laptop)', async () => {
    const user = uid();
    const named = (await risk(user, await token())).device.token;
    const tracked = await call(app, 'POST', '/v1/track', {
      event: '$login.failed',
      user_id: user,
      context: { ...context, client_id: await token() },
    });
    expect(tracked.status).toBe(204);
    await app.built.services.track.drain(false);
    const devices = await call(app, 'GET', `/v1/users/${user}/devices`);
    expect(devices.body.data.map((d: { token: string }) => d.token)).toEqual([named]);
  });
});
