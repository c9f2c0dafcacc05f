/**
 * Bad input over gRPC: missing fields, wrong enum values, oversized and undecodable messages,
 * deep Structs, huge header maps, bad timestamps, and every error's details
 * (google.rpc.BadRequest in grpc-status-details-bin, rampart-error-type).
 */
import * as grpc from '@grpc/grpc-js';
import { startTestApp, type TestApp } from '../support/app';
import { failure } from '../support/grpc';
import { createRampartClient, RampartError, type RampartClient, type RiskRequest } from '../../src/client';
import { loadRampartProto } from '../../src/grpc/loader';
import type { Struct } from '../../src/grpc/generated/google/protobuf/Struct';

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
const good = (): RiskRequest => ({
  event: '$login',
  user: { id: 'bad-1' },
  requestToken: 'tok-bad-1',
  context: { ip: '81.2.69.142', headers: { 'User-Agent': UA } },
});
const fields = (e: RampartError) => e.fields.map((f) => f.field).sort();

describe('missing fields', () => {
  it('Risk without user, context or event names each field', async () => {
    const e = await failure(client.risk({}));
    expect(e.codeName).toBe('INVALID_ARGUMENT');
    expect(e.type).toBe('invalid_parameters');
    expect(fields(e)).toEqual(['event']);
    const noUser = await failure(client.risk({ ...good(), user: null }));
    expect(fields(noUser)).toEqual(['user']);
    const noContext = await failure(client.risk({ ...good(), context: null }));
    expect(fields(noContext)).toEqual(['context']);
    const noUa = await failure(client.risk({ ...good(), context: { ip: '81.2.69.142' } }));
    expect(fields(noUa)).toEqual(['context.headers']);
    const noId = await failure(client.risk({ ...good(), user: { email: 'x@example.com' } }));
    expect(fields(noId)).toEqual(['user.id']);
  });

  it('Authenticate paths name the request fields (user.id), not the Castle body', async () => {
    // The e-mail is recommended, not required (docs/decisions.md): only the user id is missing here.
    const e = await failure(
      client.authenticate({ event: '$login.succeeded', context: { ip: '81.2.69.142' } }),
    );
    expect(fields(e)).toEqual(['user.id']);
    expect(e.message).toContain('user.id: is required');
  });

  it('device and user identifiers are required', async () => {
    expect(fields(await failure(client.getDevice({})))).toEqual(['device_token']);
    expect(fields(await failure(client.approveDevice({})))).toEqual(['device_token']);
    expect(fields(await failure(client.reportDevice({})))).toEqual(['device_token']);
    expect(fields(await failure(client.listUserDevices({})))).toEqual(['user_id']);
    expect(fields(await failure(client.purge({})))).toEqual(['user_id']);
  });
});

describe('wrong values', () => {
  it('an EventStatus value the contract does not define', async () => {
    const e = await failure(client.risk({ ...good(), status: 42 as never }));
    expect(e.codeName).toBe('INVALID_ARGUMENT');
    expect(e.fields).toEqual([{ field: 'status', description: 'unknown EventStatus value 42' }]);
  });

  it('an unknown event, an invalid IP, a malformed request token', async () => {
    expect(fields(await failure(client.risk({ ...good(), event: '$nope' })))).toEqual(['event']);
    expect(
      fields(
        await failure(
          client.risk({ ...good(), context: { ip: '999.1.1.1', headers: { 'User-Agent': UA } } }),
        ),
      ),
    ).toEqual(['context.ip']);
    const token = await failure(client.risk({ ...good(), requestToken: 'has spaces in it' }));
    expect(token.codeName).toBe('INVALID_ARGUMENT');
    expect(token.type).toBe('invalid_request_token');
    expect(fields(token)).toEqual(['request_token']);
  });

  it('a timestamp too far in the future, or out of range', async () => {
    const future = await failure(
      client.risk({ ...good(), timestamp: { seconds: Math.floor(Date.now() / 1000) + 3600 } }),
    );
    expect(fields(future)).toEqual(['timestamp']);
    const huge = await failure(client.risk({ ...good(), timestamp: { seconds: '99999999999999' } }));
    expect(fields(huge)).toEqual(['timestamp']);
  });

  it('problems inside free-form traits point into user.traits', async () => {
    const e = await failure(
      client.authenticate({
        event: '$login.succeeded',
        user: {
          id: 'bad-2',
          email: 'bad2@example.com',
          traits: { fields: { created_at: { stringValue: 'yesterday', kind: 'stringValue' } } },
        },
        context: { ip: '81.2.69.142' },
      }),
    );
    expect(e.fields).toEqual([
      { field: 'user.traits.created_at', description: 'must be an ISO 8601 timestamp' },
    ]);
  });
});

describe('sizes', () => {
  it('a huge header map is INVALID_ARGUMENT on context.headers', async () => {
    const headers: Record<string, string> = { 'User-Agent': UA };
    for (let i = 0; i < 500; i++) headers[`x-h-${i}`] = 'v';
    const e = await failure(client.risk({ ...good(), context: { ip: '81.2.69.142', headers } }));
    expect(e.codeName).toBe('INVALID_ARGUMENT');
    expect(fields(e)).toEqual(['context.headers']);
  });

  it('a message over 100 KiB is INVALID_ARGUMENT payload_too_large; over the hard cap grpc-js refuses it', async () => {
    const big = (bytes: number): RiskRequest => ({
      ...good(),
      properties: { fields: { blob: { stringValue: 'x'.repeat(bytes), kind: 'stringValue' } } },
    });
    const e = await failure(client.risk(big(150 * 1024)));
    expect(e.codeName).toBe('INVALID_ARGUMENT');
    expect(e.type).toBe('payload_too_large');
    expect(fields(e)).toEqual(['(message)']);
    const capped = await failure(client.risk(big(600 * 1024)));
    expect(capped.codeName).toBe('RESOURCE_EXHAUSTED');
    expect(capped.type).toBeNull();
    // A message just under the limit is fine.
    await expect(client.risk(big(90 * 1024))).resolves.toBeDefined();
  });

  it('Structs nested deeper than 32 levels are INVALID_ARGUMENT bad_request', async () => {
    let deep: Struct = { fields: { leaf: { stringValue: 'x', kind: 'stringValue' } } };
    for (let i = 0; i < 40; i++) deep = { fields: { n: { structValue: deep, kind: 'structValue' } } };
    const e = await failure(client.risk({ ...good(), properties: deep }));
    expect(e.codeName).toBe('INVALID_ARGUMENT');
    expect(e.type).toBe('bad_request');
  });

  it('bytes that are not a protobuf message are INVALID_ARGUMENT bad_request, not INTERNAL', async () => {
    const { proto } = loadRampartProto();
    const stub = new proto.rampart.v1.Scoring(app.grpcAddress, grpc.credentials.createInsecure());
    const md = new grpc.Metadata();
    md.set('authorization', `Bearer ${app.secret}`);
    const err = await new Promise<grpc.ServiceError | null>((resolve) =>
      stub.makeUnaryRequest(
        '/rampart.v1.Scoring/Risk',
        (b: Buffer) => b,
        (b: Buffer) => b,
        Buffer.from([0x0f]) /* field 1, wire type 7: no such wire type */,
        md,
        (e) => resolve(e),
      ),
    );
    stub.close();
    expect(err?.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(err?.metadata.get('rampart-error-type')).toEqual(['bad_request']);
  });
});

describe('credentials', () => {
  it('a missing or wrong secret is UNAUTHENTICATED on every service', async () => {
    const { proto } = loadRampartProto();
    const creds = grpc.credentials.createInsecure();
    const devices = new proto.rampart.v1.Devices(app.grpcAddress, creds);
    const privacy = new proto.rampart.v1.Privacy(app.grpcAddress, creds);
    const scoring = new proto.rampart.v1.Scoring(app.grpcAddress, creds);
    const md = (auth?: string) => {
      const m = new grpc.Metadata();
      if (auth) m.set('authorization', auth);
      return m;
    };
    for (const auth of [
      undefined,
      'Bearer nope',
      'Basic !!!',
      'Token x',
      `Basic ${Buffer.from('no-colon').toString('base64')}`,
    ]) {
      const codes = await Promise.all([
        new Promise((r) => devices.getDevice({ deviceToken: 't' }, md(auth), (e) => r(e?.code))),
        new Promise((r) => privacy.purge({ userId: 'u' }, md(auth), (e) => r(e?.code))),
        new Promise((r) => scoring.track({ event: '$login.failed' }, md(auth), (e) => r(e?.code))),
        new Promise((r) => scoring.trackStream(md(auth), (e) => r(e?.code)).end()),
      ]);
      expect(codes).toEqual([16, 16, 16, 16]);
    }
    devices.close();
    privacy.close();
    scoring.close();
  });
});

describe('error details', () => {
  it('carry google.rpc.ErrorInfo and BadRequest in grpc-status-details-bin', async () => {
    const e = await failure(client.risk({ ...good(), user: null, context: null }));
    expect(e.metadata.get('grpc-status-details-bin')).toHaveLength(1);
    expect(e.fields).toEqual([
      { field: 'context', description: 'is required' },
      { field: 'user', description: 'is required' },
    ]);
    expect(e.metadata.get('rampart-error-type')).toEqual(['invalid_parameters']);
  });
});
