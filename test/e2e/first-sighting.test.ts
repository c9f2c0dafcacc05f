/**
 * A new user's first requests arrive together (a login form posted twice, an app retrying, a
 * burst of API calls): 60 concurrent `/v1/risk` calls with one context. However many of them
 * see the device before its first sighting is recorded, or answer degraded because the user could
 * not be read within the verdict budget, they all name one device with one token: the registry
 * lists one device, and the token each answer carried finds it.
 */
import { randomBytes } from 'node:crypto';
import { call, startTestApp, type TestApp } from '../support/app';

const UA =
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/121.0.0.0 Safari/537.36';

describe.each([
  ['the default verdict budget', undefined],
  // Every verdict answers before its state is read: the case the probe met under load.
  ['a verdict budget too short to read the user', 1],
])('60 concurrent first requests for a new user, with %s', (_label, verdictBudgetMs) => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ grpc: false, ...(verdictBudgetMs === undefined ? {} : { verdictBudgetMs }) });
  });
  afterAll(async () => {
    await app?.close();
  });

  it.each([
    ['headers only', {}],
    ['one client id', { request_token: 'one-client-id-for-all' }],
  ])('make one device with one token (%s)', async (_variant, token) => {
    const user = `first-${randomBytes(4).toString('hex')}`;
    const context = {
      ip: '81.2.69.77',
      headers: { 'User-Agent': UA, Accept: 'text/html', 'Accept-Language': 'en' },
    };
    const answers = await Promise.all(
      Array.from({ length: 60 }, () =>
        call(app, 'POST', '/v1/risk', {
          event: '$login',
          status: '$succeeded',
          user: { id: user },
          context,
          ...token,
        }),
      ),
    );
    expect(answers.map((r) => r.status)).toEqual(Array(60).fill(201));
    const tokens = new Set(answers.map((r) => r.body.device.token as string));
    expect(tokens.size).toBe(1);

    const listed = await call(app, 'GET', `/v1/users/${user}/devices`);
    expect(listed.status).toBe(200);
    expect(listed.body.data.map((d: { token: string }) => d.token)).toEqual([...tokens]);
    const found = await call(app, 'GET', `/v1/devices/${[...tokens][0]}`);
    expect(found.status).toBe(200);
    expect(found.body.user_id ?? user).toBe(user);
  });
});
