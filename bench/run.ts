/**
 * `npm run bench`: gRPC Risk against REST POST /v1/risk, in the same run, on the same database
 * and seeded data, at a fixed concurrency. Prints, for each door, throughput, p50 and p99
 * latency, and the CPU time each call costs the server and the client, then their ratios.
 *
 * Rampart runs in a child process (this file with `--serve`), the load generator in this one,
 * so that the server's CPU per call is measured apart from the client's. Two comparisons:
 *   - end to end: the real core on the database (what a caller sees; database-bound);
 *   - door only: the same doors over a core whose verdict step validates the body as usual
 *     (parseEvent) and returns a verdict the real core computed once, so that what differs is
 *     only the door: transport, decoding, authentication (cached), encoding;
 * and, door only, feedback ingestion: one POST /v1/track per event against TrackStream.
 * Uses MONGODB_URI when set, else an embedded FerretDB under .data/bench-*; the database is
 * named rampart_bench_* and dropped afterwards.
 *
 *   npm run bench -- --count 500 --door-count 20000 --concurrency 16 --rounds 2
 */
import { fork, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { buildServices } from '../src/app/build';
import { createLogger, type Logger } from '../src/app/logger';
import { initIntel } from '../src/intel';
import { buildRestServer } from '../src/rest/server';
import { connect } from '../src/store/database';
import { startEmbedded, type EmbeddedDatabase } from '../src/store/embedded';
import { startGrpcServer } from '../src/grpc/server';
import { createRampartClient, type RiskRequest } from '../src/client';
import { parseEvent } from '../src/core/events/parse';
import type { Services } from '../src/core/services';

interface Options {
  /** Calls per door per round, end to end. */
  count: number;
  /** Calls per door per round, door only. */
  'door-count': number;
  concurrency: number;
  rounds: number;
  users: number;
  warmup: number;
}

function options(argv: string[]): Options {
  const o: Options = { count: 500, 'door-count': 20000, concurrency: 16, rounds: 2, users: 200, warmup: 200 };
  for (let i = 0; i < argv.length; i += 2) {
    const key = argv[i].replace(/^--/, '') as keyof Options;
    const value = Number(argv[i + 1]);
    if (!(key in o) || !Number.isInteger(value) || value <= 0) {
      throw new Error(`usage: run.js [--count N] [--door-count N] [--concurrency N] [--rounds N] [--users N] [--warmup N] (bad ${argv[i]})`);
    }
    o[key] = value;
  }
  return o;
}

const UA = 'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36';
const HEADERS = { 'User-Agent': UA, Accept: 'text/html,application/xhtml+xml', 'Accept-Language': 'en-GB,en;q=0.9', 'Accept-Encoding': 'gzip, br' };

/** Each user has its own address (all in one London network), as real traffic has many. */
const ipOf = (i: number, users: number) => `81.2.69.${((i % users) % 250) + 1}`;

/** The same event for both doors: user i, on its own fingerprint and address. */
const restBody = (i: number, users: number) =>
  JSON.stringify({ event: '$login', user: { id: `bench-${i % users}`, email: `bench${i % users}@example.com` }, request_token: `bench-fp-${i % users}`, context: { ip: ipOf(i, users), headers: HEADERS } });
const grpcRequest = (i: number, users: number): RiskRequest => ({
  event: '$login',
  user: { id: `bench-${i % users}`, email: `bench${i % users}@example.com` },
  requestToken: `bench-fp-${i % users}`,
  context: { ip: ipOf(i, users), headers: HEADERS },
});

// ---------------------------------------------------------------------------------------------
// The server side (child process).

interface Listeners {
  restPort: number;
  grpcAddress: string;
}

type ToServer = { type: 'cpu' } | { type: 'stop' };
type FromServer =
  | { type: 'ready'; secret: string; real: Listeners; door: Listeners; database: string }
  | { type: 'cpu'; micros: number }
  | { type: 'failed'; error: string };

async function listen(services: Services, log: Logger): Promise<Listeners & { close(): Promise<void> }> {
  const rest = await buildRestServer({ services, log, bodyLimit: 100 * 1024, trustProxy: false, requireHttps: false });
  await rest.listen({ host: '127.0.0.1', port: 0 });
  const addr = rest.server.address();
  const grpc = await startGrpcServer({ services, log, host: '127.0.0.1', port: 0, tls: undefined });
  return {
    restPort: typeof addr === 'object' && addr ? addr.port : 0,
    grpcAddress: grpc.address,
    close: async () => {
      await rest.close();
      await grpc.stop();
    },
  };
}

async function serve(users: number): Promise<void> {
  const send = (m: FromServer) => process.send?.(m);
  const log = createLogger('fatal');
  let embedded: EmbeddedDatabase | null = null;
  let dataDir: string | null = null;
  let uri = process.env.MONGODB_URI;
  if (!uri) {
    dataDir = path.resolve(__dirname, '..', ...(__dirname.includes(`${path.sep}dist${path.sep}`) ? ['..'] : []), '.data', `bench-${process.pid}`);
    embedded = await startEmbedded(dataDir);
    uri = embedded.uri;
  }
  const dbName = `rampart_bench_${randomBytes(4).toString('hex')}`;
  const database = await connect(uri, dbName);
  initIntel();
  const built = await buildServices({
    db: database.db,
    log,
    masterKey: randomBytes(32).toString('hex'),
    authCacheMs: 2000,
    rateLimitPerSecond: 1_000_000,
    publicUrl: 'http://127.0.0.1',
    smtpUrl: undefined,
    mailFrom: 'rampart@localhost',
  });
  const secret = `sk_bench_${randomBytes(16).toString('hex')}`;
  await built.services.environments.ensureSandbox(secret, undefined);
  built.start();
  const real = await listen(built.services, log);

  // Door only: validation as usual, then a verdict the real core computed once.
  const principal = await built.services.environments.authenticate(secret);
  const canned = await built.services.verdicts.evaluate(principal, 'risk', JSON.parse(restBody(0, users)));
  const verdicts = Object.create(built.services.verdicts) as Services['verdicts'];
  verdicts.evaluate = async (p, endpoint, body) => {
    parseEvent(endpoint, body, { sandbox: p.env.sandbox, now: new Date() });
    return canned;
  };
  const track = Object.create(built.services.track) as Services['track'];
  track.accept = (p, body) => {
    parseEvent('track', body, { sandbox: p.env.sandbox, now: new Date() });
  };
  const door = await listen({ ...built.services, verdicts, track }, log);

  process.on('message', (m: ToServer) => {
    if (m.type === 'cpu') {
      const u = process.cpuUsage();
      send({ type: 'cpu', micros: u.user + u.system });
    } else if (m.type === 'stop') {
      (async () => {
        await real.close();
        await door.close();
        await built.stop();
        await database.db.dropDatabase().catch(() => undefined);
        await database.close();
        await embedded?.stop();
        if (dataDir) rmSync(dataDir, { recursive: true, force: true });
      })().finally(() => process.exit(0));
    }
  });
  send({ type: 'ready', secret, real: { restPort: real.restPort, grpcAddress: real.grpcAddress }, door: { restPort: door.restPort, grpcAddress: door.grpcAddress }, database: embedded ? 'the embedded FerretDB' : 'MONGODB_URI' });
}

// ---------------------------------------------------------------------------------------------
// The load generator (this process).

interface Result {
  count: number;
  seconds: number;
  latencies: number[];
  serverMicros: number;
  clientMicros: number;
}

class Server {
  private waiting: ((m: FromServer) => void) | null = null;
  constructor(readonly child: ChildProcess) {
    child.on('message', (m: FromServer) => {
      const w = this.waiting;
      this.waiting = null;
      w?.(m);
    });
  }
  next(): Promise<FromServer> {
    return new Promise((resolve, reject) => {
      const onExit = (code: number | null) => reject(new Error(`the bench server exited (${code})`));
      this.child.once('exit', onExit);
      this.waiting = (m) => {
        this.child.removeListener('exit', onExit);
        resolve(m);
      };
    });
  }
  async cpu(): Promise<number> {
    const reply = this.next();
    this.child.send({ type: 'cpu' } satisfies ToServer);
    const m = await reply;
    if (m.type !== 'cpu') throw new Error(`unexpected ${m.type}`);
    return m.micros;
  }
}

/** Run `count` calls, `concurrency` at a time; every call must succeed. */
async function drive(server: Server, count: number, concurrency: number, one: (i: number) => Promise<void>): Promise<Result> {
  const latencies: number[] = new Array(count);
  let next = 0;
  const server0 = await server.cpu();
  const client0 = process.cpuUsage();
  const started = performance.now();
  const worker = async () => {
    for (let i = next++; i < count; i = next++) {
      const t = performance.now();
      await one(i);
      latencies[i] = performance.now() - t;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const seconds = (performance.now() - started) / 1000;
  const client = process.cpuUsage(client0);
  const serverMicros = (await server.cpu()) - server0;
  return { count, seconds, latencies, serverMicros, clientMicros: client.user + client.system };
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];

function summary(results: Result[]) {
  const latencies = results.flatMap((r) => r.latencies).sort((a, b) => a - b);
  const count = results.reduce((n, r) => n + r.count, 0);
  const sum = (f: (r: Result) => number) => results.reduce((n, r) => n + f(r), 0);
  return {
    count,
    throughput: count / sum((r) => r.seconds),
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    serverCpu: sum((r) => r.serverMicros) / count,
    clientCpu: sum((r) => r.clientMicros) / count,
  };
}

interface Doors {
  rest: (i: number) => Promise<void>;
  grpc: (i: number) => Promise<void>;
}

/** Warm up both doors, then alternate them for `rounds` rounds of `count` calls; print the comparison. */
async function compare(server: Server, title: string, doors: Doors, count: number, o: Options): Promise<void> {
  process.stdout.write(`\n${title}: ${o.rounds} round(s) of ${count} Risk calls per door at concurrency ${o.concurrency}\n`);
  await drive(server, o.warmup, o.concurrency, doors.rest);
  await drive(server, o.warmup, o.concurrency, doors.grpc);
  const rounds: Record<'REST' | 'gRPC', Result[]> = { REST: [], gRPC: [] };
  for (let r = 0; r < o.rounds; r++) {
    // Alternate the order so that neither door always runs second (on a larger database, a warmer JIT).
    const order = r % 2 === 0 ? (['REST', 'gRPC'] as const) : (['gRPC', 'REST'] as const);
    for (const door of order) rounds[door].push(await drive(server, count, o.concurrency, door === 'REST' ? doors.rest : doors.grpc));
  }
  const restS = summary(rounds.REST);
  const grpcS = summary(rounds.gRPC);
  const f = (n: number, w: number, d = 2) => n.toFixed(d).padStart(w);
  const row = (door: string, s: ReturnType<typeof summary>) =>
    `  ${door.padEnd(5)}${String(s.count).padStart(7)}${f(s.throughput, 9, 0)}${f(s.p50, 10)}${f(s.p99, 10)}${f(s.serverCpu, 12, 0)}${f(s.clientCpu, 12, 0)}\n`;
  process.stdout.write(`  door   calls    req/s  p50 (ms)  p99 (ms)  server CPU  client CPU (µs per call)\n${row('REST', restS)}${row('gRPC', grpcS)}`);
  const x = (a: number, b: number) => `x${(a / b).toFixed(2)}`;
  process.stdout.write(
    `  gRPC/REST: throughput ${x(grpcS.throughput, restS.throughput)}, p50 ${x(grpcS.p50, restS.p50)}, p99 ${x(grpcS.p99, restS.p99)}, ` +
      `server CPU per call ${x(grpcS.serverCpu, restS.serverCpu)}, client CPU per call ${x(grpcS.clientCpu, restS.clientCpu)}\n`,
  );
}

/** Feedback ingestion, door only: one REST request per event against streams of events. */
async function compareTrack(server: Server, doors: TrackDoors, count: number, o: Options): Promise<void> {
  const perStream = Math.max(1, Math.floor(count / o.concurrency));
  const events = perStream * o.concurrency;
  process.stdout.write(`\nFeedback ingestion, door only: ${events} $login.failed events; REST one POST /v1/track per event (concurrency ${o.concurrency}), gRPC ${o.concurrency} TrackStreams of ${perStream}\n`);
  await drive(server, o.warmup, o.concurrency, doors.rest);
  await drive(server, o.concurrency, o.concurrency, () => doors.stream(o.warmup));
  const rest = await drive(server, events, o.concurrency, doors.rest);
  const grpc = await drive(server, o.concurrency, o.concurrency, () => doors.stream(perStream));
  const row = (door: string, r: Result) =>
    `  ${door.padEnd(11)}${(events / r.seconds).toFixed(0).padStart(9)}${(r.serverMicros / events).toFixed(1).padStart(12)}${(r.clientMicros / events).toFixed(1).padStart(12)}\n`;
  process.stdout.write(`  door       events/s  server CPU  client CPU (µs per event)\n${row('REST track', rest)}${row('TrackStream', grpc)}`);
  process.stdout.write(`  gRPC/REST: events/s x${(rest.seconds / grpc.seconds).toFixed(2)}, server CPU per event x${(grpc.serverMicros / rest.serverMicros).toFixed(2)}\n`);
}

interface TrackDoors {
  rest: (i: number) => Promise<void>;
  stream: (n: number) => Promise<void>;
}

const trackBody = (i: number, users: number) => ({ event: '$login.failed', user: { id: `bench-${i % users}` }, context: { ip: ipOf(i, users), headers: HEADERS } });

/** Clients for both doors of a pair of listeners, sending the same events. */
function clients(l: Listeners, secret: string, o: Options): Doors & { track: TrackDoors; close(): void } {
  const agent = new http.Agent({ keepAlive: true, maxSockets: o.concurrency });
  const authorization = `Basic ${Buffer.from(`:${secret}`).toString('base64')}`;
  const client = createRampartClient({ address: l.grpcAddress, secret, deadlineMs: 60_000 });
  return {
    rest: (i) =>
      new Promise<void>((resolve, reject) => {
        const body = restBody(i, o.users);
        const req = http.request(
          { host: '127.0.0.1', port: l.restPort, path: '/v1/risk', method: 'POST', agent, headers: { authorization, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
          (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (c: Buffer) => chunks.push(c));
            res.on('end', () => (res.statusCode === 201 ? resolve() : reject(new Error(`REST ${res.statusCode}: ${Buffer.concat(chunks).toString()}`))));
          },
        );
        req.on('error', reject);
        req.end(body);
      }),
    grpc: async (i) => {
      await client.risk(grpcRequest(i, o.users));
    },
    track: {
      rest: (i) =>
        new Promise<void>((resolve, reject) => {
          const body = JSON.stringify(trackBody(i, o.users));
          const req = http.request(
            { host: '127.0.0.1', port: l.restPort, path: '/v1/track', method: 'POST', agent, headers: { authorization, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
            (res) => {
              res.resume();
              res.on('end', () => (res.statusCode === 204 ? resolve() : reject(new Error(`REST track ${res.statusCode}`))));
            },
          );
          req.on('error', reject);
          req.end(body);
        }),
      stream: async (n) => {
        const { accepted } = await client.trackStream(
          (function* () {
            for (let i = 0; i < n; i++) {
              const b = trackBody(i, o.users);
              yield { event: b.event, user: b.user, context: b.context };
            }
          })(),
        );
        if (accepted !== n) throw new Error(`TrackStream accepted ${accepted} of ${n}`);
      },
    },
    close: () => {
      client.close();
      agent.destroy();
    },
  };
}

async function main(): Promise<void> {
  const o = options(process.argv.slice(2));
  const server = new Server(fork(__filename, ['--serve', String(o.users)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }));
  const ready = await server.next();
  if (ready.type === 'failed') throw new Error(`the bench server failed to start: ${ready.error}`);
  if (ready.type !== 'ready') throw new Error(`unexpected ${ready.type}`);
  const real = clients(ready.real, ready.secret, o);
  const door = clients(ready.door, ready.secret, o);
  try {
    process.stdout.write(`rampart bench: ${o.users} seeded users on ${ready.database}; node ${process.version}; server and load generator in separate processes\n`);
    // Seed: every user has a profile and a device, so that calls take the steady-state path.
    await drive(server, o.users, o.concurrency, real.rest);
    await compare(server, 'End to end (real core on the database)', real, o.count, o);
    await compare(server, 'Door only (validation + a precomputed verdict: transport, decoding, auth, encoding)', door, o['door-count'], o);
    await compareTrack(server, door.track, o['door-count'], o);
  } finally {
    real.close();
    door.close();
    const exited = new Promise((resolve) => server.child.once('exit', resolve));
    server.child.send({ type: 'stop' } satisfies ToServer);
    await exited;
  }
}

if (process.argv[2] === '--serve') {
  serve(Number(process.argv[3])).catch((err) => {
    process.send?.({ type: 'failed', error: err instanceof Error ? err.message : String(err) } satisfies FromServer);
    process.exit(1);
  });
} else {
  main().catch((err) => {
    process.stderr.write(`bench failed: ${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  });
}
