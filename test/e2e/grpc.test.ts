/**
 * The gRPC door over loopback with the exported client (generated stubs): every RPC, both
 * credential schemes, health and reflection, and the rich error details.
 */
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import path from 'node:path';
import { startTestApp, type TestApp } from '../support/app';
import { storedOf } from '../support/stored';
import { failure } from '../support/grpc';
import { createRampartClient, fromStruct, toStruct, type RampartClient } from '../../src/client';
import { loadRampartProto } from '../../src/grpc/loader';
import { decodeStatusDetails } from '../../src/grpc/status-details';
import { FileDescriptorProto } from 'protobufjs/ext/descriptor';
import { jobDone } from '../support/privacy';

interface FileInfo {
  name: string;
  dependency: string[];
  messageType: { name: string; field: { name: string; typeName?: string }[] }[];
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

const UA =
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36';
const context = (ip = '81.2.69.142', clientId = '') => ({
  ip,
  headers: { 'User-Agent': UA, Accept: 'text/html', 'Accept-Language': 'en-GB' },
  clientId,
});
const UUID = /^[0-9a-f-]{36}$/;

describe('Scoring', () => {
  it('Authenticate answers action, user id, device token, risk, policy and signals', async () => {
    const r = await client.authenticate({
      event: '$login.succeeded',
      user: { id: 'g-auth-1', email: 'gauth1@example.com' },
      context: context('81.2.69.142', 'cid-g-auth-1'),
    });
    expect(r.action).toBe('ACTION_ALLOW');
    expect(r.userId).toBe('g-auth-1');
    expect(r.deviceToken).toMatch(/^[A-Za-z0-9_-]{32,}$/);
    expect(r.risk).toBeGreaterThanOrEqual(0);
    expect(r.risk).toBeLessThanOrEqual(1);
    expect(r.policy).toEqual({
      id: expect.stringMatching(UUID),
      revision: expect.stringMatching(UUID),
      name: 'Allow everything else',
      action: 'ACTION_ALLOW',
    });
    expect(typeof r.signals).toBe('object');
  });

  it('Risk answers risk, policy, signals and the device token, stable per user and fingerprint', async () => {
    const req = (token: string) => ({
      event: '$login',
      user: { id: 'g-risk-1', email: 'grisk1@example.com' },
      requestToken: token,
      context: context(),
    });
    const a = await client.risk(req('fp-g-a'));
    const b = await client.risk(req('fp-g-a'));
    const c = await client.risk(req('fp-g-c'));
    expect(a.device?.token).toMatch(/^[A-Za-z0-9_-]{32,}$/);
    expect(b.device?.token).toBe(a.device?.token);
    expect(c.device?.token).not.toBe(a.device?.token);
    expect(Object.keys(c.signals)).toContain('new_device');
    expect(['ACTION_ALLOW', 'ACTION_CHALLENGE', 'ACTION_DENY']).toContain(c.policy?.action);
  });

  it('Filter answers risk, policy and signals; the type + status form works', async () => {
    const r = await client.filter({
      event: '$registration',
      status: 'EVENT_STATUS_ATTEMPTED',
      user: { email: 'g-f1@mailinator.com' },
      requestToken: 'tok-g-f1',
      context: context(),
    });
    expect(Object.keys(r.signals)).toContain('disposable_email');
    expect(r.policy?.id).toMatch(UUID);
  });

  it('signal details and properties travel as Structs', async () => {
    const r = await client.risk({
      event: '$custom',
      name: 'withdrawal',
      user: { id: 'g-struct-1', traits: toStruct({ plan: 'pro', seats: 3 }) },
      properties: toStruct({
        amount: 12.5,
        currency: 'EUR',
        tags: ['a', 'b'],
        nested: { ok: true, none: null },
      }),
      requestToken: 'tok-g-struct-1',
      context: { ...context(), scrubbedHeaders: ['Cookie'], extra: toStruct({ locale: 'en-GB' }) },
    });
    for (const detail of Object.values(r.signals))
      expect(fromStruct(detail, 'signal')).toEqual(expect.any(Object));
    await app.built.state.flush();
    const [stored] = await storedOf(app).eventsOfUser(app.env.id, 'g-struct-1', 10);
    expect(stored.properties).toMatchObject({
      amount: 12.5,
      currency: 'EUR',
      tags: ['a', 'b'],
      nested: { ok: true, none: null },
    });
    expect(stored.userTraits).toMatchObject({ plan: 'pro', seats: 3 });
    expect(stored.context.headers.cookie).toBe(true);
    expect(stored.context.extra).toMatchObject({ locale: 'en-GB' });
  });

  it('sandbox test tokens force the outcome', async () => {
    const r = await client.risk({
      event: '$login',
      user: { id: 'g-test-1' },
      requestToken: 'test|device:chrome_on_mac|policy.action:deny|risk:0.95',
      context: context(),
    });
    expect(r.policy?.action).toBe('ACTION_DENY');
    expect(r.risk).toBeCloseTo(0.95);
  });

  it('Track and TrackStream accept feedback that the core applies (challenge approves the device)', async () => {
    const risk = await client.risk({
      event: '$login',
      user: { id: 'g-track-1' },
      requestToken: 'tok-g-track-1',
      context: context(),
    });
    const token = risk.device?.token ?? '';
    await client.track({ event: '$challenge.succeeded', deviceToken: token });
    await app.built.services.track.drain(false);
    const approved = await client.getDevice({ deviceToken: token });
    expect(approved.approvedAt).not.toBeNull();
    expect(approved.risk).toBe(0);

    const second = await client.risk({
      event: '$login',
      user: { id: 'g-track-2' },
      requestToken: 'tok-g-track-2',
      context: context(),
    });
    const events = function* () {
      yield { event: '$login.failed', user: { id: 'g-track-2' }, context: context() };
      yield { event: '$review.escalated', deviceToken: second.device?.token ?? '' };
      yield { event: '$no.such.event' };
    };
    const res = await client.trackStream(events());
    expect(res.accepted).toBe(3);
    await app.built.services.track.drain(false);
    const reported = await client.getDevice({ deviceToken: second.device?.token ?? '' });
    expect(reported.escalatedAt).not.toBeNull();
    expect(reported.risk).toBe(100);
  });

  it('Track never fails on a malformed event: it goes to the debugger', async () => {
    await expect(
      client.track({ event: '$login.failed', status: 77 as never, user: { id: 'g-dbg-1' } }),
    ).resolves.toBeUndefined();
    await expect(client.track({})).resolves.toBeUndefined();
  });
});

describe('Devices', () => {
  let token = '';
  beforeAll(async () => {
    const r = await client.risk({
      event: '$login',
      user: { id: 'g-dev-1', email: 'gdev1@example.com' },
      requestToken: 'cid-g-dev-1',
      context: context(),
    });
    token = r.device?.token ?? '';
  });

  it('ListUserDevices lists the devices and marks the current one', async () => {
    const r = await client.listUserDevices({ userId: 'g-dev-1', clientId: 'cid-g-dev-1' });
    expect(r.totalCount).toBe(1);
    const d = r.devices[0];
    expect(d.token).toBe(token);
    expect(d.isCurrentDevice).toBe(true);
    expect(d.userId).toBe('g-dev-1');
    expect(d.context?.userAgent?.browser).toBe('Chrome');
    expect(d.context?.type).toBe('DEVICE_TYPE_DESKTOP');
    expect(d.context?.ip).toBe('81.2.69.142');
    expect(d.context?.location?.countryCode).toBe('GB');
    expect(typeof d.context?.location?.lat).toBe('number');
    expect(fromStruct(d.context?.properties, 'properties')).toMatchObject({ identity: 'fingerprint' });
    expect(Number(d.createdAt?.seconds)).toBeGreaterThan(1_600_000_000);
    const other = await client.listUserDevices({ userId: 'g-dev-1' });
    expect(other.devices[0].isCurrentDevice).toBe(false);
  });

  it('GetDevice, ApproveDevice and ReportDevice', async () => {
    expect((await client.getDevice({ deviceToken: token })).token).toBe(token);
    const approved = await client.approveDevice({ deviceToken: token });
    expect(approved.approvedAt).not.toBeNull();
    expect(approved.risk).toBe(0);
    const reported = await client.reportDevice({ deviceToken: token });
    expect(reported.escalatedAt).not.toBeNull();
    expect(reported.approvedAt).toBeNull();
    expect(reported.risk).toBe(100);
  });

  it('unknown user and unknown device answer NOT_FOUND', async () => {
    expect((await failure(client.listUserDevices({ userId: 'g-nobody' }))).codeName).toBe('NOT_FOUND');
    const e = await failure(client.getDevice({ deviceToken: 'no-such-token' }));
    expect(e.codeName).toBe('NOT_FOUND');
    expect(e.type).toBe('not_found');
  });
});

describe('Privacy', () => {
  it('RequestAccess answers a pending job; Purge deletes the user', async () => {
    await app.built.services.environments.setPrivacyEmail(app.env.id, 'privacy@example.com');
    await client.risk({
      event: '$login',
      user: { id: 'g-priv-1', email: 'gpriv1@example.com' },
      requestToken: 'tok-g-priv-1',
      context: context(),
    });
    const access = await client.requestAccess({ userId: 'g-priv-1' });
    expect(access.jobs).toHaveLength(1);
    expect(access.jobs[0]).toMatchObject({
      id: expect.stringMatching(UUID),
      status: 'ACCESS_JOB_STATUS_PENDING',
      userId: 'g-priv-1',
    });
    expect(Number(access.jobs[0].expiresAt?.seconds) * 1000 - Date.now()).toBeGreaterThan(47 * 3_600_000);
    const byEmail = await client.requestAccess({ email: 'gpriv1@example.com' });
    expect(byEmail.jobs.map((j) => j.userId)).toEqual(['g-priv-1']);
    await jobDone(app.built.services.privacy, app.env.id, access.jobs[0].id).catch(() => undefined);
    await jobDone(app.built.services.privacy, app.env.id, byEmail.jobs[0].id).catch(() => undefined);

    const purged = await client.purge({ userId: 'g-priv-1' });
    expect(purged.purgedUsers).toBe(1);
    // Idempotent, and a user Rampart never saw is purged by nobody: 0, as the proto says.
    expect((await client.purge({ userId: 'g-priv-1' })).purgedUsers).toBe(0);
    expect((await client.purge({ userId: 'g-never-seen' })).purgedUsers).toBe(0);
    expect((await failure(client.listUserDevices({ userId: 'g-priv-1' }))).codeName).toBe('NOT_FOUND');
    expect((await failure(client.requestAccess({}))).fields.map((f) => f.field)).toEqual(['user_id']);
  });
});

describe('authentication', () => {
  const risk = {
    event: '$login',
    user: { id: 'g-authn-1' },
    requestToken: 'tok-g-authn-1',
    context: context(),
  };

  it('accepts Basic with an empty user name and Bearer', async () => {
    const { proto } = loadRampartProto();
    const stub = new proto.rampart.v1.Scoring(app.grpcAddress, grpc.credentials.createInsecure());
    const call = (authorization: string | null) =>
      new Promise<grpc.status>((resolve) => {
        const md = new grpc.Metadata();
        if (authorization) md.set('authorization', authorization);
        stub.risk(risk, md, (err) => resolve(err ? err.code : grpc.status.OK));
      });
    expect(await call(`Basic ${Buffer.from(`:${app.secret}`).toString('base64')}`)).toBe(grpc.status.OK);
    expect(await call(`Bearer ${app.secret}`)).toBe(grpc.status.OK);
    expect(await call(null)).toBe(grpc.status.UNAUTHENTICATED);
    expect(await call('Bearer sk_wrong')).toBe(grpc.status.UNAUTHENTICATED);
    expect(await call(`Basic ${Buffer.from(':sk_wrong').toString('base64')}`)).toBe(
      grpc.status.UNAUTHENTICATED,
    );
    stub.close();
  });

  it('a wrong secret is UNAUTHENTICATED with type unauthorized', async () => {
    const wrong = createRampartClient({ address: app.grpcAddress, secret: 'sk_wrong_secret_value' });
    const e = await failure(wrong.risk(risk));
    wrong.close();
    expect(e.codeName).toBe('UNAUTHENTICATED');
    expect(e.type).toBe('unauthorized');
  });

  it('an analyst key is refused', async () => {
    const { secret } = await app.built.services.environments.addCredential(
      app.env.id,
      'analyst',
      'grpc-test',
    );
    const analyst = createRampartClient({ address: app.grpcAddress, secret });
    const e = await failure(analyst.risk(risk));
    analyst.close();
    expect(e.codeName).toBe('UNAUTHENTICATED');
  });

  it('a disabled environment is PERMISSION_DENIED, its reason in the trailers as on REST', async () => {
    const { env, secret } = await app.newEnvironment('grpc-disabled');
    await app.built.services.environments.setEnabled(env.id, false);
    const c = createRampartClient({ address: app.grpcAddress, secret });
    const e = await failure(c.risk(risk));
    c.close();
    expect(e.codeName).toBe('PERMISSION_DENIED');
    expect(e.type).toBe('forbidden');
    expect(e.metadata.get('rampart-reason')).toEqual(['environment_disabled']);
    const details = decodeStatusDetails(e.metadata.get('grpc-status-details-bin')[0] as Buffer);
    expect(details?.errorInfo?.metadata).toMatchObject({ type: 'forbidden', reason: 'environment_disabled' });
  });

  it('an error without a reason carries no rampart-reason trailer', async () => {
    const e = await failure(client.getDevice({ deviceToken: 'no-such-token' }));
    expect(e.codeName).toBe('NOT_FOUND');
    expect(e.metadata.get('rampart-reason')).toEqual([]);
  });
});

describe('health and reflection', () => {
  it('serves grpc.health.v1 for the server and each service', async () => {
    for (const s of ['', 'rampart.v1.Scoring', 'rampart.v1.Devices', 'rampart.v1.Privacy'])
      expect(await client.health(s)).toBe('SERVING');
    expect((await failure(client.health('no.such.Service'))).codeName).toBe('NOT_FOUND');
  });

  it('serves reflection: lists the services and describes them as their .proto files do', async () => {
    const dir = path.dirname(require.resolve('@grpc/reflection/package.json'));
    const def = protoLoader.loadSync('grpc/reflection/v1/reflection.proto', {
      includeDirs: [path.join(dir, 'build', 'proto')],
      keepCase: true,
      defaults: true,
      oneofs: true,
    });
    const pkg = grpc.loadPackageDefinition(def) as unknown as {
      grpc: { reflection: { v1: { ServerReflection: typeof grpc.Client } } };
    };
    const Reflection = pkg.grpc.reflection.v1.ServerReflection;
    const stub = new Reflection(app.grpcAddress, grpc.credentials.createInsecure()) as grpc.Client & {
      ServerReflectionInfo(): grpc.ClientDuplexStream<object, Record<string, unknown>>;
    };
    const ask = (request: object) =>
      new Promise<Record<string, unknown>>((resolve, reject) => {
        const call = stub.ServerReflectionInfo();
        call.on('data', (m) => {
          resolve(m);
          call.end();
        });
        call.on('error', reject);
        call.write(request);
      });
    const list = (await ask({ list_services: '' })) as {
      list_services_response: { service: { name: string }[] };
    };
    const names = list.list_services_response.service.map((s) => s.name);
    expect(names).toEqual(
      expect.arrayContaining([
        'rampart.v1.Scoring',
        'rampart.v1.Devices',
        'rampart.v1.Privacy',
        'grpc.health.v1.Health',
      ]),
    );
    // Descriptors as protoc writes them: real file names, imports, snake_case fields, absolute type names.
    const file = (await ask({ file_containing_symbol: 'rampart.v1.Scoring' })) as {
      file_descriptor_response: { file_descriptor_proto: Buffer[] };
    };
    const files = file.file_descriptor_response.file_descriptor_proto.map(
      (b) => FileDescriptorProto.toObject(FileDescriptorProto.decode(b)) as FileInfo,
    );
    const scoring = files.find((f) => f.name === 'rampart/v1/scoring.proto');
    expect(scoring?.dependency).toEqual([
      'google/protobuf/struct.proto',
      'google/protobuf/timestamp.proto',
      'rampart/v1/common.proto',
    ]);
    expect(files.map((f) => f.name)).toEqual(
      expect.arrayContaining(['rampart/v1/common.proto', 'google/protobuf/struct.proto']),
    );
    const common = files.find((f) => f.name === 'rampart/v1/common.proto');
    const context = common?.messageType.find((m) => m.name === 'Context');
    expect(context?.field.map((f) => [f.name, f.typeName ?? null])).toEqual([
      ['ip', null],
      ['headers', '.rampart.v1.Context.HeadersEntry'],
      ['scrubbed_headers', null],
      ['client_id', null],
      ['user_agent', null],
      ['extra', '.google.protobuf.Struct'],
    ]);
    stub.close();
  });
});
