/**
 * The shutdown drill: Rampart, started as `npm start` starts it (its own embedded database in its
 * data directory), is stopped as SIGTERM stops it (src/main.ts calls the same stop()) in the
 * middle of a stream of track events and verdicts. Every event it acknowledged is in the database
 * afterwards; what arrives once the stop began is refused (503 or a closed connection), never
 * acknowledged and dropped, and a client that keeps sending on connections it keeps alive does not
 * hold the stop.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { MongoClient } from 'mongodb';
import { loadConfig } from '../../src/config';
import { createLogger } from '../../src/app/logger';
import { run } from '../../src/app/runtime';
import { embeddedInfoFile, startEmbedded } from '../../src/store/embedded';
import { call } from '../support/app';
import { alive } from '../support/process';
import { waitFor } from '../support/wait';

const embeddedOnly = process.env.RAMPART_TEST_EMBEDDED === '1' ? describe : describe.skip;
const UA =
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/121.0.0.0 Safari/537.36';

embeddedOnly('stopping Rampart (SIGTERM) mid-stream', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.resolve(__dirname, '..', '..', '.data', 'shutdown-'));
  });
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('stores every event it acknowledged and acknowledges nothing it then drops', async () => {
    const secret = `sk_drill_${randomBytes(12).toString('hex')}`;
    const dbName = 'rampart_drill';
    const config = loadConfig({
      RAMPART_DATA_DIR: dir,
      RAMPART_DB_NAME: dbName,
      RAMPART_HTTP_PORT: '0',
      RAMPART_GRPC_PORT: '0',
      RAMPART_API_SECRET: secret,
      RAMPART_RATE_LIMIT: '1000000',
      RAMPART_LOG_LEVEL: 'silent',
      // Writes wait up to half a second: at the stop, much is acknowledged and not yet written.
      RAMPART_WRITE_INTERVAL_MS: '500',
      // Not what is tested here: nothing is refused for being a second behind.
      RAMPART_MAX_UNWRITTEN_MS: '60000',
    });
    const running = await run(config, createLogger('silent'));
    const app = { baseUrl: running.httpUrl, secret };
    const context = { ip: '81.2.69.160', headers: { 'User-Agent': UA } };
    const acknowledged = new Set<string>();
    const refused = new Map<string, number>();
    let seq = 0;
    let stopping = false;
    let stopped = false;
    let afterStop = 0;

    const stream = (async () => {
      for (let round = 0; round < 10_000; round++) {
        const results = await Promise.all(
          Array.from({ length: 16 }, async () => {
            const n = seq++;
            const id = `e-${n}`;
            const sentAfterStop = stopping;
            try {
              const r =
                n % 5 === 0
                  ? await call(app, 'POST', '/v1/risk', {
                      event: '$login',
                      user: { id: `drill-${n % 50}` },
                      context,
                      properties: { seq: id },
                    })
                  : await call(app, 'POST', '/v1/track', {
                      event: '$login.failed',
                      user_id: `drill-${n % 50}`,
                      context,
                      properties: { seq: id },
                    });
              if (r.status === 201 || r.status === 204) acknowledged.add(id);
              // A refusal is in Rampart's error body, as every error is: {type, message}.
              else if (r.status === 503 && r.body?.type !== 'service_unavailable')
                refused.set(
                  "503 without Rampart's body",
                  (refused.get("503 without Rampart's body") ?? 0) + 1,
                );
              else refused.set(String(r.status), (refused.get(String(r.status)) ?? 0) + 1);
            } catch {
              refused.set('closed', (refused.get('closed') ?? 0) + 1);
            }
            return sentAfterStop;
          }),
        );
        afterStop += results.filter(Boolean).length;
        // The client keeps sending until the stop is over: connections it keeps alive and busy
        // must not hold the exit.
        if (stopped) return;
      }
    })();

    // Let the stream run, then stop while requests are in flight.
    // (A track call answers once written, here up to half a second later: the stream is slower.)
    await waitFor(() => acknowledged.size >= 200, {
      what: 'the stream to have 200 events acknowledged',
      timeoutMs: 120_000,
    });
    // Dashboards read through the analysts' FerretDB reader (a second process on the same files):
    // it sees what the primary wrote, and it stops with Rampart.
    const info = JSON.parse(readFileSync(embeddedInfoFile(dir), 'utf8')) as {
      ferretdbPid: number;
      readerPid: number;
    };
    expect(info.readerPid).toEqual(expect.any(Number));
    expect(info.readerPid).not.toBe(info.ferretdbPid);
    await running.built.state.flush();
    const seen = await call(app, 'POST', '/graphql', {
      query: '{ analytics { total } events(first: 1) { edges { node { name } } } }',
    });
    expect(seen.status).toBe(200);
    expect(seen.body.data.analytics.total).toBeGreaterThan(0);
    expect(seen.body.data.events.edges).toHaveLength(1);
    stopping = true;
    await running.stop();
    stopped = true;
    expect(alive(info.readerPid)).toBe(false);
    await stream;
    expect(afterStop).toBeGreaterThan(0);
    process.stdout.write(
      `shutdown drill: acknowledged ${acknowledged.size}, refused ${JSON.stringify([...refused])}\n`,
    );
    expect(refused.get('500') ?? 0).toBe(0);
    expect([...refused.keys()].every((k) => k === '503' || k === 'closed')).toBe(true);

    // The database it left behind, opened again: every acknowledged event is there.
    const db = await startEmbedded(dir, { supervise: false });
    const client = new MongoClient(db.uri, { serverSelectionTimeoutMS: 5000 });
    try {
      await client.connect();
      const stored = new Set<string>();
      for (const e of await client
        .db(dbName)
        .collection<{ properties: string }>('events')
        .find({}, { projection: { properties: 1 } })
        .toArray()) {
        const p = JSON.parse(e.properties) as { seq?: string };
        if (p.seq) stored.add(p.seq);
      }
      expect([...acknowledged].filter((id) => !stored.has(id))).toEqual([]);
      // (A call in flight when the listener closed may be stored without its answer arriving.)
      expect(stored.size).toBeGreaterThanOrEqual(acknowledged.size);
    } finally {
      await client.close();
      await db.stop();
    }
  }, 300_000);

  it('leaves no database process behind when it cannot start (its HTTP port is taken)', async () => {
    const taken = net.createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as net.AddressInfo).port;
    const own = mkdtempSync(path.resolve(__dirname, '..', '..', '.data', 'taken-'));
    try {
      const config = loadConfig({
        RAMPART_DATA_DIR: own,
        RAMPART_DB_NAME: 'rampart_taken',
        RAMPART_HOST: '127.0.0.1',
        RAMPART_HTTP_PORT: String(port),
        RAMPART_GRPC_PORT: '0',
        RAMPART_LOG_LEVEL: 'silent',
      });
      await expect(run(config, createLogger('silent'))).rejects.toThrow(/EADDRINUSE|address already in use/i);
      const info = JSON.parse(readFileSync(embeddedInfoFile(own), 'utf8')) as {
        ferretdbPid: number;
        readerPid: number | null;
      };
      expect(info.ferretdbPid).toEqual(expect.any(Number));
      expect(alive(info.ferretdbPid)).toBe(false);
      if (info.readerPid !== null) expect(alive(info.readerPid)).toBe(false);
    } finally {
      taken.close();
      rmSync(own, { recursive: true, force: true });
    }
  });
});
