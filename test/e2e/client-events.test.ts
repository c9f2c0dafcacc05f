/**
 * A page's client-side events (castle-js 2.x's page, form and custom, docs/client.md "Client-side
 * events") over real HTTP on a real database: sent to POST /v1/client/events with the publishable
 * key and a request token the collector gave the page, which names the device; checked against
 * the environment's origins; bounded and validated (missing, wrong-typed, oversized and hostile
 * input answers 4xx naming the field, and keeps nothing); kept with the token's device, the user
 * verified by the backend's signature or JWT; and counted in the device's activity document, which
 * the model reads.
 */
import { createHmac } from 'node:crypto';
import { startTestApp, call, type TestApp } from '../support/app';
import { laptopComponents } from '../support/components';
import { idOf } from '../../src/store/ids';

let app: TestApp;
beforeAll(async () => {
  // A service-wide body limit above the events endpoint's own: the endpoint's 256 KiB holds.
  app = await startTestApp({ grpc: false, clientRateLimitPerSecond: 1000, bodyLimit: 1024 * 1024 });
});
afterAll(async () => {
  await app?.close();
});

const ORIGIN = 'https://shop.example';
let n = 0;
const uid = () => `events-user-${++n}`;
const now = () => new Date().toISOString();

/** What the page does first: a token from the collector. */
async function pageToken(canvas = `canvas-${++n}`): Promise<string> {
  const r = await call(
    app,
    'POST',
    '/v1/client/token',
    { publishable_key: app.env.publishableKey, components: laptopComponents({ canvas }) },
    { secret: null, headers: { 'content-type': 'text/plain', origin: ORIGIN } },
  );
  expect(r.status).toBe(201);
  return r.body.token as string;
}

/** What the browser client posts: text/plain, from the page's origin. */
function send(body: Record<string, unknown>, origin: string | null = ORIGIN) {
  return call(app, 'POST', '/v1/client/events', body, {
    secret: null,
    headers: { 'content-type': 'text/plain', ...(origin ? { origin } : {}) },
  });
}

/** HS256 JWT of `claims` under `secret`, as a backend makes castle-js's `userJwt`. */
function jwt(claims: Record<string, unknown>, secret: string): string {
  const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const signed = `${b64({ alg: 'HS256', typ: 'JWT' })}.${b64(claims)}`;
  return `${signed}.${createHmac('sha256', secret).update(signed).digest('base64url')}`;
}

async function kept(filter: Record<string, unknown>) {
  await app.built.state.flush();
  return app.database.db
    .collection('client_events')
    .find({ envId: app.env.id, ...filter })
    .sort({ at: 1 })
    .toArray();
}

describe('client-side events from a page', () => {
  it('keeps page, form and custom events with the device the token names, the user verified by signature or JWT', async () => {
    const token = await pageToken();
    const user = uid();
    const signature = createHmac('sha256', app.secret).update(user).digest('hex');
    const r = await send({
      publishable_key: app.env.publishableKey,
      request_token: token,
      events: [
        {
          type: 'page',
          timestamp: now(),
          name: 'Log in',
          url: 'https://shop.example/login',
          referrer: 'https://search.example/',
          user_id: user,
          user_signature: signature,
        },
        {
          type: 'form',
          timestamp: now(),
          name: 'Change profile',
          properties: { email: 'ada@example.com' },
          user_jwt: jwt({ id: user, email: 'ada@example.com' }, app.secret),
        },
        {
          type: 'custom',
          timestamp: now(),
          name: 'Added to cart',
          properties: { sku: 'A-1', qty: 2, gift: false },
          user_id: `${user}-unsigned`,
        },
        {
          type: 'custom',
          timestamp: now(),
          name: 'Forged',
          user_jwt: jwt({ id: `${user}-forged` }, 'not-the-secret'),
        },
      ],
    });
    expect([r.status, r.body]).toEqual([202, { accepted: 4, dropped: 0, signed: 3, verified: 2 }]);
    expect(r.headers.get('access-control-allow-origin')).toBe(ORIGIN);
    const docs = await kept({ userId: { $in: [user, `${user}-unsigned`, `${user}-forged`] } });
    expect(docs.map((d) => [d.type, d.name, d.userId, d.verified, d.platform, d.appId])).toEqual([
      ['page', 'Log in', user, true, 'web', ORIGIN],
      ['form', 'Change profile', user, true, 'web', ORIGIN],
      ['custom', 'Added to cart', `${user}-unsigned`, false, 'web', ORIGIN],
      ['custom', 'Forged', `${user}-forged`, false, 'web', ORIGIN],
    ]);
    expect(docs[0]).toMatchObject({ url: 'https://shop.example/login', referrer: 'https://search.example/' });
    expect(docs[2]?.properties).toEqual({ sku: 'A-1', qty: 2, gift: false });
    // One device for all four: the token's, not anything the body says.
    expect(new Set(docs.map((d) => d.deviceKey)).size).toBe(1);
    // The device's activity document counts the events and the users the page named.
    const activity = await app.database.db
      .collection<{ _id: string }>('counters')
      .findOne({ _id: idOf(app.env.id, `i:${docs[0]?.deviceKey}`) });
    expect(activity).not.toBeNull();
  });

  it('is evidence for the model: a browser whose pages named many accounts over the week is one device for many accounts', async () => {
    const context = {
      ip: '81.2.69.142',
      headers: {
        'User-Agent':
          'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36',
        Accept: 'text/html',
        'Accept-Language': 'en-GB',
      },
    };
    const verdict = async (user: string, canvas: string) => {
      const r = await call(app, 'POST', '/v1/risk', {
        event: '$login',
        user: { id: user },
        request_token: await pageToken(canvas),
        context,
      });
      expect(r.status).toBe(201);
      return r.body as { signals: Record<string, Record<string, unknown>> };
    };
    // A farm's browser: its pages named five accounts (a sign-up, a page view each), hours apart.
    const farm = `farm-canvas-${++n}`;
    const named = Array.from({ length: 5 }, () => uid());
    const token = await pageToken(farm);
    const batch = named.map((user) => ({ type: 'page', timestamp: now(), name: 'Welcome', user_id: user }));
    expect(
      (await send({ publishable_key: app.env.publishableKey, request_token: token, events: batch })).status,
    ).toBe(202);
    await app.built.state.flush();
    const sixth = await verdict(uid(), farm);
    expect(sixth.signals.multiple_accounts_per_device).toMatchObject({
      by: 'browser_events',
      accounts: 6,
      window_days: 7,
    });
    // A person's browser: its pages named its own user only.
    const own = uid();
    const mine = `own-canvas-${++n}`;
    expect(
      (
        await send({
          publishable_key: app.env.publishableKey,
          request_token: await pageToken(mine),
          events: [{ type: 'page', timestamp: now(), user_id: own }],
        })
      ).status,
    ).toBe(202);
    await app.built.state.flush();
    expect((await verdict(own, mine)).signals).not.toHaveProperty('multiple_accounts_per_device');
  });

  it('answers a preflight for pages that post JSON', async () => {
    const pre = await fetch(`${app.baseUrl}/v1/client/events`, {
      method: 'OPTIONS',
      headers: { origin: ORIGIN, 'access-control-request-method': 'POST' },
    });
    expect(pre.status).toBe(204);
    expect(pre.headers.get('access-control-allow-origin')).toBe(ORIGIN);
  });

  it('refuses what does not authenticate: an unknown key, a forged or expired token, an origin the environment does not allow', async () => {
    const token = await pageToken();
    const events = [{ type: 'page', timestamp: now() }];
    expect(
      (await send({ publishable_key: 'pk_unknown_key_123456', request_token: token, events })).status,
    ).toBe(401);
    const forged = await send({
      publishable_key: app.env.publishableKey,
      request_token: `${token.slice(0, -4)}AAAA`,
      events,
    });
    expect([forged.status, forged.body.type]).toEqual([422, 'invalid_request_token']);
    const { env: other } = await app.newEnvironment(`events-other-${++n}`);
    await app.built.services.environments.setClientOrigins(other.id, ['https://elsewhere.example']);
    const refused = await send(
      { publishable_key: other.publishableKey, request_token: token, events },
      ORIGIN,
    );
    expect(refused.status).toBe(403);
    expect(refused.body.reason).toBe('origin_not_allowed');
    // Without an Origin (a native or server-side client), the token alone decides.
    const bare = await send({ publishable_key: other.publishableKey, request_token: token, events }, null);
    expect([bare.status, bare.body.type]).toEqual([422, 'invalid_request_token']);
    expect(
      (await send({ publishable_key: app.env.publishableKey, request_token: token, events }, null)).status,
    ).toBe(202);
    // A token of this environment, sent with another environment's key (from an origin it allows).
    const wrongEnv = await send(
      { publishable_key: other.publishableKey, request_token: token, events },
      'https://elsewhere.example',
    );
    expect([wrongEnv.status, wrongEnv.body.type]).toEqual([422, 'invalid_request_token']);
  });

  it('names each bad member and keeps nothing: missing, wrong-typed, oversized and hostile input', async () => {
    const token = await pageToken();
    const user = uid();
    const body = (over: Record<string, unknown>) => ({
      publishable_key: app.env.publishableKey,
      request_token: token,
      ...over,
    });
    const page = (over: Record<string, unknown> = {}) => ({
      type: 'page',
      timestamp: now(),
      user_id: user,
      ...over,
    });
    const cases: [string, Record<string, unknown>, string][] = [
      ['no token or session', { request_token: undefined, events: [page()] }, 'session'],
      ['both a token and a session', { session: 'rps1.x.y', events: [page()] }, 'request_token'],
      ['a token of the wrong type', { request_token: 42, events: [page()] }, 'request_token'],
      ['an oversized token', { request_token: 'rpt1.'.padEnd(5000, 'x'), events: [page()] }, 'request_token'],
      ['no events', { events: [] }, 'events'],
      ['events of the wrong type', { events: 'page' }, 'events'],
      ['too many events', { events: Array.from({ length: 101 }, () => page()) }, 'events'],
      ["an app's event from a page", { events: [page({ type: 'app_opened' })] }, 'events.0.type'],
      ['an unknown type', { events: [page({ type: 'purchase' })] }, 'events.0.type'],
      ['a form without a name', { events: [page({ type: 'form' })] }, 'events.0.name'],
      ['a custom event without a name', { events: [page({ type: 'custom' })] }, 'events.0.name'],
      ['an oversized name', { events: [page({ name: 'x'.repeat(129) })] }, 'events.0.name'],
      ['an oversized user id', { events: [page({ user_id: 'u'.repeat(129) })] }, 'events.0.user_id'],
      ['a user id of the wrong type', { events: [page({ user_id: { $ne: null } })] }, 'events.0.user_id'],
      [
        'an address with a query',
        { events: [page({ url: 'https://shop.example/reset?token=secret' })] },
        'events.0.url',
      ],
      ['a script address', { events: [page({ url: 'javascript:alert(1)' })] }, 'events.0.url'],
      [
        'an oversized referrer',
        { events: [page({ referrer: `https://shop.example/${'a'.repeat(2100)}` })] },
        'events.0.referrer',
      ],
      [
        'an address on a custom event',
        { events: [page({ type: 'custom', name: 'x', url: 'https://shop.example/' })] },
        'events.0.url',
      ],
      ['a malformed JWT', { events: [page({ user_jwt: 'not a jwt' })] }, 'events.0.user_jwt'],
      [
        'an oversized JWT',
        { events: [page({ user_jwt: `${'a'.repeat(1000)}.${'b'.repeat(2048)}.${'c'.repeat(1100)}` })] },
        'events.0.user_jwt',
      ],
      [
        'too many properties',
        {
          events: [
            page({
              type: 'custom',
              name: 'x',
              properties: Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`k${i}`, 'v'])),
            }),
          ],
        },
        'events.0.properties',
      ],
      [
        'an oversized property',
        { events: [page({ type: 'custom', name: 'x', properties: { k: 'v'.repeat(257) } })] },
        'events.0.properties',
      ],
      [
        'a nested property',
        { events: [page({ type: 'custom', name: 'x', properties: { k: { $gt: '' } } })] },
        'events.0.properties',
      ],
      [
        'an oversized property name',
        { events: [page({ type: 'custom', name: 'x', properties: { ['k'.repeat(65)]: 'v' } })] },
        'events.0.properties',
      ],
      ['an unknown member', { events: [page({ $where: 'sleep(1000)' })] }, 'events.0.$where'],
      ['an unknown top-level member', { events: [page()], user: 'x' }, 'user'],
      ['a bad timestamp', { events: [page({ timestamp: 'yesterday' })] }, 'events.0.timestamp'],
    ];
    for (const [what, over, field] of cases) {
      const r = await send(body(over));
      expect([
        what,
        r.status,
        (r.body.fields as { field: string }[] | undefined)?.map((f) => f.field),
      ]).toEqual([what, 422, expect.arrayContaining([field])]);
    }
    expect(await kept({ userId: user })).toEqual([]);
  });

  it('refuses a body that is not JSON or too large, and keeps nothing', async () => {
    const user = uid();
    const notJson = await call(app, 'POST', '/v1/client/events', undefined, {
      secret: null,
      raw: '{"publishable_key":',
      headers: { 'content-type': 'text/plain', origin: ORIGIN },
    });
    expect(notJson.status).toBe(400);
    const token = await pageToken();
    const big = {
      type: 'custom',
      timestamp: now(),
      name: 'x',
      user_id: user,
      properties: Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`k${i}`, 'v'.repeat(256)])),
    };
    const r = await send({
      publishable_key: app.env.publishableKey,
      request_token: token,
      events: Array.from({ length: 100 }, () => big),
    });
    expect(r.status).toBe(413);
    expect(await kept({ userId: user })).toEqual([]);
  });
});
