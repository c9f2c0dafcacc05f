/**
 * What Rampart keeps of the headers an application forwards: never a credential, a session or a
 * secret (their values become `true`, as Castle's SDKs send a scrubbed header), whether the event
 * was scored, tracked, or rejected into the debugger; and a rejected track event keeps its user,
 * so that a purge finds it.
 */
import { startTestApp, call, type TestApp } from '../support/app';
import { storedOf } from '../support/stored';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ grpc: false });
});
afterAll(async () => {
  await app?.close();
});

const UA =
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36';
const SECRETS = {
  Authorization: 'Bearer eyJhbGciOiJIUzI1NiJ9.secret-jwt',
  Cookie: 'session=s3cr3t-session-cookie',
  'X-Api-Key': 'ak_live_secret_key_value',
  'X-CSRF-Token': 'csrf-secret-value',
  'X-Session-Id': 'session-secret-value',
  // Names no deny-list knows: only the headers Rampart keeps keep their values.
  'X-Access-Key': 'access-key-secret-value',
  'X-Jwt': 'eyJhbGciOiJIUzI1NiJ9.another-secret',
  'X-Customer-Ssn': '078-05-1120',
  Referer: 'https://shop.example/reset?token=reset-secret-value',
};
const headers = { 'User-Agent': UA, Accept: 'text/html', 'Accept-Language': 'en-GB', ...SECRETS };
const leaked = (value: unknown) => Object.values(SECRETS).filter((s) => JSON.stringify(value).includes(s));

it('a verdict stores the headers without their secret values, and says they were sent', async () => {
  const r = await call(app, 'POST', '/v1/risk', {
    event: '$login',
    user: { id: 'hdr-1' },
    context: { ip: '81.2.69.142', headers },
  });
  expect(r.status).toBe(201);
  await app.built.state.flush();
  const [event] = await storedOf(app).eventsOfUser(app.env.id, 'hdr-1', 10);
  expect(event).toBeDefined();
  expect(leaked(event)).toEqual([]);
  expect(event!.context.headers).toMatchObject({
    authorization: true,
    cookie: true,
    'x-api-key': true,
    'x-csrf-token': true,
    'x-session-id': true,
    'x-access-key': true,
    'x-jwt': true,
    'x-customer-ssn': true,
    referer: true,
    'user-agent': UA,
    'accept-language': 'en-GB',
    accept: 'text/html',
  });
});

it('a tracked event too', async () => {
  expect(
    (
      await call(app, 'POST', '/v1/track', {
        event: '$login.failed',
        user_id: 'hdr-2',
        context: { ip: '81.2.69.142', headers },
      })
    ).status,
  ).toBe(204);
  await app.built.services.track.drain(false);
  await app.built.state.flush();
  const events = await storedOf(app).eventsOfUser(app.env.id, 'hdr-2', 10);
  expect(events).toHaveLength(1);
  expect(leaked(events)).toEqual([]);
});

it('a rejected track payload is kept in the debugger without the secrets, with its user', async () => {
  const before = (await storedOf(app).debugger(app.env.id, 1000)).length;
  // Malformed JSON: kept as text, scrubbed as text.
  const raw = `{"event": "$login.failed", "user_id": "hdr-3", "context": {"headers": ${JSON.stringify(headers)}}`;
  expect((await call(app, 'POST', '/v1/track', undefined, { raw })).status).toBe(204);
  // Well formed, but refused when applied (an unknown device token): kept with its user.
  expect(
    (
      await call(app, 'POST', '/v1/track', {
        event: '$challenge.succeeded',
        user_id: 'hdr-4',
        device_token: 'no-such-device',
        context: { ip: '81.2.69.142', headers },
      })
    ).status,
  ).toBe(204);
  await app.built.services.track.drain(false);
  const entries = (await storedOf(app).debugger(app.env.id, 1000)).slice(
    0,
    (await storedOf(app).debugger(app.env.id, 1000)).length - before,
  );
  expect(entries.length).toBeGreaterThanOrEqual(2);
  expect(leaked(entries)).toEqual([]);
  expect(entries.map((e) => e.userId).sort()).toEqual(expect.arrayContaining(['hdr-3', 'hdr-4']));
  // So a purge of the user finds them.
  await app.built.services.privacy.purge(app.env, 'hdr-3');
  expect((await storedOf(app).debugger(app.env.id, 1000)).filter((e) => e.userId === 'hdr-3')).toEqual([]);
});
