/**
 * Native apps over real HTTP on a real database (docs/mobile.md): the collector registers a
 * session for a phone (app allow-list, strict components), the app mints its own tokens from the
 * session key (computed here with node:crypto, as a native app would, not with Rampart's code),
 * the application's backend forwards them, and the verdict, the device registry and the model read
 * the device, its evidence and its install's events. Also: an app's HTTP stack without a token is
 * the application's app, not a bot, from its first users on; a script stays a bot.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { startTestApp, call, type TestApp } from '../support/app';
import { waitFor } from '../support/wait';
import { runCommand } from '../../src/cli/main';
import type { Environment } from '../../src/core/model';
import { StateCounterStore } from '../../src/store/counters';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ grpc: false });
});
afterAll(async () => {
  await app?.close();
});

const HOME = '81.2.69.142';
const OKHTTP = 'okhttp/4.12.0';
const appHeaders = (ua = OKHTTP) => ({
  'User-Agent': ua,
  Accept: 'application/json',
  'Accept-Encoding': 'gzip',
  'Content-Type': 'application/json',
});

const pixel = (over: Record<string, unknown> = {}): Record<string, unknown> => ({
  platform: 'android',
  osVersion: '14',
  model: 'Pixel 8',
  manufacturer: 'Google',
  app: { id: 'com.example.shop', version: '3.2.1', build: '321' },
  sdk: 'rampart-react-native/0.1.0',
  locale: 'en-GB',
  timezone: 'Europe/London',
  timezoneOffset: 0,
  screen: { width: 1080, height: 2400, scale: 2.625 },
  installId: randomBytes(16).toString('base64url'),
  vendorId: createHmac('sha256', 'x').update(randomBytes(8)).digest('hex'),
  userAgent: 'ShopApp/3.2.1 (321; Pixel 8; Android 14) rampart-react-native/0.1.0',
  ...over,
});

interface Session {
  token: string;
  session: string;
  session_key: string;
  session_expires_in: number;
  server_time: number;
}

async function register(
  mobile: Record<string, unknown>,
  env: Pick<Environment, 'publishableKey'> = app.env,
): Promise<Session> {
  const r = await call(
    app,
    'POST',
    '/v1/client/token',
    { publishable_key: env.publishableKey, mobile },
    { secret: null },
  );
  expect(r.status).toBe(201);
  return r.body as Session;
}

/** What the app does before each request to its own API (docs/mobile.md, "Mint a request token"). */
function mint(
  s: Pick<Session, 'session' | 'session_key'>,
  at = Date.now(),
  nonce = randomBytes(12).toString('base64url'),
): string {
  const signed = `rpm1.${s.session.slice('rps1.'.length)}.${at}.${nonce}`;
  return `${signed}.${createHmac('sha256', Buffer.from(s.session_key, 'utf8')).update(signed).digest('base64url')}`;
}

async function sendEvents(
  s: Pick<Session, 'session'>,
  events: Record<string, unknown>[],
  env: Pick<Environment, 'publishableKey'> = app.env,
) {
  return call(
    app,
    'POST',
    '/v1/client/events',
    { publishable_key: env.publishableKey, session: s.session, events },
    { secret: null },
  );
}

let n = 0;
const uid = () => `mobile-user-${++n}`;
type Answer = {
  risk: number;
  signals: Record<string, Record<string, unknown>>;
  device: { token: string };
  policy: { action: string };
};
async function login(
  user: string,
  opts: { token?: string | null; ua?: string; ip?: string; secret?: string } = {},
): Promise<Answer> {
  const body: Record<string, unknown> = {
    event: '$login',
    user: { id: user, email: `${user}@example.com` },
    context: { ip: opts.ip ?? HOME, headers: appHeaders(opts.ua) },
  };
  if (opts.token) body.request_token = opts.token;
  const r = await call(app, 'POST', '/v1/risk', body, opts.secret ? { secret: opts.secret } : {});
  expect(r.status).toBe(201);
  return r.body as Answer;
}

describe('the collector registers a session for a phone', () => {
  it('answers a first token, the session, its key and the server time; no Origin needed', async () => {
    const before = Date.now();
    const s = await register(pixel());
    expect(s.token).toMatch(/^rpm1\.[\w-]+\.[\w-]+\.\d+\.[\w-]{16,32}\.[\w-]+$/);
    expect(s.session).toMatch(/^rps1\.[\w-]+\.[\w-]+$/);
    expect(s.session_key).toMatch(/^[\w-]{43}$/);
    expect(s.session_expires_in).toBe(86_400);
    expect(s.server_time).toBeGreaterThanOrEqual(before);
    expect(s.server_time).toBeLessThanOrEqual(Date.now());
  });

  it("answers what docs/mobile.md's examples show: the same members, an rpm1 token", async () => {
    const doc = readFileSync(path.join(__dirname, '..', '..', 'docs', 'mobile.md'), 'utf8');
    const block = (after: string) =>
      JSON.parse(/```json\n([\s\S]*?)\n```/.exec(doc.slice(doc.indexOf(after)))?.[1] ?? 'null') as Record<
        string,
        unknown
      >;
    const registered = block('Answer `201`:');
    const s = await register(pixel());
    expect(Object.keys(registered).sort()).toEqual(Object.keys(s).sort());
    expect(String(registered.token).slice(0, 5)).toBe(s.token.slice(0, 5));
    expect(String(registered.session).slice(0, 5)).toBe(s.session.slice(0, 5));
    expect([registered.expires_in, registered.session_expires_in]).toEqual([
      (s as unknown as { expires_in: number }).expires_in,
      s.session_expires_in,
    ]);
    const answered = (await sendEvents(s, [{ type: 'app_opened', timestamp: new Date().toISOString() }]))
      .body as Record<string, unknown>;
    expect(Object.keys(block('Answer `202`:')).sort()).toEqual(Object.keys(answered).sort());
  });

  it.each([
    ['no mobile and no components', {}, 'components'],
    ['both components and mobile', { components: { userAgent: 'x' }, mobile: pixel() }, 'mobile'],
    ['an unknown platform', { mobile: pixel({ platform: 'symbian' }) }, 'mobile.platform'],
    ['a model of the wrong type', { mobile: pixel({ model: 42 }) }, 'mobile.model'],
    ['an oversized model', { mobile: pixel({ model: 'x'.repeat(65) }) }, 'mobile.model'],
    ['no install id', { mobile: pixel({ installId: undefined }) }, 'mobile.installId'],
    ['a short install id', { mobile: pixel({ installId: 'abc' }) }, 'mobile.installId'],
    [
      'a vendor id that is not a SHA-256',
      { mobile: pixel({ vendorId: 'ANDROID-ID-IN-CLEAR' }) },
      'mobile.vendorId',
    ],
    ['an unknown integrity finding', { mobile: pixel({ integrity: ['<script>'] }) }, 'mobile.integrity'],
    ['an unknown member', { mobile: pixel({ imei: '490154203237518' }) }, 'mobile.imei'],
    [
      'an app id with a slash',
      { mobile: pixel({ app: { id: 'com.example/../x', version: '1' } }) },
      'mobile.app.id',
    ],
    [
      'an oversized attestation',
      { mobile: pixel({ attestation: { kind: 'app_attest', token: 'x'.repeat(16_385) } }) },
      'mobile.attestation.token',
    ],
  ])('refuses %s (422 naming the field)', async (_name, body: Record<string, unknown>, field) => {
    const r = await call(
      app,
      'POST',
      '/v1/client/token',
      { publishable_key: app.env.publishableKey, ...body },
      { secret: null },
    );
    expect(r.status).toBe(422);
    expect(r.body.type).toBe('invalid_parameters');
    expect((r.body.fields as { field: string }[]).map((f) => f.field)).toContain(field);
  });

  it('refuses an unknown publishable key (401) and, in production, an app the environment does not list (403)', async () => {
    const unknown = await call(
      app,
      'POST',
      '/v1/client/token',
      { publishable_key: 'pk_unknown_key_123456', mobile: pixel() },
      { secret: null },
    );
    expect(unknown.status).toBe(401);
    const { env: unset } = await app.newEnvironment(`no-apps-${Date.now()}`);
    const none = await call(
      app,
      'POST',
      '/v1/client/token',
      { publishable_key: unset.publishableKey, mobile: pixel() },
      { secret: null },
    );
    expect(none.status).toBe(403);
    expect(none.body).toMatchObject({
      type: 'forbidden',
      reason: 'no_apps_listed',
      message: expect.stringMatching(/set-apps/),
    });
    const { env } = await app.newEnvironment(`apps-${Date.now()}`);
    await app.built.services.environments.setClientApps(env.id, ['com.example.shop']);
    expect(
      (
        await call(
          app,
          'POST',
          '/v1/client/token',
          { publishable_key: env.publishableKey, mobile: pixel() },
          { secret: null },
        )
      ).status,
    ).toBe(201);
    const other = await call(
      app,
      'POST',
      '/v1/client/token',
      { publishable_key: env.publishableKey, mobile: pixel({ app: { id: 'com.evil.clone', version: '1' } }) },
      { secret: null },
    );
    expect(other.status).toBe(403);
    expect(other.body).toMatchObject({
      type: 'forbidden',
      reason: 'app_not_allowed',
      message: expect.stringMatching(/com\.evil\.clone.*set-apps/),
    });
    await expect(app.built.services.environments.setClientApps(env.id, ['com.example/shop'])).rejects.toThrow(
      /package name or bundle id/,
    );
  });

  it('env set-apps sets, lists and clears the allow-list', async () => {
    const { env } = await app.newEnvironment(`cli-apps-${Date.now()}`);
    const lines: string[] = [];
    expect(
      await runCommand(
        app.built.services,
        ['env', 'set-apps', env.name, 'com.example.shop', 'com.example.shop.ios'],
        (l) => lines.push(l),
      ),
    ).toBe(0);
    expect(lines.pop()).toContain('com.example.shop com.example.shop.ios');
    await runCommand(app.built.services, ['env', 'list'], (l) => lines.push(l));
    expect(lines.find((l) => l.startsWith(`${env.name}\t`))).toContain(
      'apps=com.example.shop,com.example.shop.ios',
    );
    expect(
      await runCommand(app.built.services, ['env', 'set-apps', env.name, 'none'], (l) => lines.push(l)),
    ).toBe(0);
    expect((await app.built.services.environments.byName(env.name)).clientApps).toEqual([]);
  });
});

describe('tokens minted on the phone, forwarded by the backend', () => {
  it('name the phone in the registry with its model, OS and app version', async () => {
    const user = uid();
    const s = await register(pixel());
    const r = await login(user, { token: mint(s) });
    expect(r.signals).not.toHaveProperty('invalid_token');
    expect(r.signals).not.toHaveProperty('bot_behavior');
    const devices = await call(app, 'GET', `/v1/users/${user}/devices`);
    expect(devices.body.total_count).toBe(1);
    const d = devices.body.data[0] as {
      token: string;
      context: {
        type: string;
        user_agent: { os: string; device: string; raw: string };
        properties: Record<string, unknown>;
      };
    };
    expect(d.token).toBe(r.device.token);
    expect(d.context.type).toBe('mobile');
    expect(d.context.user_agent).toMatchObject({ raw: OKHTTP, os: 'Android 14', device: 'Google Pixel 8' });
    expect(d.context.properties).toMatchObject({
      identity: 'fingerprint',
      platform: 'android',
      model: 'Pixel 8',
      manufacturer: 'Google',
      os: 'Android 14',
      app_id: 'com.example.shop',
      app_version: '3.2.1',
      app_build: '321',
    });
    expect(d.context.properties).not.toHaveProperty('device_id');
    // Dashboards see the app and the phone as typed fields.
    const res = await fetch(`${app.baseUrl}/graphql`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: `Basic ${Buffer.from(`:${app.secret}`).toString('base64')}`,
      },
      body: JSON.stringify({
        query:
          'query($t: ID!) { device(token: $t) { type app { platform id version build model manufacturer os } userAgent { os device } } }',
        variables: { t: r.device.token },
      }),
    });
    expect(await res.json()).toEqual({
      data: {
        device: {
          type: 'MOBILE',
          app: {
            platform: 'android',
            id: 'com.example.shop',
            version: '3.2.1',
            build: '321',
            model: 'Pixel 8',
            manufacturer: 'Google',
            os: 'Android 14',
          },
          userAgent: { os: 'Android 14', device: 'Google Pixel 8' },
        },
      },
    });
  });

  it('an app or OS update is one device; Android without a vendor id goes by its install id', async () => {
    const user = uid();
    const android = pixel();
    const before = await login(user, { token: mint(await register(android)) });
    const updated = await login(user, {
      token: mint(
        await register({
          ...android,
          osVersion: '15',
          app: { id: 'com.example.shop', version: '3.3.0', build: '330' },
        }),
      ),
    });
    expect(updated.device.token).toBe(before.device.token);
    // No vendor id: the install id is the key, which a wipe of the app's data (a new install id) does not keep.
    const bare = pixel({ vendorId: null });
    const kept = await login(user, { token: mint(await register(bare)) });
    expect(
      (
        await login(user, {
          token: mint(await register({ ...bare, app: { id: 'com.example.shop', version: '3.3.0' } })),
        })
      ).device.token,
    ).toBe(kept.device.token);
    const wiped = await login(user, {
      token: mint(await register({ ...bare, installId: randomBytes(16).toString('base64url') })),
    });
    expect(wiped.device.token).not.toBe(kept.device.token);
  });

  it('a reinstall is one device: Android keeps its vendor id, iOS its Keychain install id', async () => {
    const user = uid();
    const android = pixel();
    const first = await login(user, { token: mint(await register(android)) });
    const reinstalled = await login(user, {
      token: mint(await register({ ...android, installId: randomBytes(16).toString('base64url') })),
    });
    expect(reinstalled.device.token).toBe(first.device.token);
    const iphone = pixel({ platform: 'ios', osVersion: '17.5', model: 'iPhone15,3', manufacturer: 'Apple' });
    const phone = await login(user, {
      token: mint(await register(iphone)),
      ua: 'ShopApp/321 CFNetwork/1494.0.7 Darwin/23.4.0',
    });
    const again = await login(user, {
      token: mint(
        await register({
          ...iphone,
          vendorId: createHmac('sha256', 'y').update(randomBytes(8)).digest('hex'),
        }),
      ),
      ua: 'ShopApp/321 CFNetwork/1494.0.7 Darwin/23.4.0',
    });
    expect(again.device.token).toBe(phone.device.token);
    expect(phone.device.token).not.toBe(first.device.token);
    const list = await call(app, 'GET', `/v1/users/${user}/devices`);
    expect(list.body.total_count).toBe(2);
  });

  it('serve one login flow each, and a token is refused when tampered, expired, from the future, replayed or of another environment', async () => {
    const s = await register(pixel());
    const user = uid();
    const t = mint(s);
    const pre = await call(app, 'POST', '/v1/authenticate', {
      event: '$login.attempted',
      properties: { email: `${user}@example.com` },
      context: { ip: HOME, headers: appHeaders(), client_id: t },
    });
    expect(pre.status).toBe(201);
    expect((await login(user, { token: t })).signals).not.toHaveProperty('replayed_token');
    await login(user, { token: t });
    expect((await login(user, { token: t })).signals).toHaveProperty('replayed_token');
    // A fresh token per request is never a replay.
    expect((await login(user, { token: mint(s) })).signals).not.toHaveProperty('replayed_token');

    const forged = mint({ ...s, session_key: 'not-the-key-not-the-key-not-the-key-not-the' });
    expect((await login(uid(), { token: forged })).signals).toMatchObject({
      invalid_token: { reason: 'forged' },
    });
    // Someone rewriting the session's claims (another device key, no evidence) breaks its MAC.
    const [, claims, smac] = s.session.split('.') as [string, string, string];
    const decoded = JSON.parse(Buffer.from(claims, 'base64url').toString('utf8')) as Record<string, unknown>;
    const rewritten = {
      session: `rps1.${Buffer.from(JSON.stringify({ ...decoded, dk: 'mvictim', int: [] })).toString('base64url')}.${smac}`,
      session_key: s.session_key,
    };
    const bad = await login(uid(), { token: mint(rewritten) });
    expect(bad.signals).toMatchObject({ invalid_token: { reason: 'forged' } });
    expect(bad.policy.action).not.toBe('allow');
    expect((await login(uid(), { token: mint(s, Date.now() - 6 * 60_000) })).signals).toMatchObject({
      invalid_token: { reason: 'expired' },
    });
    // A phone whose clock offset is off mints tokens from the future: a clock problem, not an old token.
    expect((await login(uid(), { token: mint(s, Date.now() + 2 * 60_000) })).signals).toMatchObject({
      invalid_token: { reason: 'not_yet_valid' },
    });
    expect((await login(uid(), { token: mint(s, Date.now(), 'short') })).signals).toMatchObject({
      invalid_token: { reason: 'malformed' },
    });
    const { env, secret } = await app.newEnvironment(`other-apps-${Date.now()}`);
    await app.built.services.environments.setClientApps(env.id, ['com.example.shop']);
    const theirs = mint(await register(pixel(), env));
    expect((await login(uid(), { token: theirs })).signals).toMatchObject({
      invalid_token: { reason: 'other_environment' },
    });
    expect(secret).toMatch(/^sk_/);
  });

  it("weighs the device's own integrity checks: an emulator, a hooked app, a rooted phone", async () => {
    const emulator = await login(uid(), {
      token: mint(await register(pixel({ model: 'sdk_gphone64_x86_64', integrity: ['emulator'] }))),
    });
    expect(emulator.signals).toMatchObject({ emulator: { evidence: 'emulator' } });
    expect(emulator.policy.action).not.toBe('allow');
    const hooked = await login(uid(), {
      token: mint(await register(pixel({ integrity: ['hooking_framework'] }))),
    });
    expect(hooked.signals).toMatchObject({ spoofed_device: { reason: 'tampered_app' } });
    const rooted = await login(uid(), { token: mint(await register(pixel({ integrity: ['rooted'] }))) });
    expect(rooted.signals).toMatchObject({ compromised_device: { evidence: 'rooted' } });
    expect(rooted.policy.action).toBe('allow');
  });

  it('a desktop browser presenting an Android token is a swapped token', async () => {
    const r = await login(uid(), {
      token: mint(await register(pixel())),
      ua: 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36',
    });
    expect(r.signals).toMatchObject({ spoofed_device: { reason: 'token_platform_mismatch' } });
  });
});

describe('app events', () => {
  const now = () => new Date().toISOString();

  it('are taken in batches for a registered session, counted, and refused with a clear error otherwise', async () => {
    const s = await register(pixel());
    const ok = await sendEvents(s, [
      { type: 'app_installed', timestamp: now(), properties: { version: '3.2.1', build: '321' } },
      { type: 'app_opened', timestamp: now() },
      { type: 'screen', name: 'Login', timestamp: now() },
      { type: 'app_closed', timestamp: new Date(Date.now() + 3_600_000).toISOString() },
      { type: 'screen', name: 'Old', timestamp: new Date(Date.now() - 366 * 86_400_000).toISOString() },
    ]);
    expect(ok.status).toBe(202);
    expect(ok.body).toEqual({ accepted: 4, dropped: 1, signed: 0, verified: 0 });

    const forged = await sendEvents({ session: `${s.session.slice(0, -4)}AAAA` }, [
      { type: 'app_opened', timestamp: now() },
    ]);
    expect(forged.status).toBe(422);
    expect(forged.body.type).toBe('invalid_request_token');
    const cases: [Record<string, unknown>[] | unknown, string][] = [
      [[], 'events'],
      ['app_opened', 'events'],
      [[{ type: 'purchase', timestamp: now() }], 'events.0.type'],
      [[{ type: 'screen', timestamp: now() }], 'events.0.name'],
      [[{ type: 'identify', timestamp: now() }], 'events.0.user_id'],
      [[{ type: 'app_opened', timestamp: 'yesterday' }], 'events.0.timestamp'],
      [[{ type: 'app_opened', timestamp: now(), $where: '1' }], 'events.0.$where'],
      [[{ type: 'screen', name: 'x'.repeat(129), timestamp: now() }], 'events.0.name'],
      [
        [{ type: 'identify', user_id: 'u', user_signature: 'nothex', timestamp: now() }],
        'events.0.user_signature',
      ],
      [Array.from({ length: 101 }, () => ({ type: 'app_opened', timestamp: now() })), 'events'],
    ];
    for (const [events, field] of cases) {
      const r = await call(
        app,
        'POST',
        '/v1/client/events',
        { publishable_key: app.env.publishableKey, session: s.session, events },
        { secret: null },
      );
      expect([
        r.status,
        field,
        (r.body.fields as { field: string }[] | undefined)?.map((f) => f.field),
      ]).toEqual([422, field, expect.arrayContaining([field])]);
    }
    const unknown = await call(
      app,
      'POST',
      '/v1/client/events',
      {
        publishable_key: 'pk_unknown_key_123456',
        session: s.session,
        events: [{ type: 'app_opened', timestamp: now() }],
      },
      { secret: null },
    );
    expect(unknown.status).toBe(401);
    const extra = await call(
      app,
      'POST',
      '/v1/client/events',
      {
        publishable_key: app.env.publishableKey,
        session: s.session,
        events: [{ type: 'app_opened', timestamp: now() }],
        user: 'x',
      },
      { secret: null },
    );
    expect(extra.status).toBe(422);
  });

  it('an identify verifies with the user signature the backend computed from the API secret', async () => {
    const s = await register(pixel());
    const user = uid();
    const signature = createHmac('sha256', app.secret).update(user).digest('hex');
    expect(
      (
        await sendEvents(s, [
          { type: 'identify', user_id: user, user_signature: signature, timestamp: now() },
          { type: 'identify', user_id: `${user}-x`, user_signature: 'ab'.repeat(32), timestamp: now() },
        ])
      ).status,
    ).toBe(202);
    await app.built.state.flush();
    const kept = await app.database.db
      .collection('client_events')
      .find({ envId: app.env.id, userId: { $in: [user, `${user}-x`] } })
      .toArray();
    expect(kept.map((e) => [e.userId, e.verified]).sort()).toEqual([
      [user, true],
      [`${user}-x`, false],
    ]);
  });

  it("an identify verifies with a user JWT the backend signed with the API secret (Castle's userJwt); custom events are kept with their name", async () => {
    const s = await register(pixel());
    const user = uid();
    const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
    const sign = (payload: Record<string, unknown>, secret = app.secret) => {
      const signed = `${b64({ alg: 'HS256', typ: 'JWT' })}.${b64(payload)}`;
      return `${signed}.${createHmac('sha256', secret).update(signed).digest('base64url')}`;
    };
    const exp = Math.floor(Date.now() / 1000) + 600;
    const r = await sendEvents(s, [
      {
        type: 'identify',
        user_id: user,
        user_jwt: sign({ id: user, email: `${user}@example.com`, exp }),
        timestamp: now(),
      },
      { type: 'identify', user_id: `${user}-other`, user_jwt: sign({ id: user, exp }), timestamp: now() },
      {
        type: 'identify',
        user_id: `${user}-forged`,
        user_jwt: sign({ id: `${user}-forged`, exp }, 'not-the-secret'),
        timestamp: now(),
      },
      {
        type: 'identify',
        user_id: `${user}-expired`,
        user_jwt: sign({ id: `${user}-expired`, exp: exp - 3600 }),
        timestamp: now(),
      },
      {
        type: 'custom',
        name: 'Added to cart',
        user_id: user,
        properties: { sku: 'A-1', qty: 2 },
        timestamp: now(),
      },
    ]);
    // The answer says how many named their user with a JWT or a signature, and how many of those verified.
    expect([r.status, r.body]).toEqual([202, { accepted: 5, dropped: 0, signed: 4, verified: 1 }]);
    await app.built.state.flush();
    const kept = await app.database.db
      .collection('client_events')
      .find({ envId: app.env.id, userId: { $regex: `^${user}` } })
      .toArray();
    expect(
      kept
        .filter((e) => e.type === 'identify')
        .map((e) => [e.userId, e.verified])
        .sort(),
    ).toEqual([
      [user, true],
      [`${user}-expired`, false],
      [`${user}-forged`, false],
      [`${user}-other`, false],
    ]);
    expect(kept.find((e) => e.type === 'custom')).toMatchObject({
      name: 'Added to cart',
      userId: user,
      properties: { sku: 'A-1', qty: 2 },
      verified: false,
    });
    // The JWT itself is not kept.
    expect(JSON.stringify(kept)).not.toContain('eyJ');
    for (const [events, field] of [
      [[{ type: 'custom', timestamp: now() }], 'events.0.name'],
      [[{ type: 'identify', user_id: user, user_jwt: 'not a jwt', timestamp: now() }], 'events.0.user_jwt'],
      [
        [{ type: 'identify', user_id: user, user_jwt: `a.${'b'.repeat(4096)}.c`, timestamp: now() }],
        'events.0.user_jwt',
      ],
    ] as const) {
      const bad = await sendEvents(s, events as unknown as Record<string, unknown>[]);
      expect([bad.status, (bad.body.fields as { field: string }[]).map((f) => f.field)]).toEqual([
        422,
        [field],
      ]);
    }
  });

  it("an identify verifies under any of the environment's live API secrets, and the answer counts it", async () => {
    const { env, secret: first } = await app.newEnvironment(`secrets-${Date.now()}`);
    await app.built.services.environments.setClientApps(env.id, ['com.example.shop']);
    const { secret: second } = await app.built.services.environments.addCredential(
      env.id,
      'secret',
      'rotation',
    );
    const s = await register(pixel(), env);
    const user = uid();
    const sig = (secret: string, id = user) => createHmac('sha256', secret).update(id).digest('hex');
    const identify = () => [
      { type: 'identify', user_id: user, user_signature: sig(first), timestamp: now() },
      { type: 'identify', user_id: `${user}-b`, user_signature: sig(second, `${user}-b`), timestamp: now() },
      {
        type: 'identify',
        user_id: `${user}-c`,
        user_signature: sig('not-a-secret-of-this-environment', `${user}-c`),
        timestamp: now(),
      },
      { type: 'screen', name: 'Home', timestamp: now() },
    ];
    const r = await sendEvents(s, identify(), env);
    expect([r.status, r.body]).toEqual([202, { accepted: 4, dropped: 0, signed: 3, verified: 2 }]);
    // Once the first secret is revoked, its signatures no longer verify (within the 5 s the secrets are cached).
    await app.built.services.environments.revoke(env.id, first);
    await waitFor(async () => (await sendEvents(s, identify(), env)).body.verified === 1, {
      what: 'the revoked secret to stop verifying',
      timeoutMs: 30_000,
      intervalMs: 1000,
    });
  });

  it("take an event's time as a verdict's timestamp is taken: a backfill keeps its history, older than a year is dropped", async () => {
    const s = await register(pixel());
    const user = uid();
    const day = 86_400_000;
    // A replay of an install's first weeks, 60 days ago, as a backfill sends them.
    const at = (daysAgo: number) => new Date(Date.now() - daysAgo * day).toISOString();
    const r = await sendEvents(s, [
      { type: 'app_installed', timestamp: at(60) },
      { type: 'app_opened', timestamp: at(60) },
      { type: 'identify', user_id: user, timestamp: at(59) },
      { type: 'screen', name: 'Login', timestamp: at(30) },
      { type: 'app_opened', timestamp: at(400) },
    ]);
    expect([r.status, r.body]).toEqual([202, { accepted: 4, dropped: 1, signed: 0, verified: 0 }]);
    await app.built.state.flush();
    const identified = await app.database.db
      .collection('client_events')
      .findOne({ envId: app.env.id, userId: user });
    const kept = await app.database.db
      .collection('client_events')
      .find({ envId: app.env.id, deviceKey: identified?.deviceKey })
      .toArray();
    // Kept at the times they happened, a week from their arrival.
    expect(
      kept.map((e) => [e.type, Math.round((Date.now() - (e.at as Date).getTime()) / day)]).sort(),
    ).toEqual([
      ['app_installed', 60],
      ['app_opened', 60],
      ['identify', 59],
      ['screen', 30],
    ]);
    // What the model reads of the install counts them: it announced itself and showed a screen.
    const key = `i:${identified?.deviceKey}`;
    const activity = (
      await new StateCounterStore({
        db: app.database.db,
        state: app.built.state,
        now: () => new Date(),
      }).read(app.env.id, [key])
    )?.get(key);
    expect(activity?.counts).toMatchObject({ n: 1, o: 1, s: 1, e: 4 });
  });

  it('one install identifying many users is a farm', async () => {
    const s = await register(pixel());
    const users = Array.from({ length: 6 }, uid);
    expect(
      (
        await sendEvents(
          s,
          users.map((u) => ({ type: 'identify', user_id: u, timestamp: now() })),
        )
      ).status,
    ).toBe(202);
    const r = await login(uid(), { token: mint(s) });
    expect(r.signals).toMatchObject({ multiple_accounts_per_device: { by: 'install' } });
    expect(r.policy.action).not.toBe('allow');
  });

  it('are exported with their user and purged with it', async () => {
    const s = await register(pixel());
    const user = uid();
    await sendEvents(s, [
      { type: 'identify', user_id: user, timestamp: now() },
      { type: 'screen', name: 'Home', user_id: user, timestamp: now() },
    ]);
    await login(user, { token: mint(s) });
    await app.built.state.flush();
    const col = app.database.db.collection('client_events');
    expect(await col.countDocuments({ envId: app.env.id, userId: user })).toBe(2);
    const purged = await call(app, 'DELETE', `/v1/privacy/users/${user}`);
    expect(purged.status).toBe(202);
    await waitFor(async () => (await col.countDocuments({ envId: app.env.id, userId: user })) === 0, {
      what: `the purge to remove ${user}'s client events`,
      timeoutMs: 10_000,
      intervalMs: 100,
    });
    const counters = await app.database.db.collection('counters').countDocuments({ 's.u': user });
    expect(counters).toBe(0);
  });
});

describe("an app's HTTP stack without a token", () => {
  it("is the application's app, not a bot: a user with 12 logins from home is allowed every time", async () => {
    const { env, secret } = await app.newEnvironment(`okhttp-${Date.now()}`);
    const user = uid();
    const answers: Answer[] = [];
    for (let i = 0; i < 12; i++) answers.push(await login(user, { secret }));
    expect(answers.map((a) => a.policy.action)).toEqual(Array(12).fill('allow'));
    // The first app users of a new environment weigh it lightly, and teach it their app.
    expect(answers[0]?.signals.bot_behavior).toMatchObject({
      reason: 'unfamiliar_app_client',
      expected: true,
    });
    expect(answers[11]?.signals).not.toHaveProperty('bot_behavior');
    expect(answers[11]?.signals).not.toHaveProperty('hostile_context');
    expect(env.sandbox).toBe(false);
  });

  it('a script stays a bot', async () => {
    const { secret } = await app.newEnvironment(`script-${Date.now()}`);
    const r = await login(uid(), { secret, ua: 'python-requests/2.31.0' });
    expect(r.signals).toMatchObject({ bot_behavior: { reason: 'automation_user_agent' } });
    expect(r.policy.action).toBe('deny');
  });
});
