/**
 * The REST /v1 surface over real HTTP on loopback, against a real database: every endpoint's
 * documented success answer, authentication, and the payload forms docs/decisions.md accepts.
 */
import { startTestApp, call, basic, type TestApp } from '../support/app';
import { storedOf } from '../support/stored';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ grpc: false });
});
afterAll(async () => {
  await app?.close();
});

const UA_CHROME_MAC =
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36';
const ctx = (ip = '81.2.69.142', extra: Record<string, string> = {}) => ({
  ip,
  headers: { 'User-Agent': UA_CHROME_MAC, Accept: 'text/html', 'Accept-Language': 'en-GB', ...extra },
});

describe('verdict endpoints', () => {
  it('POST /v1/authenticate answers 201 with action, user_id, device_token, risk, policy, signals', async () => {
    const r = await call(app, 'POST', '/v1/authenticate', {
      event: '$login.succeeded',
      user_id: 'auth-1',
      user_traits: { email: 'auth1@example.com' },
      context: { ...ctx(), client_id: 'cid-auth-1' },
    });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({ action: 'allow', user_id: 'auth-1' });
    expect(typeof r.body.device_token).toBe('string');
    expect(r.body.risk).toBeGreaterThanOrEqual(0);
    expect(r.body.risk).toBeLessThanOrEqual(1);
    expect(r.body.policy).toEqual({
      action: 'allow',
      name: 'Allow everything else',
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      revision: expect.stringMatching(/^[0-9a-f-]{36}$/),
    });
    expect(typeof r.body.signals).toBe('object');
  });

  it('POST /v1/risk answers 201 with device.token, policy, risk and signals', async () => {
    const r = await call(app, 'POST', '/v1/risk', {
      event: '$login',
      user: { id: 'risk-1', email: 'r1@example.com' },
      request_token: 'tok-risk-1',
      context: ctx(),
    });
    expect(r.status).toBe(201);
    expect(Object.keys(r.body).sort()).toEqual(['degraded', 'device', 'policy', 'risk', 'signals']);
    expect(r.body.degraded).toBe(false);
    expect(r.body.device.token).toMatch(/^[A-Za-z0-9_-]{32,}$/);
    expect(['allow', 'challenge', 'deny']).toContain(r.body.policy.action);
  });

  it('POST /v1/filter answers 201 with policy, risk and signals and no device', async () => {
    const r = await call(app, 'POST', '/v1/filter', {
      event: '$registration',
      user: { email: 'f1@example.com' },
      request_token: 'tok-f-1',
      context: ctx(),
    });
    expect(r.status).toBe(201);
    expect(Object.keys(r.body).sort()).toEqual(['degraded', 'policy', 'risk', 'signals']);
  });

  it('accepts the newer type + status form and params on filter', async () => {
    const r = await call(app, 'POST', '/v1/filter', {
      type: '$registration',
      status: '$attempted',
      params: { email: 'f2@mailinator.com' },
      request_token: 'tok-f-2',
      context: ctx(),
    });
    expect(r.status).toBe(201);
    expect(r.body.signals).toHaveProperty('disposable_email');
  });

  it('a failed login on filter gets a verdict by the default policies: a script is denied, a browser let through', async () => {
    const failed = (headers: Record<string, string>, email: string) =>
      call(app, 'POST', '/v1/filter', {
        type: '$login',
        status: '$failed',
        params: { email },
        context: { ip: '81.2.69.142', headers },
      });
    const script = await failed(
      { 'User-Agent': 'python-requests/2.31.0', Accept: '*/*' },
      'ff-1@example.com',
    );
    expect(script.status).toBe(201);
    expect(script.body.policy).toMatchObject({ action: 'deny', name: 'Deny high-risk failed logins' });
    expect(script.body.signals).toHaveProperty('bot_behavior');
    const person = await failed(ctx().headers, 'ff-2@example.com');
    expect(person.body.policy).toMatchObject({ action: 'allow', name: 'Allow everything else' });
  });

  it('pre-auth checks for many accounts through one operator raise high_activity_network, though no password was ever tried', async () => {
    // A login list pushed through one provider's addresses, each attempt from another address and
    // with another browser version (so neither the address nor the request shape repeats), and
    // stopped before the password: nothing failed, only the operator's accounts pile up.
    const attempt = (k: number) =>
      call(app, 'POST', '/v1/filter', {
        type: '$login',
        status: '$attempted',
        params: { email: `list-${k}@example.com` },
        context: {
          ip: `149.33.44.${k + 1}`,
          headers: {
            'User-Agent': UA_CHROME_MAC.replace('Chrome/120', `Chrome/${90 + k}`),
            Accept: 'text/html',
            'Accept-Language': 'en-GB',
          },
        },
      });
    // Until the environment has counted 200 legitimate events no operator has a usual share.
    const quiet = await attempt(0);
    expect(quiet.body.signals).not.toHaveProperty('high_activity_network');
    for (let k = 0; k < 200; k += 20) {
      await Promise.all(
        Array.from({ length: 20 }, (_, j) =>
          call(app, 'POST', '/v1/track', {
            event: '$login.succeeded',
            user_id: `settled-${k + j}`,
            context: ctx(`81.2.69.${10 + ((k + j) % 200)}`),
          }),
        ),
      );
    }
    const first = await attempt(1);
    expect(first.status).toBe(201);
    expect(first.body.signals).not.toHaveProperty('high_activity_network');
    let last = first;
    for (let k = 2; k < 34; k++) last = await attempt(k);
    expect(last.body.signals.high_activity_network).toMatchObject({
      by: 'operator',
      asn: 'AS9009',
      accounts_last_hour: expect.any(Number),
      score: 3,
    });
    expect(last.body.signals).not.toHaveProperty('high_activity_ip');
    expect(last.body.signals).not.toHaveProperty('request_shape_burst');
    expect(last.body.policy.action).toBe('deny');
  });

  it('returns the same device token for the same user and fingerprint, another for another fingerprint', async () => {
    const body = (cid: string) => ({
      event: '$login',
      user: { id: 'same-1' },
      request_token: cid,
      context: ctx(),
    });
    const a = await call(app, 'POST', '/v1/risk', body('fp-a'));
    const b = await call(app, 'POST', '/v1/risk', body('fp-a'));
    const c = await call(app, 'POST', '/v1/risk', body('fp-c'));
    expect(a.body.device.token).toBe(b.body.device.token);
    expect(c.body.device.token).not.toBe(a.body.device.token);
    expect(c.body.signals).toHaveProperty('new_device');
  });

  it('counts distinct accounts per fingerprint: the same user again does not, a third user does', async () => {
    const risk = async (user: string) => {
      const r = await call(app, 'POST', '/v1/risk', {
        event: '$login',
        user: { id: user },
        request_token: 'shared-fp',
        context: ctx('81.2.69.160'),
      });
      return r.body.signals as Record<string, { accounts?: number }>;
    };
    await risk('ma-1');
    await risk('ma-1');
    expect(await risk('ma-2')).not.toHaveProperty('multiple_accounts_per_device');
    expect((await risk('ma-3')).multiple_accounts_per_device).toMatchObject({ accounts: 3 });
    expect((await risk('ma-1')).multiple_accounts_per_device).toMatchObject({ accounts: 3 });
  });

  it('applies sandbox test tokens', async () => {
    const r = await call(app, 'POST', '/v1/risk', {
      event: '$login',
      user: { id: 'tt-1' },
      request_token: 'test|device:chrome_on_mac|ip:us-ca|policy.action:deny|risk:0.95',
      context: ctx(),
    });
    expect(r.status).toBe(201);
    expect(r.body.policy.action).toBe('deny');
    expect(r.body.risk).toBe(0.95);
  });

  it("answers a test token's forced action with a test policy of its own, never another policy's id or revision", async () => {
    const forced = async (action: string) => {
      const r = await call(app, 'POST', '/v1/risk', {
        event: '$login',
        user: { id: `tt-${action}` },
        request_token: `test|device:chrome_on_mac|policy.action:${action}`,
        context: ctx(),
      });
      expect(r.status).toBe(201);
      return r.body.policy as { action: string; name: string; id: string; revision: string };
    };
    const deny = await forced('deny');
    expect(deny).toEqual({
      action: 'deny',
      name: 'Sandbox test token (deny)',
      id: '00000000-0000-0000-0000-000000000003',
      revision: '00000000-0000-0000-0000-000000000003',
    });
    expect(await forced('challenge')).toEqual({
      action: 'challenge',
      name: 'Sandbox test token (challenge)',
      id: '00000000-0000-0000-0000-000000000002',
      revision: '00000000-0000-0000-0000-000000000002',
    });
    expect(await forced('allow')).toEqual({
      action: 'allow',
      name: 'Sandbox test token (allow)',
      id: '00000000-0000-0000-0000-000000000001',
      revision: '00000000-0000-0000-0000-000000000001',
    });
    await app.built.state.flush();
    // None of the environment's policies (archived ones and every revision included) has these ids.
    const res = await fetch(`${app.baseUrl}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: basic(app.secret) },
      body: JSON.stringify({
        query:
          '{ policies(includeArchived: true) { id revisions { id } } events(filter: { userId: "tt-deny" }) { edges { node { policy { id testToken revisionDetails { id } current { id } } } } } }',
      }),
    });
    const data = (
      (await res.json()) as {
        data: {
          policies: { id: string; revisions: { id: string }[] }[];
          events: { edges: { node: { policy: unknown } }[] };
        };
      }
    ).data;
    const known = new Set(data.policies.flatMap((p) => [p.id, ...p.revisions.map((r) => r.id)]));
    expect(known.size).toBeGreaterThan(5);
    expect(known.has(deny.id)).toBe(false);
    expect(known.has(deny.revision)).toBe(false);
    // The stored event names the same test policy, with no revision or current policy to show.
    expect(data.events.edges.map((e) => e.node.policy)).toEqual([
      { id: deny.id, testToken: true, revisionDetails: null, current: null },
    ]);
  });
});

describe('track and log', () => {
  it.each(['/v1/track', '/v1/log'])('%s answers 204 with no body', async (path) => {
    const r = await call(app, 'POST', path, { event: '$login.failed', user_id: 'track-1', context: ctx() });
    expect(r.status).toBe(204);
    expect(r.body).toBeNull();
  });
  it('keeps malformed track bodies in the debugger with their reason', async () => {
    const r = await call(app, 'POST', '/v1/track', { event: '$nope' });
    expect(r.status).toBe(204);
    const n = await call(app, 'POST', '/v1/track', undefined, { raw: 'not json' });
    expect(n.status).toBe(204);
    await app.built.services.track.drain(false);
    const entries = await storedOf(app).debugger(app.env.id, 10);
    expect(entries.map((e) => e.reason)).toEqual(
      expect.arrayContaining([expect.stringContaining('unknown event'), 'request body is not valid JSON']),
    );
  });
  it('stores accepted track events', async () => {
    await call(app, 'POST', '/v1/track', { event: '$login.failed', user_id: 'track-store', context: ctx() });
    await app.built.services.track.drain(false);
    const events = await storedOf(app).eventsOfUser(app.env.id, 'track-store', 10);
    expect(events.map((e) => e.name)).toContain('$login.failed');
  });
});

describe('devices', () => {
  it('lists, gets, approves and reports a device; marks the current device by cid or client_id', async () => {
    const r = await call(app, 'POST', '/v1/risk', {
      event: '$login',
      user: { id: 'dev-1' },
      request_token: 'cid-dev-1',
      context: ctx(),
    });
    const token = r.body.device.token as string;
    for (const q of ['cid', 'client_id']) {
      const list = await call(app, 'GET', `/v1/users/dev-1/devices?${q}=cid-dev-1`);
      expect(list.status).toBe(200);
      expect(list.body.total_count).toBe(1);
      expect(list.body.data[0]).toMatchObject({
        token,
        user_id: 'dev-1',
        is_current_device: true,
        approved_at: null,
        escalated_at: null,
        mitigated_at: null,
      });
      expect(list.body.data[0].context).toMatchObject({
        ip: '81.2.69.142',
        type: 'desktop',
        user_agent: { raw: UA_CHROME_MAC, browser: 'Chrome', mobile: false },
      });
      expect(list.body.data[0].context.location).toMatchObject({ country_code: 'GB' });
    }
    const other = await call(app, 'GET', '/v1/users/dev-1/devices?cid=someone-else');
    expect(other.body.data[0].is_current_device).toBe(false);
    const one = await call(app, 'GET', `/v1/devices/${token}`);
    expect(one.status).toBe(200);
    expect(one.body.token).toBe(token);
    const approved = await call(app, 'PUT', `/v1/devices/${token}/approve`);
    expect(approved.status).toBe(200);
    expect(approved.body.approved_at).toEqual(expect.any(String));
    expect(approved.body.risk).toBe(0);
    const reported = await call(app, 'PUT', `/v1/devices/${token}/report`);
    expect(reported.status).toBe(200);
    expect(reported.body.escalated_at).toEqual(expect.any(String));
    expect(reported.body.risk).toBe(100);
  });
  it('accepts empty JSON bodies on PUT, as the Python SDK sends them', async () => {
    const r = await call(app, 'POST', '/v1/risk', {
      event: '$login',
      user: { id: 'dev-2' },
      request_token: 'cid-dev-2',
      context: ctx(),
    });
    const res = await fetch(`${app.baseUrl}/v1/devices/${r.body.device.token}/approve`, {
      method: 'PUT',
      headers: {
        authorization: `Basic ${Buffer.from(`:${app.secret}`).toString('base64')}`,
        'content-type': 'application/json',
        'content-length': '0',
      },
    });
    expect(res.status).toBe(200);
  });
  it('answers 404 for unknown devices and users', async () => {
    expect((await call(app, 'GET', '/v1/devices/nope')).body).toMatchObject({ type: 'not_found' });
    expect((await call(app, 'GET', '/v1/users/nobody/devices')).status).toBe(404);
    expect((await call(app, 'PUT', '/v1/devices/nope/approve')).status).toBe(404);
  });
});

describe('errors and routing', () => {
  it('answers 404 route_not_found for unknown paths', async () => {
    const r = await call(app, 'GET', '/v1/nothing');
    expect(r.status).toBe(404);
    expect(r.body).toEqual({ type: 'route_not_found', message: expect.any(String) });
  });
  it('tolerates duplicate slashes from a base URL with a trailing slash', async () => {
    const r = await call(app, 'POST', '//v1/track', { event: '$login.failed', user_id: 'slash' });
    expect(r.status).toBe(204);
  });
});
