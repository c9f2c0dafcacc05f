/**
 * The embedded database is killed (SIGKILL) in the middle of a stream of track events and
 * verdicts; Rampart's supervisor starts it again on the same files and port (here after 3 s, so
 * that the outage outlasts the one-second bound on unwritten changes). While it is down Rampart
 * answers verdicts until the oldest unwritten change is a second old, then 503 with Retry-After
 * (never 500); a track event is answered only once written, so it waits or is refused; every
 * event it acknowledged is in the database once it is back; and it recovers by itself. Requests
 * that need the database (device reads, GraphQL) answer 503 while it is down, before it is back:
 * at once, not after the driver's 5 s server selection. A database that hangs (SIGSTOP) is
 * treated the same way: nothing waits forever, nothing acknowledged is lost.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { buildServices, type Built } from '../../src/app/build';
import { createLogger } from '../../src/app/logger';
import { buildRestServer } from '../../src/rest/server';
import { connect, type Database } from '../../src/store/database';
import { watchDatabase, type DatabaseHealth } from '../../src/store/health';
import { registerGraphql } from '../../src/graphql/server';
import { freePort, startEmbedded, type EmbeddedDatabase } from '../../src/store/embedded';
import { call } from '../support/app';
import { failure } from '../support/grpc';
import { startGrpcServer, type GrpcServerHandle } from '../../src/grpc/server';
import { createRampartClient, toStruct, type RampartClient, type TrackRequest } from '../../src/client';
import { stopped } from '../support/process';
import { delay, waitFor } from '../support/wait';

const embeddedOnly = process.env.RAMPART_TEST_EMBEDDED === '1' ? describe : describe.skip;
// Each test streams load through an outage and waits for conditions, not for a time: on a machine
// whose cores are shared many times over that takes minutes. The bound only catches a hang.
jest.setTimeout(600_000);
const UA =
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/121.0.0.0 Safari/537.36';

/**
 * A verdict before a drill, for a user the drill needs known. A machine short of CPU may shed it
 * (503 with Retry-After, the documented answer under load): the caller comes back, as a client
 * would, until it is answered (201) or a minute has passed.
 */
async function knownUser(
  app: { baseUrl: string; secret: string },
  id: string,
  context: Record<string, unknown>,
): Promise<number> {
  let status = 0;
  await waitFor(
    async () => {
      status = (await call(app, 'POST', '/v1/risk', { event: '$login', user: { id }, context })).status;
      return status !== 503;
    },
    { what: `a verdict for ${id} not shed`, timeoutMs: 60_000, intervalMs: 1_000 },
  );
  return status;
}

embeddedOnly('killing the embedded database mid-stream', () => {
  let dir: string;
  let port: number;
  let ferret: EmbeddedDatabase | null = null;
  let database: Database;
  let health: DatabaseHealth;
  let built: Built;
  let http: FastifyInstance;
  let grpcServer: GrpcServerHandle;
  let grpcClient: RampartClient;
  const app = { baseUrl: '', secret: `sk_fault_${randomBytes(12).toString('hex')}` };

  beforeAll(async () => {
    dir = mkdtempSync(path.resolve(__dirname, '..', '..', '.data', 'fault-'));
    port = await freePort();
    ferret = await startEmbedded(dir, { port, restartDelaysMs: [3000] });
    // As the runtime connects to its embedded database: the driver's heartbeat gives it 10 s (a
    // hung one is the health probe's to notice, which cuts no connection).
    database = await connect(ferret.uri, 'rampart_test_fault', { connectTimeoutMS: 10_000 });
    built = await buildServices({
      db: database.db,
      log: createLogger(process.env.RAMPART_TEST_LOG ?? 'silent'),
      masterKey: randomBytes(32).toString('hex'),
      // The default: the outages below outlast it, so credentials are checked again during them.
      authCacheMs: 2_000,
      rateLimitPerSecond: 1_000_000,
      publicUrl: 'http://127.0.0.1',
      smtpUrl: undefined,
      mailFrom: 'rampart@localhost',
      privateDatabase: true,
      verdictBudgetMs: 150,
      // The defaults: a second of unwritten changes at most, a track call waits 5 s to be written.
      // No ids read at start (RAMPART_KNOWN_IDS_MAX=0): a user never seen is looked up in the
      // database, as one it holds but the cache does not, so that reads below need the database.
      state: { queueLimit: 100_000, knownIdsMax: 0 },
      drainTimeoutMs: 5_000,
    });
    await built.services.environments.ensureSandbox(app.secret, undefined);
    // As the runtime watches it: a ping every 100 ms, a hang taken as such after three times the
    // slowest recent ping, at least 300 ms and at most 5 s.
    health = await watchDatabase(database.client, ferret.uri, 'rampart_test_fault', {
      probeEveryMs: 100,
      stallMs: 300,
      stallMaxMs: 5000,
    });
    const log = createLogger('silent');
    http = await buildRestServer({
      services: built.services,
      log,
      bodyLimit: 100 * 1024,
      trustProxy: false,
      requireHttps: false,
      database: health,
      register: (app) => registerGraphql(app, { services: built.services, log, database: health }),
    });
    await http.listen({ host: '127.0.0.1', port: 0 });
    const addr = http.server.address();
    app.baseUrl = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
    grpcServer = await startGrpcServer({
      services: built.services,
      log,
      host: '127.0.0.1',
      port: 0,
      tls: undefined,
      database: health,
    });
    grpcClient = createRampartClient({ address: grpcServer.address, secret: app.secret, deadlineMs: 30_000 });
    built.start();
  });

  // A test that fails mid-stream leaves its callers running: they would load the tests after it.
  let stopStream: (() => Promise<void>) | null = null;
  afterEach(async () => {
    await stopStream?.();
    stopStream = null;
  });

  afterAll(async () => {
    grpcClient?.close();
    await grpcServer?.stop();
    await http?.close();
    await built?.stop();
    await health?.close();
    await database?.db.dropDatabase().catch(() => undefined);
    await database?.close();
    await ferret?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers 2xx or 503 (never 500) while it is down, loses no acknowledged event, and recovers', async () => {
    const context = { ip: '81.2.69.160', headers: { 'User-Agent': UA } };
    const acknowledged = new Set<string>();
    const statuses = new Map<number, number>();
    let seq = 0;
    let stop = false;
    // Known users: their state is cached before the outage.
    for (let u = 0; u < 20; u++) expect(await knownUser(app, `fault-${u}`, context)).toBe(201);

    const retryAfter: (string | null)[] = [];
    // Eight callers, each on its own: a track call waiting to be written holds only its caller.
    const stream = Promise.all(
      Array.from({ length: 8 }, async (_, worker) => {
        while (!stop) {
          const n = seq++;
          const id = `e-${n}`;
          const r =
            worker % 2 === 0
              ? await call(app, 'POST', '/v1/risk', {
                  event: '$login',
                  user: { id: `fault-${n % 20}` },
                  context,
                  properties: { seq: id },
                })
              : await call(app, 'POST', '/v1/track', {
                  event: '$login.failed',
                  user_id: `fault-${n % 20}`,
                  context,
                  properties: { seq: id },
                });
          statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
          if (r.status === 201 || r.status === 204) acknowledged.add(id);
          if (r.status === 503) {
            retryAfter.push(r.headers.get('retry-after'));
            await delay(50);
          }
        }
      }),
    );

    stopStream = async () => {
      stop = true;
      await stream;
    };
    // The stream is under way, the queues in use, before the kill.
    await waitFor(() => acknowledged.size >= 50, {
      what: 'the stream to have 50 events acknowledged',
      timeoutMs: 120_000,
    });
    const before = acknowledged.size;
    let killed = ferret!.pid as number;
    process.kill(killed, 'SIGKILL');
    // The outage lasts until the writes are a second behind and new work is refused (a 503), however
    // slowly this machine fills the queue: each time the supervisor starts the database again
    // before that (after 3 s), it is killed again. Then the supervisor's next start is the restart.
    let outageOver = false;
    const restarted = () => outageOver && ferret!.pid !== null && ferret!.pid !== killed;
    // Reads that need the database: 503 while it is down (the driver would wait 5 s for it), each
    // answered before the database is back.
    let readsRefused = false;
    const downAnswers = (async () => {
      const seen = { devices: 0, graphql: 0, beforeRestart: true };
      // Until both have answered 503, or the database is back (then `beforeRestart` says so).
      await waitFor(
        async () => {
          if (restarted()) return true;
          const [devices, graphql] = await Promise.all([
            call(app, 'GET', '/v1/users/fault-1/devices'),
            call(app, 'POST', '/graphql', { query: '{ viewer { canMutate } }' }),
          ]);
          if (devices.status === 503 && devices.body.type === 'service_unavailable') seen.devices++;
          if (graphql.status === 503 && graphql.body.errors?.[0]?.extensions?.code === 'SERVICE_UNAVAILABLE')
            seen.graphql++;
          return (readsRefused = seen.devices > 0 && seen.graphql > 0);
        },
        {
          what: 'device reads and GraphQL to answer 503 while the database is down',
          timeoutMs: 120_000,
          intervalMs: 50,
        },
      );
      seen.beforeRestart = !restarted();
      return seen;
    })();
    // A second into the outage new work is refused (the database still down).
    const keepDown = () => {
      const pid = ferret!.pid;
      if (pid !== null && pid !== killed) {
        killed = pid;
        process.kill(pid, 'SIGKILL');
      }
    };
    await waitFor(
      () => {
        keepDown();
        return (statuses.get(503) ?? 0) > 0;
      },
      { what: 'a 503 once the writes are a second behind', timeoutMs: 120_000, intervalMs: 20 },
    );
    const duringOutage = new Map(statuses);
    // The reads have answered 503 too, still before the database is back.
    await waitFor(
      () => {
        keepDown();
        return readsRefused;
      },
      {
        what: 'device reads and GraphQL to answer 503 while the database is down',
        timeoutMs: 120_000,
        intervalMs: 20,
      },
    );
    outageOver = true;
    // The supervisor starts it again (a new process on the same port).
    await waitFor(restarted, { what: 'the supervisor to start the database again', timeoutMs: 120_000 });
    const restartedAt = Date.now();
    // Recovered: a verdict for a user never seen before is complete again (its state was read).
    let fresh = 0;
    let last = 'none yet';
    await waitFor(
      async () => {
        const r = await call(app, 'POST', '/v1/risk', {
          event: '$login',
          user: { id: `fresh-${fresh++}` },
          context,
        });
        last = `${r.status} degraded ${String(r.body.degraded)}, database ${health.down() ?? 'up'}`;
        return r.status === 201 && r.body.degraded === false;
      },
      {
        what: 'a complete verdict for a new user once the database is back',
        timeoutMs: 120_000,
        intervalMs: 100,
      },
    ).catch((err: Error) => {
      throw new Error(`${err.message} (the last answer: ${last})`);
    });
    const recoveredAfterMs = Date.now() - restartedAt;
    stop = true;
    await stream;
    process.stdout.write(
      `fault: acknowledged ${acknowledged.size} events (${before} before the kill), statuses ${JSON.stringify([...statuses])}, recovered ${recoveredAfterMs} ms after the restart\n`,
    );

    const down = await downAnswers;
    expect(down).toEqual({ devices: expect.any(Number), graphql: expect.any(Number), beforeRestart: true });
    expect(down.devices).toBeGreaterThan(0);
    expect(down.graphql).toBeGreaterThan(0);
    // And once it is back, they answer again: as soon as the health probe has seen it answer (a
    // verdict can be complete a moment before its next ping does; CI met that once).
    let devicesStatus = 0;
    await waitFor(
      async () => (devicesStatus = (await call(app, 'GET', '/v1/users/fault-1/devices')).status) === 200,
      { what: 'device reads to answer 200 once the database is back', timeoutMs: 30_000, intervalMs: 100 },
    ).catch((err: Error) => {
      throw new Error(`${err.message} (the last: ${devicesStatus}, database ${health.down() ?? 'up'})`);
    });
    expect(statuses.get(500) ?? 0).toBe(0);
    expect([...statuses.keys()].every((s) => [201, 204, 503].includes(s))).toBe(true);
    // Past the bound Rampart refused new work rather than accept what it could lose, saying when to come back.
    expect(duringOutage.get(503) ?? 0).toBeGreaterThan(0);
    expect(retryAfter.every((r) => r === '1')).toBe(true);

    await built.services.track.drain(false);
    const stored = new Set<string>();
    for (const e of await database.db
      .collection<{ properties: string }>('events')
      .find({}, { projection: { properties: 1 } })
      .toArray()) {
      const p = JSON.parse(e.properties) as { seq?: string };
      if (p.seq) stored.add(p.seq);
    }
    const lost = [...acknowledged].filter((id) => !stored.has(id));
    expect(lost).toEqual([]);
  });

  it('while the database hangs past the credential cache: never waits past its deadlines or answers 500, refuses past the bound, stores every acknowledged event', async () => {
    const context = { ip: '81.2.69.161', headers: { 'User-Agent': UA } };
    for (let u = 0; u < 10; u++) expect(await knownUser(app, `stall-${u}`, context)).toBe(201);
    const pid = ferret!.pid as number;
    process.kill(pid, 'SIGSTOP');
    await stopped(pid);
    const hungAt = Date.now();
    const answers: { status: number; at: number; kind: 'risk' | 'track' }[] = [];
    const acknowledged = new Set<string>();
    let seq = 0;
    try {
      // Four callers at a steady pace, for longer than the credential cache lives (2 s): their
      // credential is checked again while the database does not answer.
      await Promise.all(
        Array.from({ length: 4 }, async () => {
          while (Date.now() - hungAt < 3_500) {
            await delay(80);
            const n = seq++;
            const id = `stall-e-${n}`;
            const kind = n % 2 === 0 ? 'risk' : 'track';
            const r =
              kind === 'risk'
                ? await call(app, 'POST', '/v1/risk', {
                    event: '$login',
                    user: { id: `stall-${n % 10}` },
                    context,
                  })
                : await call(app, 'POST', '/v1/track', {
                    event: '$login.failed',
                    user_id: `stall-${n % 10}`,
                    context,
                    properties: { seq: id },
                  });
            answers.push({ status: r.status, at: Date.now(), kind });
            if (kind === 'track' && r.status === 204) acknowledged.add(id);
          }
        }),
      );
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    const late = answers.filter((a) => a.at - hungAt > 2_300);
    const slowest = Math.max(...answers.map((a, i) => a.at - (i > 0 ? answers[i - 1]!.at : hungAt)));
    process.stdout.write(
      `fault (hang): ${answers.length} answers in 3.5 s of a hung database, ${late.length} after the credential cache expired; statuses ${JSON.stringify(answers.reduce<Record<number, number>>((m, a) => ({ ...m, [a.status]: (m[a.status] ?? 0) + 1 }), {}))}; longest gap between answers ${slowest} ms\n`,
    );
    // Never a 500: verdicts answered from memory until the writes were a second behind, then 503.
    expect(answers.every((a) => [201, 204, 503].includes(a.status))).toBe(true);
    expect(answers.some((a) => a.kind === 'risk' && a.status === 201)).toBe(true);
    expect(answers.some((a) => a.status === 503)).toBe(true);
    // After the credential cache expired, every caller went on being answered (201 or 503): the
    // credential check did not wait on the hung database.
    expect(late.length).toBeGreaterThanOrEqual(4);
    // Every acknowledged event is stored once the database answers again.
    await built.services.track.drain(false);
    await built.state.flush();
    const stored = new Set<string>();
    for (const e of await database.db
      .collection<{ properties: string }>('events')
      .find({ userId: { $regex: '^stall-' } }, { projection: { properties: 1 } })
      .toArray()) {
      const p = JSON.parse(e.properties) as { seq?: string };
      if (p.seq) stored.add(p.seq);
    }
    expect([...acknowledged].filter((id) => !stored.has(id))).toEqual([]);
  });

  it('answers verdicts and 503 (never a hang or a 500) while the database hangs, and recovers when it resumes', async () => {
    const context = { ip: '81.2.69.160', headers: { 'User-Agent': UA } };
    expect(await knownUser(app, 'hang-1', context)).toBe(201);
    expect((await call(app, 'GET', '/v1/users/hang-1/devices')).status).toBe(200);
    // When the driver's own monitoring sees the hang (a heartbeat timing out: about 2 s here).
    let driverNoticed = false;
    const noticed = () => {
      driverNoticed = true;
    };
    database.client.once('serverHeartbeatFailed', noticed);
    const pid = ferret!.pid as number;
    process.kill(pid, 'SIGSTOP');
    // Stopped only once every thread of it is (one in a system call stops when the call returns).
    await stopped(pid);
    const seen: number[] = [];
    let inFlight: {
      devices: number;
      graphql: number;
      grpc: string;
      driverNoticed: boolean;
      why: string;
    } | null = null;
    try {
      // Requests that were already waiting on the database when it hung answer 503 once the probe
      // has seen the hang, before the driver has: they are not left waiting for it. (A user never
      // seen, so that nothing is answered from memory.)
      const [devices, graphql, grpcDevices] = await Promise.all([
        call(app, 'GET', '/v1/users/hang-cold/devices'),
        call(app, 'POST', '/graphql', { query: '{ user(id: "hang-cold") { id } }' }),
        failure(grpcClient.listUserDevices({ userId: 'hang-cold' })),
      ]);
      inFlight = {
        devices: devices.status,
        graphql: graphql.status,
        grpc: `${grpcDevices.codeName}: ${grpcDevices.message}`,
        driverNoticed,
        why: String(devices.body.message),
      };
      // A verdict answers at once: from memory (201) while the unwritten changes are under a
      // second old, refused (503) past that.
      expect([201, 503]).toContain(
        (await call(app, 'POST', '/v1/risk', { event: '$login', user: { id: 'hang-1' }, context })).status,
      );
      // Reads that need the database: 503 at once while it hangs.
      await waitFor(
        async () => {
          seen.push((await call(app, 'GET', '/v1/users/hang-1/devices')).status);
          return seen.filter((s) => s === 503).length >= 3;
        },
        { what: 'three 503s for device reads while the database hangs', timeoutMs: 10_000, intervalMs: 50 },
      );
      expect(health.down()).toMatch(/has not answered|unreachable/);
    } finally {
      process.kill(pid, 'SIGCONT');
      database.client.off('serverHeartbeatFailed', noticed);
    }
    // Answered by the probe, before the driver's heartbeat noticed. On a loaded machine a pool
    // connection whose handshake was already slow when the database stopped can time out first:
    // then the driver's own error says so, just as soon.
    const hung = /has not answered for \d+ ms|the database is unreachable \(connection \d+ .* timed out\)/;
    expect(inFlight).toEqual({
      devices: 503,
      graphql: 503,
      grpc: expect.stringMatching(new RegExp(`^UNAVAILABLE: .*(${hung.source})`)),
      driverNoticed: false,
      why: expect.stringMatching(hung),
    });
    expect(seen.filter((s) => s === 503).length).toBe(3);
    expect(seen.every((s) => s === 200 || s === 503)).toBe(true);
    await waitFor(async () => (await call(app, 'GET', '/v1/users/hang-1/devices')).status === 200, {
      what: 'device reads to answer 200 once the database resumes',
      timeoutMs: 15_000,
      intervalMs: 100,
    });
  });
  it('a TrackStream refused while the database hangs is resumed by the client, and every event is stored once', async () => {
    const context = { ip: '81.2.69.162', headers: { 'User-Agent': UA } };
    // Users this process knows, so that their events are processed from memory while the database
    // hangs and their writes fill the bounded write queue (1,000 here).
    for (let u = 0; u < 10; u++) expect(await knownUser(app, `resume-${u}`, context)).toBe(201);
    const pid = ferret!.pid as number;
    process.kill(pid, 'SIGSTOP');
    await stopped(pid);
    const total = 3_000;
    const retries: { code: string; accepted: number }[] = [];
    let resumed = false;
    const resume = () => {
      if (resumed) return;
      resumed = true;
      process.kill(pid, 'SIGCONT');
    };
    // The database answers again once Rampart has refused the stream (held back while its writes
    // were behind, then refused at the bound), seen where the server refuses it. Resumed on the
    // pressure alone, the flush could catch up before the stream was refused, and the machine's
    // speed would decide whether anything was. The events read before the refusal outlast their
    // wait to be written: the server waits for their writes before its trailers list them, so
    // that none is sent twice (and so not before the database answers: resumed only after the
    // client saw the refusal, the refusal would wait for it). The refusal: an event refused
    // (admitNow() threw) or not written by its deadline, or the stream held back past its wait,
    // which asks admitNow() once more right after streamBackpressure() said why, and is refused
    // whatever it answers.
    const track = built.services.track;
    const receive = track.receive.bind(track);
    const admitNow = track.admitNow.bind(track);
    const backpressure = track.streamBackpressure.bind(track);
    let heldBecause: string | null = null;
    track.receive = (...args) =>
      receive(...args).catch((err: unknown) => {
        resume();
        throw err;
      });
    track.streamBackpressure = () => (heldBecause = backpressure());
    track.admitNow = () => {
      const givingUp = heldBecause !== null;
      try {
        admitNow();
      } finally {
        if (givingUp) resume();
      }
    };
    async function* events(): AsyncGenerator<TrackRequest> {
      for (let n = 0; n < total; n++) {
        // Until the refusal, slower than the server's read-ahead fills in a second (512 events
        // unwritten, past which it stops reading), so that it reads the event the bound refuses.
        if (n % 10 === 0) await new Promise((r) => (resumed ? setImmediate(r) : setTimeout(r, 50)));
        yield {
          event: '$login.failed',
          user: { id: `resume-${n % 10}` },
          context,
          properties: toStruct({ seq: `resume-${n}` }),
        };
      }
    }
    let res: { accepted: number };
    const fallback = setTimeout(resume, 120_000);
    try {
      // The server refuses the stream part-way with the count it has written; the client sends
      // the rest again from there.
      // A bound for a hang only: 3,000 events take minutes on a machine shared many times over.
      res = await grpcClient.trackStream(events(), {
        deadlineMs: 540_000,
        onRetry: (r) => {
          retries.push({ code: r.error.codeName, accepted: r.accepted });
        },
      });
    } finally {
      clearTimeout(fallback);
      track.receive = receive;
      track.admitNow = admitNow;
      track.streamBackpressure = backpressure;
      resume();
    }
    process.stdout.write(
      `fault (TrackStream): ${retries.length} refusals resumed: ${JSON.stringify(retries.slice(0, 5))}\n`,
    );
    expect(retries.length).toBeGreaterThan(0);
    expect(retries[0]!.code).toBe('UNAVAILABLE');
    expect(res.accepted).toBe(total);
    await built.services.track.drain(false);
    await built.state.flush();
    const seqs: string[] = [];
    for (const e of await database.db
      .collection<{ properties: string }>('events')
      .find({ userId: { $regex: '^resume-' } }, { projection: { properties: 1 } })
      .toArray()) {
      const p = JSON.parse(e.properties) as { seq?: string };
      if (p.seq) seqs.push(p.seq);
    }
    // Each event once: none lost in the refusals, none sent twice by the retries.
    expect(seqs.length).toBe(total);
    expect(new Set(seqs).size).toBe(total);
  });
});
