/**
 * Scoring/VerdictStream: Authenticate, Risk and Filter calls multiplexed on one stream, each
 * handled as its unary RPC (answers, in-band errors with the same details, authentication and
 * rate limit per call, deadlines, cancellation, drain), and the client that sends its verdict
 * calls this way (and falls back to unary calls where the stream does not fit).
 */
import * as grpc from '@grpc/grpc-js';
import { startTestApp, type TestApp } from '../support/app';
import { failure } from '../support/grpc';
import { createRampartClient, toRampartError, type RampartClient, type RiskRequest } from '../../src/client';
import { callErrorAsServiceError } from '../../src/client/verdict-streams';
import { loadRampartProto } from '../../src/grpc/loader';
import { startGrpcServer, type GrpcServerHandle } from '../../src/grpc/server';
import { scoringHandlers } from '../../src/grpc/scoring';
import { createLogger } from '../../src/app/logger';
import type { Services } from '../../src/core/services';
import type { VerdictCall } from '../../src/grpc/generated/rampart/v1/VerdictCall';
import type { VerdictAnswer__Output } from '../../src/grpc/generated/rampart/v1/VerdictAnswer';
import type { VerdictStreamRequest } from '../../src/grpc/generated/rampart/v1/VerdictStreamRequest';
import type { VerdictStreamResponse__Output } from '../../src/grpc/generated/rampart/v1/VerdictStreamResponse';
import { delay } from '../support/wait';
import { createSlowCore } from '../support/slow-core';

const log = createLogger(process.env.RAMPART_TEST_LOG ?? 'silent');
const UA =
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36';
const context = {
  ip: '81.2.69.142',
  headers: { 'User-Agent': UA, Accept: 'text/html', 'Accept-Language': 'en-GB' },
};
const risk = (user: string, token = `tok-${user}`): RiskRequest => ({
  event: '$login',
  user: { id: user },
  requestToken: token,
  context,
});

/** A VerdictStream opened with the generated stub; one message per `send`, answers by id. */
function openStream(address: string, secret: string, raw = false) {
  const { proto } = loadRampartProto();
  const stub = new proto.rampart.v1.Scoring(address, grpc.credentials.createInsecure());
  const md = new grpc.Metadata();
  md.set('authorization', `Bearer ${secret}`);
  const call = raw
    ? stub.makeBidiStreamRequest<Buffer, VerdictStreamResponse__Output>(
        '/rampart.v1.Scoring/VerdictStream',
        (b: Buffer) => b,
        proto.rampart.v1.Scoring.service.VerdictStream.responseDeserialize,
        md,
      )
    : stub.verdictStream(md);
  const answers = new Map<number, VerdictAnswer__Output[]>();
  const waiting = new Map<number, (m: VerdictAnswer__Output) => void>();
  const order: number[] = [];
  const messages: number[] = [];
  call.on('data', (m: VerdictStreamResponse__Output) => {
    messages.push(m.answers.length);
    for (const a of m.answers) {
      order.push(a.id);
      const w = waiting.get(a.id);
      waiting.delete(a.id);
      if (w) w(a);
      else answers.set(a.id, [...(answers.get(a.id) ?? []), a]);
    }
  });
  const status = new Promise<grpc.StatusObject>((resolve) => call.on('status', resolve));
  call.on('error', () => undefined);
  const encode = proto.rampart.v1.Scoring.service.VerdictStream.requestSerialize;
  return {
    call,
    order,
    /** How many answers each response message carried. */
    messages,
    status,
    send: (...calls: VerdictCall[]) =>
      raw
        ? (call as grpc.ClientDuplexStream<Buffer, unknown>).write(encode({ calls }))
        : (call as grpc.ClientDuplexStream<VerdictStreamRequest, unknown>).write({ calls }),
    sendBytes: (b: Buffer) => (call as grpc.ClientDuplexStream<Buffer, unknown>).write(b),
    answer: (id: number) =>
      new Promise<VerdictAnswer__Output>((resolve) => {
        const got = answers.get(id);
        if (got && got.length > 0) {
          const [first, ...rest] = got;
          answers.set(id, rest);
          return resolve(first);
        }
        waiting.set(id, resolve);
      }),
    close: () => stub.close(),
  };
}

let app: TestApp;
let client: RampartClient;
beforeAll(async () => {
  app = await startTestApp();
  client = createRampartClient({ address: app.grpcAddress, secret: app.secret, deadlineMs: 10_000 });
});
afterAll(async () => {
  client?.close();
  await app?.close();
});

describe('VerdictStream', () => {
  it('answers each call with its id, as the unary RPC of the same name answers', async () => {
    const s = openStream(app.grpcAddress, app.secret);
    // The file's first verdicts (a fresh database) may be slow on a loaded machine: their own deadlines are not tested here.
    s.send({
      id: 7,
      timeoutMs: 30_000,
      risk: risk('vs-1', 'test|device:chrome_on_mac|policy.action:challenge|risk:0.7'),
    });
    s.send(
      {
        id: 8,
        timeoutMs: 30_000,
        filter: {
          event: '$registration',
          status: 'EVENT_STATUS_ATTEMPTED',
          user: { email: 'vs-2@mailinator.com' },
          requestToken: 'tok-vs-2',
          context,
        },
      },
      {
        id: 9,
        timeoutMs: 30_000,
        authenticate: {
          event: '$login.succeeded',
          user: { id: 'vs-3', email: 'vs3@example.com' },
          context: { ...context, clientId: 'cid-vs-3' },
        },
      },
    );
    const [r, f, a] = await Promise.all([s.answer(7), s.answer(8), s.answer(9)]);
    expect([r.error, f.error, a.error]).toEqual([undefined, undefined, undefined]);
    expect(r.result).toBe('risk');
    expect(r.risk?.policy?.action).toBe('ACTION_CHALLENGE');
    expect(r.risk?.risk).toBeCloseTo(0.7);
    expect(r.risk?.device?.token).toMatch(/^[A-Za-z0-9_-]{32,}$/);
    expect(r.risk?.degraded).toBe(false);
    expect(f.result).toBe('filter');
    expect(Object.keys(f.filter?.signals ?? {})).toContain('disposable_email');
    expect(a.result).toBe('authenticate');
    expect(a.authenticate?.userId).toBe('vs-3');
    expect(a.authenticate?.action).toBe('ACTION_ALLOW');
    // The unary RPC answers the same for the same sandbox test token.
    const unary = createRampartClient({ address: app.grpcAddress, secret: app.secret, verdictStreams: 0 });
    const u = await unary.risk(risk('vs-1', 'test|device:chrome_on_mac|policy.action:challenge|risk:0.7'));
    unary.close();
    expect({ ...r.risk, device: null }).toEqual({ ...u, device: null });
    expect(r.risk?.device?.token).toBe(u.device?.token);
    s.call.end();
    expect((await s.status).code).toBe(grpc.status.OK);
    s.close();
  });

  it('answers errors in-band, with the unary call status, details and trailers', async () => {
    const s = openStream(app.grpcAddress, app.secret);
    s.send(
      {
        id: 1,
        timeoutMs: 30_000,
        risk: { ...risk('vs-err'), user: null, context: { ip: 'nope', headers: { 'User-Agent': UA } } },
      },
      {
        id: 2,
        timeoutMs: 30_000,
        authenticate: { event: '$login.succeeded', context: { ip: '81.2.69.142' } },
      },
      { id: 3, timeoutMs: 30_000 },
    );
    const first = await s.answer(1);
    expect(first.result).toBe('error');
    expect(first.error?.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(first.error?.metadata).toEqual({ 'rampart-error-type': 'invalid_parameters' });
    const e = toRampartError(callErrorAsServiceError(first.error!));
    expect(e.codeName).toBe('INVALID_ARGUMENT');
    expect(e.type).toBe('invalid_parameters');
    expect(e.fields.map((f) => f.field).sort()).toEqual(['context.ip', 'user']);
    expect(e.metadata.get('grpc-status-details-bin')).toHaveLength(1);
    // Paths are paths of the call's request message, as for the unary call (the e-mail is only
    // recommended: docs/decisions.md).
    const auth = toRampartError(callErrorAsServiceError((await s.answer(2)).error!));
    expect(auth.fields.map((f) => f.field).sort()).toEqual(['user.id']);
    expect(
      toRampartError(callErrorAsServiceError((await s.answer(3)).error!)).fields.map((f) => f.field),
    ).toEqual(['call']);
    s.call.end();
    await s.status;
    s.close();
  });

  it('authenticates and rate-limits each call, as unary calls', async () => {
    const wrong = openStream(app.grpcAddress, 'sk_wrong_secret_value');
    wrong.send({ id: 1, timeoutMs: 30_000, risk: risk('vs-auth') });
    const a = toRampartError(callErrorAsServiceError((await wrong.answer(1)).error!));
    expect(a.codeName).toBe('UNAUTHENTICATED');
    expect(a.type).toBe('unauthorized');
    wrong.call.end();
    await wrong.status;
    wrong.close();

    const limited = await startTestApp({ rateLimitPerSecond: 1 });
    const s = openStream(limited.grpcAddress, limited.secret);
    s.send(...[1, 2, 3, 4, 5].map((id) => ({ id, timeoutMs: 30_000, risk: risk(`vs-rl-${id}`) })));
    const answers = await Promise.all([1, 2, 3, 4, 5].map((id) => s.answer(id)));
    const refused = answers
      .filter((m) => m.result === 'error')
      .map((m) => toRampartError(callErrorAsServiceError(m.error!)));
    expect(refused.length).toBeGreaterThanOrEqual(1);
    expect(refused[0].codeName).toBe('RESOURCE_EXHAUSTED');
    expect(refused[0].type).toBe('rate_limited');
    expect(refused[0].retryAfterSeconds).toBeGreaterThanOrEqual(1);
    expect(refused[0].metadata.get('retry-after')).toHaveLength(1);
    s.call.end();
    await s.status;
    s.close();
    await limited.close();
  });

  it('a call over the size limit is refused in-band; bytes without a call id fail the stream', async () => {
    const s = openStream(app.grpcAddress, app.secret, true);
    s.send(
      {
        id: 5,
        timeoutMs: 30_000,
        risk: {
          ...risk('vs-big'),
          properties: { fields: { blob: { stringValue: 'x'.repeat(150 * 1024), kind: 'stringValue' } } },
        },
      },
      { id: 9, timeoutMs: 30_000, risk: risk('vs-with-big') },
    );
    for (const id of [5, 9]) {
      const big = toRampartError(callErrorAsServiceError((await s.answer(id)).error!));
      expect(big.codeName).toBe('INVALID_ARGUMENT');
      expect(big.type).toBe('payload_too_large');
      expect(big.fields.map((f) => f.field)).toEqual(['(message)']);
    }
    s.send({ id: 6, timeoutMs: 30_000, risk: risk('vs-after-big') });
    expect((await s.answer(6)).result).toBe('risk');
    s.sendBytes(Buffer.from([0x0f]));
    const status = await s.status;
    expect(status.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(status.metadata.get('rampart-error-type')).toEqual(['bad_request']);
    s.close();
  });

  it('ends with OK once the client half-closes and every call read is answered', async () => {
    const s = openStream(app.grpcAddress, app.secret);
    for (let id = 1; id <= 20; id++) s.send({ id, timeoutMs: 30_000, risk: risk(`vs-hc-${id % 3}`) });
    s.send(
      ...Array.from({ length: 30 }, (_, i) => ({
        id: 21 + i,
        timeoutMs: 30_000,
        risk: risk(`vs-hc-${i % 3}`),
      })),
    );
    s.call.end();
    const status = await s.status;
    expect(status.code).toBe(grpc.status.OK);
    expect([...s.order].sort((x, y) => x - y)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
    // Answers ready together share messages.
    expect(s.messages.length).toBeLessThan(50);
    s.close();
  });
});

describe('VerdictStream deadlines, cancellation and drain', () => {
  /** The core behind this block's server: slowed down, or held, as each test says (test/support/slow-core.ts). */
  const core = createSlowCore();
  const { slow, holdEvaluations, idle, until } = core;
  let server: GrpcServerHandle;
  let slowServices: Services;
  beforeAll(async () => {
    slowServices = core.wrap(app.built.services);
    server = await startGrpcServer({
      services: slowServices,
      log,
      host: '127.0.0.1',
      port: 0,
      tls: undefined,
    });
  });
  beforeEach(() => {
    slow.authMs = 0;
    slow.evaluateMs = 0;
  });
  afterEach(() => core.releaseHeld());
  afterAll(async () => {
    await server?.stop();
    await core.idle();
  });

  it('a call whose deadline passes before its core call is answered DEADLINE_EXCEEDED, and the core call never starts', async () => {
    const s = openStream(server.address, app.secret);
    slow.authMs = 300;
    const before = slow.evaluateCalls;
    s.send({ id: 1, timeoutMs: 100, risk: risk('vs-dl-1') });
    const e = toRampartError(callErrorAsServiceError((await s.answer(1)).error!));
    expect(e.codeName).toBe('DEADLINE_EXCEEDED');
    expect(e.type).toBe('deadline_exceeded');
    await idle();
    expect(slow.evaluateCalls).toBe(before);
    s.call.end();
    await s.status;
    s.close();
  });

  it('a cancelled call starts nothing more and is not answered; the others are', async () => {
    const s = openStream(server.address, app.secret);
    slow.authMs = 300;
    const before = slow.evaluateCalls;
    const authenticating = core.running.size;
    s.send(
      { id: 1, timeoutMs: 30_000, risk: risk('vs-cx-1') },
      { id: 2, timeoutMs: 30_000, risk: risk('vs-cx-2') },
    );
    // Both calls wait on one look-up of the stream's secret.
    await until(() => core.running.size > authenticating, "the look-up of the stream's secret to start");
    s.send({ id: 1, cancel: true });
    expect((await s.answer(2)).result).toBe('risk');
    await idle();
    expect(s.order).toEqual([2]);
    expect(slow.evaluateCalls).toBe(before + 1);
    s.call.end();
    expect((await s.status).code).toBe(grpc.status.OK);
    s.close();
  });

  it('a call whose id is in flight already is refused', async () => {
    const s = openStream(server.address, app.secret);
    slow.authMs = 200;
    s.send(
      { id: 4, timeoutMs: 30_000, risk: risk('vs-dup') },
      { id: 4, timeoutMs: 30_000, risk: risk('vs-dup') },
    );
    const refused = await s.answer(4);
    expect(toRampartError(callErrorAsServiceError(refused.error!)).fields.map((f) => f.field)).toEqual([
      'id',
    ]);
    expect((await s.answer(4)).result).toBe('risk');
    s.call.end();
    await s.status;
    s.close();
  });

  it('the client: deadline and cancellation of calls on streams', async () => {
    const c = createRampartClient({ address: server.address, secret: app.secret, deadlineMs: 30_000 });
    await c.risk(risk('vs-warm'));
    const release = holdEvaluations();
    const done = slow.evaluateDone;
    expect((await failure(c.risk(risk('vs-cdl'), { deadlineMs: 200 }))).codeName).toBe('DEADLINE_EXCEEDED');
    // Answered at the deadline, not when the core call ended: that call is still held.
    expect(slow.evaluateDone).toBe(done);
    release();
    slow.authMs = 300;
    const before = slow.evaluateCalls;
    const authenticating = slow.authCalls;
    const controller = new AbortController();
    const cancelled = failure(c.risk(risk('vs-ccx'), { signal: controller.signal }));
    // Cancelled while the server authenticates it, before its core call.
    await until(() => slow.authCalls > authenticating, 'the call to reach the server');
    controller.abort();
    expect((await cancelled).codeName).toBe('CANCELLED');
    await idle();
    expect(slow.evaluateCalls).toBe(before);
    // Still usable afterwards.
    slow.authMs = 0;
    await expect(c.risk(risk('vs-after'))).resolves.toHaveProperty('policy');
    c.close();
  });

  it('on drain, calls in flight are answered, the stream ends, and new calls are refused', async () => {
    const own = await startGrpcServer({
      services: slowServices,
      log,
      host: '127.0.0.1',
      port: 0,
      tls: undefined,
    });
    const s = openStream(own.address, app.secret);
    const c = createRampartClient({ address: own.address, secret: app.secret, deadlineMs: 30_000 });
    await c.risk(risk('vs-drain-warm'));
    slow.evaluateMs = 300;
    const evaluating = slow.evaluateCalls;
    s.send({ id: 1, timeoutMs: 30_000, risk: risk('vs-drain-1') });
    const inFlight = c.risk(risk('vs-drain-2'));
    await until(() => slow.evaluateCalls === evaluating + 2, 'both calls to reach the core');
    const stopped = own.stop();
    expect((await s.answer(1)).result).toBe('risk');
    await expect(inFlight).resolves.toHaveProperty('policy');
    expect((await s.status).code).toBe(grpc.status.OK);
    await stopped;
    expect(['UNAVAILABLE', 'DEADLINE_EXCEEDED']).toContain(
      (await failure(c.risk(risk('vs-drain-3'), { deadlineMs: 1000 }))).codeName,
    );
    c.close();
    s.close();
  });
});

describe('the client', () => {
  it('sends verdicts unary to a server without VerdictStream', async () => {
    const { proto } = loadRampartProto();
    const { VerdictStream: _omitted, ...unaryOnly } = proto.rampart.v1.Scoring.service;
    const { VerdictStream: _handler, ...handlers } = scoringHandlers({ services: app.built.services, log });
    const old = new grpc.Server();
    old.addService(unaryOnly, handlers);
    const port = await new Promise<number>((resolve, reject) =>
      old.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) =>
        e ? reject(e) : resolve(p),
      ),
    );
    const c = createRampartClient({ address: `127.0.0.1:${port}`, secret: app.secret, deadlineMs: 30_000 });
    const answers = await Promise.all([
      c.risk(risk('vs-old-1')),
      c.risk(risk('vs-old-2')),
      c.filter({ event: '$registration', user: { email: 'vs-old@example.com' }, context }),
    ]);
    expect(answers[0].policy?.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(answers[2].policy?.id).toMatch(/^[0-9a-f-]{36}$/);
    await expect(c.risk(risk('vs-old-3'))).resolves.toHaveProperty('policy');
    expect((await failure(c.risk({ ...risk('vs-old-4'), user: null }))).fields.map((f) => f.field)).toEqual([
      'user',
    ]);
    c.close();
    old.forceShutdown();
  });

  it('sends a call once more when a stream ends cleanly without reading it, then gives up', async () => {
    const { proto } = loadRampartProto();
    let opened = 0;
    const ending = new grpc.Server();
    ending.addService(
      { VerdictStream: proto.rampart.v1.Scoring.service.VerdictStream },
      {
        VerdictStream: (call: grpc.ServerDuplexStream<unknown, unknown>) => {
          opened++;
          // A server that answers nothing: it ends the stream a little later.
          void delay(50).then(() => call.end());
        },
      },
    );
    const port = await new Promise<number>((resolve, reject) =>
      ending.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) =>
        e ? reject(e) : resolve(p),
      ),
    );
    const c = createRampartClient({
      address: `127.0.0.1:${port}`,
      secret: app.secret,
      deadlineMs: 30_000,
      verdictStreams: 1,
    });
    const e = await failure(c.risk(risk('vs-unread')));
    expect(e.codeName).toBe('UNAVAILABLE');
    expect(opened).toBe(2);
    c.close();
    ending.forceShutdown();
  });

  it('sizes its messages by the limit the server announces, and sends larger calls unary', async () => {
    const small = await startGrpcServer({
      services: app.built.services,
      log,
      host: '127.0.0.1',
      port: 0,
      tls: undefined,
      maxMessageBytes: 2048,
    });
    const c = createRampartClient({
      address: small.address,
      secret: app.secret,
      deadlineMs: 30_000,
      verdictStreams: 1,
    });
    const u = createRampartClient({
      address: small.address,
      secret: app.secret,
      deadlineMs: 30_000,
      verdictStreams: 0,
    });
    const sized = (bytes: number): RiskRequest => ({
      ...risk('vs-small'),
      properties: { fields: { blob: { stringValue: 'x'.repeat(bytes), kind: 'stringValue' } } },
    });
    // Many calls of about 1 KiB at once: each message stays under 2 KiB, so none is refused.
    const answers = await Promise.all(Array.from({ length: 40 }, () => c.risk(sized(900))));
    expect(answers).toHaveLength(40);
    for (const bytes of [3000, 12_000]) {
      const [es, eu] = [await failure(c.risk(sized(bytes))), await failure(u.risk(sized(bytes)))];
      expect({ code: es.codeName, type: es.type }).toEqual({ code: eu.codeName, type: eu.type });
    }
    expect((await failure(c.risk(sized(3000)))).type).toBe('payload_too_large');
    expect((await failure(c.risk(sized(12_000)))).codeName).toBe('RESOURCE_EXHAUSTED');
    c.close();
    u.close();
    await small.stop();
  });

  it('answers the same on streams and unary, errors included', async () => {
    const unary = createRampartClient({ address: app.grpcAddress, secret: app.secret, verdictStreams: 0 });
    // An address of its own, so that the velocity signals of the other tests' calls do not differ between the two.
    const req = {
      ...risk('vs-same', 'test|device:chrome_on_mac|policy.action:deny|risk:0.95'),
      context: { ...context, ip: '89.160.20.112' },
    };
    expect(await client.risk(req)).toEqual(await unary.risk(req));
    const bad = { ...req, context: { ip: '999.1.1.1', headers: { 'User-Agent': UA } } };
    const [es, eu] = [await failure(client.risk(bad)), await failure(unary.risk(bad))];
    expect({ code: es.code, message: es.message, type: es.type, fields: es.fields }).toEqual({
      code: eu.code,
      message: eu.message,
      type: eu.type,
      fields: eu.fields,
    });
    expect(es.metadata.get('rampart-error-type')).toEqual(eu.metadata.get('rampart-error-type'));
    unary.close();
  });

  it('carries many concurrent calls on a few streams', async () => {
    const answers = await Promise.all(
      Array.from({ length: 200 }, (_, i) => client.risk(risk(`vs-many-${i % 7}`))),
    );
    expect(
      answers.every(
        (a) =>
          a.policy?.action === 'ACTION_ALLOW' ||
          a.policy?.action === 'ACTION_CHALLENGE' ||
          a.policy?.action === 'ACTION_DENY',
      ),
    ).toBe(true);
  });
});
