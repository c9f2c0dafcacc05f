/**
 * Data written by the previous version (devices in their own documents with a `device_keys`
 * index, the last location as an object, traits as JSON text) keeps working after an upgrade:
 * the start-up migration folds devices into their users' documents and drops `device_keys`.
 */
import { asEnvId } from '../../src/core/model';
import { startTestApp, call, type TestApp } from '../support/app';

const UA =
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36';
const at = new Date('2026-10-01T10:00:00.000Z');
let app: TestApp;
let envId = '';

const legacyDevice = (env: string, token: string, key: string, feedback: 'approved' | 'reported' | null) => ({
  _id: `${env}:${token}`,
  token,
  envId: env,
  userId: 'legacy-user',
  identity: 'fingerprint',
  fingerprintKey: key,
  createdAt: at,
  lastSeenAt: at,
  approvedAt: feedback === 'approved' ? at : null,
  escalatedAt: feedback === 'reported' ? at : null,
  mitigatedAt: null,
  removedAt: null,
  risk: feedback === 'reported' ? 100 : 0,
  feedback,
  context: {
    ip: '81.2.69.142',
    location: null,
    userAgent: {
      raw: UA,
      browser: 'Chrome',
      version: '120',
      os: 'Mac OS',
      mobile: false,
      platform: 'Mac OS',
      device: '',
      family: 'Chrome',
      type: 'desktop',
      bot: false,
      headless: false,
      crawler: false,
    },
    type: 'desktop',
    properties: '{"identity":"fingerprint"}',
  },
  lastEventRisk: 0.1,
});

beforeAll(async () => {
  app = await startTestApp({
    grpc: false,
    beforeBuild: async (db) => {
      // The sandbox environment is created by the test app after the build; use a fixed id here
      // and then point the legacy data at the real one below.
      envId = 'legacy-env';
      const { fingerprintKeyOf } = await import('../../src/core/devices/service');
      await db.collection('users').insertOne({
        _id: `${envId}:legacy-user` as never,
        envId,
        userId: 'legacy-user',
        email: 'legacy@example.com',
        username: null,
        phone: null,
        registeredAt: null,
        traits: '{"plan":"pro"}',
        createdAt: at,
        lastSeenAt: at,
        lastLocation: { lat: 51.5, lon: -0.12, country: 'GB', at },
        countries: ['GB'],
        lastPasswordResetAt: null,
        deviceCount: 2,
      });
      await db
        .collection('devices')
        .insertMany([
          legacyDevice(envId, 'tok-legacy-1', fingerprintKeyOf('legacy-fp-1'), 'approved'),
          legacyDevice(envId, 'tok-legacy-2', fingerprintKeyOf('legacy-fp-2'), 'reported'),
        ] as never[]);
      await db.collection('device_keys').insertMany([
        { _id: `${envId}:legacy-user:1`, envId, userId: 'legacy-user', token: 'tok-legacy-1' },
        { _id: `${envId}:legacy-user:2`, envId, userId: 'legacy-user', token: 'tok-legacy-2' },
      ] as never[]);
    },
  });
});
afterAll(async () => {
  await app?.close();
});

describe('upgrading from devices in their own documents', () => {
  it('folds every device into its user and drops device_keys', async () => {
    const db = app.database.db;
    expect(await db.listCollections({ name: 'device_keys' }).toArray()).toEqual([]);
    const users = app.built.services.read.users;
    const state = await users.load(asEnvId(envId), 'legacy-user');
    expect(state?.profile).toMatchObject({
      email: 'legacy@example.com',
      traits: { plan: 'pro' },
      countries: ['GB'],
      lastLocation: { lat: 51.5, lon: -0.12, country: 'GB', at },
    });
    expect(state?.devices.map((d) => [d.token, d.feedback, d.riskScore]).sort()).toEqual([
      ['tok-legacy-1', 'approved', 0],
      ['tok-legacy-2', 'reported', 100],
    ]);
    expect((await users.byToken(asEnvId(envId), 'tok-legacy-2'))?.escalatedAt).toEqual(at);
  });

  it('recognises a migrated device by its fingerprint on the next verdict (through REST, in the real environment)', async () => {
    // Move the migrated user into the sandbox environment the REST door authenticates for.
    const env = app.env.id;
    const { fingerprintKeyOf } = await import('../../src/core/devices/service');
    const db = app.database.db;
    await db
      .collection('devices')
      .insertOne(legacyDevice(env, 'tok-legacy-3', fingerprintKeyOf('legacy-fp-3'), null) as never);
    await db.collection('device_keys').insertOne({
      _id: `${env}:legacy-user:3`,
      envId: env,
      userId: 'legacy-user',
      token: 'tok-legacy-3',
    } as never);
    const { migrateLegacyDevices } = await import('../../src/store/migrations');
    expect(await migrateLegacyDevices(db, app.built.state, { info: () => undefined })).toBeGreaterThanOrEqual(
      1,
    );
    const r = await call(app, 'POST', '/v1/risk', {
      event: '$login',
      user: { id: 'legacy-user' },
      request_token: 'legacy-fp-3',
      context: { ip: '81.2.69.142', headers: { 'User-Agent': UA } },
    });
    expect(r.status).toBe(201);
    expect(r.body.device.token).toBe('tok-legacy-3');
    expect(r.body.signals).not.toHaveProperty('new_device');
    const listed = await call(app, 'GET', '/v1/users/legacy-user/devices');
    expect(listed.body.data.map((d: { token: string }) => d.token)).toEqual(['tok-legacy-3']);
  });
});
