/**
 * A CSV import job while the embedded database fails, over REST, on a FerretDB of its own: killed
 * mid-import and started again by the supervisor a second later, the job waits and finishes with
 * every item written; stopped for longer than the job retries, the job ends failed saying how many
 * items it wrote (recorded once the database is back), nothing is half-answered, and the same CSV
 * imported again finishes the list with every item counted once.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { buildServices, type Built } from '../../src/app/build';
import { Writable } from 'node:stream';
import pino from 'pino';
import { buildRestServer } from '../../src/rest/server';
import { connect, type Database } from '../../src/store/database';
import { watchDatabase, type DatabaseHealth } from '../../src/store/health';
import { freePort, startEmbedded, type EmbeddedDatabase } from '../../src/store/embedded';
import { basic, call } from '../support/app';
import { waitFor } from '../support/wait';

const embeddedOnly = process.env.RAMPART_TEST_EMBEDDED === '1' ? describe : describe.skip;

interface Job {
  status: string;
  items: number;
  written: number;
  created: number;
  updated: number;
  unchanged: number;
  error: string | null;
}

embeddedOnly('a list import while the embedded database fails', () => {
  let dir: string;
  let port: number;
  let ferret: EmbeddedDatabase | null = null;
  let database: Database;
  let health: DatabaseHealth;
  let built: Built;
  let http: FastifyInstance;
  const dbName = 'rampart_test_import_fault';
  const logged: string[] = [];
  const app = { baseUrl: '', secret: `sk_fault_${randomBytes(12).toString('hex')}` };

  beforeAll(async () => {
    dir = mkdtempSync(path.resolve(__dirname, '..', '..', '.data', 'import-fault-'));
    port = await freePort();
    ferret = await startEmbedded(dir, { port, restartDelaysMs: [1000] });
    database = await connect(ferret.uri, dbName, { connectTimeoutMS: 1000 });
    // Warnings are kept: the test waits for the one saying the job gave up.
    const log = pino(
      { level: 'warn' },
      new Writable({ write: (chunk: Buffer, _enc, done) => (logged.push(chunk.toString()), done()) }),
    );
    built = await buildServices({
      db: database.db,
      log,
      masterKey: randomBytes(32).toString('hex'),
      authCacheMs: 2_000,
      rateLimitPerSecond: 1_000_000,
      publicUrl: 'http://127.0.0.1',
      smtpUrl: undefined,
      mailFrom: 'rampart@localhost',
      privateDatabase: true,
      // Batches of 100 with a pause of at least 100 ms (so that the faults fall mid-import), retried
      // for 20 s: the supervisor's restart after a kill takes well under a second on a quiet machine
      // and seconds on a busy one (4 s let a busy machine fail the first drill).
      listImports: { syncItems: 100, batch: 100, minPauseMs: 100, retryForMs: 20_000 },
    });
    await built.services.environments.ensureSandbox(app.secret, undefined);
    health = await watchDatabase(database.client, ferret.uri, dbName, { probeEveryMs: 100, stallMs: 300 });
    http = await buildRestServer({
      services: built.services,
      log,
      bodyLimit: 100 * 1024,
      trustProxy: false,
      requireHttps: false,
      database: health,
    });
    await http.listen({ host: '127.0.0.1', port: 0 });
    const addr = http.server.address();
    app.baseUrl = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
    built.start();
  });

  afterAll(async () => {
    await http?.close();
    await built?.stop();
    await health?.close();
    await database?.db.dropDatabase().catch(() => undefined);
    await database?.close();
    await ferret?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const csv = (n: number) =>
    `value\n${Array.from({ length: n }, (_, i) => `10.7.${(i >> 8) & 255}.${i & 255}`).join('\n')}\n`;
  const newList = async (name: string) => {
    const r = await waitFor(
      async () => {
        const c = await call(app, 'POST', '/v1/lists', { name, color: '$red', primary_field: 'ip' });
        return c.status === 201 ? c : null;
      },
      { what: 'the list to be created', timeoutMs: 30_000, intervalMs: 200 },
    );
    return r.body.id as string;
  };
  const post = async (listId: string, text: string) => {
    const r = await fetch(`${app.baseUrl}/v1/lists/${listId}/items/import`, {
      method: 'POST',
      headers: { authorization: basic(app.secret), 'content-type': 'text/csv' },
      body: text,
    });
    expect(r.status).toBe(202);
    return r.headers.get('location') as string;
  };
  /** The job as the service reports it; null while the database is down (503). */
  const job = async (location: string): Promise<Job | null> => {
    const r = await call(app, 'GET', location);
    expect([200, 503]).toContain(r.status);
    return r.status === 200 ? (r.body as Job) : null;
  };
  const ended = (location: string) =>
    waitFor(
      async () => {
        const j = await job(location);
        return j && (j.status === 'succeeded' || j.status === 'failed') ? j : null;
      },
      { what: 'the import to end', timeoutMs: 180_000, intervalMs: 100 },
    );
  const stored = (listId: string) => database.db.collection('list_items').countDocuments({ listId });
  const counted = async (listId: string) =>
    (await call(app, 'POST', `/v1/lists/${listId}/items/count`, {})).body.total_count as number;

  it('killed mid-import and started again within the retries, the job waits and writes every item', async () => {
    const listId = await newList('killed');
    const location = await post(listId, csv(2000));
    await waitFor(async () => ((await job(location))?.written ?? 0) >= 300, {
      what: '300 items to be written',
      timeoutMs: 60_000,
    });
    const killed = ferret!.pid as number;
    process.kill(killed, 'SIGKILL');
    await waitFor(() => ferret!.pid !== null && ferret!.pid !== killed, {
      what: 'the supervisor to start the database again',
      timeoutMs: 30_000,
    });
    expect(await ended(location)).toMatchObject({
      status: 'succeeded',
      items: 2000,
      written: 2000,
      created: 2000,
      error: null,
    });
    expect(await stored(listId)).toBe(2000);
    expect(await counted(listId)).toBe(2000);
  }, 240_000);

  it('down for longer than the retries, the job fails saying how far it got; the same CSV again finishes the list', async () => {
    const listId = await newList('stopped');
    // Long enough (60 batches, each followed by a pause) to be under way when the database stops.
    const location = await post(listId, csv(6000));
    await waitFor(async () => ((await job(location))?.written ?? 0) >= 300, {
      what: '300 items to be written',
      timeoutMs: 60_000,
    });
    // Stopped, not restarted by the supervisor: down until started again below.
    await ferret!.stop();
    ferret = null;
    // The job is followed with 503s while the database is down, and gives up after its retries
    // (its outcome kept until it can be recorded).
    await waitFor(async () => (await call(app, 'GET', location)).status === 503, {
      what: 'the job to answer 503 while the database is down',
      timeoutMs: 30_000,
    });
    const importId = location.split('/').pop() as string;
    await waitFor(
      () =>
        logged.some(
          (l) => l.includes(importId) && l.includes('list import: the outcome could not be recorded yet'),
        ),
      { what: 'the job to give up', timeoutMs: 120_000, intervalMs: 100 },
    );
    ferret = await startEmbedded(dir, { port, restartDelaysMs: [1000] });
    const outcome = await ended(location);
    expect(outcome.status).toBe('failed');
    expect(outcome.error).toContain(
      `${outcome.written} of 6000 items were written: import the same CSV again to finish`,
    );
    expect(outcome.written).toBeGreaterThanOrEqual(300);
    expect(outcome.written).toBeLessThan(6000);
    // The batch under way when the database went may be written in part: at most one batch more.
    const before = await stored(listId);
    expect(before).toBeGreaterThanOrEqual(outcome.written);
    expect(before).toBeLessThanOrEqual(outcome.written + 100);
    expect(await counted(listId)).toBe(before);
    const again = await ended(await post(listId, csv(6000)));
    expect(again).toMatchObject({
      status: 'succeeded',
      written: 6000,
      created: 6000 - before,
      updated: before,
      unchanged: before,
    });
    expect(await stored(listId)).toBe(6000);
    expect(await counted(listId)).toBe(6000);
  }, 300_000);
});
