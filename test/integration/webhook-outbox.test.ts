/**
 * The webhook outbox's layout on Rampart's FerretDB build (store/webhooks.ts): the dispatcher's
 * reads (what is due, a user's first open delivery) are index reads, never a scan, whatever the
 * history holds; a finished delivery moves to the history and leaves only its id behind, which
 * still refuses a repeated notice until its window has passed; and an earlier version's database
 * (every delivery in `webhook_deliveries`) is migrated so that its open deliveries are sent and
 * its recent ones are not sent again.
 *
 * "Never a scan" is read from FerretDB itself: this file starts a FerretDB of its own at debug
 * level, where patch 0009 logs each query it reads through an index ("index pushdown", with the
 * SQL); each find the store sends on the outbox must have such a line, naming the index, with its
 * ORDER BY and LIMIT. The embedded database's build only: skipped on MONGODB_URI.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import type { CommandStartedEvent, Db } from 'mongodb';
import { connect, applyIndexes, type Database } from '../../src/store/database';
import { ferretdbBinary, freePort, sqliteUrl, waitForPort } from '../../src/store/embedded';
import { indexesFor, serverKind } from '../../src/store/server-kind';
import { StateLayer } from '../../src/store/state/layer';
import { MongoWebhookStore, webhookIndexes } from '../../src/store/webhooks';
import { migrateWebhookOutbox } from '../../src/store/migrations';
import { WebhookService } from '../../src/core/webhooks/service';
import { slotDeliveryId } from '../../src/core/webhooks/outbox';
import type { WebhookDelivery } from '../../src/core/webhooks/model';
import type { WebhookNotice } from '../../src/core/webhooks/ports';
import { asEnvId, type EnvId, type Environment } from '../../src/core/model';
import { timerScheduler } from '../../src/workers/scheduler';
import type { HttpPoster } from '../../src/core/ports';
import { waitFor } from '../support/wait';

jest.setTimeout(120_000);

const embeddedOnly = process.env.RAMPART_TEST_EMBEDDED === '1' ? describe : describe.skip;

/** A FerretDB of this file's own, logging at debug level: its lines are kept. */
class DebugFerretDb {
  readonly lines: string[] = [];
  private child: ChildProcess | null = null;
  private partial = '';
  uri = '';
  /** The level it was started at (only `debug` logs index reads). */
  level: 'info' | 'debug' = 'info';
  constructor(private readonly dir: string) {}
  /** Start on the files there are (none the first time); at debug level it logs what this test reads, and writes far slower. */
  async start(level: 'info' | 'debug'): Promise<void> {
    this.level = level;
    mkdirSync(this.dir, { recursive: true });
    const port = await freePort();
    const args = [
      '--handler=sqlite',
      `--sqlite-url=${sqliteUrl(this.dir)}`,
      `--state-dir=${this.dir}`,
      `--listen-addr=127.0.0.1:${port}`,
      '--telemetry=disable',
      '--debug-addr=-',
      `--log-level=${level}`,
    ];
    const child = spawn(ferretdbBinary(), args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const keep = (b: Buffer) => {
      const text = this.partial + b.toString('utf8');
      const parts = text.split('\n');
      this.partial = parts.pop() ?? '';
      // Only what this test reads: the lines of queries read through an index.
      for (const line of parts) if (line.includes('index pushdown')) this.lines.push(line);
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    this.child = child;
    await waitForPort(port, child, 20_000);
    this.uri = `mongodb://127.0.0.1:${port}/`;
  }
  async stop(): Promise<void> {
    const c = this.child;
    if (c && c.exitCode === null) {
      await new Promise<void>((resolve) => {
        c.once('exit', () => resolve());
        c.kill('SIGTERM');
      });
    }
    this.child = null;
  }
  remove(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}

const ROOT = path.resolve(__dirname, '..', '..');
const server = new DebugFerretDb(path.join(ROOT, '.data', `outbox-db-${process.pid}`));
let database: Database;
let db: Db;
let store: MongoWebhookStore;
/** Finds and deletes sent while `watching`, by collection. */
const commands: { name: string; collection: string; command: Record<string, unknown> }[] = [];
let watching = false;
const monitor = (e: CommandStartedEvent) => {
  if (
    !watching ||
    !['find', 'delete', 'update', 'findAndModify', 'aggregate', 'count'].includes(e.commandName)
  )
    return;
  commands.push({
    name: e.commandName,
    collection: String(e.command[e.commandName]),
    command: e.command as Record<string, unknown>,
  });
};
/** Runs `work` and returns the commands it sent and the index-read lines FerretDB logged meanwhile. */
async function watched(
  work: () => Promise<unknown>,
): Promise<{ sent: typeof commands; pushdowns: string[] }> {
  commands.length = 0;
  // A barrier: FerretDB logs in order, but the pipe may deliver an earlier command's line late
  // (a busy machine). Once a read of our own, named by a marker, is logged, every earlier line is in.
  if (server.level === 'debug') {
    const marker = `barrier-${randomUUID()}`;
    await db
      .collection('webhook_outbox')
      .find({ status: marker, dueAt: new Date(0) })
      .limit(1)
      .toArray();
    await waitFor(() => server.lines.some((l) => l.includes(marker)), {
      what: 'FerretDB to log the barrier read',
      timeoutMs: 60_000,
    });
  }
  const mark = server.lines.length;
  watching = true;
  try {
    await work();
  } finally {
    watching = false;
  }
  // The log line is written before the answer; the pipe may deliver it a moment later. Every
  // command on the outbox whose filter is not `_id` alone should have one.
  const sent = [...commands];
  const indexed = sent.flatMap(filtersOf).filter((f) => Object.keys(f).join() !== '_id').length;
  await waitFor(() => server.lines.length - mark >= indexed, {
    what: 'FerretDB to log the index reads',
    timeoutMs: 10_000,
  }).catch(() => undefined);
  return { sent, pushdowns: server.lines.slice(mark) };
}

/** The filters a command on the outbox names (none for other collections, or inserts). */
function filtersOf(c: (typeof commands)[number]): Record<string, unknown>[] {
  if (c.collection !== 'webhook_outbox') return [];
  if (c.name === 'update') return (c.command.updates as { q: Record<string, unknown> }[]).map((u) => u.q);
  if (c.name === 'delete') return (c.command.deletes as { q: Record<string, unknown> }[]).map((d) => d.q);
  if (c.name === 'findAndModify') return [c.command.query as Record<string, unknown>];
  if (c.name === 'find') return [c.command.filter as Record<string, unknown>];
  return [];
}

const envId = asEnvId(randomUUID());
const env: Environment = {
  id: envId,
  name: 'outbox',
  enabled: true,
  sandbox: true,
  publishableKey: 'pk_test',
  webhookUrl: 'http://127.0.0.1:9/hooks',
  privacyEmail: null,
  createdAt: new Date(),
};

function delivery(userId: string, over: Partial<WebhookDelivery> = {}): WebhookDelivery {
  const now = new Date();
  return {
    id: randomUUID(),
    envId,
    userId,
    deviceToken: null,
    type: '$incident.confirmed',
    trigger: 'verdict_deny',
    url: env.webhookUrl ?? '',
    body: '{"type":"$incident.confirmed"}',
    status: 'pending',
    attempts: [],
    maxAttempts: 10,
    nextAttemptAt: now,
    leaseOwner: null,
    leaseUntil: null,
    leaseVersion: 0,
    createdAt: now,
    seq: 0,
    deliveredAt: null,
    lastError: null,
    test: false,
    ...over,
  };
}

/** `n` finished deliveries written straight into the history, as weeks of webhooks leave it. */
async function history(n: number, over: Partial<WebhookDelivery> = {}): Promise<string[]> {
  const docs = Array.from({ length: n }, (_, i) => {
    const { id, ...d } = delivery(`old-${i % 50}`, {
      status: 'delivered',
      nextAttemptAt: null,
      deliveredAt: new Date(),
      leaseVersion: 1,
      attempts: [
        {
          at: new Date(),
          statusCode: 200,
          error: null,
          durationMs: 3,
          instance: 'x',
          url: env.webhookUrl ?? '',
        },
      ],
      ...over,
    });
    return { _id: id, ...d };
  });
  await db.collection('webhook_deliveries').insertMany(docs as never[]);
  return docs.map((d) => d._id);
}

/** A receiver that answers 200 at once, in process (the dispatcher's HttpPoster port). */
const sent: string[] = [];
const okPoster: HttpPoster = {
  post: async (_url, request) => (sent.push(request.headers['X-Rampart-Delivery'] ?? ''), { status: 200 }),
};
const log = { warn: () => undefined, info: () => undefined };

function service(
  instanceId: string,
  opts: { dedupeWindowMs?: number; clock?: { now: () => Date } } = {},
): WebhookService {
  return new WebhookService({
    store,
    signingSecret: async () => 'sk_test_outbox',
    environments: { byId: async (id: EnvId) => (id === envId ? env : null) },
    clock: { now: () => new Date() },
    http: okPoster,
    scheduler: timerScheduler,
    instanceId,
    log,
    ...opts,
  });
}

function notice(userId: string, deviceToken: string): WebhookNotice {
  return {
    type: '$incident.confirmed',
    env,
    userId,
    device: { token: deviceToken } as WebhookNotice['device'],
    trigger: 'verdict_deny',
    context: { ip: null, userAgent: null, location: null },
    policy: null,
    userTraits: {},
    properties: {},
    at: new Date(),
  };
}

embeddedOnly('the webhook outbox on the embedded FerretDB build', () => {
  /** (Re)start the server at `level` on its files, and connect to it. */
  async function open(level: 'info' | 'debug'): Promise<void> {
    await database?.close();
    await server.stop();
    await server.start(level);
    database = await connect(server.uri, 'rampart_test_outbox', { monitorCommands: monitor });
    db = database.db;
    const kind = await serverKind(db);
    expect(kind.indexPushdown).toBe(true);
    await applyIndexes(db, indexesFor(kind, webhookIndexes));
    store = new MongoWebhookStore({
      db,
      state: new StateLayer(db, {
        onError: (err) => {
          throw err;
        },
      }),
      atomicUpdates: true,
    });
  }
  beforeAll(async () => {
    server.remove();
    await open('info');
  });
  afterAll(async () => {
    await database?.close();
    await server.stop();
    server.remove();
  });

  it("answers what is due and whose turn it is through the outbox's indexes, never reading the history", async () => {
    await history(3_000);
    await open('debug');
    // Open deliveries of three users (the first of each being sent), and due ones behind them.
    const now = Date.now();
    for (const [u, user] of ['ann', 'bea', 'cat'].entries()) {
      for (let k = 0; k < 4; k++)
        await store.insert(
          delivery(user, {
            createdAt: new Date(now - 60_000 + u * 10 + k),
            nextAttemptAt: new Date(now - 60_000 + u * 10 + k),
            seq: k,
          }),
        );
    }
    // A finished one, whose id stays in the outbox (its dedupe record).
    const done = delivery('dan');
    await store.insert(done);
    const claimed = await store.claim(done, 'a', new Date(), new Date(Date.now() + 30_000));
    expect(
      await store.complete(
        claimed!,
        'a',
        {
          at: new Date(),
          statusCode: 200,
          error: null,
          durationMs: 1,
          instance: 'a',
          url: env.webhookUrl ?? '',
        },
        { status: 'delivered', nextAttemptAt: null, deliveredAt: new Date(), lastError: null },
      ),
    ).toBe(true);

    const attempt = {
      at: new Date(),
      statusCode: 200,
      error: null,
      durationMs: 1,
      instance: 'a',
      url: env.webhookUrl ?? '',
    };
    const { sent: reads, pushdowns } = await watched(async () => {
      // A pass of the dispatcher: two pages of what is due, skipping the users being sent,
      const first = await store.due(new Date(), { limit: 2, skipUsers: [{ env: envId, userId: 'ann' }] });
      expect(first.deliveries.map((d) => d.userId)).toEqual(['bea', 'bea']);
      const second = await store.due(new Date(), {
        limit: 2,
        skipUsers: [
          { env: envId, userId: 'ann' },
          { env: envId, userId: 'bea' },
        ],
        after: first.next!,
      });
      expect(second.deliveries.map((d) => d.userId)).toEqual(['cat', 'cat']);
      // whose turn it is, and a user's due ones (to park them behind a retry).
      expect((await store.openOfUser(envId, 'cat', 8)).map((d) => d.seq)).toEqual([0, 1, 2, 3]);
      expect(
        (await store.due(new Date(), { limit: 100, user: { env: envId, userId: 'bea' } })).deliveries,
      ).toHaveLength(4);
      expect(await store.openOfUser(envId, 'dan', 8)).toEqual([]);
    });
    const finds = reads.filter((c) => c.name === 'find');
    expect(finds.length).toBeGreaterThanOrEqual(6);
    // Nothing but the outbox is read: the history (3,000 deliveries) is never touched.
    expect(new Set(finds.map((c) => c.collection))).toEqual(new Set(['webhook_outbox']));
    // Each find was read through an index, with its sort and limit pushed down: SQLite read the rows returned, not the table.
    expect(pushdowns).toHaveLength(finds.length);
    for (const line of pushdowns) {
      expect(line).toMatch(/INDEXED BY \\?"webhook_outbox_[0-9a-f]+_v_(status_due|user_open)\\?"/);
      expect(line).toMatch(/ORDER BY .* LIMIT \?/);
    }

    // The writes of a delivery's life: claims, a retry, a hand-back, a delivery moved to the history.
    const [cat] = (await store.due(new Date(), { limit: 1, user: { env: envId, userId: 'cat' } })).deliveries;
    const [bea] = (await store.due(new Date(), { limit: 1, user: { env: envId, userId: 'bea' } })).deliveries;
    const writes = await watched(async () => {
      const a = await store.claim(cat!, 'a', new Date(), new Date(Date.now() + 30_000));
      expect(
        await store.complete(
          a!,
          'a',
          { ...attempt, statusCode: 503 },
          { status: 'pending', nextAttemptAt: new Date(), deliveredAt: null, lastError: 'HTTP 503' },
        ),
      ).toBe(true);
      const again = await store.claim(
        (await store.get(envId, cat!.id))!,
        'a',
        new Date(),
        new Date(Date.now() + 30_000),
      );
      expect(
        await store.complete(again!, 'a', attempt, {
          status: 'delivered',
          nextAttemptAt: null,
          deliveredAt: new Date(),
          lastError: null,
        }),
      ).toBe(true);
      const b = await store.claim(bea!, 'a', new Date(), new Date(Date.now() + 30_000));
      expect(await store.release(b!, 'a', new Date())).toBe(true);
      // A stale holder's write (a lease version since moved on) changes nothing.
      expect(await store.release(b!, 'a', new Date())).toBe(false);
    });
    // Every filter is `_id` alone (FerretDB's `_id` index) or read through an index: no write scans.
    const guarded = writes.sent.flatMap(filtersOf).filter((f) => Object.keys(f).join() !== '_id');
    // The history is written by `_id` alone, or inserted.
    expect(
      writes.sent
        .filter((c) => c.collection === 'webhook_deliveries' && c.name !== 'insert')
        .flatMap((c) =>
          c.name === 'find'
            ? [c.command.filter]
            : c.name === 'update'
              ? (c.command.updates as { q: unknown }[]).map((u) => u.q)
              : [],
        )
        .every((f) => Object.keys(f as object).join() === '_id'),
    ).toBe(true);
    expect(guarded.length).toBeGreaterThanOrEqual(5);
    expect(writes.pushdowns).toHaveLength(guarded.length);
    for (const line of writes.pushdowns)
      expect(line).toMatch(/INDEXED BY \\?"webhook_outbox_[0-9a-f]+_v_status_due\\?"/);
    expect(await db.collection('webhook_deliveries').findOne({ _id: cat!.id as never })).toMatchObject({
      status: 'delivered',
      attempts: [expect.objectContaining({ statusCode: 503 }), expect.objectContaining({ statusCode: 200 })],
    });
  });

  it('moves a finished delivery to the history, and its id still refuses a repeated notice until its window has passed', async () => {
    await db.collection('webhook_outbox').deleteMany({});
    sent.length = 0;
    // Windows are fixed minutes here (aligned on the epoch): a clock that starts this test at the
    // start of one keeps both notices in it, however slowly the machine runs them.
    const offset = Date.now() % 60_000;
    const clock = { now: () => new Date(Date.now() - offset) };
    const svc = service('a', { dedupeWindowMs: 60_000, clock });
    await svc.emit(notice('eve', 'dev-1'));
    await svc.deliverDue();
    await svc.dispatcher.idle();
    expect(sent).toHaveLength(1);
    const id = sent[0]!;
    // The history has the delivery and its attempt; the outbox only its id.
    expect(await db.collection('webhook_deliveries').findOne({ _id: id as never })).toMatchObject({
      status: 'delivered',
      attempts: [expect.objectContaining({ statusCode: 200 })],
    });
    expect(await db.collection('webhook_outbox').findOne({ _id: id as never })).toEqual({
      _id: id,
      status: 'done',
      dueAt: expect.any(Date),
    });
    expect((await svc.get(envId, id))?.status).toBe('delivered');
    expect((await svc.listForUser(envId, 'eve')).map((d) => d.id)).toEqual([id]);
    // The same notice again (another instance, or after a restart): refused, nothing sent.
    await service('b', { dedupeWindowMs: 60_000, clock }).emit(notice('eve', 'dev-1'));
    await svc.deliverDue();
    await svc.dispatcher.idle();
    expect(sent).toHaveLength(1);
    expect(await db.collection('webhook_outbox').countDocuments({ envId, userId: 'eve' })).toBe(0);
    // The sweep keeps the id while a notice could repeat (the window, and a margin for clocks),
    // then deletes it through the due index.
    await svc.sweep();
    expect(await db.collection('webhook_outbox').findOne({ _id: id as never })).not.toBeNull();
    await db
      .collection('webhook_outbox')
      .updateOne({ _id: id as never }, { $set: { dueAt: new Date(Date.now() - 60_000 - 11 * 60_000) } });
    const { pushdowns } = await watched(() => svc.sweep());
    expect(await db.collection('webhook_outbox').findOne({ _id: id as never })).toBeNull();
    expect(pushdowns.some((l) => /_v_status_due/.test(l))).toBe(true);
    // The history stays: the retention sweep deletes it (test/integration/retention.test.ts).
    expect(await db.collection('webhook_deliveries').countDocuments({ _id: id as never })).toBe(1);
  });

  it("migrates an earlier version's outbox: open deliveries are sent from the outbox, recent ones are not sent again", async () => {
    await open('info');
    // An earlier version kept every delivery in webhook_deliveries.
    const hist = db.collection<Record<string, unknown> & { _id: string }>('webhook_deliveries');
    await db.collection('webhook_outbox').deleteMany({});
    await db.collection('rampart_migrations').deleteMany({});
    const doc = ({ id, ...d }: WebhookDelivery) => ({ _id: id, ...d });
    const pending = delivery('fay', { nextAttemptAt: new Date(Date.now() - 1000) });
    const stuck = delivery('gus', {
      status: 'delivering',
      leaseOwner: 'gone',
      leaseUntil: new Date(Date.now() - 1000),
      leaseVersion: 3,
      attempts: [{ at: new Date(), statusCode: 503, error: null, durationMs: 2, instance: 'gone', url: '' }],
    });
    // Delivered a minute ago (its slot could still repeat), and weeks ago. The new instance's clock
    // runs a minute into the next hour, so its slot is the one named here however long the test takes.
    const ahead = (Math.floor(Date.now() / 3_600_000) + 1) * 3_600_000 + 60_000 - Date.now();
    const clock = { now: () => new Date(Date.now() + ahead) };
    const slot = slotDeliveryId(
      envId,
      'hal',
      'dev-9',
      '$incident.confirmed',
      Math.floor(clock.now().getTime() / 3_600_000),
    );
    const recent = {
      ...delivery('hal', {
        status: 'delivered',
        nextAttemptAt: null,
        createdAt: new Date(Date.now() - 60_000),
      }),
      id: slot,
    };
    const [old] = await history(1, { createdAt: new Date(Date.now() - 20 * 86_400_000) });
    await hist.insertMany([doc(pending), doc(stuck), doc(recent)]);

    const first = await migrateWebhookOutbox(db, { everyStart: false, now: new Date(), log });
    expect(first.moved).toBe(2);
    // Open ones moved as they were (lease, attempts, version), with when they are due.
    expect(await hist.countDocuments({ _id: { $in: [pending.id, stuck.id] } })).toBe(0);
    expect(await db.collection('webhook_outbox').findOne({ _id: stuck.id as never })).toMatchObject({
      status: 'delivering',
      leaseVersion: 3,
      dueAt: stuck.leaseUntil,
    });
    expect(await store.get(envId, stuck.id)).toMatchObject({
      status: 'delivering',
      leaseOwner: 'gone',
      attempts: [expect.objectContaining({ statusCode: 503 })],
    });
    // Recent finished ones leave their id in the outbox; old ones stay history only.
    expect(await db.collection('webhook_outbox').findOne({ _id: recent.id as never })).toMatchObject({
      status: 'done',
    });
    expect(await db.collection('webhook_outbox').findOne({ _id: old as never })).toBeNull();
    // Done once: the next start (FerretDB) does not read the history again.
    const { sent: second } = await watched(() =>
      migrateWebhookOutbox(db, { everyStart: false, now: new Date(), log }),
    );
    expect(second.filter((c) => c.collection === 'webhook_deliveries')).toEqual([]);

    // After the upgrade: the open ones are sent (the expired lease taken over), the recent slot is refused.
    sent.length = 0;
    const svc = service('new', { dedupeWindowMs: 3_600_000, clock });
    await svc.emit(notice('hal', 'dev-9'));
    await svc.deliverDue();
    await svc.dispatcher.idle();
    expect(sent.sort()).toEqual([pending.id, stuck.id].sort());
    expect((await svc.get(envId, stuck.id))?.attempts.map((a) => a.statusCode)).toEqual([503, 200]);
  });
});
