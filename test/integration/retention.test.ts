/**
 * Retention on the real database: records made through the doors, the service's clock moved past
 * their environment's retention, one sweep pass. Old events, debugger rows and ended privacy
 * requests go; recent ones and other environments' (another retention) stay; what the model
 * learnt is kept, so the user's device is still known. Both ways of finding old records run here
 * (`scan`, FerretDB's, and `per-environment`, MongoDB's), with batches of two so that a pass
 * takes several deletes.
 */
import { DAY_MS } from '../../src/core/retention';
import type { Environment } from '../../src/core/model';
import { serverKind } from '../../src/store/server-kind';
import type { RetentionStrategy } from '../../src/store/retention';
import type { CommandStartedEvent } from 'mongodb';
import { startTestApp, call, type TestApp } from '../support/app';
import { jobDone } from '../support/privacy';

/** The service's clock runs `offset` ms ahead of the real one: records age by moving it. */
let offset = 0;
const clock = { now: () => new Date(Date.now() + offset) };

const UA =
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36';
const ctx = {
  ip: '81.2.69.142',
  headers: { 'User-Agent': UA, Accept: 'text/html', 'Accept-Language': 'en-GB' },
};

/** The filter of each delete command sent while `recording`. */
let recording = false;
const deletes: Record<string, unknown>[] = [];
const monitorCommands = (e: CommandStartedEvent) => {
  if (!recording || e.commandName !== 'delete') return;
  for (const d of (e.command as { deletes: { q: Record<string, unknown> }[] }).deletes) deletes.push(d.q);
};

describe.each<RetentionStrategy>(['scan', 'per-environment'])('the retention sweep (%s)', (strategy) => {
  let app: TestApp;
  beforeAll(async () => {
    offset = 0;
    app = await startTestApp({
      grpc: false,
      clock,
      retention: { strategy, batchSize: 2, pauseMs: 0 },
      monitorCommands,
    });
  });
  afterAll(async () => {
    await app?.close();
  });

  const db = () => app.database.db;

  async function settled() {
    await app.built.services.track.drain(false);
    await app.built.state.flush();
  }

  /** A verdict for `user` from its usual browser (one fingerprint), in the environment of `secret`. */
  async function login(secret: string, user: string) {
    const r = await call({ baseUrl: app.baseUrl, secret }, 'POST', '/v1/risk', {
      event: '$login',
      user: { id: user, email: `${user}@example.com` },
      request_token: `fp-${user}`,
      context: ctx,
    });
    expect(r.status).toBe(201);
    return r.body as { device: { token: string }; signals: Record<string, unknown> };
  }

  /** What the environment has now: its event, debugger and privacy job ids. */
  async function records(env: Environment) {
    const ids = async (collection: string) =>
      (
        await db()
          .collection<{ _id: string }>(collection)
          .find({ envId: env.id }, { projection: { _id: 1 } })
          .toArray()
      )
        .map((d) => d._id)
        .sort();
    return { events: await ids('events'), debugger: await ids('debugger'), jobs: await ids('privacy_jobs') };
  }

  /** Everything an environment keeps of a user: a few events, a rejected payload, an ended privacy request. */
  async function activity(env: Environment, secret: string, user: string) {
    await login(secret, user);
    await login(secret, user);
    // A track payload that cannot be read: answered 204 and kept in the debugger.
    expect(
      (
        await call({ baseUrl: app.baseUrl, secret }, 'POST', '/v1/track', {
          event: '$login.succeeded',
          user_id: user,
          timestamp: 'not a time',
          context: ctx,
        })
      ).status,
    ).toBe(204);
    // No SMTP in tests: the request ends `failed` at once.
    const job = await app.built.services.privacy.requestAccess(
      await app.built.services.environments.require(env.id),
      user,
    );
    expect((await jobDone(app.built.services.privacy, env.id, job.id)).status).toBe('failed');
    await settled();
  }

  it("deletes what is past each environment's retention and keeps the rest, and what the model learnt", async () => {
    const envs = app.built.services.environments;
    const short = await app.newEnvironment(`short-${strategy}`);
    const long = await app.newEnvironment(`long-${strategy}`);
    await envs.setRetentionDays(short.env.id, 30);
    await envs.setRetentionDays(long.env.id, 365);
    for (const e of [short, long]) await envs.setPrivacyEmail(e.env.id, 'privacy@example.com');
    await envs.setPrivacyEmail(app.env.id, 'privacy@example.com');
    const sandbox = { env: app.env, secret: app.secret };

    // Day 0: the same activity in three environments (sandbox keeps the default, 90 days).
    for (const e of [short, long, sandbox]) await activity(e.env, e.secret, 'ada');
    const device = (await login(short.secret, 'ada')).device.token;
    await settled();
    const day0 = {
      short: await records(short.env),
      long: await records(long.env),
      sandbox: await records(sandbox.env),
    };
    for (const r of Object.values(day0)) {
      expect(r.events.length).toBeGreaterThanOrEqual(2);
      expect(r.debugger.length).toBeGreaterThanOrEqual(1);
      expect(r.jobs).toHaveLength(1);
    }

    // Day 60: newer activity in the 30-day environment, then a pass.
    offset = 60 * DAY_MS;
    await activity(short.env, short.secret, 'bob');
    const recent = await records(short.env);
    deletes.length = 0;
    recording = true;
    const counts = await app.built.retention.sweep().finally(() => (recording = false));

    const after60 = await records(short.env);
    // Only day 60's records are left in the 30-day environment ...
    expect(after60.events).toEqual(recent.events.filter((id) => !day0.short.events.includes(id)));
    expect(after60.debugger).toEqual(recent.debugger.filter((id) => !day0.short.debugger.includes(id)));
    expect(after60.jobs).toEqual(recent.jobs.filter((id) => !day0.short.jobs.includes(id)));
    expect(after60.events.length).toBeGreaterThanOrEqual(2);
    expect(after60.jobs).toHaveLength(1);
    // ... the other environments, whose retentions are longer, lost nothing ...
    expect(await records(long.env)).toEqual(day0.long);
    expect(await records(sandbox.env)).toEqual(day0.sandbox);
    // ... and the pass said what it deleted, in deletes of at most two `_id`s (the batch), which
    // name nothing but `_id`s where FerretDB would otherwise read the whole table for each.
    expect(counts).toMatchObject({
      events: day0.short.events.length,
      debugger: day0.short.debugger.length,
      privacyJobs: 1,
    });
    expect(deletes.length).toBeGreaterThanOrEqual(Math.ceil(day0.short.events.length / 2) + 2);
    for (const q of deletes) {
      expect((q._id as { $in: string[] }).$in.length).toBeLessThanOrEqual(2);
      expect(Object.keys(q).sort()).toEqual(strategy === 'scan' ? ['_id'] : ['_id', 'envId']);
    }

    // The profile and devices are not raw records: Ada's browser is still hers.
    const again = await login(short.secret, 'ada');
    expect(again.device.token).toBe(device);
    expect(again.signals).not.toHaveProperty('new_device');
    const devices = await call(
      { baseUrl: app.baseUrl, secret: short.secret },
      'GET',
      '/v1/users/ada/devices',
    );
    expect(devices.body.total_count).toBe(1);
    await settled();

    // Day 100: past the default 90 days too; the 365-day environment still keeps everything.
    offset = 100 * DAY_MS;
    await app.built.retention.sweep();
    expect(await records(sandbox.env)).toEqual({ events: [], debugger: [], jobs: [] });
    expect(await records(long.env)).toEqual(day0.long);
    // Day 60's records are 40 days old now, past the 30 days.
    expect((await records(short.env)).jobs).toEqual([]);
  });

  it('keeps a privacy request that has not ended, whatever its age', async () => {
    offset = 0;
    const env = await app.newEnvironment(`live-job-${strategy}`);
    await app.built.services.environments.setRetentionDays(env.env.id, 1);
    await login(env.secret, 'cy');
    await settled();
    // A request still being compiled (as when its instance stopped mid-way): `pending`.
    const jobs = db().collection<{ _id: string; envId: string; status: string; createdAt: Date }>(
      'privacy_jobs',
    );
    await jobs.insertOne({
      _id: `pending-${strategy}`,
      envId: env.env.id,
      status: 'pending',
      createdAt: clock.now(),
    });
    offset = 3 * DAY_MS;
    await app.built.retention.sweep();
    expect(await jobs.countDocuments({ _id: `pending-${strategy}` })).toBe(1);
    expect(await db().collection('events').countDocuments({ envId: env.env.id })).toBe(0);
  });

  it("deletes the webhooks' history past the retention or 30 days, and audit entries past the retention", async () => {
    offset = 0;
    const envs = app.built.services.environments;
    const year = await app.newEnvironment(`year-${strategy}`);
    const month = await app.newEnvironment(`month-${strategy}`);
    await envs.setRetentionDays(year.env.id, 365);
    await envs.setRetentionDays(month.env.id, 20);
    const now = clock.now().getTime();
    const ago = (days: number) => new Date(now - days * DAY_MS);
    // Finished deliveries as the store keeps them (and one the history should not hold: open).
    const history = db().collection<{ _id: string; envId: string; status: string; createdAt: Date }>(
      'webhook_deliveries',
    );
    const delivery = (env: Environment, id: string, status: string, days: number) => ({
      _id: `${id}-${strategy}`,
      envId: env.id,
      userId: 'ada',
      status,
      createdAt: ago(days),
      body: '{}',
      attempts: [],
    });
    await history.insertMany([
      delivery(year.env, 'wh-40d', 'delivered', 40),
      delivery(year.env, 'wh-35d-failed', 'failed', 35),
      delivery(year.env, 'wh-10d', 'delivered', 10),
      delivery(year.env, 'wh-40d-open', 'pending', 40),
      delivery(month.env, 'wh-25d', 'delivered', 25),
      delivery(month.env, 'wh-15d', 'delivered', 15),
    ]);
    const audit = db().collection<{ _id: string; envId: string; at: Date }>('audit_log');
    const entry = (env: Environment, id: string, days: number) => ({
      _id: `${id}-${strategy}`,
      envId: env.id,
      at: ago(days),
      actor: { type: '$api_secret', identifier: 'x' },
      action: 'list.create',
      target: { kind: 'list', id: 'l', listId: 'l' },
      detail: '{}',
    });
    await audit.insertMany([
      entry(year.env, 'audit-400d', 400),
      entry(year.env, 'audit-100d', 100),
      entry(month.env, 'audit-25d', 25),
      entry(month.env, 'audit-5d', 5),
    ]);

    const counts = await app.built.retention.sweep();
    const left = async (c: typeof history | typeof audit, env: Environment) =>
      (await c.find({ envId: env.id }, { projection: { _id: 1 } }).toArray())
        .map((d) => d._id.replace(`-${strategy}`, ''))
        .sort();
    // The history: at most 30 days whatever the retention, the environment's when shorter; open ones are the outbox's.
    expect(await left(history, year.env)).toEqual(['wh-10d', 'wh-40d-open']);
    expect(await left(history, month.env)).toEqual(['wh-15d']);
    // The audit log: the environment's retention.
    expect(await left(audit, year.env)).toEqual(['audit-100d']);
    expect(await left(audit, month.env)).toEqual(['audit-5d']);
    expect(counts).toMatchObject({ webhooks: 3, audit: 2 });
  });
});

describe('the embedded database', () => {
  it("refuses TTL indexes, so retention there is the sweep's alone", async () => {
    const app = await startTestApp({ grpc: false });
    try {
      if (!(await serverKind(app.database.db)).ferretdb) return;
      await expect(
        app.database.db.collection('events').createIndex({ expireAt: 1 }, { expireAfterSeconds: 0 }),
      ).rejects.toMatchObject({ code: 238 });
    } finally {
      await app.close();
    }
  });
});
