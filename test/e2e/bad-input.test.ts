/**
 * Bad input on every endpoint: each case answers its documented error, and a rejected request
 * changes no document in the database (track keeps only its debugger entry).
 */
import type { Db } from 'mongodb';
import { startTestApp, call, type TestApp } from '../support/app';
import { storedOf } from '../support/stored';

let app: TestApp;
let disabledSecret: string;
beforeAll(async () => {
  app = await startTestApp({ grpc: false });
  const d = await app.newEnvironment('disabled-env');
  await app.built.services.environments.setEnabled(d.env.id, false);
  disabledSecret = d.secret;
  // A user with a device so that device and privacy endpoints have something to reject around.
  await call(app, 'POST', '/v1/risk', {
    event: '$login',
    user: { id: 'victim', email: 'victim@example.com' },
    request_token: 'cid-victim',
    context: ctx,
  });
  await settled();
});

/** Wait for every write a previous request left in the background. */
async function settled() {
  await app.built.services.track.drain(false);
  await app.built.state.flush();
}
afterAll(async () => {
  await app?.close();
});

const UA =
  'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36';
const ctx = { ip: '81.2.69.142', headers: { 'User-Agent': UA, Accept: '*/*' } };

/** Every document of every collection, as text, in a stable order. */
async function snapshot(db: Db, exclude: string[] = []): Promise<string> {
  const names = (await db.listCollections().toArray())
    .map((c) => c.name)
    .filter((n) => !exclude.includes(n))
    .sort();
  const parts: string[] = [];
  for (const name of names) {
    const docs = await db.collection(name).find({}).sort({ _id: 1 }).toArray();
    parts.push(`${name}:${JSON.stringify(docs)}`);
  }
  return parts.join('\n');
}

interface Endpoint {
  name: string;
  method: 'POST' | 'GET' | 'PUT' | 'DELETE';
  path: string;
  body: Record<string, unknown> | null;
  /** Status for a body the endpoint cannot use (track answers 204). */
  malformed: number;
}
const verdict = (name: string, body: Record<string, unknown>): Endpoint => ({
  name,
  method: 'POST',
  path: `/v1/${name}`,
  body,
  malformed: 422,
});
const ENDPOINTS: Endpoint[] = [
  verdict('authenticate', {
    event: '$login.succeeded',
    user_id: 'bi-1',
    user_traits: { email: 'bi@example.com' },
    context: ctx,
  }),
  verdict('risk', { event: '$login', user: { id: 'bi-1' }, request_token: 'cid-bi', context: ctx }),
  verdict('filter', {
    event: '$registration',
    user: { email: 'bi@example.com' },
    request_token: 'cid-bi',
    context: ctx,
  }),
  {
    name: 'track',
    method: 'POST',
    path: '/v1/track',
    body: { event: '$login.failed', user_id: 'bi-1', context: ctx },
    malformed: 204,
  },
  {
    name: 'log',
    method: 'POST',
    path: '/v1/log',
    body: { event: '$login.failed', user_id: 'bi-1', context: ctx },
    malformed: 204,
  },
  { name: 'devices list', method: 'GET', path: '/v1/users/victim/devices', body: null, malformed: 0 },
  {
    name: 'privacy access',
    method: 'POST',
    path: '/v1/privacy/users',
    body: { identifier: 'victim', identifier_type: '$id' },
    malformed: 422,
  },
  {
    name: 'privacy purge',
    method: 'DELETE',
    path: '/v1/privacy/users',
    body: { identifier: 'victim', identifier_type: '$id' },
    malformed: 422,
  },
];
const withBody = ENDPOINTS.filter((e) => e.body !== null);
const verdicts = ENDPOINTS.filter(
  (e) => e.malformed === 422 && e.name !== 'privacy access' && e.name !== 'privacy purge',
);
const tracks = ENDPOINTS.filter((e) => e.malformed === 204);

/** Send a request that must be rejected and check that nothing in the database changed. */
async function rejected(
  method: string,
  path: string,
  body: unknown,
  opts: Parameters<typeof call>[4] = {},
  status: number,
  type?: string,
) {
  await settled();
  const before = await snapshot(app.database.db);
  const r = await call(app, method, path, body, opts);
  expect(r.status).toBe(status);
  if (type) expect(r.body).toMatchObject({ type, message: expect.any(String) });
  await settled();
  expect(await snapshot(app.database.db)).toBe(before);
  return r;
}

describe.each(ENDPOINTS)('$name', (ep) => {
  const body = ep.body ?? undefined;
  it('no auth: 401 unauthorized', () =>
    rejected(ep.method, ep.path, body, { secret: null }, 401, 'unauthorized'));
  it('wrong secret: 401 unauthorized', () =>
    rejected(ep.method, ep.path, body, { secret: 'sk_wrong_wrong_wrong' }, 401, 'unauthorized'));
  it('malformed Authorization header: 401', () =>
    rejected(
      ep.method,
      ep.path,
      body,
      { secret: null, headers: { authorization: 'Basic !!!' } },
      401,
      'unauthorized',
    ));
  it('disabled environment: 403 forbidden', () =>
    rejected(ep.method, ep.path, body, { secret: disabledSecret }, 403, 'forbidden'));
});

describe.each(withBody.filter((e) => e.malformed === 422))('$name, body errors', (ep) => {
  it('non-JSON: 400 bad_request', () =>
    rejected(ep.method, ep.path, undefined, { raw: '{not json' }, 400, 'bad_request'));
  it('a JSON array: 400 bad_request', () =>
    rejected(ep.method, ep.path, undefined, { raw: '[1,2]' }, 400, 'bad_request'));
  it('oversized body: 413 payload_too_large', () =>
    rejected(ep.method, ep.path, { ...ep.body, pad: 'x'.repeat(200 * 1024) }, {}, 413, 'payload_too_large'));
  it('deeply nested body: 400', () =>
    rejected(
      ep.method,
      ep.path,
      undefined,
      { raw: `${'{"a":'.repeat(100)}1${'}'.repeat(100)}` },
      400,
      'bad_request',
    ));
  it('a 5,000-level nested body: 400', () =>
    rejected(ep.method, ep.path, undefined, { raw: deep }, 400, 'bad_request'));
});

describe.each(verdicts)('$name, field errors answer 422 and name the field', (ep) => {
  const cases: [string, Record<string, unknown>, string][] = [
    ['missing event', { event: undefined }, 'event'],
    ['unknown event', { event: '$nope' }, 'event'],
    ['event of the wrong type', { event: 42 }, 'event'],
    ['invalid IP', { context: { ...ctx, ip: '300.1.2.3' } }, 'context.ip'],
    ['context of the wrong type', { context: [1] }, 'context'],
    [
      'huge header map',
      {
        context: {
          ip: '1.1.1.1',
          headers: Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`x-h-${i}`, 'v'])),
        },
      },
      'context.headers',
    ],
    ['an operator object as an id', { user_id: { $gt: '' }, user: { id: { $gt: '' } } }, 'user'],
    [
      'a header value of the wrong type',
      { context: { ...ctx, headers: { 'User-Agent': UA, 'X-Num': 5 } } },
      'context.headers',
    ],
  ];
  it.each(cases)('%s', async (_label, patch, field) => {
    const r = await rejected(ep.method, ep.path, { ...ep.body, ...patch }, {}, 422, 'invalid_parameters');
    expect(JSON.stringify(r.body.fields)).toContain(field);
  });
  it('missing context: 422', () =>
    rejected(ep.method, ep.path, { ...ep.body, context: undefined }, {}, 422, 'invalid_parameters'));
  it('a malformed request token: 422 invalid_request_token', () =>
    rejected(
      ep.method,
      ep.path,
      { ...ep.body, request_token: 'test|risk:9' },
      {},
      422,
      'invalid_request_token',
    ));
});

/** 5,000 levels of nesting under a user id and a credential. */
const DEEP_SECRET = 'Bearer deep-secret-value';
const deep = `{"user_id":"bi-deep","Authorization":"${DEEP_SECRET}","a":${'{"a":'.repeat(5_000)}1${'}'.repeat(5_001)}`;

describe.each(tracks)('$name answers 204 to malformed bodies and keeps them in the debugger', (ep) => {
  const cases: [string, { raw?: string; body?: unknown }][] = [
    ['non-JSON', { raw: 'nope' }],
    ['a JSON array', { raw: '[]' }],
    ['missing event', { body: { user_id: 'x' } }],
    ['unknown event', { body: { event: '$nope' } }],
    ['invalid IP', { body: { event: '$login.failed', context: { ip: 'x.x.x.x' } } }],
    ['wrong types', { body: { event: '$login.failed', user_id: { $gt: '' } } }],
    [
      'huge header map',
      {
        body: {
          event: '$login.failed',
          context: {
            ip: '1.1.1.1',
            headers: Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`h${i}`, 'v'])),
          },
        },
      },
    ],
  ];
  it.each(cases)('%s', async (_label, c) => {
    await settled();
    const before = await snapshot(app.database.db, ['debugger']);
    const count = (await storedOf(app).debugger(app.env.id, 1000)).length;
    const r = await call(app, ep.method, ep.path, c.body, c.raw !== undefined ? { raw: c.raw } : {});
    expect(r.status).toBe(204);
    await settled();
    expect((await storedOf(app).debugger(app.env.id, 1000)).length).toBe(count + 1);
    expect(await snapshot(app.database.db, ['debugger'])).toBe(before);
  });
  it('oversized body: 413', () =>
    rejected(ep.method, ep.path, { ...ep.body, pad: 'x'.repeat(200 * 1024) }, {}, 413, 'payload_too_large'));
  it('a 5,000-level nested body: 204, kept in the debugger bounded and scrubbed, with the user it names', async () => {
    await settled();
    const before = await snapshot(app.database.db, ['debugger']);
    const count = (await storedOf(app).debugger(app.env.id, 1000)).length;
    expect((await call(app, ep.method, ep.path, undefined, { raw: deep })).status).toBe(204);
    await settled();
    const entries = await storedOf(app).debugger(app.env.id, 1000);
    expect(entries.length).toBe(count + 1);
    const [entry] = entries;
    expect(entry?.reason).toMatch(/nested deeper than 32 levels/);
    expect(entry?.payload.length).toBeLessThanOrEqual(16 * 1024 + 1);
    expect(entry?.payload).not.toContain(DEEP_SECRET);
    expect(entry?.userId).toBe('bi-deep');
    expect(await snapshot(app.database.db, ['debugger'])).toBe(before);
  });
});

describe('hostile strings are plain data', () => {
  const hostile = [
    '$where',
    '{"$gt": ""}',
    "'; DROP TABLE users; --",
    '../../etc/passwd',
    '<script>alert(1)</script>',
    'ユーザー😀',
    'a'.repeat(200),
  ];
  it.each(hostile)('%s in every string field of risk', async (s) => {
    const r = await call(app, 'POST', '/v1/risk', {
      event: '$login',
      user: { id: s, email: `${s}@example.com`.slice(0, 300) },
      request_token: 'cid-hostile',
      properties: { [s]: s, $where: s },
      user_traits: { username: s },
      context: { ip: '81.2.69.142', headers: { 'User-Agent': s, 'X-Custom': s } },
    });
    expect(r.status).toBe(201);
    const devices = await call(app, 'GET', `/v1/users/${encodeURIComponent(s)}/devices`);
    expect(devices.status).toBe(200);
    expect(devices.body.data[0].user_id).toBe(s);
  });
  it('injection-looking path parameters find nothing', async () => {
    for (const s of ['$ne', '{"$ne":null}', '.*', '%00']) {
      expect((await call(app, 'GET', `/v1/devices/${encodeURIComponent(s)}`)).status).toBe(404);
      expect((await call(app, 'GET', `/v1/users/${encodeURIComponent(s)}/devices`)).status).toBe(404);
    }
  });
  it('privacy by identifier rejects an operator object and an unknown identifier type', async () => {
    await rejected(
      'POST',
      '/v1/privacy/users',
      { identifier: { $gt: '' }, identifier_type: '$id' },
      {},
      422,
      'invalid_parameters',
    );
    await rejected(
      'DELETE',
      '/v1/privacy/users',
      { identifier: 'victim', identifier_type: '$phone' },
      {},
      422,
      'invalid_parameters',
    );
    await rejected('DELETE', '/v1/privacy/users', {}, {}, 422, 'invalid_parameters');
  });
});
