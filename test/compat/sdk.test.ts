/**
 * Castle's official server SDKs, unmodified, pointed at Rampart by their base-URL setting:
 * `@castleio/sdk` (npm) and `castle` 6.x and 7.x (PyPI). Each scenario runs the SDK in its own
 * process (test/compat/node and test/compat/python) and we check the verdicts, devices and errors it saw.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { createHmac } from 'node:crypto';
import { startTestApp, call, type TestApp } from '../support/app';
import { LAPTOP_UA, laptopComponents } from '../support/components';

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, '..', '..');
const PY = {
  castle6: path.join(ROOT, '.venv', 'castle6', 'bin', 'python'),
  castle7: path.join(ROOT, '.venv', 'castle7', 'bin', 'python'),
};

let app: TestApp;
beforeAll(async () => {
  for (const py of Object.values(PY)) {
    if (!existsSync(py)) throw new Error(`${py} is missing: run scripts/setup-compat.sh (npm test does)`);
  }
  app = await startTestApp({ grpc: false });
  await app.built.services.environments.setPrivacyEmail(app.env.id, 'privacy@example.com');
});
afterAll(async () => {
  await app?.close();
});

interface Outcome {
  ok?: boolean;
  skipped?: string;
  result?: Record<string, unknown> & {
    action?: string;
    policy?: { action: string; id: string };
    device?: { token: string };
  };
  error?: { class: string; message: string };
}

let counter = 0;
async function drive(
  sdk: 'node' | 'castle6' | 'castle7',
  scenario: string,
  env: Record<string, string> = {},
): Promise<Outcome> {
  // A user and an address of its own per call: many new accounts from one address within the hour
  // is what the engine's velocity evidence is for, and not what these tests are about.
  const user = `compat-${sdk}-${++counter}`;
  const vars = {
    ...process.env,
    RAMPART_URL: app.baseUrl,
    RAMPART_SECRET: app.secret,
    RAMPART_USER_ID: user,
    RAMPART_EMAIL: `${user}@example.com`,
    RAMPART_IP: `81.2.69.${10 + (counter % 200)}`,
    ...env,
  };
  const [cmd, script] =
    sdk === 'node'
      ? [process.execPath, path.join(__dirname, 'node', 'drive_castle.js')]
      : [PY[sdk], path.join(__dirname, 'python', 'drive_castle.py')];
  const { stdout } = await run(cmd, [script, scenario], { env: vars, timeout: 30_000 }).catch(
    (err: { stdout?: string }) => ({ stdout: err.stdout ?? '' }),
  );
  const line = stdout.trim().split('\n').pop() ?? '';
  return JSON.parse(line) as Outcome;
}

describe.each(['castle6', 'castle7'] as const)('Python SDK %s', (sdk) => {
  it('risk: a verdict with policy, risk, signals and a device token', async () => {
    const r = await drive(sdk, 'risk_login');
    expect(r.error).toBeUndefined();
    expect(r.result?.policy?.action).toBe('allow');
    expect(r.result?.device?.token).toEqual(expect.any(String));
    expect(r.result).toHaveProperty('risk');
    expect(r.result).toHaveProperty('signals');
    expect(r.result?.failover ?? false).toBe(false);
  });
  it('filter: a verdict without a device', async () => {
    const r = await drive(sdk, 'filter_registration');
    expect(r.error).toBeUndefined();
    expect(r.result?.policy?.action).toBe('allow');
    expect(r.result?.failover ?? false).toBe(false);
  });
  it('filter with a disposable e-mail shows the signal', async () => {
    const r = await drive(sdk, 'filter_registration', { RAMPART_EMAIL: 'someone@mailinator.com' });
    expect(Object.keys((r.result?.signals as object) ?? {})).toContain('disposable_email');
  });
  it('log: accepted', async () => {
    const r = await drive(sdk, 'log_event');
    expect(r.error).toBeUndefined();
    expect(r.ok).toBe(true);
  });
  it('a sandbox test token forces deny', async () => {
    const r = await drive(sdk, 'risk_login', {
      RAMPART_REQUEST_TOKEN: 'test|device:chrome_on_mac|policy.action:deny|risk:0.95',
    });
    expect(r.result?.policy?.action).toBe('deny');
  });
  it('a wrong secret raises UnauthorizedError', async () => {
    expect((await drive(sdk, 'bad_secret_risk')).error?.class).toBe('UnauthorizedError');
  });
  it('an invalid IP raises InvalidParametersError', async () => {
    expect((await drive(sdk, 'invalid_ip_risk')).error?.class).toBe('InvalidParametersError');
  });
  it('a malformed request token raises InvalidRequestTokenError', async () => {
    expect(
      (await drive(sdk, 'invalid_request_token_risk', { RAMPART_BAD_REQUEST_TOKEN: 'test|risk:nine' })).error
        ?.class,
    ).toBe('InvalidRequestTokenError');
  });
  it('verifies a Rampart webhook signature with its own helper', async () => {
    const body = JSON.stringify({ api_version: 'v1', type: '$incident.confirmed', data: { user_id: 'u' } });
    const signature = createHmac('sha256', app.secret).update(body).digest('base64');
    const r = await drive(sdk, 'webhook_verify', { WEBHOOK_BODY: body, WEBHOOK_SIGNATURE: signature });
    expect(r.ok).toBe(true);
    const forged = await drive(sdk, 'webhook_verify', { WEBHOOK_BODY: body, WEBHOOK_SIGNATURE: 'AAAA' });
    expect(forged.ok).toBe(false);
  });
});

describe('Python SDK castle6: authenticate, track and the device API', () => {
  it('authenticate answers an action', async () => {
    const r = await drive('castle6', 'authenticate_login');
    expect(r.error).toBeUndefined();
    expect(r.result?.action).toBe('allow');
    expect(r.result?.failover ?? false).toBe(false);
  });
  it('track is accepted', async () => {
    expect((await drive('castle6', 'track_login_failed')).ok).toBe(true);
  });
  it('lists, gets, approves and reports the user device', async () => {
    const user = 'compat-devices-6';
    await call(app, 'POST', '/v1/risk', {
      event: '$login',
      user: { id: user },
      request_token: 'cid-compat-6',
      context: { ip: '81.2.69.142', headers: { 'User-Agent': 'Mozilla/5.0 Firefox/120.0' } },
    });
    const r = await drive('castle6', 'devices', { RAMPART_USER_ID: user });
    expect(r.error).toBeUndefined();
    const steps = r.result as Record<string, { ok: boolean; result: Record<string, unknown> }>;
    expect(steps.list?.result).toMatchObject({ total_count: 1 });
    expect(steps.approve?.result.approved_at).toEqual(expect.any(String));
    expect(steps.report?.result.escalated_at).toEqual(expect.any(String));
  });
  it('tracks $review.escalated by device token and the device becomes reported', async () => {
    const user = 'compat-review-6';
    const v = await call(app, 'POST', '/v1/risk', {
      event: '$login',
      user: { id: user },
      request_token: 'cid-compat-r',
      context: { ip: '81.2.69.142', headers: { 'User-Agent': 'Mozilla/5.0 Firefox/120.0' } },
    });
    const r = await drive('castle6', 'track_review_escalated', { RAMPART_DEVICE_TOKEN: v.body.device.token });
    expect(r.ok).toBe(true);
    await app.built.services.track.drain(false);
    expect((await call(app, 'GET', `/v1/devices/${v.body.device.token}`)).body.risk).toBe(100);
  });
});

describe('Python SDK castle7: privacy', () => {
  it('requests a data export and purges by identifier', async () => {
    const user = 'compat-privacy-7';
    await call(app, 'POST', '/v1/risk', {
      event: '$login',
      user: { id: user, email: `${user}@example.com` },
      request_token: 'cid-p7',
      context: { ip: '81.2.69.142', headers: { 'User-Agent': 'Mozilla/5.0 Firefox/120.0' } },
    });
    const access = await drive('castle7', 'privacy_request', { RAMPART_USER_ID: user });
    expect(access.error).toBeUndefined();
    const purge = await drive('castle7', 'privacy_purge', {
      RAMPART_USER_ID: user,
      RAMPART_EMAIL: `${user}@example.com`,
      RAMPART_PRIVACY_IDENTIFIER_TYPE: '$email',
    });
    expect(purge.error).toBeUndefined();
    expect((await call(app, 'GET', `/v1/users/${user}/devices`)).status).toBe(404);
  });
});

describe('Python SDK castle7: lists', () => {
  type Step = { ok: boolean; result?: any; error?: { class: string; message: string } };
  it('every lists command: create, get all, get, query, update, delete', async () => {
    const r = await drive('castle7', 'lists');
    const steps = r.result as unknown as Record<string, Step>;
    for (const [name, step] of Object.entries(steps))
      if (name !== 'get_deleted') expect([name, step.error]).toEqual([name, undefined]);
    expect(r.ok).toBe(true);
    const created = steps.create?.result;
    expect(created).toMatchObject({ primary_field: 'ip', color: '$red', description: 'made by the SDK' });
    expect(steps.get_all?.result.map((l: { id: string }) => l.id)).toContain(created.id);
    expect(steps.get?.result).toEqual(created);
    expect(steps.query?.result.map((l: { id: string }) => l.id)).toEqual([created.id]);
    expect(steps.update?.result).toMatchObject({
      id: created.id,
      color: '$blue',
      name: `${created.name} (renamed)`,
    });
    expect(steps.delete?.result).toEqual({});
    expect(steps.get_deleted?.error?.class).toBe('NotFoundError');
  });
  it("every list-items command, and a block list then denies the SDK's next risk call", async () => {
    const list = (
      await call(app, 'POST', '/v1/lists', { name: 'compat block list', color: '$red', primary_field: 'ip' })
    ).body as { id: string };
    const policy = await app.built.services.policies.create(app.env.id, {
      name: 'Deny compat block list',
      group: 'before',
      action: 'deny',
      conditions: { inLists: [list.id] },
    });
    const ip = '81.2.69.250';
    const r = await drive('castle7', 'list_items', {
      RAMPART_LIST_ID: list.id,
      RAMPART_IP: ip,
      RAMPART_REQUEST_TOKEN: 'compat-lists-client-id',
    });
    const steps = r.result as unknown as Record<string, Step>;
    for (const [name, step] of Object.entries(steps)) expect([name, step.error]).toEqual([name, undefined]);
    const item = steps.create?.result;
    expect(item).toMatchObject({
      list_id: list.id,
      primary_value: ip,
      comment: 'seen in an incident',
      author: { type: '$analyst_email', identifier: 'analyst@example.com' },
      archived: false,
    });
    expect(steps.create_batch?.result.map((i: { primary_value: string }) => i.primary_value)).toEqual([
      '203.0.113.0/24',
      '2001:db8::/32',
    ]);
    expect(steps.get?.result).toEqual(item);
    expect(steps.query?.result.map((i: { id: string }) => i.id)).toEqual([item.id]);
    expect(steps.count?.result).toEqual({ total_count: 3 });
    expect(steps.update?.result.comment).toBe('confirmed');
    expect(steps.archive?.result).toMatchObject({ archived: true });
    expect(steps.unarchive?.result).toMatchObject({ archived: false });
    expect(steps.risk?.result.policy).toMatchObject({ action: 'deny', name: 'Deny compat block list' });
    expect(steps.risk?.result.signals.in_list).toMatchObject({
      list_id: list.id,
      item_id: item.id,
      value: ip,
    });
    await app.built.services.policies.archive(app.env.id, policy.id);
  });
});

describe('Node SDK @castleio/sdk', () => {
  it('authenticate answers allow without failover', async () => {
    const r = await drive('node', 'authenticate_login');
    expect(r.error).toBeUndefined();
    expect(r.result?.action).toBe('allow');
    expect(r.result?.failover ?? false).toBe(false);
  });
  it('authenticate a registration', async () => {
    const r = await drive('node', 'authenticate_registration');
    expect(r.result?.action).toBe('allow');
  });
  it('track is accepted', async () => {
    expect((await drive('node', 'track_login_failed')).ok).toBe(true);
  });
  it('a wrong secret is reported as an error', async () => {
    expect((await drive('node', 'bad_secret_authenticate')).error?.message).toMatch(/secret/i);
  });
  it('an invalid IP is an error, not a failover verdict', async () => {
    const r = await drive('node', 'invalid_ip_authenticate');
    expect(r.result?.failover).toBeUndefined();
    expect(r.error?.message).toMatch(/422/);
  });
});

/**
 * A page that used Castle's web client now loads Rampart's script with Castle's names: the
 * `__cid` cookie holds a Rampart token. The backend is unchanged: an Express handler that gives
 * the SDK `client_id: req.cookies['__cid']` (or a Castle SDK that reads the cookie itself).
 */
describe("Castle's SDKs forwarding the __cid cookie of Rampart's script", () => {
  /**
   * A token as the script gets one on the user's laptop (the collector, called as the page calls
   * it): a laptop of each user's own (one laptop for several accounts within the hour is evidence
   * of its own, multiple_accounts_per_device).
   */
  async function pageToken(user: string): Promise<string> {
    const r = await call(
      app,
      'POST',
      '/v1/client/token',
      {
        publishable_key: app.env.publishableKey,
        components: laptopComponents({ canvas: `canvas-of-${user}` }),
      },
      { secret: null, headers: { 'content-type': 'text/plain', origin: 'https://shop.example' } },
    );
    expect(r.status).toBe(201);
    return r.body.token as string;
  }
  /** The user's devices, the one a fresh token of the user's laptop names marked current. */
  async function devicesSeenBy(user: string): Promise<{ token: string; is_current_device: boolean }[]> {
    const r = await call(
      app,
      'GET',
      `/v1/users/${user}/devices?cid=${encodeURIComponent(await pageToken(user))}`,
    );
    expect(r.status).toBe(200);
    return r.body.data as { token: string; is_current_device: boolean }[];
  }
  // One address for all of a test's calls: a token used from a second address is a replay.
  const laptop = { RAMPART_USER_AGENT: LAPTOP_UA, RAMPART_IP: '81.2.69.142' };

  it('Node: authenticate from an Express request reads the device from the token in the cookie', async () => {
    const user = 'compat-cid-node';
    const r = await drive('node', 'authenticate_from_request', {
      ...laptop,
      RAMPART_USER_ID: user,
      RAMPART_CID_COOKIE: await pageToken(user),
    });
    expect(r.error).toBeUndefined();
    expect(r.result?.action).toBe('allow');
    expect(r.result?.signals).not.toHaveProperty('invalid_token');
    expect(r.result?.signals).not.toHaveProperty('replayed_token');
    // The device the verdict named is the laptop's: another token of the laptop names it too.
    const devices = await devicesSeenBy(user);
    expect(devices).toEqual([
      expect.objectContaining({ token: r.result?.device_token, is_current_device: true }),
    ]);
  });

  it('Node: without the cookie, or with an altered token in it, the laptop is not recognised', async () => {
    const user = 'compat-cid-node-2';
    const first = await drive('node', 'authenticate_from_request', {
      ...laptop,
      RAMPART_USER_ID: user,
      RAMPART_CID_COOKIE: await pageToken(user),
    });
    const none = await drive('node', 'authenticate_from_request', { ...laptop, RAMPART_USER_ID: user });
    expect(none.result?.device_token).not.toBe(first.result?.device_token);
    const [prefix, claims, mac] = (await pageToken(user)).split('.') as [string, string, string];
    const decoded = JSON.parse(Buffer.from(claims, 'base64url').toString('utf8')) as Record<string, unknown>;
    const altered = `${prefix}.${Buffer.from(JSON.stringify({ ...decoded, dk: 'someone-elses-device' })).toString('base64url')}.${mac}`;
    const forged = await drive('node', 'authenticate_from_request', {
      ...laptop,
      RAMPART_USER_ID: user,
      RAMPART_CID_COOKIE: altered,
    });
    expect(forged.result?.signals).toMatchObject({ invalid_token: { reason: 'forged' } });
    expect(forged.result?.action).not.toBe('allow');
  });

  it('Node: the X-Castle-Client-Id header an SPA sends, forwarded among the headers, is read too', async () => {
    const user = 'compat-cid-node-3';
    const r = await drive('node', 'authenticate_from_request', {
      ...laptop,
      RAMPART_USER_ID: user,
      RAMPART_CID_HEADER: await pageToken(user),
    });
    expect(r.result?.action).toBe('allow');
    expect((await devicesSeenBy(user)).map((d) => d.is_current_device)).toEqual([true]);
  });

  it('Node: track from an Express request counts as a use of the token (one login flow)', async () => {
    const user = 'compat-cid-node-4';
    const t = await pageToken(user);
    expect(
      (
        await drive('node', 'authenticate_from_request', {
          ...laptop,
          RAMPART_USER_ID: user,
          RAMPART_CID_COOKIE: t,
        })
      ).result?.signals,
    ).not.toHaveProperty('replayed_token');
    expect(
      (await drive('node', 'track_from_request', { ...laptop, RAMPART_USER_ID: user, RAMPART_CID_COOKIE: t }))
        .ok,
    ).toBe(true);
    await app.built.services.track.drain(false);
    // A use from another address is a replay.
    const elsewhere = await drive('node', 'authenticate_from_request', {
      ...laptop,
      RAMPART_USER_ID: user,
      RAMPART_CID_COOKIE: t,
      RAMPART_IP: '203.0.113.99',
    });
    expect(elsewhere.result?.signals).toHaveProperty('replayed_token');
  });

  it('Python castle 6: Client.from_request reads the cookie itself', async () => {
    const user = 'compat-cid-py6';
    const r = await drive('castle6', 'authenticate_login', {
      ...laptop,
      RAMPART_USER_ID: user,
      RAMPART_CLIENT_ID: await pageToken(user),
    });
    expect(r.error).toBeUndefined();
    expect(r.result?.action).toBe('allow');
    expect(r.result?.signals).not.toHaveProperty('invalid_token');
    expect(await devicesSeenBy(user)).toEqual([
      expect.objectContaining({ token: r.result?.device_token, is_current_device: true }),
    ]);
  });
});
