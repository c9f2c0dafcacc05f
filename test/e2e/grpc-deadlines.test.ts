/**
 * Deadlines, cancellation, streams failing part-way, graceful drain and TLS of the gRPC door. A second gRPC server runs
 * over the test app's services with a slowed-down core, so that timing is under test control.
 */
import * as grpc from '@grpc/grpc-js';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startTestApp, type TestApp } from '../support/app';
import { failure } from '../support/grpc';
import { createSlowCore } from '../support/slow-core';
import { createRampartClient, toRampartError, type RampartClient, type RiskRequest } from '../../src/client';
import { startGrpcServer, type GrpcServerHandle } from '../../src/grpc/server';
import { createLogger } from '../../src/app/logger';

const log = createLogger(process.env.RAMPART_TEST_LOG ?? 'silent');
const UA =
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36';
const risk = (user: string): RiskRequest => ({
  event: '$login',
  user: { id: user },
  requestToken: `tok-${user}`,
  context: { ip: '81.2.69.142', headers: { 'User-Agent': UA } },
});

/** The core behind the second server: slowed down, or held, as each test says (test/support/slow-core.ts). */
const core = createSlowCore();
const { slow, holdEvaluations, idle, until } = core;

function authMetadata() {
  const md = new grpc.Metadata();
  md.set('authorization', `Bearer ${app.secret}`);
  return md;
}

let app: TestApp;
let server: GrpcServerHandle;
let client: RampartClient;
beforeAll(async () => {
  app = await startTestApp({ grpc: false });
  server = await startGrpcServer({
    services: core.wrap(app.built.services),
    log,
    host: '127.0.0.1',
    port: 0,
    tls: undefined,
  });
  client = createRampartClient({ address: server.address, secret: app.secret, deadlineMs: 10_000 });
  await client.risk(risk('warm-up'));
});
beforeEach(() => {
  slow.authMs = 0;
  slow.evaluateMs = 0;
});
afterEach(() => core.releaseHeld());
afterAll(async () => {
  client?.close();
  await server?.stop();
  await core.idle();
  await app?.close();
});

describe('deadlines', () => {
  it('a call whose core work outlives its deadline answers DEADLINE_EXCEEDED at the deadline', async () => {
    const release = holdEvaluations();
    const done = slow.evaluateDone;
    const e = await failure(client.risk(risk('dl-1'), { deadlineMs: 200 }));
    expect(e.codeName).toBe('DEADLINE_EXCEEDED');
    // Answered at the deadline, not when the core call ended: that call is still held.
    expect(slow.evaluateDone).toBe(done);
    release();
  });

  it('work past the deadline is abandoned: the core call never starts', async () => {
    slow.authMs = 400;
    const before = slow.evaluateCalls;
    const e = await failure(client.risk(risk('dl-2'), { deadlineMs: 150 }));
    expect(e.codeName).toBe('DEADLINE_EXCEEDED');
    await idle();
    expect(slow.evaluateCalls).toBe(before);
  });

  it('a call within its deadline succeeds', async () => {
    slow.evaluateMs = 50;
    await expect(client.risk(risk('dl-3'), { deadlineMs: 30_000 })).resolves.toHaveProperty('policy');
  });
});

describe('cancellation', () => {
  it('a cancelled call stops: CANCELLED for the client, no core call on the server', async () => {
    slow.authMs = 300;
    const before = slow.evaluateCalls;
    const authenticating = slow.authCalls;
    const controller = new AbortController();
    const cancelled = failure(client.risk(risk('cx-1'), { signal: controller.signal }));
    // Cancelled while the server authenticates it, before its core call.
    await until(() => slow.authCalls > authenticating, 'the call to reach the server');
    controller.abort();
    const e = await cancelled;
    expect(e.codeName).toBe('CANCELLED');
    await idle();
    expect(slow.evaluateCalls).toBe(before);
  });

  it('a cancelled TrackStream stops accepting events', async () => {
    const before = slow.trackAccepts;
    let ended: () => void = () => undefined;
    const finished = new Promise<void>((resolve) => (ended = resolve));
    const stream = client.stubs.scoring.trackStream(authMetadata(), () => ended());
    stream.on('error', () => undefined);
    stream.write({ event: '$login.failed', user: { id: 'cx-stream' } });
    await until(() => slow.trackAccepts === before + 1, 'the first event to be accepted');
    stream.cancel();
    await finished;
    await idle();
    expect(slow.trackAccepts).toBe(before + 1);
  });
});

describe('streams that fail part-way', () => {
  it('TrackStream fails with RESOURCE_EXHAUSTED at the rate limit and says how many it accepted', async () => {
    const limited = await startTestApp({ grpc: false, rateLimitPerSecond: 1 });
    const own = await startGrpcServer({
      services: limited.built.services,
      log,
      host: '127.0.0.1',
      port: 0,
      tls: undefined,
    });
    const c = createRampartClient({ address: own.address, secret: limited.secret, deadlineMs: 30_000 });
    // One stream through the generated stub: the shipped client would resume it (client-track-stream.test.ts).
    const md = new grpc.Metadata();
    md.set('authorization', `Bearer ${limited.secret}`);
    const e = await failure(
      new Promise((resolve, reject) => {
        const stream = c.stubs.scoring.trackStream(md, { deadline: Date.now() + 30_000 }, (err, res) =>
          err ? reject(toRampartError(err)) : resolve(res),
        );
        for (let i = 0; i < 10; i++) stream.write({ event: '$login.failed', user: { id: 'rl-stream' } });
        stream.end();
      }),
    );
    expect(e.codeName).toBe('RESOURCE_EXHAUSTED');
    expect(e.type).toBe('rate_limited');
    expect(e.retryAfterSeconds).toBeGreaterThanOrEqual(1);
    expect(e.metadata.get('rampart-accepted')).toEqual(['2']);
    c.close();
    await own.stop();
    await limited.close();
  });
});

describe('graceful drain', () => {
  it('stop() lets calls in flight finish and refuses new ones', async () => {
    const own = await startGrpcServer({
      services: core.wrap(app.built.services),
      log,
      host: '127.0.0.1',
      port: 0,
      tls: undefined,
    });
    const c = createRampartClient({ address: own.address, secret: app.secret, deadlineMs: 30_000 });
    expect(await c.health()).toBe('SERVING');
    slow.evaluateMs = 400;
    const evaluating = slow.evaluateCalls;
    const inFlight = c.risk(risk('drain-1'));
    await until(() => slow.evaluateCalls === evaluating + 1, 'the call to reach the core');
    const stopped = own.stop();
    await expect(inFlight).resolves.toHaveProperty('policy');
    await stopped;
    const after = await failure(c.risk(risk('drain-2'), { deadlineMs: 1000 }));
    expect(['UNAVAILABLE', 'DEADLINE_EXCEEDED']).toContain(after.codeName);
    c.close();
  });

  it('stop() cuts calls still running after the drain timeout', async () => {
    const own = await startGrpcServer({
      services: core.wrap(app.built.services),
      log,
      host: '127.0.0.1',
      port: 0,
      tls: undefined,
      drainTimeoutMs: 100,
    });
    const c = createRampartClient({ address: own.address, secret: app.secret, deadlineMs: 30_000 });
    const release = holdEvaluations();
    const done = slow.evaluateDone;
    const evaluating = slow.evaluateCalls;
    const inFlight = failure(c.risk(risk('drain-3')));
    await until(() => slow.evaluateCalls === evaluating + 1, 'the call to reach the core');
    await own.stop();
    // Stopped after the drain timeout, not after the call: its core work is still held.
    expect(slow.evaluateDone).toBe(done);
    expect(['UNAVAILABLE', 'CANCELLED', 'INTERNAL']).toContain((await inFlight).codeName);
    release();
    c.close();
  });
});

describe('TLS', () => {
  let dir = '';
  let cert: Buffer;
  let key: Buffer;
  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'rampart-tls-'));
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-days',
        '1',
        '-subj',
        '/CN=localhost',
        '-addext',
        'subjectAltName=DNS:localhost,IP:127.0.0.1',
        '-keyout',
        path.join(dir, 'key.pem'),
        '-out',
        path.join(dir, 'cert.pem'),
      ],
      { stdio: 'ignore' },
    );
    cert = readFileSync(path.join(dir, 'cert.pem'));
    key = readFileSync(path.join(dir, 'key.pem'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('serves over TLS when given a certificate; a plaintext client cannot call', async () => {
    const tlsServer = await startGrpcServer({
      services: app.built.services,
      log,
      host: '127.0.0.1',
      port: 0,
      tls: { cert, key },
    });
    const secure = createRampartClient({
      address: `localhost:${tlsServer.port}`,
      secret: app.secret,
      tls: { rootCerts: cert },
      deadlineMs: 30_000,
    });
    await expect(secure.risk(risk('tls-1'))).resolves.toHaveProperty('policy');
    const plain = createRampartClient({
      address: `localhost:${tlsServer.port}`,
      secret: app.secret,
      deadlineMs: 1000,
    });
    expect(['UNAVAILABLE', 'DEADLINE_EXCEEDED', 'INTERNAL']).toContain(
      (await failure(plain.risk(risk('tls-2')))).codeName,
    );
    secure.close();
    plain.close();
    await tlsServer.stop();
  });
});
