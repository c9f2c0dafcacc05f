/**
 * gRPC `Risk` against REST `POST /v1/risk`, door only: the same doors as production over a core
 * whose verdict step validates the body as usual (parseEvent) and returns a verdict the real core
 * computed once, so that what differs is only the door (transport, decoding, authentication
 * (cached), encoding) on the server, and the caller's client: Node's `http` with keep-alive for
 * REST (the JSON answer parsed, as a caller would), the shipped `createRampartClient` for gRPC,
 * as unary `Risk` RPCs (`verdictStreams: 0`) and as it sends verdicts by default (on
 * VerdictStreams).
 *
 * Rampart runs in a child process (this file with `--serve`), the load generator in this one, on
 * the same machine. Two kinds of load, doors alternating round by round:
 *   - closed loop: `--concurrency` callers, each sending its next call when the last answered;
 *   - open loop: calls sent at a fixed offered rate (`--rates`, req/s) whatever the answers,
 *     latency counted from when each call was due (so a late sender is not hidden).
 * For each: calls, achieved req/s, p50/p90/p99 (ms), CPU per call (µs) of the server and of the
 * load generator (the client), and the gRPC/REST ratios; in open loop also p50/p99 from the send.
 * `--signals N` puts N signals (Structs) in the canned verdict, for a Struct-heavy answer.
 *
 *   npm run build && node dist/bench/grpc-door.js
 *   node dist/bench/grpc-door.js --concurrency 16 --count 20000 --rates 1000,3000 --seconds 10 --rounds 2
 *   node dist/bench/grpc-door.js --only stream --rates 0 --prof .data/prof   # CPU profiles of both sides
 *
 * Uses MONGODB_URI when set, else an embedded FerretDB under .data/bench-door-*; the database is
 * only used to set the environment up and compute the canned verdict (authentication is cached).
 */
import { fork, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { mkdirSync, rmSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { Session } from 'node:inspector';
import { writeFileSync } from 'node:fs';
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
import type { Signals } from '../src/core/model';

interface Options {
  /** Closed loop: calls per door per round (0: skip). */
  count: number;
  concurrency: number;
  /** Open loop: offered rates in req/s (0 alone: skip). */
  rates: number[];
  /** Open loop: seconds per door per round and rate. */
  seconds: number;
  rounds: number;
  users: number;
  warmup: number;
  /** Only these doors (e.g. for profiling one): rest, unary, stream. */
  only: Door[] | null;
  /** Write V8 CPU profiles of the measured rounds (server and client) into this directory. */
  prof: string | null;
  /** How many signals the canned verdict carries (0: as the core computed it, none for this event). */
  signals: number;
}

const USAGE =
  'usage: grpc-door.js [--count N] [--concurrency N] [--rates R1,R2] [--seconds S] [--rounds N] [--users N] [--warmup N] [--only rest,unary,stream] [--prof DIR]';

function options(argv: string[]): Options {
  const o: Options = { count: 20000, concurrency: 16, rates: [1000], seconds: 10, rounds: 2, users: 200, warmup: 3000, only: null, prof: null, signals: 0 };
  for (let i = 0; i < argv.length; i += 2) {
    const key = argv[i].replace(/^--/, '');
    const raw = argv[i + 1] ?? '';
    if (key === 'only') {
      const names: Record<string, Door> = { rest: 'REST', unary: 'unary', stream: 'stream' };
      o.only = raw.split(',').map((d) => {
        const door = names[d];
        if (!door) throw new Error(USAGE);
        return door;
      });
    } else if (key === 'prof') {
      o.prof = path.resolve(raw);
    } else if (key === 'rates') {
      o.rates = raw.split(',').map(Number).filter((r) => r > 0);
      if (raw.split(',').some((r) => !Number.isFinite(Number(r)) || Number(r) < 0)) throw new Error(USAGE);
    } else if (key === 'count' || key === 'concurrency' || key === 'seconds' || key === 'rounds' || key === 'users' || key === 'warmup' || key === 'signals') {
      const value = Number(raw);
      if (!Number.isInteger(value) || value < 0) throw new Error(`${USAGE} (bad ${argv[i]})`);
      o[key] = value;
    } else {
      throw new Error(`${USAGE} (unknown ${argv[i]})`);
    }
  }
  return o;
}

const UA = 'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36';
const HEADERS = { 'User-Agent': UA, Accept: 'text/html,application/xhtml+xml', 'Accept-Language': 'en-GB,en;q=0.9', 'Accept-Encoding': 'gzip, br' };

/** Each user has its own address (all in one London network), as real traffic has many. */
const ipOf = (i: number, users: number) => `81.2.69.${((i % users) % 250) + 1}`;

/** The same event for both doors: user i, on its own fingerprint and address (as bench/run.ts). */
const restBody = (i: number, users: number) =>
  JSON.stringify({ event: '$login', user: { id: `bench-${i % users}`, email: `bench${i % users}@example.com` }, request_token: `bench-fp-${i % users}`, context: { ip: ipOf(i, users), headers: HEADERS } });
const grpcRequest = (i: number, users: number): RiskRequest => ({
  event: '$login',
  user: { id: `bench-${i % users}`, email: `bench${i % users}@example.com` },
  requestToken: `bench-fp-${i % users}`,
  context: { ip: ipOf(i, users), headers: HEADERS },
});

// ---------------------------------------------------------------------------------------------
// CPU profiles of the measured part only (not start-up, warm-up or the other door).

class Profiler {
  private session: Session | null = null;
  constructor(private readonly file: string | null) {}
  start(): void {
    if (!this.file || this.session) return;
    this.session = new Session();
    this.session.connect();
    this.session.post('Profiler.enable');
    this.session.post('Profiler.setSamplingInterval', { interval: 250 });
    this.session.post('Profiler.start');
  }
  stop(): Promise<void> {
    const session = this.session;
    const file = this.file;
    if (!session || !file) return Promise.resolve();
    this.session = null;
    return new Promise((resolve, reject) =>
      session.post('Profiler.stop', (err, res) => {
        session.disconnect();
        if (err) return reject(err);
        mkdirSync(path.dirname(file), { recursive: true });
        writeFileSync(file, JSON.stringify(res.profile));
        resolve();
      }),
    );
  }
}

// ---------------------------------------------------------------------------------------------
// The server side (child process).

interface Listeners {
  restPort: number;
  grpcAddress: string;
}

type ToServer = { type: 'cpu' } | { type: 'prof'; on: boolean } | { type: 'stop' };
type FromServer =
  | { type: 'ready'; secret: string; door: Listeners; database: string; signals: string[] }
  | { type: 'cpu'; micros: number }
  | { type: 'prof' }
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

/** Signals a risky verdict carries, with their explanations, for `--signals N`. */
const EXTRA_SIGNALS: Signals = {
  new_device: { known_devices: 3 },
  proxy_ip: { kind: 'hosting', asn: 16509, organization: 'Amazon.com, Inc.' },
  high_activity_ip: { events_last_hour: 75 },
  impossible_travel: { km: 1742, hours: 0.5 },
};

async function serve(users: number, signals: number, profFile: string | null): Promise<void> {
  const send = (m: FromServer) => process.send?.(m);
  const log = createLogger('fatal');
  let embedded: EmbeddedDatabase | null = null;
  let dataDir: string | null = null;
  let uri = process.env.MONGODB_URI;
  if (!uri) {
    dataDir = path.resolve(__dirname, '..', ...(__dirname.includes(`${path.sep}dist${path.sep}`) ? ['..'] : []), '.data', `bench-door-${process.pid}`);
    embedded = await startEmbedded(dataDir);
    uri = embedded.uri;
  }
  const dbName = `rampart_bench_door_${randomBytes(4).toString('hex')}`;
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

  // Door only: validation as usual, then a verdict the real core computed once.
  const principal = await built.services.environments.authenticate(secret);
  const computed = await built.services.verdicts.evaluate(principal, 'risk', JSON.parse(restBody(0, users)));
  const canned = { ...computed, signals: { ...computed.signals, ...Object.fromEntries(Object.entries(EXTRA_SIGNALS).slice(0, signals)) } };
  const verdicts = Object.create(built.services.verdicts) as Services['verdicts'];
  verdicts.evaluate = async (p, endpoint, body) => {
    parseEvent(endpoint, body, { sandbox: p.env.sandbox, now: new Date() });
    return canned;
  };
  const door = await listen({ ...built.services, verdicts }, log);
  const profiler = new Profiler(profFile);

  process.on('message', (m: ToServer) => {
    if (m.type === 'cpu') {
      const u = process.cpuUsage();
      send({ type: 'cpu', micros: u.user + u.system });
    } else if (m.type === 'prof') {
      if (m.on) profiler.start();
      (m.on ? Promise.resolve() : profiler.stop()).then(() => send({ type: 'prof' }));
    } else if (m.type === 'stop') {
      (async () => {
        await door.close();
        await built.stop();
        await database.db.dropDatabase().catch(() => undefined);
        await database.close();
        await embedded?.stop();
        if (dataDir) rmSync(dataDir, { recursive: true, force: true });
      })().finally(() => process.exit(0));
    }
  });
  send({ type: 'ready', secret, door: { restPort: door.restPort, grpcAddress: door.grpcAddress }, database: embedded ? 'the embedded FerretDB' : 'MONGODB_URI', signals: Object.keys(canned.signals) });
}

// ---------------------------------------------------------------------------------------------
// The load generator (this process).

interface Result {
  count: number;
  seconds: number;
  /** Milliseconds per call: closed loop from the send, open loop from when the call was due. */
  latencies: number[];
  /** Open loop: milliseconds from the send (without the load generator's own lateness). */
  service?: number[];
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
  async ask(m: ToServer): Promise<FromServer> {
    const reply = this.next();
    this.child.send(m);
    return reply;
  }
  async cpu(): Promise<number> {
    const m = await this.ask({ type: 'cpu' });
    if (m.type !== 'cpu') throw new Error(`unexpected ${m.type}`);
    return m.micros;
  }
}

type Call = (i: number) => Promise<void>;

/** Closed loop: `count` calls, `concurrency` at a time; every call must succeed. */
async function closedLoop(server: Server, count: number, concurrency: number, one: Call): Promise<Result> {
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

/** Open loop: `rate` calls per second for `seconds`, each sent when due whatever the others do. */
async function openLoop(server: Server, rate: number, seconds: number, one: Call): Promise<Result> {
  const count = Math.max(1, Math.round(rate * seconds));
  const latencies: number[] = new Array(count);
  const service: number[] = new Array(count);
  const interval = 1000 / rate;
  const server0 = await server.cpu();
  const client0 = process.cpuUsage();
  const started = performance.now();
  await new Promise<void>((resolve, reject) => {
    let sent = 0;
    let done = 0;
    const tick = () => {
      const now = performance.now();
      while (sent < count && started + sent * interval <= now) {
        const i = sent++;
        const due = started + i * interval;
        const at = performance.now();
        one(i).then(() => {
          const t = performance.now();
          latencies[i] = t - due;
          service[i] = t - at;
          if (++done === count) resolve();
        }, reject);
      }
      if (sent < count) setTimeout(tick, Math.max(0, started + sent * interval - performance.now()));
    };
    tick();
  });
  const elapsed = (performance.now() - started) / 1000;
  const client = process.cpuUsage(client0);
  const serverMicros = (await server.cpu()) - server0;
  return { count, seconds: elapsed, latencies, service, serverMicros, clientMicros: client.user + client.system };
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];

function summary(results: Result[]) {
  const latencies = results.flatMap((r) => r.latencies).sort((a, b) => a - b);
  const service = results.flatMap((r) => r.service ?? []).sort((a, b) => a - b);
  const count = results.reduce((n, r) => n + r.count, 0);
  const sum = (f: (r: Result) => number) => results.reduce((n, r) => n + f(r), 0);
  return {
    count,
    throughput: count / sum((r) => r.seconds),
    p50: percentile(latencies, 50),
    p90: percentile(latencies, 90),
    p99: percentile(latencies, 99),
    /** Open loop only: p50 and p99 from the send. */
    sent: service.length > 0 ? { p50: percentile(service, 50), p99: percentile(service, 99) } : null,
    serverCpu: sum((r) => r.serverMicros) / count,
    clientCpu: sum((r) => r.clientMicros) / count,
  };
}

/** REST; gRPC unary `Risk` (the client with `verdictStreams: 0`); gRPC as the client sends it by default (on VerdictStreams). */
const DOORS = ['REST', 'unary', 'stream'] as const;
type Door = (typeof DOORS)[number];
const LABEL: Record<Door, string> = { REST: 'REST', unary: 'gRPC unary', stream: 'gRPC stream' };
type Summary = ReturnType<typeof summary>;

function print(title: string, s: Partial<Record<Door, Summary>>): void {
  const f = (n: number, w: number, d = 2) => n.toFixed(d).padStart(w);
  const row = (door: Door, x: Summary) =>
    `  ${LABEL[door].padEnd(12)}${String(x.count).padStart(7)}${f(x.throughput, 9, 0)}${f(x.p50, 9)}${f(x.p90, 9)}${f(x.p99, 9)}${f(x.serverCpu, 12, 0)}${f(x.clientCpu, 12, 0)}` +
    `${x.sent ? `${f(x.sent.p50, 14)}${f(x.sent.p99, 9)}` : ''}\n`;
  const open = Object.values(s).some((x) => x?.sent);
  let out = `\n${title}\n  door          calls    req/s      p50      p90      p99  server CPU  client CPU${open ? '  sent→p50      p99' : ''}   (ms; µs per call)\n`;
  for (const door of DOORS) {
    const x = s[door];
    if (x) out += row(door, x);
  }
  const r = s.REST;
  for (const door of ['unary', 'stream'] as const) {
    const g = s[door];
    if (!r || !g) continue;
    const x = (a: number, b: number) => `x${(a / b).toFixed(2)}`;
    out += `  ${LABEL[door]}/REST: req/s ${x(g.throughput, r.throughput)}, p50 ${x(g.p50, r.p50)}, p90 ${x(g.p90, r.p90)}, p99 ${x(g.p99, r.p99)}, server CPU ${x(g.serverCpu, r.serverCpu)}, client CPU ${x(g.clientCpu, r.clientCpu)}\n`;
  }
  process.stdout.write(out);
}

/** Both doors' callers, sending the same events. */
function clients(l: Listeners, secret: string, sockets: number, users: number): Record<Door, Call> & { close(): void } {
  const agent = new http.Agent({ keepAlive: true, maxSockets: sockets });
  const authorization = `Basic ${Buffer.from(`:${secret}`).toString('base64')}`;
  const unary = createRampartClient({ address: l.grpcAddress, secret, deadlineMs: 60_000, verdictStreams: 0 });
  const streams = createRampartClient({ address: l.grpcAddress, secret, deadlineMs: 60_000 });
  return {
    REST: (i) =>
      new Promise<void>((resolve, reject) => {
        const body = restBody(i, users);
        const req = http.request(
          { host: '127.0.0.1', port: l.restPort, path: '/v1/risk', method: 'POST', agent, headers: { authorization, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
          (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (c: Buffer) => chunks.push(c));
            res.on('end', () => {
              if (res.statusCode !== 201) return reject(new Error(`REST ${res.statusCode}: ${Buffer.concat(chunks).toString()}`));
              // A caller reads the verdict: parse it, as the gRPC client decodes its answer.
              JSON.parse(Buffer.concat(chunks).toString('utf8'));
              resolve();
            });
          },
        );
        req.on('error', reject);
        req.end(body);
      }),
    unary: async (i) => {
      await unary.risk(grpcRequest(i, users));
    },
    stream: async (i) => {
      await streams.risk(grpcRequest(i, users));
    },
    close: () => {
      unary.close();
      streams.close();
      agent.destroy();
    },
  };
}

async function main(): Promise<void> {
  const o = options(process.argv.slice(2));
  const doors: Door[] = o.only ?? [...DOORS];
  const profName = doors.join('-').toLowerCase();
  const serverProf = o.prof ? path.join(o.prof, `server-${profName}.cpuprofile`) : '';
  const server = new Server(fork(__filename, ['--serve', String(o.users), String(o.signals), serverProf], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }));
  const ready = await server.next();
  if (ready.type === 'failed') throw new Error(`the bench server failed to start: ${ready.error}`);
  if (ready.type !== 'ready') throw new Error(`unexpected ${ready.type}`);
  const maxRate = Math.max(0, ...o.rates);
  // REST: one socket per concurrent call (closed loop), enough sockets for the offered rate (open loop).
  const closed = clients(ready.door, ready.secret, o.concurrency, o.users);
  const open = clients(ready.door, ready.secret, Math.max(o.concurrency, Math.ceil(maxRate / 50)), o.users);
  const clientProfiler = new Profiler(o.prof ? path.join(o.prof, `client-${profName}.cpuprofile`) : null);
  try {
    process.stdout.write(
      `rampart gRPC door bench: node ${process.version}, server and load generator in separate processes; door only (canned verdict with signals ${JSON.stringify(ready.signals)}); ${o.users} users\n`,
    );
    for (const door of doors) {
      await closedLoop(server, o.warmup, o.concurrency, closed[door]);
      if (o.rates.length > 0) await openLoop(server, Math.min(maxRate, 1000), Math.min(2, o.seconds), open[door]);
    }
    if (o.prof) {
      clientProfiler.start();
      await server.ask({ type: 'prof', on: true });
    }
    if (o.count > 0) {
      const results: Partial<Record<Door, Result[]>> = {};
      for (let r = 0; r < o.rounds; r++) {
        // Alternate the order so that no door always runs last.
        for (const door of r % 2 === 0 ? doors : [...doors].reverse()) (results[door] ??= []).push(await closedLoop(server, o.count, o.concurrency, closed[door]));
      }
      print(
        `Closed loop, concurrency ${o.concurrency}: ${o.rounds} round(s) of ${o.count} Risk calls per door`,
        Object.fromEntries(Object.entries(results).map(([d, rs]) => [d, summary(rs)])),
      );
    }
    for (const rate of o.rates) {
      const results: Partial<Record<Door, Result[]>> = {};
      for (let r = 0; r < o.rounds; r++) {
        for (const door of r % 2 === 0 ? doors : [...doors].reverse()) (results[door] ??= []).push(await openLoop(server, rate, o.seconds, open[door]));
      }
      print(
        `Open loop, ${rate} req/s offered: ${o.rounds} round(s) of ${o.seconds} s per door (latency from when each call was due)`,
        Object.fromEntries(Object.entries(results).map(([d, rs]) => [d, summary(rs)])),
      );
    }
    if (o.prof) {
      await clientProfiler.stop();
      await server.ask({ type: 'prof', on: false });
      process.stdout.write(`\nCPU profiles in ${o.prof} (open in Chrome DevTools or speedscope)\n`);
    }
  } finally {
    closed.close();
    open.close();
    const exited = new Promise((resolve) => server.child.once('exit', resolve));
    server.child.send({ type: 'stop' } satisfies ToServer);
    await exited;
  }
}

if (process.argv[2] === '--serve') {
  serve(Number(process.argv[3]), Number(process.argv[4]), process.argv[5] || null).catch((err) => {
    process.send?.({ type: 'failed', error: err instanceof Error ? err.message : String(err) } satisfies FromServer);
    process.exit(1);
  });
} else {
  main().catch((err) => {
    process.stderr.write(`bench failed: ${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  });
}
