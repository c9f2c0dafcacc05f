/**
 * Castle's Java SDK (`io.castle:castle-java` 2.3.2, unmodified), pointed at Rampart with
 * `withApiBaseUrl`, in a small application (test/compat/java, built with Maven by
 * scripts/setup-compat.sh). One JVM runs every scenario, one JSON line each; each scenario has
 * a user and an address of its own. We check what the SDK returned or raised, and what Rampart
 * kept.
 */
import { execFile } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { startTestApp, call, type TestApp } from '../support/app';
import { storedOf } from '../support/stored';

const run = promisify(execFile);
const DIR = path.join(__dirname, 'java');
const CLASSPATH_FILE = path.join(DIR, 'target', 'classpath.txt');
const CLASSES = path.join(DIR, 'target', 'classes');

interface Outcome {
  sdk: string;
  sdk_version: string;
  scenario: string;
  ok: boolean;
  result?: any;
  error?: { class: string; message: string; status?: number; body?: string };
}

const SCENARIOS = [
  'authenticate_login',
  'authenticate_simple',
  'authenticate_message',
  'authenticate_registration',
  'authenticate_async',
  'authenticate_build_send',
  'authenticate_merged_context',
  'authenticate_do_not_track',
  'track_login_failed',
  'track_message',
  'track_fire_and_forget',
  'risk_map',
  'risk_typed',
  'filter_map',
  'filter_typed',
  'log_map',
  'log_typed',
  'devices',
  'devices_unknown',
  'remove_user',
  'generic',
  'unsupported',
  'secure_user_id',
  'bad_secret_authenticate',
  'bad_secret_risk',
  'bad_secret_devices',
  'invalid_ip_risk',
  'invalid_request_token_risk',
  'invalid_ip_authenticate',
  'missing_user_authenticate',
] as const;
type Scenario = (typeof SCENARIOS)[number];

const USER = 'java';
const MERGED_IP = '81.2.69.160';
let app: TestApp;
let out: Record<string, Outcome>;

async function drive(
  scenarios: readonly string[],
  env: Record<string, string> = {},
): Promise<Record<string, Outcome>> {
  const classpath = `${CLASSES}${path.delimiter}${readFileSync(CLASSPATH_FILE, 'utf8').trim()}`;
  const vars = {
    ...process.env,
    RAMPART_URL: app.baseUrl,
    RAMPART_SECRET: app.secret,
    RAMPART_USER_ID: USER,
    RAMPART_MERGED_IP: MERGED_IP,
    ...env,
  };
  const { stdout } = await run('java', ['-cp', classpath, 'rampart.compat.DriveCastle', ...scenarios], {
    env: vars,
    timeout: 120_000,
    maxBuffer: 16 * 1024 * 1024,
  });
  const lines = stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Outcome);
  return Object.fromEntries(lines.map((l) => [l.scenario, l]));
}

const user = (scenario: Scenario) => `${USER}-${scenario}`;
const result = (scenario: Scenario) => {
  const o = out[scenario];
  expect(o).toBeDefined();
  expect(o?.error).toBeUndefined();
  expect(o?.ok).toBe(true);
  return o?.result;
};
const error = (scenario: Scenario) => {
  const o = out[scenario];
  expect(o?.ok).toBe(false);
  return o?.error;
};

beforeAll(async () => {
  if (!existsSync(CLASSPATH_FILE))
    throw new Error(`${CLASSPATH_FILE} is missing: run scripts/setup-compat.sh (npm test does)`);
  app = await startTestApp({ grpc: false });
  await app.built.services.environments.setPrivacyEmail(app.env.id, 'privacy@example.com');
  out = await drive(SCENARIOS);
  await app.built.services.track.drain(false);
  await app.built.state.flush();
}, 180_000);
afterAll(async () => {
  await app?.close();
});

it('ran the published SDK, version 2.3.2, for every scenario', () => {
  expect(Object.keys(out).sort()).toEqual([...SCENARIOS].sort());
  for (const o of Object.values(out))
    expect({ sdk: o.sdk, sdk_version: o.sdk_version }).toEqual({ sdk: 'castle-java', sdk_version: '2.3.2' });
});

describe('authenticate', () => {
  it.each([
    'authenticate_login',
    'authenticate_message',
    'authenticate_async',
    'authenticate_merged_context',
  ] as const)('%s: allow, with a device token, without failover', (scenario) => {
    const v = result(scenario);
    expect(v).toMatchObject({ action: 'allow', user_id: user(scenario), failover: false });
    expect(v.device_token).toEqual(expect.any(String));
    expect(v.internal.policy.action).toBe('allow');
  });

  it('the Go-style call without traits gets a verdict, naming the e-mail it lacked', () => {
    const v = result('authenticate_simple');
    expect(v).toMatchObject({ action: 'allow', failover: false });
    expect(v.internal.signals.missing_fields).toEqual({ missing: 'user_traits.email', score: 0 });
  });

  it('a registration (no user yet) gets a verdict', () => {
    expect(result('authenticate_registration')).toMatchObject({ action: 'allow', failover: false });
  });

  it('a built request can be sent, synchronously and asynchronously', () => {
    const v = result('authenticate_build_send');
    expect(v).toMatchObject({ action: 'allow', failover: false });
    expect(v.async).toMatchObject({ action: 'allow', failover: false, device_token: v.device_token });
  });

  it("the context came from the application's request: headers, scrubbed cookie, __cid fingerprint, client address", async () => {
    const [event] = await storedOf(app).eventsOfUser(app.env.id, user('authenticate_login'), 10);
    expect(event?.ip).toMatch(/^81\.2\.69\.\d+$/);
    expect(event?.context.headers).toMatchObject({
      'user-agent': expect.stringContaining('Chrome/120'),
      'accept-language': 'en-GB,en;q=0.9',
      cookie: true,
    });
    expect(event?.context.fingerprint).toBe(`cid-${user('authenticate_login')}`);
    expect(event?.context.extra).toMatchObject({ library: { name: 'castle-java', version: '2.3.2' } });
  });

  it('mergeContext overrides the address', async () => {
    const [event] = await storedOf(app).eventsOfUser(app.env.id, user('authenticate_merged_context'), 10);
    expect(event?.ip).toBe(MERGED_IP);
  });

  it('doNotTrack answers allow without calling Rampart', async () => {
    expect(result('authenticate_do_not_track')).toMatchObject({ action: 'allow', failover: true });
    expect(await storedOf(app).eventsOfUser(app.env.id, user('authenticate_do_not_track'), 10)).toEqual([]);
  });

  it('a sandbox test token in the X-Castle-Client-Id header forces deny', async () => {
    const r = await drive(['authenticate_login'], {
      RAMPART_USER_ID: 'java-forced',
      RAMPART_CLIENT_ID_HEADER: 'test|device:chrome_on_mac|policy.action:deny',
      RAMPART_IP_INDEX: '100',
    });
    expect(r.authenticate_login?.result).toMatchObject({ action: 'deny', failover: false });
  });
});

describe('track', () => {
  it('answers a success to the handler', () => {
    expect(result('track_login_failed')).toEqual({ successful: true });
    expect(result('track_message')).toEqual({ successful: true, build_send_successful: true });
  });

  it('stores the tracked events, fire-and-forget ones included', async () => {
    const names = async (u: string) =>
      (await storedOf(app).eventsOfUser(app.env.id, u, 10)).map((e) => e.name).sort();
    expect(await names(user('track_login_failed'))).toEqual(['$login.failed']);
    expect(await names(user('track_message'))).toEqual(['$challenge.succeeded', '$logout.succeeded']);
    expect(await names(user('track_fire_and_forget'))).toEqual([
      '$profile_update.succeeded',
      '$review.resolved',
    ]);
    // None of them (the reset request names no user) went to the debugger.
    const debuggerEntries = await storedOf(app).debugger(app.env.id, 1000);
    expect(debuggerEntries.filter((e) => e.payload.includes(user('track_fire_and_forget')))).toEqual([]);
  });
});

describe('risk, filter and log', () => {
  it('risk (a map): policy, risk, signals and a device token', () => {
    const r = result('risk_map');
    expect(r.successful).toBe(true);
    expect(r.json).toMatchObject({ policy: { action: 'allow' }, device: { token: expect.any(String) } });
    expect(typeof r.json.risk).toBe('number');
  });
  it('risk (the typed model): the SDK reads policy, risk, signals and device', () => {
    const r = result('risk_typed');
    expect(r.policy).toMatchObject({ action: 'allow', id: expect.stringMatching(/^[0-9a-f-]{36}$/) });
    expect(typeof r.risk).toBe('number');
    expect(Array.isArray(r.signals)).toBe(true);
    expect(r.device_token).toEqual(expect.any(String));
  });
  it('filter (a map and the typed model)', () => {
    expect(result('filter_map').json).toMatchObject({ policy: { action: 'allow' } });
    expect(result('filter_typed').policy).toMatchObject({ action: 'allow' });
  });
  it('log (a map and the typed model): a success with an empty body, and the events are stored', async () => {
    expect(result('log_map')).toEqual({ successful: true });
    expect(result('log_typed')).toEqual({ successful: true });
    for (const scenario of ['log_map', 'log_typed'] as const) {
      expect((await storedOf(app).eventsOfUser(app.env.id, user(scenario), 10)).map((e) => e.name)).toEqual([
        '$login.failed',
      ]);
    }
  });
});

describe('devices', () => {
  it('lists, gets, approves and reports the device a login created', () => {
    const r = result('devices');
    expect(r.list.total_count).toBe(1);
    const token = r.list.data[0].token;
    expect(token).toBe(r.login.device_token);
    expect(r.get).toMatchObject({ token, risk: expect.any(Number), type: 'desktop', browser: 'Chrome' });
    expect(r.get.created_at).toEqual(expect.any(String));
    expect(r.approve).toMatchObject({ token, risk: 0, approved_at: expect.any(String) });
    expect(r.report).toMatchObject({ token, risk: 100, escalated_at: expect.any(String) });
  });
  it('an unknown device or user (404) is null', () => {
    const r = result('devices_unknown');
    for (const step of ['device', 'approve', 'report', 'user_devices']) expect(r[step]).toEqual({ ok: true });
  });
});

describe('privacy, generic calls, unsupported calls', () => {
  it('removeUser purges the user: its devices answer 404 (null) afterwards', async () => {
    const r = result('remove_user');
    expect(r.before.total_count).toBe(1);
    expect(r.removed).toBe(true);
    expect(r.after).toEqual({ ok: true });
    expect((await call(app, 'GET', `/v1/users/${user('remove_user')}/devices`)).status).toBe(404);
  });
  it('get, post, put and delete on any path', () => {
    const r = result('generic');
    expect(r.get).toMatchObject({ ok: true, result: { successful: true, json: { total_count: 1 } } });
    expect(r.post).toMatchObject({ ok: true, result: { json: { policy: { action: 'allow' } } } });
    expect(r.put).toMatchObject({ ok: true, result: { json: { risk: 0 } } });
    expect(r.put_body).toMatchObject({ ok: true, result: { json: { risk: 100 } } });
    expect(r.delete_body).toMatchObject({ ok: true, result: { successful: true } });
    expect(r.delete).toMatchObject({ ok: true, result: { successful: true } });
  });
  it('impersonation and account recovery are not Rampart calls: 404, CastleApiNotFoundException', () => {
    const r = result('unsupported');
    for (const step of ['impersonate_start', 'impersonate_end', 'recover']) {
      expect(r[step]).toMatchObject({
        ok: false,
        error: { class: 'CastleApiNotFoundException', status: 404 },
      });
      expect(JSON.parse(r[step].error.body)).toMatchObject({ type: 'route_not_found' });
    }
  });
  it("secureUserID is the HMAC-SHA256 of the user id under the secret (what Rampart's webhooks use too)", () => {
    const r = result('secure_user_id');
    expect(r.signature).toBe(createHmac('sha256', app.secret).update(r.user_id).digest('hex'));
  });
});

describe('errors, as the application sees them', () => {
  it('a wrong secret: authenticate raises CastleRuntimeException (code 401), never a failover verdict', () => {
    const e = error('bad_secret_authenticate');
    expect(e?.class).toBe('CastleRuntimeException');
    expect(e?.message).toContain('code=401');
  });
  it('a wrong secret: risk and the device API raise CastleServerErrorException with status 401 and the error body', () => {
    for (const scenario of ['bad_secret_risk', 'bad_secret_devices'] as const) {
      const e = error(scenario);
      expect(e).toMatchObject({ class: 'CastleServerErrorException', status: 401 });
      expect(JSON.parse(e?.body ?? '{}')).toMatchObject({
        type: 'unauthorized',
        message: expect.any(String),
      });
    }
  });
  it('422 invalid_parameters raises CastleApiInvalidParametersException', () => {
    const e = error('invalid_ip_risk');
    expect(e).toMatchObject({ class: 'CastleApiInvalidParametersException', status: 422 });
    expect(JSON.parse(e?.body ?? '{}')).toMatchObject({
      type: 'invalid_parameters',
      fields: [{ field: 'context.ip' }],
    });
  });
  it('422 invalid_request_token raises CastleApiInvalidRequestTokenException', () => {
    expect(error('invalid_request_token_risk')).toMatchObject({
      class: 'CastleApiInvalidRequestTokenException',
      status: 422,
    });
  });
  it('authenticate answers 422 as CastleRuntimeException (the SDK maps only risk, filter and log errors by type)', () => {
    for (const scenario of ['invalid_ip_authenticate', 'missing_user_authenticate'] as const) {
      const e = error(scenario);
      expect(e?.class).toBe('CastleRuntimeException');
      expect(e?.message).toContain('code=422');
    }
  });
});
