/**
 * Parity of the REST and gRPC doors: the same sequence of events, sent through each door with
 * its own users, IP addresses and fingerprints (same shapes: same countries and networks, same
 * user agents), yields the same actions, risks, signals, policies and device effects. Each door
 * has its own sandbox environment, as the engine's population statistics are per environment.
 */
import { startTestApp, call, type TestApp } from '../support/app';
import { createRampartClient, fromStruct, toStruct, type RampartClient } from '../../src/client';
import type { Device__Output } from '../../src/grpc/generated/rampart/v1/Device';

const CHROME_MAC =
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36';
const IPHONE =
  'Mozilla/5.0 (iPhone; CPU iPhone OS 17_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1 Mobile/15E148 Safari/604.1';
const HEADLESS =
  'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/120.0.0.0 Safari/537.36';
const CURL = 'curl/8.4.0';

type Place = 'london' | 'stockholm' | 'puyallup' | 'jilin';
type Door = 'rest' | 'grpc';
/** Per door, addresses of the same city and network, so that geo and ASN signals agree. */
const IPS: Record<Door, Record<Place, string>> = {
  rest: {
    london: '81.2.69.142',
    stockholm: '89.160.20.112',
    puyallup: '216.160.83.56',
    jilin: '175.16.199.1',
  },
  grpc: {
    london: '81.2.69.143',
    stockholm: '89.160.20.128',
    puyallup: '216.160.83.57',
    jilin: '175.16.199.2',
  },
};

/** A protocol-neutral event; `user`, `fp` and `email` are numbers that each door turns into its own identities. */
interface Step {
  endpoint: 'authenticate' | 'risk' | 'filter';
  event: string;
  user?: number;
  email?: 'plain' | 'disposable';
  place: Place;
  ua?: string;
  fp?: number;
  /** A sandbox test token: the door's own device name is added. */
  test?: string;
  registeredNow?: boolean;
  properties?: Record<string, unknown>;
}

const ids = (door: Door) => ({
  user: (n: number) => `${door}-par-user-${n}`,
  email: (n: number, kind: 'plain' | 'disposable') =>
    kind === 'plain' ? `${door}.par${n}@example.com` : `${door}.par${n}@mailinator.com`,
  fp: (n: number) => `${door}-par-fp-${n}`,
});

function restBody(door: Door, s: Step): Record<string, unknown> {
  const id = ids(door);
  const token = s.test
    ? `${s.test}|device:${door}_dev_${s.fp ?? 0}`
    : s.fp !== undefined
      ? id.fp(s.fp)
      : undefined;
  const email =
    s.email && s.user !== undefined ? id.email(s.user, s.email) : s.email ? id.email(0, s.email) : undefined;
  const registeredAt = s.registeredNow ? new Date().toISOString() : undefined;
  const context = {
    ip: IPS[door][s.place],
    headers: { 'User-Agent': s.ua ?? CHROME_MAC, Accept: 'text/html', 'Accept-Language': 'en-GB' },
  };
  if (s.endpoint === 'authenticate') {
    return {
      event: s.event,
      ...(s.user !== undefined ? { user_id: id.user(s.user) } : {}),
      user_traits: { ...(email ? { email } : {}), ...(registeredAt ? { registered_at: registeredAt } : {}) },
      context: { ...context, ...(token ? { client_id: token } : {}) },
      ...(s.properties ? { properties: s.properties } : {}),
    };
  }
  return {
    event: s.event,
    user: {
      ...(s.user !== undefined ? { id: id.user(s.user) } : {}),
      ...(email ? { email } : {}),
      ...(registeredAt ? { registered_at: registeredAt } : {}),
    },
    context,
    ...(token ? { request_token: token } : {}),
    ...(s.properties ? { properties: s.properties } : {}),
  };
}

/** The gRPC request for the same step: the typed form of the same values. */
function grpcRequest(s: Step) {
  const body = restBody('grpc', s) as {
    event: string;
    user_id?: string;
    user_traits?: { email?: string; registered_at?: string };
    user?: { id?: string; email?: string; registered_at?: string };
    context: { ip: string; headers: Record<string, string>; client_id?: string };
    request_token?: string;
    properties?: Record<string, unknown>;
  };
  const u = s.endpoint === 'authenticate' ? { id: body.user_id, ...body.user_traits } : body.user;
  const registeredAt = u?.registered_at ? { seconds: Math.floor(Date.parse(u.registered_at) / 1000) } : null;
  return {
    event: body.event,
    user: { id: u?.id ?? '', email: u?.email ?? '', registeredAt },
    context: { ip: body.context.ip, headers: body.context.headers, clientId: body.context.client_id ?? '' },
    requestToken: body.request_token ?? '',
    properties: body.properties ? toStruct(body.properties) : null,
  };
}

/** What must agree between the doors for a verdict. */
interface Seen {
  action: string;
  risk: number;
  signals: string[];
  policy: { id: string; revision: string; name: string; action: string };
  device: boolean;
}

const ACTION = (a: string) => a.replace(/^ACTION_/, '').toLowerCase();

async function viaRest(app: TestApp, s: Step): Promise<Seen & { token: string | null }> {
  const r = await call(app, 'POST', `/v1/${s.endpoint}`, restBody('rest', s));
  expect(r.status).toBe(201);
  const b = r.body;
  const token: string | null =
    s.endpoint === 'authenticate' ? b.device_token : s.endpoint === 'risk' ? b.device.token : null;
  return {
    action: s.endpoint === 'authenticate' ? b.action : b.policy.action,
    risk: b.risk,
    signals: Object.keys(b.signals).sort(),
    policy: b.policy,
    device: Boolean(token),
    token,
  };
}

async function viaGrpc(client: RampartClient, s: Step): Promise<Seen & { token: string | null }> {
  const req = grpcRequest(s);
  if (s.endpoint === 'authenticate') {
    const r = await client.authenticate(req);
    return {
      action: ACTION(r.action),
      risk: r.risk,
      signals: Object.keys(r.signals).sort(),
      policy: policyOf(r.policy),
      device: Boolean(r.deviceToken),
      token: r.deviceToken || null,
    };
  }
  const r = s.endpoint === 'risk' ? await client.risk(req) : { ...(await client.filter(req)), device: null };
  const token = r.device?.token || null;
  return {
    action: ACTION(r.policy?.action ?? ''),
    risk: r.risk,
    signals: Object.keys(r.signals).sort(),
    policy: policyOf(r.policy),
    device: Boolean(token),
    token,
  };
}

const policyOf = (p: { id: string; revision: string; name: string; action: string } | null) => ({
  id: p?.id ?? '',
  revision: p?.revision ?? '',
  name: p?.name ?? '',
  action: ACTION(p?.action ?? ''),
});

/** A device as both doors must describe it, whatever its token and times. */
interface DeviceSeen {
  approved: boolean;
  escalated: boolean;
  mitigated: boolean;
  risk: number;
  type: string;
  browser: string;
  country: string | null;
  identity: unknown;
}

interface RestDevice {
  approved_at: string | null;
  escalated_at: string | null;
  mitigated_at: string | null;
  risk: number;
  context: {
    type: string;
    user_agent: { browser: string };
    location: { country_code: string | null } | null;
    properties: Record<string, unknown>;
  };
}

const restDevice = (d: RestDevice): DeviceSeen => ({
  approved: d.approved_at !== null,
  escalated: d.escalated_at !== null,
  mitigated: d.mitigated_at !== null,
  risk: d.risk,
  type: d.context.type,
  browser: d.context.user_agent.browser,
  country: d.context.location?.country_code ?? null,
  identity: d.context.properties.identity,
});

const grpcDevice = (d: Device__Output): DeviceSeen => ({
  approved: d.approvedAt !== null,
  escalated: d.escalatedAt !== null,
  mitigated: d.mitigatedAt !== null,
  risk: d.risk,
  type: (d.context?.type ?? '').replace(/^DEVICE_TYPE_/, '').toLowerCase(),
  browser: d.context?.userAgent?.browser ?? '',
  country: d.context?.location?.countryCode || null,
  identity: fromStruct(d.context?.properties, 'properties')?.identity,
});

let app: TestApp;
let client: RampartClient;
beforeAll(async () => {
  app = await startTestApp();
  // Each door scores in a sandbox environment of its own: the engine learns population statistics
  // per environment, so sharing one would let the first door's events shift the second's risk.
  const grpcEnv = await app.built.services.environments.create('parity-grpc', { sandbox: true });
  client = createRampartClient({ address: app.grpcAddress, secret: grpcEnv.secret, deadlineMs: 10_000 });
});
afterAll(async () => {
  client?.close();
  await app?.close();
});

/** Everything the REST side saw, to check that the sequence reaches the interesting paths. */
const seen = { signals: new Set<string>(), actions: new Set<string>() };

/** Device tokens each door's verdicts returned, by step name. */
const tokens: Record<Door, Record<string, string>> = { rest: {}, grpc: {} };

async function both(name: string, s: Step): Promise<void> {
  const r = await viaRest(app, s);
  const g = await viaGrpc(client, s);
  r.signals.forEach((x) => seen.signals.add(x));
  seen.actions.add(r.action);
  if (r.token) tokens.rest[name] = r.token;
  if (g.token) tokens.grpc[name] = g.token;
  // Policy ids are the environment's own: compare what the policy is, not its id.
  const strip = ({ token: _t, policy, ...seen }: Seen & { token: string | null }) => ({
    ...seen,
    policy: { name: policy.name, action: policy.action },
  });
  expect(strip(g)).toEqual(strip(r));
}

async function devicesOf(user: number): Promise<{ rest: DeviceSeen[]; grpc: DeviceSeen[] }> {
  await app.built.services.track.drain(false);
  const r = await call(app, 'GET', `/v1/users/${ids('rest').user(user)}/devices`);
  expect(r.status).toBe(200);
  const g = await client.listUserDevices({ userId: ids('grpc').user(user) });
  return { rest: r.body.data.map(restDevice), grpc: g.devices.map(grpcDevice) };
}

const STEPS: [string, Step][] = [
  [
    'first login of a new user',
    { endpoint: 'risk', event: '$login', user: 1, email: 'plain', place: 'london', fp: 1 },
  ],
  [
    'same device again',
    { endpoint: 'risk', event: '$login', user: 1, email: 'plain', place: 'london', fp: 1 },
  ],
  [
    'new device from another country',
    { endpoint: 'risk', event: '$login', user: 1, email: 'plain', place: 'stockholm', fp: 2 },
  ],
  [
    'impossible travel',
    { endpoint: 'risk', event: '$login', user: 1, email: 'plain', place: 'jilin', fp: 2 },
  ],
  [
    'a phone, no fingerprint',
    { endpoint: 'risk', event: '$login.succeeded', user: 1, email: 'plain', place: 'london', ua: IPHONE },
  ],
  [
    'authenticate $login.succeeded',
    {
      endpoint: 'authenticate',
      event: '$login.succeeded',
      user: 2,
      email: 'plain',
      place: 'puyallup',
      fp: 3,
    },
  ],
  [
    'authenticate $login.attempted',
    {
      endpoint: 'authenticate',
      event: '$login.attempted',
      email: 'plain',
      place: 'puyallup',
      fp: 3,
      properties: { email: 'someone@example.com' },
    },
  ],
  [
    'registration with a disposable address',
    {
      endpoint: 'authenticate',
      event: '$registration.attempted',
      user: 3,
      email: 'disposable',
      place: 'london',
      fp: 4,
    },
  ],
  [
    'filter: headless browser',
    { endpoint: 'filter', event: '$registration', email: 'plain', place: 'london', ua: HEADLESS, fp: 5 },
  ],
  [
    'filter: a script',
    { endpoint: 'filter', event: '$login.failed', email: 'plain', place: 'puyallup', ua: CURL },
  ],
  [
    'registration approves the device',
    {
      endpoint: 'risk',
      event: '$registration',
      user: 4,
      email: 'plain',
      place: 'stockholm',
      fp: 6,
      registeredNow: true,
    },
  ],
  [
    'one fingerprint, many accounts (1)',
    { endpoint: 'risk', event: '$login', user: 5, place: 'london', fp: 7 },
  ],
  [
    'one fingerprint, many accounts (2)',
    { endpoint: 'risk', event: '$login', user: 6, place: 'london', fp: 7 },
  ],
  [
    'one fingerprint, many accounts (3)',
    { endpoint: 'risk', event: '$login', user: 7, place: 'london', fp: 7 },
  ],
  [
    'sandbox token: deny',
    {
      endpoint: 'risk',
      event: '$login',
      user: 8,
      place: 'london',
      test: 'test|policy.action:deny|risk:0.95',
      fp: 8,
    },
  ],
  [
    'sandbox token: challenge',
    {
      endpoint: 'authenticate',
      event: '$login.succeeded',
      user: 8,
      email: 'plain',
      place: 'london',
      test: 'test|policy.action:challenge',
      fp: 9,
    },
  ],
];

describe('verdicts', () => {
  it.each(STEPS)('%s', async (name, step) => {
    await both(name, step);
  });

  it('the sequence reached signals and actions worth comparing', () => {
    expect([...seen.actions].sort()).toEqual(['allow', 'challenge', 'deny']);
    expect([...seen.signals]).toEqual(
      expect.arrayContaining([
        'new_device',
        'new_country',
        'impossible_travel',
        'disposable_email',
        'headless_browser',
        'multiple_accounts_per_device',
      ]),
    );
  });
});

describe('device effects', () => {
  it('the device lists agree after verdicts', async () => {
    for (const user of [1, 2, 4, 5, 8]) {
      const { rest, grpc } = await devicesOf(user);
      expect(grpc).toEqual(rest);
    }
  });

  it('$challenge.succeeded (Track) approves, report escalates, approve approves', async () => {
    await call(app, 'POST', '/v1/track', {
      event: '$challenge.succeeded',
      device_token: tokens.rest['new device from another country'],
    });
    await client.track({
      event: '$challenge.succeeded',
      deviceToken: tokens.grpc['new device from another country'],
    });
    expect(
      await call(app, 'PUT', `/v1/devices/${tokens.rest['first login of a new user']}/report`),
    ).toMatchObject({ status: 200 });
    await client.reportDevice({ deviceToken: tokens.grpc['first login of a new user'] });
    expect(
      await call(app, 'PUT', `/v1/devices/${tokens.rest['authenticate $login.succeeded']}/approve`),
    ).toMatchObject({ status: 200 });
    await client.approveDevice({ deviceToken: tokens.grpc['authenticate $login.succeeded'] });
    for (const user of [1, 2]) {
      const { rest, grpc } = await devicesOf(user);
      expect(grpc).toEqual(rest);
    }
    const { rest } = await devicesOf(1);
    expect(rest.filter((d) => d.escalated)).toHaveLength(1);
    expect(rest.filter((d) => d.approved)).toHaveLength(1);
  });

  it('a verdict after feedback agrees (reported device, approved device)', async () => {
    await both('reported device returns', {
      endpoint: 'risk',
      event: '$login',
      user: 1,
      email: 'plain',
      place: 'london',
      fp: 1,
    });
    await both('approved device returns', {
      endpoint: 'risk',
      event: '$login',
      user: 1,
      email: 'plain',
      place: 'stockholm',
      fp: 2,
    });
  });

  it('$password_reset.succeeded and $incident.mitigated (TrackStream) have the same effects', async () => {
    const rest = ids('rest');
    const grpc = ids('grpc');
    for (const event of ['$password_reset.succeeded', '$incident.mitigated']) {
      const r = await call(app, 'POST', '/v1/track', {
        event,
        user_id: rest.user(1),
        request_token: rest.fp(2),
        context: { ip: IPS.rest.stockholm, headers: { 'User-Agent': CHROME_MAC } },
      });
      expect(r.status).toBe(204);
      await app.built.services.track.drain(false);
    }
    for (const event of ['$password_reset.succeeded', '$incident.mitigated']) {
      await client.trackStream([
        {
          event,
          user: { id: grpc.user(1) },
          requestToken: grpc.fp(2),
          context: { ip: IPS.grpc.stockholm, headers: { 'User-Agent': CHROME_MAC } },
        },
      ]);
      await app.built.services.track.drain(false);
    }
    const { rest: r, grpc: g } = await devicesOf(1);
    expect(g).toEqual(r);
  });
});
