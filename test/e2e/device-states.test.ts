/**
 * Every row of Castle's device review state table, through the REST door on a real
 * database. Track is asynchronous, so each track call is followed by draining its queue.
 */
import { startTestApp, call, type TestApp } from '../support/app';
import { PACKED } from '../../src/store/state/pack';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ grpc: false });
});
afterAll(async () => {
  await app?.close();
});

const UA =
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36';
const context = {
  ip: '81.2.69.142',
  headers: { 'User-Agent': UA, Accept: 'text/html', 'Accept-Language': 'en' },
};
let n = 0;
const uid = () => `state-user-${++n}`;

/** A login risk call; `risk` forces a medium/high risk through a sandbox test token. */
async function login(
  user: string,
  device = 'chrome_on_mac',
  risk?: number,
  extra: Record<string, unknown> = {},
) {
  const token = `test|device:${device}${risk === undefined ? '' : `|risk:${risk}`}`;
  const r = await call(app, 'POST', '/v1/risk', {
    event: '$login',
    user: { id: user },
    request_token: token,
    context,
    ...extra,
  });
  expect(r.status).toBe(201);
  return r.body as { policy: { action: string }; risk: number; device: { token: string } };
}
async function track(body: Record<string, unknown>) {
  const r = await call(app, 'POST', '/v1/track', body);
  expect(r.status).toBe(204);
  await app.built.services.track.drain(false);
}
const device = async (token: string) => (await call(app, 'GET', `/v1/devices/${token}`)).body;
/** The outbox is written behind the answers: wait for what is queued, then read it. */
const incidents = async (userId: string) => {
  await app.built.state.flush();
  return (await app.built.services.webhooks.list(app.env.id, { limit: 100 })).filter(
    (d) => d.userId === userId && d.type === '$incident.confirmed',
  );
};

beforeAll(async () => {
  await app.built.services.environments.setWebhookUrl(app.env.id, 'http://127.0.0.1:9/hook');
});

describe('device review state table', () => {
  it('PUT approve: approved_at set, risk 0, default policies stop challenging on this device', async () => {
    const u = uid();
    const first = await login(u, 'chrome_on_mac', 0.7);
    expect(first.policy.action).toBe('challenge');
    const d = await call(app, 'PUT', `/v1/devices/${first.device.token}/approve`);
    expect(d.body).toMatchObject({ risk: 0, escalated_at: null });
    expect(d.body.approved_at).not.toBeNull();
    expect((await login(u, 'chrome_on_mac', 0.7)).policy.action).toBe('allow');
  });

  it('PUT report: escalated_at set, risk 100, $incident.confirmed sent, device restricted', async () => {
    const u = uid();
    const first = await login(u);
    const d = await call(app, 'PUT', `/v1/devices/${first.device.token}/report`);
    expect(d.body).toMatchObject({ risk: 100, approved_at: null });
    expect(d.body.escalated_at).not.toBeNull();
    expect((await incidents(u)).map((w) => w.trigger)).toContain('device_reported');
    expect((await login(u)).policy.action).toBe('deny');
  });

  it('track $challenge.succeeded with device_token: approved', async () => {
    const u = uid();
    const first = await login(u);
    await track({ event: '$challenge.succeeded', device_token: first.device.token });
    expect(await device(first.device.token)).toMatchObject({ risk: 0, approved_at: expect.any(String) });
  });

  it('track $review.escalated with device_token: reported and $incident.confirmed sent', async () => {
    const u = uid();
    const first = await login(u);
    await track({ event: '$review.escalated', device_token: first.device.token });
    expect(await device(first.device.token)).toMatchObject({ risk: 100, escalated_at: expect.any(String) });
    expect((await incidents(u)).map((w) => w.trigger)).toContain('review_escalated');
  });

  it('track $challenge.succeeded after a challenge verdict for the session: approved, session risk lowered', async () => {
    const u = uid();
    const first = await login(u, 'chrome_on_mac', 0.7);
    expect(first.policy.action).toBe('challenge');
    await track({
      event: '$challenge.succeeded',
      user_id: u,
      request_token: 'test|device:chrome_on_mac',
      context,
    });
    expect(await device(first.device.token)).toMatchObject({ approved_at: expect.any(String), risk: 0 });
    const again = await call(app, 'POST', '/v1/risk', {
      event: '$login',
      user: { id: u },
      request_token: 'test|device:chrome_on_mac',
      context,
    });
    const fresh = await call(app, 'POST', '/v1/risk', {
      event: '$login',
      user: { id: uid() },
      request_token: 'test|device:chrome_on_mac',
      context,
    });
    expect(again.body.risk).toBeLessThan(fresh.body.risk);
  });

  it('dashboard admin feedback: approved', async () => {
    const u = uid();
    const first = await login(u);
    const approved = await app.built.services.devices.approve(app.env.id, first.device.token);
    expect(approved.feedback).toBe('approved');
    expect(approved.approvedAt).toBeInstanceOf(Date);
  });

  it('$registration risk event: approved', async () => {
    const u = uid();
    const r = await call(app, 'POST', '/v1/risk', {
      event: '$registration',
      user: { id: u, email: `${u}@example.com` },
      request_token: 'test|device:firefox_on_linux',
      context,
    });
    expect(await device(r.body.device.token)).toMatchObject({ approved_at: expect.any(String), risk: 0 });
  });

  it('a failed registration is no registration: its device is not approved, and the user has not registered', async () => {
    const u = uid();
    const r = await call(app, 'POST', '/v1/risk', {
      type: '$registration',
      status: '$failed',
      user: { id: u, email: `${u}@example.com` },
      request_token: 'test|device:firefox_on_linux',
      context,
    });
    expect(r.status).toBe(201);
    expect(await device(r.body.device.token)).toMatchObject({ approved_at: null });
    // A login from another device soon after is not within 60 minutes of a registration.
    const next = await login(u, 'chrome_on_windows');
    expect((await device(next.device.token)).approved_at).toBeNull();
  });

  it('user registered less than 60 minutes ago: automatic approval; 2 hours ago: none', async () => {
    const recent = uid();
    const r1 = await call(app, 'POST', '/v1/risk', {
      event: '$login',
      user: { id: recent, registered_at: new Date(Date.now() - 30 * 60_000).toISOString() },
      request_token: 'test|device:safari_on_iphone',
      context,
    });
    expect((await device(r1.body.device.token)).approved_at).not.toBeNull();
    const old = uid();
    const r2 = await call(app, 'POST', '/v1/risk', {
      event: '$login',
      user: { id: old, registered_at: new Date(Date.now() - 120 * 60_000).toISOString() },
      request_token: 'test|device:safari_on_iphone',
      context,
    });
    expect((await device(r2.body.device.token)).approved_at).toBeNull();
  });

  it('the 60-minute rule uses event time, not receive time', async () => {
    const u = uid();
    const registered = new Date(Date.now() - 3 * 3_600_000);
    const r = await call(app, 'POST', '/v1/risk', {
      event: '$login',
      timestamp: new Date(registered.getTime() + 10 * 60_000).toISOString(),
      user: { id: u, registered_at: registered.toISOString() },
      request_token: 'test|device:edge_on_windows',
      context,
    });
    expect((await device(r.body.device.token)).approved_at).not.toBeNull();
  });

  it('track $password_reset.succeeded: the resetting device approved, threats marked mitigated', async () => {
    const u = uid();
    const bad = await login(u, 'chrome_on_windows');
    await call(app, 'PUT', `/v1/devices/${bad.device.token}/report`);
    const good = await login(u, 'safari_on_mac');
    await track({
      event: '$password_reset.succeeded',
      user_id: u,
      request_token: 'test|device:safari_on_mac',
      context,
    });
    expect(await device(good.device.token)).toMatchObject({ approved_at: expect.any(String), risk: 0 });
    expect((await device(bad.device.token)).mitigated_at).not.toBeNull();
  });

  it('track $incident.mitigated after the password reset: flagged device removed from the account', async () => {
    const u = uid();
    const bad = await login(u, 'chrome_on_windows');
    await login(u, 'safari_on_mac');
    await call(app, 'PUT', `/v1/devices/${bad.device.token}/report`);
    await track({ event: '$incident.mitigated', user_id: u });
    let list = await call(app, 'GET', `/v1/users/${u}/devices`);
    expect(list.body.data.map((d: { token: string }) => d.token)).toContain(bad.device.token);
    await track({
      event: '$password_reset.succeeded',
      user_id: u,
      request_token: 'test|device:safari_on_mac',
      context,
    });
    await track({ event: '$incident.mitigated', user_id: u });
    list = await call(app, 'GET', `/v1/users/${u}/devices`);
    expect(list.body.total_count).toBe(1);
    expect(list.body.data.map((d: { token: string }) => d.token)).not.toContain(bad.device.token);
  });

  it('feedback is only overwritten by later feedback: approve then report gives 100, report then approve gives 0', async () => {
    const u = uid();
    const first = await login(u);
    await call(app, 'PUT', `/v1/devices/${first.device.token}/approve`);
    await login(u, 'chrome_on_mac', 0.8);
    expect((await device(first.device.token)).risk).toBe(0);
    await call(app, 'PUT', `/v1/devices/${first.device.token}/report`);
    await login(u, 'chrome_on_mac', 0.1);
    expect((await device(first.device.token)).risk).toBe(100);
    await call(app, 'PUT', `/v1/devices/${first.device.token}/approve`);
    expect((await device(first.device.token)).risk).toBe(0);
  });

  it('a challenge or deny verdict for a known user sends $incident.confirmed (deduplicated)', async () => {
    const u = uid();
    await login(u, 'chrome_on_mac', 0.95);
    await login(u, 'chrome_on_mac', 0.95);
    const sent = await incidents(u);
    expect(sent.map((w) => w.trigger)).toEqual(['verdict_deny']);
  });
});

describe('the dashboard copy of a device', () => {
  it('is stored packed on the embedded database, its query fields plain, and searches find it by each of them', async () => {
    const u = uid();
    const first = await login(u, 'firefox_on_linux');
    await call(app, 'PUT', `/v1/devices/${first.device.token}/report`);
    await app.built.state.flush();
    const stored = await app.database.db
      .collection<{ _id: string }>('devices')
      .findOne({ token: first.device.token } as never);
    if (app.built.state.wholeDocuments) {
      expect(Object.keys(stored ?? {}).sort()).toEqual(
        [PACKED, '_id', 'envId', 'feedback', 'lastSeenAt', 'token', 'userId'].sort(),
      );
    } else expect(stored).toHaveProperty('context');
    const search = async (filter: string) => {
      const r = await call(app, 'POST', '/graphql', {
        query: `{ devices(filter: ${filter}, first: 50) { edges { node { token risk reviewState userAgent { raw } location { countryCode } } } } }`,
      });
      expect(r.body).not.toHaveProperty('errors');
      return (
        r.body as { data: { devices: { edges: { node: { token: string } }[] } } }
      ).data.devices.edges.map((e) => e.node);
    };
    for (const filter of [
      `{ userId: "${u}" }`,
      '{ reviewState: REPORTED }',
      '{ minRisk: 100 }',
      '{ country: "GB" }',
    ]) {
      const found = (await search(filter)).find((d) => d.token === first.device.token);
      expect({ filter, found }).toMatchObject({
        filter,
        found: {
          risk: 100,
          reviewState: 'REPORTED',
          userAgent: { raw: UA },
          location: { countryCode: 'GB' },
        },
      });
    }
  });
});
