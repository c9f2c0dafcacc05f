/**
 * Castle's Go SDK (`github.com/castle/castle-go` v0.1.0) cannot run here: the Go module proxy
 * refuses it. So this test replays its wire format, as its public source (castle.go, v0.1.0)
 * builds it, and checks the answers the way the SDK reads them:
 *  - `POST` to the package variables `castle.AuthenticateEndpoint` and `castle.TrackEndpoint`
 *    (full URLs: set them to `<base>/v1/authenticate` and `<base>/v1/track`);
 *  - Go's net/http request headers: `Authorization: Basic base64(":" + secret)`,
 *    `Content-Type: application/json`, `User-Agent: Go-http-client/1.1`, `Accept-Encoding: gzip`;
 *  - the body of encoding/json's Encoder: struct fields in order (`event`, `user_id`, `context`
 *    {`client_id`, `ip`, `headers`}, `properties`, `user_traits`), map keys sorted, `<>&` escaped,
 *    a trailing newline; nil maps and a nil context as `null`, an empty user id as `""`;
 *  - `ContextFromRequest`: `client_id` from the `__cid` cookie (else `""`), the address from
 *    X-Forwarded-For (first public one), X-Real-Ip or the remote address, and only the
 *    allow-listed request headers (first value each; no Cookie, no Authorization);
 *  - authenticate succeeds only on status 201, then fails on a non-empty `error` or `type` in the
 *    body, and maps `action`; track succeeds only on status 204.
 * Nothing of the SDK's code is copied: these are its observable requests and rules.
 */
import http from 'node:http';
import { startTestApp, call, type TestApp } from '../support/app';
import { storedOf } from '../support/stored';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ grpc: false });
});
afterAll(async () => {
  await app?.close();
});

// ---------------------------------------------------------------- the SDK's wire format

/** The SDK's event constants (castle.EventLoginSucceeded, ...). */
const GO_EVENTS = [
  '$login.succeeded',
  '$login.failed',
  '$password_reset_request.succeeded',
  '$password_reset_request.failed',
  '$password_reset.succeeded',
  '$password_reset.failed',
  '$incident.mitigated',
  '$review.resolved',
  '$review.escalated',
  '$challenge.requested',
  '$challenge.succeeded',
  '$challenge.failed',
];

/** castle.HeaderAllowList: the only request headers ContextFromRequest forwards. */
const ALLOW_LIST = [
  'Accept',
  'Accept-Charset',
  'Accept-Datetime',
  'Accept-Encoding',
  'Accept-Language',
  'Cache-Control',
  'Connection',
  'Content-Length',
  'Content-Type',
  'Dnt',
  'Host',
  'Origin',
  'Pragma',
  'Referer',
  'Sec-Fetch-Dest',
  'Sec-Fetch-Mode',
  'Sec-Fetch-Site',
  'Sec-Fetch-User',
  'Te',
  'Upgrade-Insecure-Requests',
  'User-Agent',
  'X-Castle-Client-Id',
];

/** net/http's CanonicalHeaderKey. */
const canonical = (name: string) =>
  name.toLowerCase().replace(/(^|-)([a-z])/g, (_m, dash: string, c: string) => dash + c.toUpperCase());

interface GoContext {
  client_id: string;
  ip: string;
  headers: Record<string, string>;
}

/** What arrives at the application: a Go server's *http.Request (Host is not among its headers). */
interface IncomingRequest {
  headers: Record<string, string>;
  remoteAddr: string;
}

const PRIVATE = [
  /^10\./,
  /^127\./,
  /^192\.168\./,
  /^172\.(1[6-9]|2\d|3[01])\./,
  /^169\.254\./,
  /^::1$/,
  /^f[cd]/i,
  /^fe80:/i,
];

/** castle.ContextFromRequest(r), as its source builds it. */
function contextFromRequest(r: IncomingRequest): GoContext {
  const get = (name: string) =>
    Object.entries(r.headers).find(([k]) => canonical(k) === canonical(name))?.[1] ?? '';
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(r.headers))
    if (ALLOW_LIST.map(canonical).includes(canonical(name))) headers[canonical(name)] = value;
  const cookie = /(?:^|;\s*)__cid=([^;]*)/.exec(get('Cookie'))?.[1] ?? '';
  const xRealIp = get('X-Real-Ip');
  const xff = get('X-Forwarded-For');
  let ip: string;
  if (!xRealIp && !xff)
    ip = r.remoteAddr.includes(':') ? r.remoteAddr.replace(/^\[?(.*?)\]?:\d+$/, '$1') : r.remoteAddr;
  else
    ip =
      xff
        .split(',')
        .map((a) => a.trim())
        .find((a) => /^[\d.]+$|:/.test(a) && !PRIVATE.some((p) => p.test(a))) ?? xRealIp;
  return { client_id: cookie, ip, headers };
}

/** encoding/json's HTML-safe escapes (for the strings this test sends, the rest of its output is JSON.stringify's). */
const htmlSafe = (json: string) =>
  json.replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);

/** A Go map[string]string: keys sorted; nil is null. */
const goMap = (m: Record<string, string> | null) =>
  m
    ? JSON.stringify(Object.fromEntries(Object.entries(m).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))))
    : 'null';

/** castleAPIRequest as Encoder.Encode writes it: fields in struct order, a trailing newline. */
function goBody(
  event: string,
  userId: string,
  properties: Record<string, string> | null,
  traits: Record<string, string> | null,
  context: GoContext | null,
): string {
  const ctx = context
    ? `{"client_id":${JSON.stringify(context.client_id)},"ip":${JSON.stringify(context.ip)},"headers":${goMap(context.headers)}}`
    : 'null';
  return `${htmlSafe(`{"event":${JSON.stringify(event)},"user_id":${JSON.stringify(userId)},"context":${ctx},"properties":${goMap(properties)},"user_traits":${goMap(traits)}}`)}\n`;
}

interface Answer {
  status: number;
  statusText: string;
  body: string;
}

/** One POST as Go's http.Client sends it. */
function goPost(path: string, secret: string, body: string): Promise<Answer> {
  const url = new URL(`${app.baseUrl}${path}`);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        method: 'POST',
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        headers: {
          Host: url.host,
          'User-Agent': 'Go-http-client/1.1',
          'Content-Length': Buffer.byteLength(body),
          Authorization: `Basic ${Buffer.from(`:${secret}`).toString('base64')}`,
          'Content-Type': 'application/json',
          'Accept-Encoding': 'gzip',
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            statusText: res.statusMessage ?? '',
            body: Buffer.concat(chunks).toString('utf8'),
          }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

type Outcome =
  { action: '' | 'allow' | 'challenge' | 'deny'; error?: undefined } | { action?: undefined; error: string };

/** What SendAuthenticateCall returns for an answer. */
function readAuthenticate(a: Answer): Outcome {
  if (a.status !== 201) return { error: `expected 201 status but go ${a.status} ${a.statusText}` };
  let resp: { error?: unknown; type?: unknown; message?: unknown; action?: unknown } = {};
  try {
    resp = JSON.parse(a.body) as typeof resp;
  } catch {
    // The SDK ignores a decoding error and reads the zero values.
  }
  if (typeof resp.error === 'string' && resp.error !== '') return { error: resp.error };
  if (typeof resp.type === 'string' && resp.type !== '')
    return { error: `${resp.type}: ${String(resp.message ?? '')}` };
  const action =
    resp.action === 'allow' || resp.action === 'challenge' || resp.action === 'deny' ? resp.action : '';
  return { action };
}

/** What SendTrackCall returns for an answer (nil: ''). */
const readTrack = (a: Answer): string => (a.status === 204 ? '' : `expected 204 status but got ${a.status}`);

const go = {
  authenticate: async (
    event: string,
    userId: string,
    properties: Record<string, string> | null,
    traits: Record<string, string> | null,
    context: GoContext | null,
    secret = app.secret,
  ) =>
    readAuthenticate(
      await goPost('/v1/authenticate', secret, goBody(event, userId, properties, traits, context)),
    ),
  authenticateSimple: (event: string, userId: string, context: GoContext | null, secret = app.secret) =>
    go.authenticate(event, userId, {}, {}, context, secret),
  track: async (
    event: string,
    userId: string,
    properties: Record<string, string> | null,
    traits: Record<string, string> | null,
    context: GoContext | null,
    secret = app.secret,
  ) => readTrack(await goPost('/v1/track', secret, goBody(event, userId, properties, traits, context))),
  trackSimple: (event: string, userId: string, context: GoContext | null, secret = app.secret) =>
    go.track(event, userId, {}, {}, context, secret),
};

// ---------------------------------------------------------------- an application's requests

const UA =
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36';
let address = 10;
/** A login form post reaching a Go application, from an address of its own. */
function loginRequest(extra: Record<string, string> = {}): IncomingRequest {
  return {
    remoteAddr: `81.2.69.${address++}:51234`,
    headers: {
      'User-Agent': UA,
      Accept: 'text/html,application/xhtml+xml',
      'Accept-Language': 'en-GB,en;q=0.9',
      'Accept-Encoding': 'gzip, deflate, br',
      'Content-Type': 'application/x-www-form-urlencoded',
      'Content-Length': '41',
      Origin: 'https://app.example.com',
      'Sec-Fetch-Site': 'same-origin',
      Cookie: 'session=s3cr3t; __cid=cid-go-1',
      Authorization: 'Basic dXNlcjpwYXNz',
      ...extra,
    },
  };
}

const events = async (userId: string) => {
  await app.built.services.track.drain(false);
  await app.built.state.flush();
  return storedOf(app).eventsOfUser(app.env.id, userId, 50);
};

describe('the wire format this test replays', () => {
  it('is what the SDK sends for AuthenticateSimple', () => {
    const ctx = contextFromRequest({
      remoteAddr: '81.2.69.142:4000',
      headers: { 'user-agent': 'UA <1>', cookie: '__cid=abc', 'x-forwarded-for': '10.0.0.1, 81.2.69.140' },
    });
    expect(goBody('$login.succeeded', 'user-123', {}, {}, ctx)).toBe(
      '{"event":"$login.succeeded","user_id":"user-123","context":{"client_id":"abc","ip":"81.2.69.140","headers":{"User-Agent":"UA \\u003c1\\u003e"}},"properties":{},"user_traits":{}}\n',
    );
    expect(goBody('$login.failed', '', null, null, null)).toBe(
      '{"event":"$login.failed","user_id":"","context":null,"properties":null,"user_traits":null}\n',
    );
  });
});

describe('authenticate', () => {
  it('the headline example AuthenticateSimple(EventLoginSucceeded, "user-123", ctx) gets a verdict', async () => {
    const raw = await goPost(
      '/v1/authenticate',
      app.secret,
      goBody('$login.succeeded', 'user-123', {}, {}, contextFromRequest(loginRequest())),
    );
    expect(raw.status).toBe(201);
    const body = JSON.parse(raw.body);
    // The SDK takes a non-empty `type` or `error` in a 201 body for an API error.
    expect(body.type).toBeUndefined();
    expect(body.error).toBeUndefined();
    expect(readAuthenticate(raw)).toEqual({ action: 'allow' });
    expect(body.signals.missing_fields).toEqual({ missing: 'user_traits.email', score: 0 });
  });

  it('Authenticate with properties and traits', async () => {
    const outcome = await go.authenticate(
      '$login.succeeded',
      'go-user-2',
      { plan: 'pro' },
      { email: 'Go2@Example.com', username: 'go2' },
      contextFromRequest(loginRequest()),
    );
    expect(outcome).toEqual({ action: 'allow' });
    const [event] = await events('go-user-2');
    expect(event).toMatchObject({
      email: 'go2@example.com',
      properties: { plan: 'pro' },
      userTraits: { email: 'Go2@Example.com', username: 'go2' },
    });
  });

  it('nil properties and traits (null) are accepted', async () => {
    expect(
      await go.authenticate('$login.succeeded', 'go-user-3', null, null, contextFromRequest(loginRequest())),
    ).toEqual({ action: 'allow' });
  });

  it('the context it builds reaches Rampart: allow-listed headers only, no cookie or credentials, the address', async () => {
    const request = loginRequest();
    expect(await go.authenticateSimple('$login.succeeded', 'go-user-4', contextFromRequest(request))).toEqual(
      { action: 'allow' },
    );
    const [event] = await events('go-user-4');
    expect(event?.ip).toBe(request.remoteAddr.replace(/:\d+$/, ''));
    expect(Object.keys(event?.context.headers ?? {}).sort()).toEqual([
      'accept',
      'accept-encoding',
      'accept-language',
      'content-length',
      'content-type',
      'origin',
      'sec-fetch-site',
      'user-agent',
    ]);
  });

  it('the __cid cookie becomes the device fingerprint: the device is recognised, and another cookie is another device', async () => {
    const ctx = (cid: string) => contextFromRequest(loginRequest({ Cookie: `__cid=${cid}` }));
    expect(await go.authenticateSimple('$login.succeeded', 'go-user-5', ctx('cid-go-5a'))).toEqual({
      action: 'allow',
    });
    expect(await go.authenticateSimple('$login.succeeded', 'go-user-5', ctx('cid-go-5a'))).toEqual({
      action: 'allow',
    });
    const list = await call(app, 'GET', '/v1/users/go-user-5/devices?cid=cid-go-5a');
    expect(list.body.total_count).toBe(1);
    expect(list.body.data[0].is_current_device).toBe(true);
    await go.authenticateSimple('$login.succeeded', 'go-user-5', ctx('cid-go-5b'));
    expect((await call(app, 'GET', '/v1/users/go-user-5/devices')).body.total_count).toBe(2);
  });

  it('without the cookie, the allow-listed X-Castle-Client-Id header carries the fingerprint (client_id is "")', async () => {
    const context = contextFromRequest(
      loginRequest({ Cookie: 'session=x', 'X-Castle-Client-Id': 'cid-go-6' }),
    );
    expect(context.client_id).toBe('');
    expect(await go.authenticateSimple('$login.succeeded', 'go-user-6', context)).toEqual({
      action: 'allow',
    });
    const list = await call(app, 'GET', '/v1/users/go-user-6/devices?cid=cid-go-6');
    expect(list.body.data[0].is_current_device).toBe(true);
  });

  it('a reported device is denied, as the SDK reads it', async () => {
    const context = contextFromRequest(loginRequest({ Cookie: '__cid=cid-go-7' }));
    await go.authenticateSimple('$login.succeeded', 'go-user-7', context);
    const token = (await call(app, 'GET', '/v1/users/go-user-7/devices')).body.data[0].token;
    expect((await call(app, 'PUT', `/v1/devices/${token}/report`)).status).toBe(200);
    expect(await go.authenticateSimple('$login.succeeded', 'go-user-7', context)).toEqual({ action: 'deny' });
  });
});

describe('track', () => {
  it('TrackSimple and Track of every event the SDK names answer 204, and are stored', async () => {
    const context = contextFromRequest(loginRequest());
    for (const [i, event] of GO_EVENTS.entries()) {
      const send =
        i % 2 === 0
          ? go.trackSimple(event, 'go-track-1', context)
          : go.track(event, 'go-track-1', { prop1: 'propValue1' }, { trait1: 'traitValue1' }, context);
      expect({ event, error: await send }).toEqual({ event, error: '' });
    }
    expect((await events('go-track-1')).map((e) => e.name).sort()).toEqual([...GO_EVENTS].sort());
  });

  it('a custom event, castle.Event("custom-event"), is stored as the application\'s own', async () => {
    expect(
      await go.track(
        'custom-event',
        'go-track-2',
        { prop1: 'propValue1' },
        { trait1: 'traitValue1' },
        contextFromRequest(loginRequest()),
      ),
    ).toBe('');
    expect((await events('go-track-2')).map((e) => e.name)).toEqual(['$custom:custom-event']);
  });

  it('nil maps and a nil context are accepted', async () => {
    expect(await go.track('$login.failed', 'go-track-3', null, null, null)).toBe('');
    expect((await events('go-track-3')).map((e) => e.name)).toEqual(['$login.failed']);
  });
});

describe('errors, as the SDK returns them', () => {
  it('a wrong secret: both calls return an error (401 is neither 201 nor 204)', async () => {
    const context = contextFromRequest(loginRequest());
    expect(
      await go.authenticateSimple('$login.succeeded', 'go-err-1', context, 'sk_wrong_secret_000000000000'),
    ).toEqual({ error: 'expected 201 status but go 401 Unauthorized' });
    expect(await go.trackSimple('$login.failed', 'go-err-1', context, 'sk_wrong_secret_000000000000')).toBe(
      'expected 204 status but got 401',
    );
  });

  it('what cannot be processed is a 422: an empty user id on $login.succeeded, a nil context', async () => {
    const noUser = await goPost(
      '/v1/authenticate',
      app.secret,
      goBody('$login.succeeded', '', {}, {}, contextFromRequest(loginRequest())),
    );
    expect(noUser.status).toBe(422);
    expect(JSON.parse(noUser.body)).toMatchObject({
      type: 'invalid_parameters',
      fields: [{ field: 'user_id' }],
    });
    expect(readAuthenticate(noUser)).toEqual({
      error: 'expected 201 status but go 422 Unprocessable Entity',
    });
    const noContext = await goPost(
      '/v1/authenticate',
      app.secret,
      goBody('$login.succeeded', 'go-err-2', {}, {}, null),
    );
    expect(JSON.parse(noContext.body)).toMatchObject({ fields: [{ field: 'context' }] });
  });

  it('behind a private proxy only, ContextFromRequest finds no address (ip ""): 422 context.ip', async () => {
    const context = contextFromRequest({
      remoteAddr: '10.0.0.2:443',
      headers: { 'User-Agent': UA, 'X-Forwarded-For': '10.0.0.7' },
    });
    expect(context.ip).toBe('');
    const r = await goPost(
      '/v1/authenticate',
      app.secret,
      goBody('$login.succeeded', 'go-err-3', {}, {}, context),
    );
    expect(r.status).toBe(422);
    expect(JSON.parse(r.body).fields.map((f: { field: string }) => f.field)).toEqual(['context.ip']);
  });
});
