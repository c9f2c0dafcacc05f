/**
 * Nothing waits forever: a database that stops answering in the middle of the flusher's writes
 * (SIGSTOP of a FerretDB of this test's own, so that the driver's connections stay open and
 * silent) makes the flusher's watchdog abandon the flush after `writeTimeoutMs`, count and report
 * the stall (the writer gets new connections), keep every change queued, refuse new work once the
 * oldest unwritten change passes the bound, and fail durable() at its deadline. Once the database
 * answers again the queue drains by itself and the stored documents are exactly the cached ones
 * (an abandoned write that lands late is written over again).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import path from 'node:path';
import { MongoClient } from 'mongodb';
import { startEmbedded, type EmbeddedDatabase } from '../../src/store/embedded';
import { StateLayer } from '../../src/store/state/layer';
import { delta } from '../../src/store/state/delta';
import { Unavailable } from '../../src/core/errors';
import { stopped } from '../support/process';
import { waitFor } from '../support/wait';

const embeddedOnly = process.env.RAMPART_TEST_EMBEDDED === '1' ? describe : describe.skip;

embeddedOnly('the flusher on a database that stops answering', () => {
  let dir: string;
  let ferret: EmbeddedDatabase;
  let reader: MongoClient;
  const writers: MongoClient[] = [];
  const open = () => {
    // As the runtime's writer: the driver's heartbeat never cuts these connections here (30 s).
    const c = new MongoClient(ferret.uri, {
      connectTimeoutMS: 30_000,
      heartbeatFrequencyMS: 10_000,
      serverSelectionTimeoutMS: 30_000,
    });
    writers.push(c);
    return c;
  };

  beforeAll(async () => {
    dir = mkdtempSync(path.resolve(__dirname, '..', '..', '.data', 'watchdog-'));
    ferret = await startEmbedded(dir);
    reader = new MongoClient(ferret.uri, {
      connectTimeoutMS: 30_000,
      heartbeatFrequencyMS: 10_000,
      serverSelectionTimeoutMS: 30_000,
    });
  });
  afterAll(async () => {
    if (ferret?.pid) process.kill(ferret.pid, 'SIGCONT');
    await reader?.close(true);
    for (const w of writers) await w.close(true).catch(() => undefined);
    await ferret?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('abandons a stalled flush, reports it, keeps its writes, refuses new work past the bound, and drains once the database is back', async () => {
    let writer = open();
    const errors: string[] = [];
    let stalls = 0;
    const state = new StateLayer(reader.db('watchdog'), {
      writeMode: 'snapshots',
      flushIntervalMs: 5,
      writeTimeoutMs: 300,
      readTimeoutMs: 300,
      maxUnwrittenMs: 1000,
      retryBaseMs: 20,
      retryMaxMs: 200,
      writer: () => writer.db('watchdog'),
      onStall: () => {
        stalls++;
        const old = writer;
        writer = open();
        void old.close(true).catch(() => undefined);
      },
      onError: (err, what) => errors.push(`${what}: ${err instanceof Error ? err.message : String(err)}`),
    });
    await state.read('docs', 'w');
    for (let i = 0; i < 5; i++) state.apply('docs', 'w', delta().inc(['n'], 1));
    state.insert('events', { _id: 'e1' });
    await state.durable();

    process.kill(ferret.pid as number, 'SIGSTOP');
    try {
      // Only once every thread is stopped: on a busy machine a thread not yet told could still
      // answer the write about to be sent (now at once, since it is waited for).
      await stopped(ferret.pid as number);
      for (let i = 0; i < 5; i++) state.apply('docs', 'w', delta().inc(['n'], 1));
      state.insert('events', { _id: 'e2' });
      const acked = state.durable(Date.now() + 60_000);
      acked.catch(() => undefined);
      await waitFor(() => state.stalls >= 1, {
        what: 'the watchdog to abandon the stalled flush',
        timeoutMs: 30_000,
      });
      expect(stalls).toBeGreaterThanOrEqual(1);
      expect(errors.some((e) => /flush stalled: a flush made no progress/.test(e))).toBe(true);
      // Nothing was dropped: the changes wait, and count against the bound.
      expect(state.backlog).toBeGreaterThan(0);
      await waitFor(() => state.pressure === 'full', {
        what: 'new work to be refused once the oldest change is a second old',
        timeoutMs: 30_000,
      });
      await expect(state.admit()).rejects.toBeInstanceOf(Unavailable);
      await expect(state.durable(Date.now() + 20)).rejects.toBeInstanceOf(Unavailable);
      expect(state.stuckMs()).toBeGreaterThan(0);
      // A change recorded by work admitted earlier still joins the queue.
      state.apply('docs', 'w', delta().inc(['n'], 1));
      process.kill(ferret.pid as number, 'SIGCONT');
      await acked;
    } finally {
      process.kill(ferret.pid as number, 'SIGCONT');
    }
    await state.flush(30_000);
    expect(state.pressure).toBe('ok');
    expect(state.oldestUnwrittenMs()).toBe(0);
    // An abandoned write that landed after the retry is written over: the stored document ends as cached.
    const col = reader.db('watchdog').collection('docs');
    await waitFor(
      async () => ((await col.findOne({ _id: 'w' as never })) as { n?: number } | null)?.n === 11,
      { what: 'the stored document to be the cached one', timeoutMs: 30_000 },
    );
    await state.flush(30_000);
    expect(((await col.findOne({ _id: 'w' as never })) as { n?: number } | null)?.n).toBe(11);
    expect(await reader.db('watchdog').collection('events').countDocuments({})).toBe(2);
    await state.close(5_000);
  });
});
