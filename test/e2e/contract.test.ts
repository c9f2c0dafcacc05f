/**
 * The error contract: every error kind of the core, provoked through every door, answers the
 * status of that door's table and the same error type. One row per kind, one column per door:
 * to add a door (GraphQL), add its column to DOORS, its statuses to EXPECTED and a `provoke` per
 * kind to CASES.
 *
 * Kinds a real request reaches are provoked for real. Kinds that need the database down, a bug,
 * or a core deadline are provoked through a fault-injecting copy of the services (devices.get
 * throws for a few magic tokens) served by its own REST and gRPC listeners, so that the adapters'
 * mapping is what is under test.
 */
import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { startTestApp, call, type TestApp } from '../support/app';
import {
  createRampartClient,
  RampartError,
  toRampartError,
  type RampartClient,
  type RiskRequest,
} from '../../src/client';
import { startGrpcServer, type GrpcServerHandle } from '../../src/grpc/server';
import { buildRestServer } from '../../src/rest/server';
import { createLogger } from '../../src/app/logger';
import { DeadlineExceeded, ERROR_KINDS, Unavailable, type ErrorKind } from '../../src/core/errors';
import type { Services } from '../../src/core/services';
import { loadRampartProto } from '../../src/grpc/loader';
import * as grpc from '@grpc/grpc-js';

const DOORS = ['rest', 'grpc'] as const;
type DoorName = (typeof DOORS)[number];

/** What a door answered, normalised: its own status, the error kind it names, the fields it lists. */
interface Outcome {
  status: number | string;
  /** The error kind the answer names (REST's Castle `type` mapped back where it differs). */
  kind: string | null;
  fields: string[];
  message: string;
  retryAfter: number | null;
  correlationId: string | null;
}

/** Each door's table, written out from the specification (docs/decisions.md), not imported. */
const EXPECTED: Record<DoorName, Record<ErrorKind, number | string>> = {
  rest: {
    bad_request: 400,
    unauthorized: 401,
    forbidden: 403,
    not_found: 404,
    payload_too_large: 413,
    invalid_parameters: 422,
    invalid_request_token: 422,
    rate_limited: 429,
    unavailable: 503,
    deadline_exceeded: 504,
    internal: 500,
  },
  grpc: {
    bad_request: 'INVALID_ARGUMENT',
    unauthorized: 'UNAUTHENTICATED',
    forbidden: 'PERMISSION_DENIED',
    not_found: 'NOT_FOUND',
    payload_too_large: 'INVALID_ARGUMENT',
    invalid_parameters: 'INVALID_ARGUMENT',
    invalid_request_token: 'INVALID_ARGUMENT',
    rate_limited: 'RESOURCE_EXHAUSTED',
    unavailable: 'UNAVAILABLE',
    deadline_exceeded: 'DEADLINE_EXCEEDED',
    internal: 'INTERNAL',
  },
};

/** REST's Castle types that differ from the kind's name (docs/decisions.md). */
const REST_TYPE_TO_KIND: Record<string, string> = {
  server_error: 'internal',
  service_unavailable: 'unavailable',
  route_not_found: 'not_found',
};

const SECRET_INTERNALS = 'db-password=hunter2';
/** devices.get of the faulty services throws these for these tokens. */
const FAULTS: Record<string, () => Error> = {
  'fault-unavailable': () => new Unavailable(),
  'fault-internal': () => new Error(`boom: ${SECRET_INTERNALS}`),
  'fault-deadline': () => new DeadlineExceeded(),
};

interface World {
  app: TestApp;
  /** An app whose rate limit is 1/s (burst 2). */
  limited: TestApp;
  faulty: { baseUrl: string; grpcAddress: string; secret: string };
  grpc(address: string, secret: string): RampartClient;
  disabledSecret: string;
}

const UA =
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36';
const riskBody = (user: string) => ({
  event: '$login',
  user: { id: user },
  request_token: `tok-${user}`,
  context: { ip: '81.2.69.142', headers: { 'User-Agent': UA } },
});
const riskMessage = (user: string): RiskRequest => ({
  event: '$login',
  user: { id: user },
  requestToken: `tok-${user}`,
  context: { ip: '81.2.69.142', headers: { 'User-Agent': UA } },
});

async function rest(
  base: { baseUrl: string; secret: string },
  method: string,
  path: string,
  body?: unknown,
  opts: { secret?: string | null; raw?: string } = {},
): Promise<Outcome> {
  const r = await call(base, method, path, body, opts);
  const type = typeof r.body?.type === 'string' ? (r.body.type as string) : null;
  return {
    status: r.status,
    kind: type ? (REST_TYPE_TO_KIND[type] ?? type) : null,
    fields: Array.isArray(r.body?.fields) ? r.body.fields.map((f: { field: string }) => f.field) : [],
    message: String(r.body?.message ?? ''),
    retryAfter: r.headers.get('retry-after') ? Number(r.headers.get('retry-after')) : null,
    correlationId: r.body?.correlation_id ?? null,
  };
}

async function rpc(p: Promise<unknown>): Promise<Outcome> {
  try {
    await p;
  } catch (err) {
    if (!(err instanceof RampartError)) throw err;
    return {
      status: err.codeName,
      kind: err.type,
      fields: err.fields.map((f) => f.field),
      message: err.message,
      retryAfter: err.retryAfterSeconds,
      correlationId: err.correlationId,
    };
  }
  return { status: 'OK', kind: null, fields: [], message: '', retryAfter: null, correlationId: null };
}

/** Until the call fails (rate limits need a few calls to exhaust the burst). */
async function untilFailure(attempt: () => Promise<Outcome>, ok: number | string): Promise<Outcome> {
  for (let i = 0; i < 10; i++) {
    const o = await attempt();
    if (o.status !== ok) return o;
  }
  throw new Error('never failed');
}

async function withClient(
  w: World,
  address: string,
  secret: string,
  fn: (c: RampartClient) => Promise<unknown>,
): Promise<Outcome> {
  const c = w.grpc(address, secret);
  try {
    return await rpc(fn(c));
  } finally {
    c.close();
  }
}

/** How each door provokes each kind. */
const CASES: Record<ErrorKind, { how: string } & Record<DoorName, (w: World) => Promise<Outcome>>> = {
  bad_request: {
    how: 'a body that is not the request format (invalid JSON / not protobuf)',
    rest: (w) => rest(w.app, 'POST', '/v1/risk', undefined, { raw: '{not json' }),
    grpc: async (w) => {
      const { proto } = loadRampartProto();
      const stub = new proto.rampart.v1.Scoring(w.app.grpcAddress, grpc.credentials.createInsecure());
      const md = new grpc.Metadata();
      md.set('authorization', `Bearer ${w.app.secret}`);
      const raw = new Promise<void>((resolve, reject) =>
        stub.makeUnaryRequest(
          '/rampart.v1.Scoring/Risk',
          (b: Buffer) => b,
          (b: Buffer) => b,
          Buffer.from([0x0f]),
          md,
          (e) => (e ? reject(toRampartError(e)) : resolve()),
        ),
      );
      const out = await rpc(raw);
      stub.close();
      return out;
    },
  },
  unauthorized: {
    how: 'a wrong secret',
    rest: (w) => rest(w.app, 'POST', '/v1/risk', riskBody('c-unauth'), { secret: 'sk_wrong' }),
    grpc: (w) => withClient(w, w.app.grpcAddress, 'sk_wrong', (c) => c.risk(riskMessage('c-unauth'))),
  },
  forbidden: {
    how: 'the secret of a disabled environment',
    rest: (w) => rest(w.app, 'POST', '/v1/risk', riskBody('c-forbid'), { secret: w.disabledSecret }),
    grpc: (w) => withClient(w, w.app.grpcAddress, w.disabledSecret, (c) => c.risk(riskMessage('c-forbid'))),
  },
  not_found: {
    how: 'an unknown device token',
    rest: (w) => rest(w.app, 'GET', '/v1/devices/no-such-device'),
    grpc: (w) =>
      withClient(w, w.app.grpcAddress, w.app.secret, (c) => c.getDevice({ deviceToken: 'no-such-device' })),
  },
  payload_too_large: {
    how: 'a request over 100 KiB',
    rest: (w) =>
      rest(w.app, 'POST', '/v1/risk', {
        ...riskBody('c-large'),
        properties: { blob: 'x'.repeat(150 * 1024) },
      }),
    grpc: (w) =>
      withClient(w, w.app.grpcAddress, w.app.secret, (c) =>
        c.risk({
          ...riskMessage('c-large'),
          properties: { fields: { blob: { stringValue: 'x'.repeat(150 * 1024), kind: 'stringValue' } } },
        }),
      ),
  },
  invalid_parameters: {
    how: 'a risk event without user and with an invalid IP',
    rest: (w) =>
      rest(w.app, 'POST', '/v1/risk', {
        ...riskBody('c-invalid'),
        user: undefined,
        context: { ip: 'nope', headers: { 'User-Agent': UA } },
      }),
    grpc: (w) =>
      withClient(w, w.app.grpcAddress, w.app.secret, (c) =>
        c.risk({
          ...riskMessage('c-invalid'),
          user: null,
          context: { ip: 'nope', headers: { 'User-Agent': UA } },
        }),
      ),
  },
  invalid_request_token: {
    how: 'a malformed request token',
    rest: (w) => rest(w.app, 'POST', '/v1/risk', { ...riskBody('c-token'), request_token: 'has spaces' }),
    grpc: (w) =>
      withClient(w, w.app.grpcAddress, w.app.secret, (c) =>
        c.risk({ ...riskMessage('c-token'), requestToken: 'has spaces' }),
      ),
  },
  rate_limited: {
    how: 'calls beyond the environment rate limit (1/s, burst 2)',
    rest: async (w) => {
      const { secret } = await w.limited.newEnvironment(`rl-rest-${randomBytes(3).toString('hex')}`);
      return untilFailure(() => rest({ baseUrl: w.limited.baseUrl, secret }, 'GET', '/v1/devices/none'), 404);
    },
    grpc: async (w) => {
      const { secret } = await w.limited.newEnvironment(`rl-grpc-${randomBytes(3).toString('hex')}`);
      return untilFailure(
        () => withClient(w, w.limited.grpcAddress, secret, (c) => c.getDevice({ deviceToken: 'none' })),
        'NOT_FOUND',
      );
    },
  },
  unavailable: {
    how: 'the core reports the database unreachable (fault injection)',
    rest: (w) => rest(w.faulty, 'GET', '/v1/devices/fault-unavailable'),
    grpc: (w) =>
      withClient(w, w.faulty.grpcAddress, w.faulty.secret, (c) =>
        c.getDevice({ deviceToken: 'fault-unavailable' }),
      ),
  },
  deadline_exceeded: {
    how: 'the core gives up at a deadline (fault injection)',
    rest: (w) => rest(w.faulty, 'GET', '/v1/devices/fault-deadline'),
    grpc: (w) =>
      withClient(w, w.faulty.grpcAddress, w.faulty.secret, (c) =>
        c.getDevice({ deviceToken: 'fault-deadline' }),
      ),
  },
  internal: {
    how: 'an unexpected exception in the core (fault injection)',
    rest: (w) => rest(w.faulty, 'GET', '/v1/devices/fault-internal'),
    grpc: (w) =>
      withClient(w, w.faulty.grpcAddress, w.faulty.secret, (c) =>
        c.getDevice({ deviceToken: 'fault-internal' }),
      ),
  },
};

const world = {} as World;
let faultyRest: FastifyInstance;
let faultyGrpc: GrpcServerHandle;

beforeAll(async () => {
  world.app = await startTestApp();
  world.limited = await startTestApp({ rateLimitPerSecond: 1 });
  world.grpc = (address, secret) => createRampartClient({ address, secret, deadlineMs: 10_000 });
  const disabled = await world.app.newEnvironment('contract-disabled');
  await world.app.built.services.environments.setEnabled(disabled.env.id, false);
  world.disabledSecret = disabled.secret;

  const real = world.app.built.services;
  const devices = Object.create(real.devices) as Services['devices'];
  devices.get = async (env, token) => {
    const fault = FAULTS[token];
    if (fault) throw fault();
    return real.devices.get(env, token);
  };
  const services: Services = { ...real, devices };
  const log = createLogger(process.env.RAMPART_TEST_LOG ?? 'silent');
  faultyRest = await buildRestServer({
    services,
    log,
    bodyLimit: 100 * 1024,
    trustProxy: false,
    requireHttps: false,
  });
  await faultyRest.listen({ host: '127.0.0.1', port: 0 });
  const addr = faultyRest.server.address();
  faultyGrpc = await startGrpcServer({ services, log, host: '127.0.0.1', port: 0, tls: undefined });
  world.faulty = {
    baseUrl: `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`,
    grpcAddress: faultyGrpc.address,
    secret: world.app.secret,
  };
});

afterAll(async () => {
  await faultyRest?.close();
  await faultyGrpc?.stop();
  await world.limited?.close();
  await world.app?.close();
});

it('covers every error kind of the core', () => {
  expect(Object.keys(CASES).sort()).toEqual([...ERROR_KINDS].sort());
});

describe.each(ERROR_KINDS.map((k) => [k] as const))('%s', (kind) => {
  const outcomes: Partial<Record<DoorName, Outcome>> = {};

  it.each(DOORS.map((d) => [d] as const))(
    `%s answers its table's status and names the kind (${CASES[kind].how})`,
    async (door) => {
      const o = await CASES[kind][door](world);
      outcomes[door] = o;
      expect(o.status).toBe(EXPECTED[door][kind]);
      expect(o.kind).toBe(kind);
      if (kind === 'invalid_parameters') expect(o.fields.sort()).toEqual(['context.ip', 'user']);
      if (kind === 'rate_limited') expect(o.retryAfter).toBeGreaterThanOrEqual(1);
      if (kind === 'internal') {
        expect(o.correlationId).toMatch(/^[0-9a-f-]{36}$/);
        expect(o.message).toContain(o.correlationId);
        expect(o.message).not.toContain(SECRET_INTERNALS);
        expect(o.message).not.toContain('boom');
      }
    },
  );

  it('doors that list offending fields list the same ones', () => {
    const lists = DOORS.map((d) => outcomes[d]?.fields.filter((f) => f !== '(message)').sort()).filter(
      (l) => l && l.length > 0,
    );
    for (const l of lists) expect(l).toEqual(lists[0]);
  });
});
