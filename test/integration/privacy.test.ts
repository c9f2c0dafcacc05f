/**
 * Privacy use cases against the real test database and a real SMTP server on loopback: the
 * access request e-mails a signed link that downloads the user's export (directly and over the
 * REST door), the link dies after 48 hours and the sweeper deletes the export, and a purge leaves
 * nothing of the user in any collection while other users' data stays.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { applyIndexes } from '../../src/store/database';
import { StateUserStore, USER_QUERY_FIELDS, USERS, userStateIndexes } from '../../src/store/user-state';
import { StateLayer } from '../../src/store/state/layer';
import { eventIndexes, MongoDebuggerStore, MongoEventStore } from '../../src/store/events';
import { COUNTER_QUERY_FIELDS, COUNTERS, counterIndexes, StateCounterStore } from '../../src/store/counters';
import { serverKind } from '../../src/store/server-kind';
import { MongoWebhookStore, toDoc, webhookIndexes } from '../../src/store/webhooks';
import { chunkText, MongoPrivacyStore, privacyIndexes } from '../../src/store/privacy';
import { createSmtpMailer, noMailer, type SmtpMailer } from '../../src/mail/smtp';
import { restExportLinks } from '../../src/rest/privacy-links';
import { httpPoster } from '../../src/workers/http';
import { timerScheduler } from '../../src/workers/scheduler';
import { PrivacyService, type PrivacyServiceDeps } from '../../src/core/privacy/service';
import { WebhookService } from '../../src/core/webhooks/service';
import { Sealer, sha256Hex } from '../../src/core/crypto';
import { emailAccount, emailKey } from '../../src/core/scoring/population';
import { InvalidParameters, NotFound } from '../../src/core/errors';
import {
  asEnvId,
  type Device,
  type DeviceContext,
  type EnvId,
  type Environment,
  type StoredEvent,
} from '../../src/core/model';
import { testDatabase, type TestDatabase } from '../support/db';
import { jobDone } from '../support/privacy';
import { eventsOfUser } from '../support/stored';
import { waitFor } from '../support/wait';
import { EXPORT_LINK as LINK, MailSink } from '../support/mail';

jest.setTimeout(60_000);

let database: TestDatabase;
const smtp = new MailSink();
let mailer: SmtpMailer;
let skewMs = 0;
const clock = { now: () => new Date(Date.now() + skewMs) };
const log = { warn: () => undefined, info: () => undefined };
const sealer = new Sealer(randomBytes(32).toString('hex'));

let state: StateLayer;
let users: StateUserStore;
let events: MongoEventStore;
let debuggerLog: MongoDebuggerStore;
let counters: StateCounterStore;
let store: MongoPrivacyStore;
let webhooks: WebhookService;
const envs = new Map<string, Environment>();

function newEnv(privacyEmail: string | null = 'dpo@example.com'): Environment {
  const env: Environment = {
    id: asEnvId(randomUUID()),
    name: `privacy-${envs.size}`,
    enabled: true,
    sandbox: true,
    publishableKey: 'pk',
    webhookUrl: 'http://127.0.0.1:9/never-sent',
    privacyEmail,
    createdAt: new Date(),
  };
  envs.set(env.id, env);
  return env;
}

function privacy(opts: Partial<PrivacyServiceDeps> = {}): PrivacyService {
  return new PrivacyService({
    store,
    users,
    writes: state,
    webhooks,
    mailer,
    sealer,
    clock,
    links: restExportLinks('https://rampart.test/'),
    log,
    ...opts,
  });
}

/** Seed a user with a profile, devices, events (and an anonymous one naming the e-mail), a debugger entry, counters and a webhook. */
async function seedUser(env: Environment, userId: string): Promise<{ email: string; devices: Device[] }> {
  const email = `${userId}@example.com`;
  const now = new Date();
  const context: DeviceContext = {
    ip: '198.51.100.4',
    location: null,
    userAgent: {
      raw: 'UA',
      browser: 'Firefox',
      version: '1',
      os: 'Linux',
      mobile: false,
      platform: 'Linux',
      device: 'Unknown',
      family: 'Firefox',
      type: 'desktop',
      bot: false,
      headless: false,
      crawler: false,
    },
    type: 'desktop',
    properties: { note: `device of ${userId}` },
  };
  await users.load(env.id, userId);
  users.record(env.id, userId, {
    profile: {
      seenAt: now,
      firstSeenAt: now,
      email,
      username: `${userId}-name`,
      registeredAt: now,
      traits: { email, plan: 'pro' },
      location: { lat: 1, lon: 2, country: 'US', at: now },
      country: 'US',
    },
    devices: [1, 2].map((n) => ({
      key: `f:${userId}-${n}`,
      create: { token: `tok_${randomUUID()}`, identity: 'fingerprint' as const, at: now },
      seen: { at: now, context },
      eventRisk: 0.1,
    })),
  });
  const made = (await users.load(env.id, userId))!.devices;
  const event = (name: string, uid: string | null, at: Date): StoredEvent => ({
    id: randomUUID(),
    envId: env.id,
    name,
    endpoint: 'authenticate',
    userId: uid,
    email,
    deviceToken: uid ? made[0]!.token : null,
    ip: '198.51.100.4',
    country: 'US',
    asn: null,
    userAgent: 'UA',
    action: 'allow',
    risk: 0.1,
    signals: [],
    signalDetails: {},
    policy: null,
    context: {
      ip: '198.51.100.4',
      headers: { 'user-agent': 'UA' },
      userAgent: 'UA',
      fingerprint: null,
      extra: {},
    },
    userTraits: { email },
    properties: { email },
    occurredAt: at,
    receivedAt: at,
    degraded: false,
  });
  await Promise.all([
    events.append(event('$login.succeeded', userId, new Date(now.getTime() - 3000))),
    events.append(event('$login.succeeded', userId, new Date(now.getTime() - 2000))),
    events.append(event('$password_reset.succeeded', userId, new Date(now.getTime() - 1000))),
    events.append(event('$login.attempted', null, new Date(now.getTime() - 500))),
  ]);
  await debuggerLog.append({
    id: randomUUID(),
    envId: env.id,
    endpoint: 'track',
    reason: 'event: unknown',
    fields: [{ field: 'event', message: 'unknown' }],
    payload: JSON.stringify({ event: '$nope', user_id: userId }),
    userId,
    receivedAt: now,
  });
  // The velocity windows hold accounts by id and, for attempts that named only an e-mail, by e-mail.
  counters.bump(env.id, [
    { key: 'w:dev:f:shared:1', inc: { a: 1 }, add: { u: userId } },
    { key: 'w:ip:198.51.100.4:1', inc: { a: 1, f: 1 }, add: { uf: emailAccount(email) } },
    { key: emailKey(sha256Hex(email)), replaceSet: { u: [userId] } },
  ]);
  await webhooks.emit({
    type: '$incident.confirmed',
    env,
    userId,
    device: made[0]!,
    trigger: 'device_reported',
    context: { ip: '198.51.100.4', userAgent: null, location: null },
    policy: null,
    userTraits: {},
    properties: {},
    at: now,
  });
  // And an earlier webhook about the user, delivered: the history keeps it apart from the outbox.
  const [open] = await webhooks.listForUser(env.id, userId);
  const delivered = {
    ...open!,
    id: randomUUID(),
    status: 'delivered' as const,
    createdAt: new Date(now.getTime() - 60_000),
    deliveredAt: now,
    nextAttemptAt: null,
  };
  await database.db.collection('webhook_deliveries').insertOne(toDoc(delivered) as never);
  return { email, devices: made };
}

async function chunksOf(jobId: string): Promise<number> {
  return database.db.collection('privacy_exports').countDocuments({ jobId });
}

beforeAll(async () => {
  database = await testDatabase();
  // TTL indexes are left out: FerretDB 1.24 refuses `expireAfterSeconds` (nothing here relies on them).
  const specs = [
    ...userStateIndexes,
    ...eventIndexes,
    ...counterIndexes,
    ...webhookIndexes,
    ...privacyIndexes,
  ].map((s) => ({
    ...s,
    indexes: s.indexes.filter((i) => i.expireAfterSeconds === undefined),
  }));
  await applyIndexes(database.db, specs);
  useStores('deltas');
  await smtp.start();
  mailer = createSmtpMailer({ url: `smtp://127.0.0.1:${smtp.port}`, from: 'rampart@example.com' });
});

/**
 * The stores over one state layer: writing deltas (any MongoDB), or whole documents, users and
 * counters packed (the embedded database, where this process is the only writer).
 */
function useStores(writeMode: 'deltas' | 'snapshots'): void {
  state = new StateLayer(database.db, {
    writeMode,
    packed: writeMode === 'snapshots' ? { [USERS]: USER_QUERY_FIELDS, [COUNTERS]: COUNTER_QUERY_FIELDS } : {},
    onError: (err) => {
      throw err;
    },
  });
  users = new StateUserStore({ db: database.db, state });
  events = new MongoEventStore({ db: database.db, state });
  debuggerLog = new MongoDebuggerStore({ db: database.db, state });
  counters = new StateCounterStore({ db: database.db, state, now: () => new Date() });
  store = new MongoPrivacyStore({ db: database.db, state });
  webhooks = new WebhookService({
    store: new MongoWebhookStore({ db: database.db, state }),
    signingSecret: async () => 'sk_unused',
    environments: { byId: async (id: EnvId) => envs.get(id) ?? null },
    clock,
    http: httpPoster,
    scheduler: timerScheduler,
    instanceId: 'privacy-test',
    log,
  });
}

afterEach(() => {
  skewMs = 0;
});

afterAll(async () => {
  mailer?.close();
  await smtp.close();
  await database?.drop();
});

describe('access request', () => {
  it('needs a privacy address and a known user', async () => {
    const svc = privacy();
    const noAddress = newEnv(null);
    await seedUser(noAddress, 'someone');
    const err = await svc.requestAccess(noAddress, 'someone').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidParameters);
    expect((err as InvalidParameters).fields[0]!.field).toBe('privacy_email');
    await expect(svc.requestAccess(newEnv(), 'nobody')).rejects.toBeInstanceOf(NotFound);
  });

  it('e-mails a signed link that downloads the export, until 48 hours have passed', async () => {
    const env = newEnv('dpo@example.com');
    const userId = `user-${randomUUID()}`;
    const seeded = await seedUser(env, userId);
    const svc = privacy();
    const mailsBefore = smtp.mails.length;

    const job = await svc.requestAccess(env, userId);
    expect(job).toMatchObject({ status: 'pending', userId, envId: env.id, recipient: 'dpo@example.com' });
    expect(job.expiresAt.getTime() - job.createdAt.getTime()).toBe(48 * 3_600_000);
    const done = await jobDone(svc, env.id, job.id);
    expect(done.status).toBe('sent');
    expect(done.error).toBeNull();
    expect(done.exportBytes).toBeGreaterThan(100);
    expect((await svc.job(env.id, job.id))?.status).toBe('sent');
    expect((await svc.jobs(env.id, 10)).map((j) => j.id)).toEqual([job.id]);

    expect(smtp.mails.length).toBe(mailsBefore + 1);
    const mail = smtp.mails[smtp.mails.length - 1]!;
    expect(mail.to).toEqual(['dpo@example.com']);
    expect(mail.raw).toMatch(/^From: rampart@example\.com/m);
    const m = LINK.exec(mail.text);
    expect(m).not.toBeNull();
    const [link, jobId, expires, signature] = m as unknown as [string, string, string, string];
    expect(link.startsWith(`https://rampart.test/v1/privacy/exports/${job.id}?`)).toBe(true);
    expect(jobId).toBe(job.id);
    expect(Number(expires)).toBe(Math.floor(job.expiresAt.getTime() / 1000));

    const file = await svc.download(jobId, expires, signature);
    expect(file.filename).toBe(`rampart-privacy-export-${job.id}.json`);
    const doc = JSON.parse(file.json);
    expect(doc).toMatchObject({
      format: 'rampart.privacy-export.v1',
      user_id: userId,
      environment: { id: env.id },
      profile: { userId, email: seeded.email },
    });
    expect(doc.devices.map((d: { token: string }) => d.token).sort()).toEqual(
      seeded.devices.map((d) => d.token).sort(),
    );
    expect(doc.events.map((e: { name: string }) => e.name)).toEqual([
      '$login.succeeded',
      '$login.succeeded',
      '$password_reset.succeeded',
    ]);
    expect(doc.rejected_payloads).toHaveLength(1);
    expect(doc.webhooks).toHaveLength(2);
    expect(doc.webhooks[0].payload.data.user_id).toBe(userId);

    // Tampering with anything in the link is a 404.
    const flipped = signature.replace(/^./, (c) => (c === '0' ? '1' : '0'));
    await expect(svc.download(jobId, expires, flipped)).rejects.toBeInstanceOf(NotFound);
    await expect(svc.download(jobId, String(Number(expires) + 3600), signature)).rejects.toBeInstanceOf(
      NotFound,
    );
    await expect(svc.download(randomUUID(), expires, signature)).rejects.toBeInstanceOf(NotFound);
    await expect(svc.download(jobId, expires, 'nothex')).rejects.toBeInstanceOf(NotFound);

    // Just before 48 h it still works; one second after, it never does, even before any sweep.
    skewMs = 48 * 3_600_000 - 5_000;
    await expect(svc.download(jobId, expires, signature)).resolves.toMatchObject({ filename: file.filename });
    skewMs = 48 * 3_600_000 + 1_000;
    await expect(svc.download(jobId, expires, signature)).rejects.toBeInstanceOf(NotFound);
    expect(await chunksOf(job.id)).toBeGreaterThan(0);

    // The sweeper deletes the export and marks the job expired.
    expect(await svc.sweep()).toBeGreaterThanOrEqual(1);
    expect(await chunksOf(job.id)).toBe(0);
    expect((await svc.job(env.id, job.id))?.status).toBe('expired');
    skewMs = 0;
    await expect(svc.download(jobId, expires, signature)).rejects.toBeInstanceOf(NotFound);
  });

  it('records a failure when the mail cannot be sent, and deletes the export', async () => {
    const env = newEnv();
    await seedUser(env, 'mailfail');
    const unreachable = createSmtpMailer({
      url: 'smtp://127.0.0.1:9',
      from: 'rampart@example.com',
      timeoutMs: 2000,
    });
    const failing = privacy({ mailer: unreachable });
    const job = await failing.requestAccess(env, 'mailfail');
    const done = await jobDone(failing, env.id, job.id);
    unreachable.close();
    expect(done?.status).toBe('failed');
    expect(done?.error).toMatch(/ECONNREFUSED|connect/i);
    expect(await chunksOf(job.id)).toBe(0);

    const noSmtp = privacy({ mailer: noMailer });
    const j2 = await noSmtp.requestAccess(env, 'mailfail');
    expect(await jobDone(noSmtp, env.id, j2.id)).toMatchObject({
      status: 'failed',
      error: expect.stringContaining('RAMPART_SMTP_URL'),
    });
  });

  it('stores large exports in chunks and reads them back intact', async () => {
    const small = new MongoPrivacyStore({ db: database.db, state, chunkChars: 1000 });
    const env = asEnvId(randomUUID());
    const text = `${'ab😀'.repeat(1500)}é${'x'.repeat(999)}😀`;
    const bytes = await small.putExport(
      env,
      { id: randomUUID(), userId: 'u', expiresAt: new Date(Date.now() + 1000) },
      text,
    );
    expect(bytes).toBe(Buffer.byteLength(text));
    const [doc] = await database.db.collection('privacy_exports').find({ envId: env }).toArray();
    expect(doc).toBeDefined();
    const jobId = String(doc!.jobId);
    expect(await database.db.collection('privacy_exports').countDocuments({ envId: env })).toBeGreaterThan(5);
    expect(await small.readExport(env, jobId)).toBe(text);
    expect(chunkText('a😀', 2)).toEqual(['a', '😀']);
    expect(await small.readExport(asEnvId(randomUUID()), jobId)).toBeNull();
  });

  it('resolves `$email` identifiers case-insensitively', async () => {
    const env = newEnv();
    await seedUser(env, 'Carol');
    const svc = privacy();
    expect(await svc.resolveIdentifier(env.id, 'CAROL@example.COM', '$email')).toEqual(['Carol']);
    expect(await svc.resolveIdentifier(env.id, 'x.y@example.com', '$email')).toEqual([]);
    expect(await svc.resolveIdentifier(env.id, 'Carol', '$id')).toEqual(['Carol']);
    await expect(svc.resolveIdentifier(env.id, 'Carol', '$phone')).rejects.toBeInstanceOf(InvalidParameters);
    await expect(svc.resolveIdentifier(env.id, 7, undefined)).rejects.toBeInstanceOf(InvalidParameters);
  });
});

describe.each(['deltas', 'snapshots'] as const)('purge (state written as %s)', (writeMode) => {
  // Whole documents are written only on Rampart's FerretDB build (the embedded database).
  beforeAll(async () =>
    useStores(
      writeMode === 'snapshots' && !(await serverKind(database.db)).upsertInsert ? 'deltas' : writeMode,
    ),
  );
  afterAll(async () => {
    await state.flush();
    useStores('deltas');
  });

  it('deletes every record of the user from every collection and keeps other users', async () => {
    const env = newEnv();
    const alice = `alice-${randomBytes(6).toString('hex')}`;
    const bob = `bob-${randomBytes(6).toString('hex')}`;
    const a = await seedUser(env, alice);
    const b = await seedUser(env, bob);
    const svc = privacy();
    const job = await svc.requestAccess(env, alice);
    expect((await jobDone(svc, env.id, job.id)).status).toBe('sent');
    const bobJob = await svc.requestAccess(env, bob);
    await jobDone(svc, env.id, bobJob.id);

    const { deleted } = await svc.purge(env, alice);
    expect(deleted).toMatchObject({
      users: 1,
      devices: 2,
      // (Their copies name the devices by their tokens: no token has a document of its own.)
      device_tokens: 0,
      events: 4,
      debugger: 1,
      webhook_outbox: 1,
      webhook_deliveries: 1,
      privacy_jobs: 1,
    });
    expect(deleted.counters).toBeGreaterThanOrEqual(3);
    expect(deleted.privacy_exports).toBeGreaterThanOrEqual(1);

    // Nothing of alice (id or e-mail) remains anywhere in the database.
    const collections = (await database.db.listCollections().toArray()).map((c) => c.name);
    expect(collections).toEqual(
      expect.arrayContaining([
        'users',
        'devices',
        'device_tokens',
        'events',
        'debugger',
        'counters',
        'webhook_outbox',
        'webhook_deliveries',
        'privacy_jobs',
        'privacy_exports',
      ]),
    );
    const found: Record<string, number> = {};
    let bobSeen = 0;
    for (const name of collections) {
      for (const doc of await database.db.collection(name).find({}).toArray()) {
        const text = JSON.stringify(doc);
        if (text.includes(alice)) found[name] = (found[name] ?? 0) + 1;
        if (text.includes(bob)) bobSeen++;
      }
    }
    expect(found).toEqual({});
    expect(bobSeen).toBeGreaterThan(10);

    // Through the core's own stores: alice is gone, bob is whole.
    expect(await users.load(env.id, alice)).toBeNull();
    expect(await users.byToken(env.id, a.devices[0]!.token)).toBeNull();
    expect(await eventsOfUser(database.db, env.id, alice, 10)).toEqual([]);
    expect(await webhooks.listForUser(env.id, alice)).toEqual([]);
    expect(await svc.job(env.id, job.id)).toBeNull();
    expect((await users.load(env.id, bob))?.profile.email).toBe(b.email);
    expect((await users.load(env.id, bob))?.devices).toHaveLength(2);
    expect(await eventsOfUser(database.db, env.id, bob, 10)).toHaveLength(3);
    expect(await webhooks.listForUser(env.id, bob)).toHaveLength(2);
    expect((await counters.read(env.id, ['w:dev:f:shared:1']))?.get('w:dev:f:shared:1')?.sets.u).toEqual([
      bob,
    ]);
    expect((await svc.job(env.id, bobJob.id))?.status).toBe('sent');

    // Idempotent: purging again, or an unknown user, deletes nothing and does not fail.
    const again = await svc.purge(env, alice);
    expect(Object.values(again.deleted).every((n) => n === 0)).toBe(true);
    expect(Object.values((await svc.purge(env, 'never-seen')).deleted).every((n) => n === 0)).toBe(true);
  });
});

describe('over the REST door', () => {
  it('POST /v1/privacy/users/{id} answers 202 and the e-mailed link downloads over HTTP', async () => {
    // Imported lazily: the REST adapter and composition root are other modules of the project.
    const { buildServices } = await import('../../src/app/build');
    const { buildRestServer } = await import('../../src/rest/server');
    const { createLogger } = await import('../../src/app/logger');
    const db = await testDatabase();
    const logger = createLogger('silent');
    let built: Awaited<ReturnType<typeof buildServices>> | null = null;
    let http: Awaited<ReturnType<typeof buildRestServer>> | null = null;
    try {
      built = await buildServices({
        db: db.db,
        log: logger,
        masterKey: randomBytes(32).toString('hex'),
        authCacheMs: 0,
        rateLimitPerSecond: 10_000,
        publicUrl: 'https://rampart.example',
        smtpUrl: `smtp://127.0.0.1:${smtp.port}`,
        mailFrom: 'rampart@example.com',
      });
      http = await buildRestServer({
        services: built.services,
        log: logger,
        bodyLimit: 100 * 1024,
        trustProxy: false,
        requireHttps: false,
      });
      await http.listen({ host: '127.0.0.1', port: 0 });
      const base = `http://127.0.0.1:${(http.server.address() as AddressInfo).port}`;
      const { env, secret } = await built.services.environments.create('privacy-http', { sandbox: true });
      await built.services.environments.setPrivacyEmail(env.id, 'privacy-officer@example.com');
      built.services.read.users.record(env.id, 'http-user', {
        profile: { seenAt: new Date(), firstSeenAt: new Date(), email: 'h@example.com' },
      });
      const auth = `Basic ${Buffer.from(`:${secret}`).toString('base64')}`;
      const before = smtp.mails.length;
      const res = await fetch(`${base}/v1/privacy/users/http-user`, {
        method: 'POST',
        headers: { authorization: auth },
      });
      expect(res.status).toBe(202);
      const mail = await waitFor(
        () => smtp.mails.slice(before).find((m) => m.to.includes('privacy-officer@example.com')),
        { what: "the export's mail to the privacy officer", timeoutMs: 10_000, intervalMs: 25 },
      );
      const m = LINK.exec(mail.text);
      expect(m).not.toBeNull();
      const url = new URL(m![0]);
      expect(url.origin).toBe('https://rampart.example');
      const download = await fetch(`${base}${url.pathname}${url.search}`);
      expect(download.status).toBe(200);
      expect(download.headers.get('content-type')).toMatch(/application\/json/);
      expect(JSON.parse(await download.text())).toMatchObject({
        user_id: 'http-user',
        environment: { id: env.id },
      });
      const forged = await fetch(
        `${base}${url.pathname}?expires=${url.searchParams.get('expires')}&signature=${'0'.repeat(64)}`,
      );
      expect(forged.status).toBe(404);

      // Another tenant's user: the purge answers 202 as for any id (idempotent, and no answer
      // tells whether an id exists anywhere), an access request 404 as for an unknown user, and
      // the other tenant's user is left whole.
      const other = await built.services.environments.create('privacy-http-other', { sandbox: true });
      const otherAuth = `Basic ${Buffer.from(`:${other.secret}`).toString('base64')}`;
      const seen = await fetch(`${base}/v1/risk`, {
        method: 'POST',
        headers: { authorization: otherAuth, 'content-type': 'application/json' },
        body: JSON.stringify({
          event: '$login',
          status: '$succeeded',
          user: { id: 'other-user', email: 'o@example.com' },
          context: { ip: '81.2.69.142', headers: { 'user-agent': 'Mozilla/5.0' } },
        }),
      });
      expect(seen.status).toBe(201);
      expect(
        (
          await fetch(`${base}/v1/privacy/users/other-user`, {
            method: 'DELETE',
            headers: { authorization: auth },
          })
        ).status,
      ).toBe(202);
      expect(
        (
          await fetch(`${base}/v1/privacy/users/never-seen-anywhere`, {
            method: 'DELETE',
            headers: { authorization: auth },
          })
        ).status,
      ).toBe(202);
      expect(
        (
          await fetch(`${base}/v1/privacy/users/other-user`, {
            method: 'POST',
            headers: { authorization: auth },
          })
        ).status,
      ).toBe(404);
      const kept = await fetch(`${base}/v1/users/other-user/devices`, {
        headers: { authorization: otherAuth },
      });
      expect(kept.status).toBe(200);
      expect(((await kept.json()) as { total_count: number }).total_count).toBe(1);

      const purge = await fetch(`${base}/v1/privacy/users/http-user`, {
        method: 'DELETE',
        headers: { authorization: auth },
      });
      expect(purge.status).toBe(202);
      const gone = await fetch(`${base}/v1/users/http-user/devices`, { headers: { authorization: auth } });
      expect(gone.status).toBe(404);
      expect((await fetch(`${base}${url.pathname}${url.search}`)).status).toBe(404);
    } finally {
      await http?.close();
      await built?.stop();
      await db.drop();
    }
  });
});
