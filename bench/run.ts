/**
 * `npm run bench`: Rampart's hot path on this machine, as a new user runs it (src/app/runtime.ts,
 * the embedded database unless MONGODB_URI is set), driven from another process with varied
 * users, addresses and devices (bench/lib/traffic.ts). It prints:
 *
 *   1. closed loop at --concurrency: a bare Fastify POST (the machine's ceiling), the REST door
 *      alone (validation + a canned verdict), and end to end REST /v1/risk, gRPC Risk (unary, as
 *      generated stubs call it) and gRPC Risk on VerdictStreams (as the shipped client calls it);
 *      each with throughput, p50/p99/p99.9, errors, server CPU per call, and its ratio to the
 *      ceiling and to the door alone;
 *   2. open loop at fixed offered rates (--rates): the same doors, latency counted from when each
 *      call was due, each REST call on a connection of its own while in flight (as independent
 *      clients: past what Rampart serves, calls wait in Rampart, which sheds, not in the generator);
 *   3. feedback: REST /v1/track and gRPC TrackStream, accepted events per second, and how many of
 *      the accepted events are in the database once the queues are written (all of them);
 *   4. latency of a verdict (and of listing devices) for a user with --history events against a
 *      user with 10;
 *   5. scoring beside the heaviest analysis dashboards may run (the analysts' bulkhead);
 *   6. a hung embedded database (SIGSTOP, then SIGCONT): how long requests that need it take to
 *      answer 503, already waiting or new, how long /readyz takes, and how soon they answer again;
 *   7. a CSV import of --import-rows rows (default 100,000) as a job, and the verdicts' latency and
 *      the item count's beside it (bench/list-import.ts);
 *   8. Rampart's (and the embedded database's) resident memory, at peak under load and at the end;
 *   0. first, the risk engine as pure code (bench/scoring.ts): µs to score an event, and to enrich it;
 *      and what ten lists of 100,000 items cost a verdict (bench/lists.ts).
 *
 * Not by default (about twenty minutes): `--only overload [--overload-minutes N]` (bench/lib/overload.ts)
 * runs Rampart as `npm start` does beside busy loops on every core, offers it more verdicts and
 * track events than it can serve for N minutes (15) with its database stopped for 12 s in the
 * middle, then SIGKILLs and SIGTERMs it under the same load, and prints what it answered,
 * refused and lost, /readyz, its memory and the WAL, and how soon it recovered.
 *
 * Not by default (two replays of some minutes each): `--only stuffing` (bench/stuffing.ts) replays
 * the evaluation's world, credential stuffing included, on a quiet machine and then beside a CPU
 * hog per core, with Rampart's default verdict budget, and prints the stuffing stopped, the
 * legitimate friction and the degraded verdicts of each run.
 *
 * Not by default (it loads millions of documents and takes tens of minutes): `--only dashboards`
 * (bench/dashboards.ts) bulk-loads a large environment (--dash-events, default 5,000,000, of
 * --dash-users, default 200,000) straight into the database, then times each console query through
 * GraphQL (--dash-reps runs each), and scoring alone and beside a console user clicking through
 * every page, with the memory of the embedded database and of the analysts' reader. Nor
 * `--only webhooks` (bench/webhooks.ts): it loads a history of --wh-history finished deliveries,
 * then times webhook delivery to a receiver on this machine, a burst and a steady rate of deny
 * verdicts.
 *
 *   npm run bench
 *   node dist/bench/run.js --seconds 5 --rates 500,1000,2000 --count 20000 --only closed,open
 *   node dist/bench/run.js --prof .data/prof      # V8 CPU profile of the server
 *   node dist/bench/run.js --only dashboards [--dash-events 1000000 --dash-users 200000 --dash-reps 3]
 *   node dist/bench/run.js --only imports [--import-rows 100000]
 *   node dist/bench/run.js --only stuffing [--stuff-users 300 --stuff-days 21]
 *   node dist/bench/run.js --json bench/results/2026-11-26-bench.json   # the figures as JSON too
 *   node dist/bench/run.js --only webhooks [--wh-history 100000 --wh-burst 5000 --wh-rate 100 --wh-seconds 20]
 *
 * Every table has a `docs` column: documents the server's flushes wrote per call (the
 * `rampart_state_flushed_writes_total` metric), and `written` and `users`: the KB they sent per
 * call, in all and to the users' documents (`rampart_state_flushed_bytes_total`). `--json FILE` writes `{ kind: 'bench', run,
 * options, figures, report }`: what it was measured on (the commit, the machine, the date:
 * bench/lib/run-info.ts), each section's figures, and the printed report;
 * `node scripts/results-history.js` tabulates them.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { jsonPoster } from './lib/http';
import {
  closedLoop,
  openLoop,
  summarize,
  table,
  type Call,
  type Cpu,
  type Result,
  type Summary,
} from './lib/load';
import { riskBody, Traffic, trackBody, type Login } from './lib/traffic';
import {
  entry,
  megabytes,
  type Endpoints,
  type FromServer,
  type MemorySample,
  type ToServer,
} from './lib/server';
import { createRampartClient, type RiskRequest, type TrackRequest } from '../src/client';
import { benchScoring, scoringReport } from './scoring';
import { benchDashboards } from './dashboards';
import { benchLists, listsReport } from './lists';
import { benchListImport, type ImportFigures } from './list-import';
import { benchWebhooks, type WebhookFigures } from './webhooks';
import { runInfo } from './lib/run-info';
import { runOverload, type OverloadReport } from './lib/overload';
import { DEFAULT_STUFFING_HOGS, runStuffing, type StuffingFigures } from './stuffing';
import os from 'node:os';

const SECTIONS = [
  'scoring',
  'closed',
  'open',
  'track',
  'history',
  'analyst',
  'outage',
  'imports',
  'dashboards',
  'webhooks',
  'overload',
  'stuffing',
] as const;
type Section = (typeof SECTIONS)[number];
/** What `npm run bench` runs without --only: every section but dashboards, overload and stuffing (tens of minutes each) and webhooks (a history to load first). */
const DEFAULT_SECTIONS: readonly Section[] = SECTIONS.filter(
  (s) => s !== 'dashboards' && s !== 'overload' && s !== 'webhooks' && s !== 'stuffing',
);
const DOORS = ['ceiling', 'door', 'rest', 'unary', 'stream'] as const;
type Door = (typeof DOORS)[number];

interface Options {
  count: number;
  concurrency: number;
  rates: number[];
  seconds: number;
  rounds: number;
  users: number;
  history: number;
  'track-count': number;
  only: Section[];
  /** Closed and open loop: only these doors (default all). */
  doors: Door[];
  prof: string | null;
  /** Minutes of the soak (`--soak N`, or `npm run bench --soak`: 30); 0: no soak. */
  soak: number;
  /** Minutes of the overload phase (`--only overload`). */
  'overload-minutes': number;
  /** Calls per second the soak offers. */
  'soak-rate': number;
  /** Dashboards: events and users bulk-loaded, and runs of each console query. */
  'dash-events': number;
  'dash-users': number;
  'dash-reps': number;
  /** Imports: rows of the CSV. */
  'import-rows': number;
  /** Stuffing on a slow machine: the evaluation world's users and days. */
  'stuff-users': number;
  'stuff-days': number;
  /** Webhooks: finished deliveries loaded into the history, deny verdicts of the burst, and the live phase's rate and length. */
  'wh-history': number;
  'wh-burst': number;
  'wh-rate': number;
  'wh-seconds': number;
  /** Also write the figures, the printed report and what they were measured on to this file. */
  json: string | null;
}

/** What `--json` writes: the figures of each section run, beside the printed report. */
interface Figures {
  closed?: { concurrency: number; doors: Partial<Record<Door, Summary>> };
  open?: { rate: number; seconds: number; doors: Partial<Record<Door, Summary>> }[];
  track?: {
    rest: Summary;
    stream: { accepted: number; perSecond: number; serverCpu: number; dbCpu: number };
    stored: number;
    acknowledged: number;
  };
  history?: {
    events: { few: number; many: number };
    risk: { few: Summary; many: Summary };
    devices: { few: Summary; many: Summary };
  };
  analyst?: { alone: Summary; beside: Summary; answered: number; refused: number };
  memory?: {
    peakRss: number;
    rss: number;
    liveHeap: number | null;
    peakDbRss: number | null;
    dbRss: number | null;
  };
  imports?: ImportFigures;
  webhooks?: WebhookFigures;
  overload?: OverloadReport;
  stuffing?: StuffingFigures;
}

const USAGE =
  'usage: run.js [--count N] [--concurrency N] [--rates R1,R2,…] [--seconds S] [--rounds N] [--users N] [--history N] [--track-count N] [--only scoring,closed,open,track,history,analyst,outage,imports,dashboards,webhooks,overload,stuffing] [--doors ceiling,door,rest,unary,stream] [--prof DIR] [--soak MINUTES [--soak-rate N]] [--overload-minutes N] [--dash-events N] [--dash-users N] [--dash-reps N] [--import-rows N] [--stuff-users N] [--stuff-days N] [--wh-history N] [--wh-burst N] [--wh-rate N] [--wh-seconds N] [--json FILE]';

function options(argv: string[]): Options {
  const o: Options = {
    count: 20000,
    concurrency: 16,
    rates: [500, 1000, 2000],
    seconds: 8,
    rounds: 2,
    users: 10000,
    history: 10000,
    'track-count': 40000,
    only: [...DEFAULT_SECTIONS],
    doors: [...DOORS],
    prof: null,
    soak: 0,
    'soak-rate': 80,
    'overload-minutes': 15,
    'dash-events': 5_000_000,
    'dash-users': 200_000,
    'dash-reps': 5,
    'import-rows': 100_000,
    'stuff-users': 300,
    'stuff-days': 21,
    'wh-history': 100_000,
    'wh-burst': 5_000,
    'wh-rate': 100,
    'wh-seconds': 20,
    json: null,
  };
  // `npm run bench --soak` reaches the script as npm's config variable, not as an argument.
  if (process.env.npm_config_soak && process.env.npm_config_soak !== 'false')
    o.soak = process.env.npm_config_soak === 'true' ? 30 : Number(process.env.npm_config_soak) || 30;
  for (let i = 0; i < argv.length; i += 2) {
    const key = (argv[i] ?? '').replace(/^--/, '');
    const raw = argv[i + 1] ?? '';
    if (key === 'only') {
      o.only = raw.split(',').map((s) => {
        if (!(SECTIONS as readonly string[]).includes(s)) throw new Error(USAGE);
        return s as Section;
      });
    } else if (key === 'doors') {
      o.doors = raw.split(',').map((d) => {
        if (!(DOORS as readonly string[]).includes(d)) throw new Error(USAGE);
        return d as Door;
      });
    } else if (key === 'prof') {
      o.prof = path.resolve(raw);
    } else if (key === 'json') {
      if (!raw) throw new Error(USAGE);
      o.json = path.resolve(raw);
    } else if (key === 'rates') {
      o.rates = raw.split(',').map(Number);
      if (o.rates.some((r) => !Number.isFinite(r) || r <= 0)) throw new Error(USAGE);
    } else if (
      key === 'count' ||
      key === 'concurrency' ||
      key === 'seconds' ||
      key === 'rounds' ||
      key === 'users' ||
      key === 'history' ||
      key === 'track-count' ||
      key === 'soak' ||
      key === 'soak-rate' ||
      key === 'overload-minutes' ||
      key === 'dash-events' ||
      key === 'dash-users' ||
      key === 'dash-reps' ||
      key === 'import-rows' ||
      key === 'stuff-users' ||
      key === 'stuff-days' ||
      key === 'wh-history' ||
      key === 'wh-burst' ||
      key === 'wh-rate' ||
      key === 'wh-seconds'
    ) {
      const value = Number(raw);
      if (!Number.isInteger(value) || value <= 0) throw new Error(`${USAGE} (bad ${argv[i]})`);
      o[key] = value;
    } else {
      throw new Error(`${USAGE} (unknown ${argv[i]})`);
    }
  }
  return o;
}

/** The server child and its IPC questions. */
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
        if (m.type === 'failed') reject(new Error(`the bench server failed: ${m.error}`));
        else resolve(m);
      };
    });
  }
  async ask<T extends FromServer['type']>(m: ToServer, expect: T): Promise<Extract<FromServer, { type: T }>> {
    const reply = this.next();
    this.child.send(m);
    const r = await reply;
    if (r.type !== expect) throw new Error(`expected ${expect}, got ${r.type}`);
    return r as Extract<FromServer, { type: T }>;
  }
  /** Wait until everything the server queued is written, so that a run does not pay for the last one's writes. */
  settle = async (): Promise<void> => {
    await this.ask({ type: 'settle' }, 'settled');
  };
  cpu = async (): Promise<Cpu> => {
    const s = await this.ask({ type: 'stats' }, 'stats');
    return {
      server: s.cpuMicros,
      db: s.dbCpuMicros ?? 0,
      backlog: s.backlog,
      writes: s.writes,
      written: s.written,
      userWritten: s.userWritten,
      allocated: s.allocated,
      promoted: s.promoted,
    };
  };
}

/** A JSON POST over a keep-alive agent; true when the status is `expect` and the answer parses (it is read and parsed, as a caller would). */
function poster(agent: http.Agent, secret: string) {
  const post = jsonPoster(agent, secret);
  return (url: URL, body: unknown, expect: number): Promise<boolean> =>
    post(url, body).then((a) => a.status === expect && !a.unparsed);
}

const toRisk = (l: Login): RiskRequest => ({
  event: '$login',
  user: { id: l.userId, email: l.email },
  requestToken: l.fingerprint,
  context: { ip: l.ip, headers: l.headers },
});
const toTrack = (l: Login): TrackRequest => ({
  event: '$login.failed',
  user: { id: l.userId, email: l.email },
  requestToken: l.fingerprint,
  context: { ip: l.ip, headers: l.headers },
});

const LABEL: Record<Door, string> = {
  ceiling: 'bare Fastify POST',
  door: 'REST door only',
  rest: 'REST /v1/risk',
  unary: 'gRPC Risk (unary)',
  stream: 'gRPC Risk (VerdictStream)',
};

function callers(e: Endpoints, sockets: number, traffic: Traffic) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: sockets });
  const post = poster(agent, e.secret);
  const unary = createRampartClient({
    address: e.grpc,
    secret: e.secret,
    deadlineMs: 60_000,
    verdictStreams: 0,
  });
  const streams = createRampartClient({ address: e.grpc, secret: e.secret, deadlineMs: 60_000 });
  const risk = new URL('/v1/risk', e.rest);
  const track = new URL('/v1/track', e.rest);
  const ceiling = new URL(e.ceiling);
  const door = new URL('/v1/risk', e.door);
  const grpcOk = (p: Promise<unknown>) =>
    p.then(
      () => true,
      () => false,
    );
  const doors: Record<Door, Call> = {
    ceiling: () => post(ceiling, riskBody(traffic.next()), 200),
    door: () => post(door, riskBody(traffic.next()), 201),
    rest: () => post(risk, riskBody(traffic.next()), 201),
    unary: () => grpcOk(unary.risk(toRisk(traffic.next()))),
    stream: () => grpcOk(streams.risk(toRisk(traffic.next()))),
  };
  /** GET `path` with the secret: its status and how long it took (ms). */
  const get = (path: string) =>
    new Promise<{ status: number; ms: number }>((resolve, reject) => {
      const url = new URL(path, e.rest);
      const started = performance.now();
      const req = http.get(
        {
          host: url.hostname,
          port: url.port,
          path: url.pathname,
          agent,
          headers: { authorization: `Basic ${Buffer.from(`:${e.secret}`).toString('base64')}` },
        },
        (res) => {
          res.resume();
          res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - started }));
        },
      );
      req.on('error', reject);
    });
  return {
    doors,
    riskFor: (l: Login) => post(risk, riskBody(l), 201),
    graphql: (query: string) => post(new URL('/graphql', e.rest), { query }, 200),
    track: () => post(track, trackBody(traffic.next()), 204),
    filter: () =>
      post(
        new URL('/v1/filter', e.rest),
        { ...riskBody(traffic.next()), event: '$login', status: '$attempted' },
        201,
      ),
    trackStream: async (n: number, make: () => TrackRequest) => {
      const { accepted } = await streams.trackStream(
        (function* () {
          for (let i = 0; i < n; i++) yield make();
        })(),
      );
      return accepted;
    },
    get,
    devicesOf: (userId: string) =>
      get(`/v1/users/${encodeURIComponent(userId)}/devices`).then((r) => r.status === 200),
    close: () => {
      unary.close();
      streams.close();
      agent.destroy();
    },
  };
}

const timestampOf = (ms: number) => ({ seconds: Math.floor(ms / 1000), nanos: (ms % 1000) * 1e6 });
/** Node's flags for Rampart, as `npm start` passes them (RAMPART_BENCH_NODE_FLAGS overrides, for experiments). */
const SERVER_NODE_FLAGS = (process.env.RAMPART_BENCH_NODE_FLAGS ?? '').split(' ').filter(Boolean);
const x = (a: number, b: number) => `x${(a / b).toFixed(2)}`;

/**
 * The embedded database hangs (SIGSTOP) for two seconds. Measured: a device read already waiting
 * when it hung, the first new device read that answers 503, the slowest /readyz meanwhile, and
 * after SIGCONT how soon device reads are answered again.
 */
async function hungDatabase(
  dbPid: number,
  get: (path: string) => Promise<{ status: number; ms: number }>,
): Promise<string> {
  const cold = (name: string) => `/v1/users/${name}-${Math.random().toString(36).slice(2)}/devices`;
  const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
  await get(cold('warm'));
  process.kill(dbPid, 'SIGSTOP');
  const stoppedAt = performance.now();
  let waiting: { status: number; ms: number };
  let firstNew = { status: 0, sinceHang: 0 };
  let readyzWorst = 0;
  try {
    const inFlight = get(cold('waiting'));
    const probing = (async () => {
      while (performance.now() - stoppedAt < 2000) {
        readyzWorst = Math.max(readyzWorst, (await get('/readyz')).ms);
        await pause(20);
      }
    })();
    while (performance.now() - stoppedAt < 10_000) {
      if ((await get(cold('new'))).status === 503) {
        firstNew = { status: 503, sinceHang: performance.now() - stoppedAt };
        break;
      }
      await pause(20);
    }
    waiting = await inFlight;
    await probing;
  } finally {
    process.kill(dbPid, 'SIGCONT');
  }
  const resumedAt = performance.now();
  let back = -1;
  let last = 0;
  while (back < 0 && performance.now() - resumedAt < 30_000) {
    // An unseen user's devices: 404 is the full answer (the user was looked up).
    last = (await get(cold('back'))).status;
    if (last === 404) back = performance.now() - resumedAt;
    else await pause(20);
  }
  const ms = (v: number) => (v < 0 ? 'never' : `${v.toFixed(0)} ms`);
  return (
    `\nA hung embedded database (SIGSTOP for 2 s, then SIGCONT; GET /v1/users/{id}/devices of unseen users)\n` +
    `  a read already waiting when it hung: ${waiting.status} after ${ms(waiting.ms)}\n` +
    `  the first new read answered 503: ${firstNew.status === 503 ? `${ms(firstNew.sinceHang)} after the hang` : 'never'}\n` +
    `  /readyz meanwhile: slowest ${ms(readyzWorst)}\n` +
    `  after SIGCONT: reads answer (404, looked up) again after ${ms(back)}${back < 0 ? ` (still ${last})` : ''}\n`
  );
}

/**
 * The soak: a moderate mixed load for `minutes` (REST risk, filter and track, gRPC Risk on
 * VerdictStreams, device lists; a GraphQL query every 2 s as a dashboard left open sends), with
 * Rampart's and both FerretDB processes' resident memory sampled every minute, and the embedded
 * database's write-ahead log (its largest size in the minute) and database file. It says whether
 * each levelled off: what it grew over the last third of the run against the first two thirds.
 */
async function soak(
  minutes: number,
  rate: number,
  server: Server,
  c: ReturnType<typeof callers>,
  traffic: Traffic,
  out: (s: string) => void,
): Promise<void> {
  const mixed: Call = (i) => {
    const k = i % 20;
    if (k < 8) return c.doors.rest(i);
    if (k < 11) return c.doors.stream(i);
    if (k < 16) return c.track();
    if (k < 19) return c.filter();
    // A user not seen yet answers 404 after its look-up: a full answer too.
    return c
      .get(`/v1/users/${encodeURIComponent(traffic.next().userId)}/devices`)
      .then((r) => r.status === 200 || r.status === 404);
  };
  const queries = [
    '{ events(first: 50) { edges { node { id name } } } }',
    '{ devices(first: 1) { edges { node { token } } } }',
    '{ events(first: 1) { edges { node { id } } } }',
    '{ analytics { total actions { count } } }',
  ];
  let dashboards = true;
  const graphql = { answered: 0, failed: 0 };
  const dashboard = (async () => {
    for (let q = 0; dashboards; q++) {
      const started = performance.now();
      if (await c.graphql(queries[q % queries.length] as string).catch(() => false)) graphql.answered++;
      else graphql.failed++;
      await new Promise((r) => setTimeout(r, Math.max(0, 2000 - (performance.now() - started))));
    }
  })();
  const mb = (v: number | null) => (v === null ? '-' : (v / 1024 / 1024).toFixed(0)).padStart(7);
  out(
    `\nSoak: ${rate} mixed calls/s offered for ${minutes} min (REST risk 40%, gRPC stream risk 15%, track 25%, filter 15%, device lists 5%; a GraphQL query every 2 s); resident memory in MB each minute, the embedded database's WAL (largest in the minute) and file in MB\n`,
  );
  out(
    `  ${'min'.padStart(4)} ${'calls'.padStart(8)} ${'errors'.padStart(7)} ${'p99 ms'.padStart(7)} ${'Rampart'.padStart(7)} ${'heap'.padStart(7)} ${'extern'.padStart(7)} ${'cached'.padStart(8)} ${'db'.padStart(7)} ${'reader'.padStart(7)} ${'WAL'.padStart(7)} ${'file'.padStart(7)} ${'graphql ok/failed'.padStart(18)}\n`,
  );
  const samples: MemorySample[] = [];
  const first = await server.ask({ type: 'memory', liveHeap: true }, 'memory');
  samples.push(first);
  let sent = 0;
  let errors = 0;
  for (let minute = 1; minute <= minutes; minute++) {
    const r = await openLoop(rate, 60, mixed, undefined, sent);
    sent += r.count;
    errors += r.errors;
    const m = await server.ask({ type: 'memory', liveHeap: minute === minutes }, 'memory');
    samples.push(m);
    const p99 = summarize([r]).p99;
    out(
      `  ${String(minute).padStart(4)} ${String(sent).padStart(8)} ${String(errors).padStart(7)} ${p99.toFixed(0).padStart(7)} ${mb(m.rss)} ${mb(m.heapUsed)} ${mb(m.external)} ${String(m.cachedDocuments).padStart(8)} ${mb(m.dbRss)} ${mb(m.readerRss)} ${mb(m.peakWalBytes)} ${mb(m.databaseBytes)} ${`${graphql.answered}/${graphql.failed}`.padStart(18)}\n`,
    );
  }
  dashboards = false;
  await dashboard;
  const last = samples[samples.length - 1] as MemorySample;
  const cut = samples[Math.floor(((samples.length - 1) * 2) / 3)] as MemorySample;
  const verdict = (name: string, pick: (s: MemorySample) => number | null) => {
    const [a, b, z] = [pick(first), pick(cut), pick(last)];
    if (a === null || b === null || z === null) return `${name} -`;
    const early = b - a;
    const late = z - b;
    // Levelled off: the last third grew by less than a quarter of the first two thirds' growth (or < 16 MB).
    const level = late < Math.max(16 * 1024 * 1024, early / 4);
    return `${name} ${mb(a).trim()} -> ${mb(b).trim()} -> ${mb(z).trim()} MB (${level ? 'levelled off' : 'STILL GROWING'})`;
  };
  out(
    `  start -> two thirds -> end: ${[verdict('Rampart', (s) => s.rss), verdict('the database', (s) => s.dbRss), verdict("the analysts' reader", (s) => s.readerRss)].join('; ')}\n`,
  );
  const peakWal = Math.max(...samples.map((s) => s.peakWalBytes ?? 0));
  if (last.walBytes !== null)
    out(
      `  the write-ahead log: at most ${mb(peakWal).trim()} MB (minute ${samples.findIndex((s) => (s.peakWalBytes ?? 0) === peakWal)}), ${mb(last.walBytes).trim()} MB at the end; the database file ${mb(first.databaseBytes).trim()} -> ${mb(last.databaseBytes).trim()} MB\n`,
    );
  out(
    `  Rampart's live heap after a full collection: ${megabytes(first.liveHeap)} at the start, ${megabytes(last.liveHeap)} at the end\n`,
  );
}

async function main(): Promise<void> {
  const o = options(process.argv.slice(2));
  if (o.soak > 0) o.only = [];
  const report: string[] = [];
  const figures: Figures = {};
  const out = (s: string) => {
    report.push(s);
    process.stdout.write(s);
  };
  const record = () => {
    if (o.json)
      writeFileSync(
        o.json,
        `${JSON.stringify({ kind: 'bench', run: runInfo(), options: o, figures, report: report.join('') }, null, 2)}\n`,
      );
  };
  // The engine alone first, in this process, before anything else loads the machine.
  if (o.only.includes('scoring')) {
    out(scoringReport(benchScoring()));
    out(listsReport(benchLists()));
  }
  if (o.only.includes('overload')) {
    // Rampart as `npm start` runs it, with CPU hogs beside it (bench/lib/overload.ts): its own
    // processes, not the bench's server child.
    const r = await runOverload({
      root: path.resolve(
        __dirname,
        '..',
        ...(__dirname.includes(`${path.sep}dist${path.sep}`) ? ['..'] : []),
      ),
      overloadSeconds: o['overload-minutes'] * 60,
      killSeconds: 30,
      termSeconds: 30,
      hogs: os.availableParallelism() + 1,
      rate: { start: 100, step: 100, max: 5000, everyMs: 3000 },
      stallSeconds: 12,
      timeoutMs: 10_000,
      out,
    });
    figures.overload = { a: { ...r.a, samples: r.a.samples.filter((_, i) => i % 10 === 0) }, b: r.b, c: r.c };
    if (o.only.every((section) => section === 'scoring' || section === 'overload')) return record();
  }
  if (o.only.includes('stuffing')) {
    figures.stuffing = await runStuffing({
      users: o['stuff-users'],
      days: o['stuff-days'],
      seed: 1,
      hogs: DEFAULT_STUFFING_HOGS,
      concurrency: 24,
      out,
    });
    if (o.only.every((section) => section === 'scoring' || section === 'overload' || section === 'stuffing'))
      return record();
  }
  if (o.soak === 0 && o.only.every((section) => section === 'scoring')) return record();
  // The server runs with the flags `npm start` gives Rampart (package.json), plus profiling.
  const execArgv = [...SERVER_NODE_FLAGS, ...(o.prof ? ['--cpu-prof', `--cpu-prof-dir=${o.prof}`] : [])];
  const server = new Server(
    fork(__filename, ['--serve'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], execArgv }),
  );
  const ready = await server.next();
  if (ready.type !== 'ready') throw new Error(`unexpected ${ready.type}`);
  const traffic = new Traffic(o.users);
  const closed = callers(ready, o.concurrency, traffic);
  // The open loop's callers are independent clients: a connection for every call in flight, so
  // that past what Rampart serves calls wait in Rampart (which sees them, sheds and answers 503),
  // not in a pool of this generator's (where they queued unseen and their wait counted as latency).
  const open = callers(ready, Infinity, traffic);
  try {
    out(
      `rampart bench: node ${process.version}, ${ready.database}; Rampart and the load generator in separate processes on this machine; ${o.users} users\n`,
    );
    // Warm up every door (JIT, connections, caches of the most active users).
    for (const door of o.doors) await closedLoop(2000, o.concurrency, closed.doors[door]);
    await server.ask({ type: 'stats', resetPeak: true }, 'stats');

    if (o.only.includes('closed')) {
      const results: Partial<Record<Door, Result[]>> = {};
      const doors = o.doors;
      for (let r = 0; r < o.rounds; r++) {
        // Alternate the order so that no door always runs last (on a larger database).
        for (const door of r % 2 === 0 ? doors : [...doors].reverse()) {
          await server.settle();
          (results[door] ??= []).push(
            await closedLoop(o.count, o.concurrency, closed.doors[door], server.cpu),
          );
        }
      }
      const s = Object.fromEntries(Object.entries(results).map(([d, rs]) => [d, summarize(rs)])) as Partial<
        Record<Door, Summary>
      >;
      figures.closed = { concurrency: o.concurrency, doors: s };
      const ratio = (row: Summary, to: Summary | undefined, name: string) =>
        to ? `${x(row.throughput, to.throughput)} of ${name}` : '';
      out(
        table(
          `Closed loop, concurrency ${o.concurrency}: ${o.rounds} round(s) of ${o.count} calls each`,
          doors.map((d) => [LABEL[d], s[d] as Summary]),
          (_label, row) =>
            [ratio(row, s.ceiling, 'ceiling'), ratio(row, s.door, 'door')].filter(Boolean).join(', '),
        ),
      );
      if (s.rest && s.unary && s.stream)
        out(
          `  gRPC/REST p50: unary ${x(s.unary.p50, s.rest.p50)}, VerdictStream ${x(s.stream.p50, s.rest.p50)}\n`,
        );
    }

    if (o.only.includes('open')) {
      for (const rate of o.rates) {
        const rows: [string, Summary][] = [];
        const doors: Partial<Record<Door, Summary>> = {};
        for (const door of o.doors.filter((d) => d === 'rest' || d === 'unary' || d === 'stream')) {
          await server.settle();
          rows.push([
            LABEL[door],
            (doors[door] = summarize([await openLoop(rate, o.seconds, open.doors[door], server.cpu)])),
          ]);
        }
        (figures.open ??= []).push({ rate, seconds: o.seconds, doors });
        out(
          table(
            `Open loop, ${rate} calls/s offered for ${o.seconds} s each (latency from when each call was due)`,
            rows,
          ),
        );
      }
    }

    if (o.only.includes('track')) {
      await server.settle();
      // Failed logins stored before this section (the seeded history holds some): not its own.
      const { stored: storedBefore } = await server.ask({ type: 'count', event: '$login.failed' }, 'count');
      const streams = o.concurrency;
      const perStream = Math.floor(o['track-count'] / streams);
      const rest = summarize([await closedLoop(o['track-count'], o.concurrency, closed.track, server.cpu)]);
      const cpu0 = await server.cpu();
      const t0 = performance.now();
      const accepted = (
        await Promise.all(
          Array.from({ length: streams }, () => closed.trackStream(perStream, () => toTrack(traffic.next()))),
        )
      ).reduce((a, b) => a + b, 0);
      const seconds = (performance.now() - t0) / 1000;
      const cpu1 = await server.cpu();
      const cpu = cpu1.server - cpu0.server;
      const dbCpu = cpu1.db - cpu0.db;
      out(
        `\nFeedback: $login.failed events (REST: one POST /v1/track per event at concurrency ${o.concurrency}; gRPC: ${streams} TrackStreams of ${perStream})\n`,
      );
      out(
        `  REST /v1/track        ${String(rest.count - rest.errors).padStart(7)} accepted ${rest.errors} errors ${rest.throughput.toFixed(0).padStart(7)} events/s  p50 ${rest.p50.toFixed(2)} ms  p99 ${rest.p99.toFixed(2)} ms  ${rest.serverCpu.toFixed(0)} µs/event (db ${rest.dbCpu.toFixed(0)})\n`,
      );
      out(
        `  gRPC TrackStream      ${String(accepted).padStart(7)} accepted          ${(accepted / seconds).toFixed(0).padStart(7)} events/s                           ${(cpu / accepted).toFixed(0)} µs/event (db ${(dbCpu / accepted).toFixed(0)})\n`,
      );
      const settleStart = performance.now();
      await server.settle();
      const drained = (performance.now() - settleStart) / 1000;
      const { stored: storedAfter } = await server.ask({ type: 'count', event: '$login.failed' }, 'count');
      const stored = storedAfter - storedBefore;
      const acked = rest.count - rest.errors + accepted;
      figures.track = {
        rest,
        stream: {
          accepted,
          perSecond: accepted / seconds,
          serverCpu: cpu / accepted,
          dbCpu: dbCpu / accepted,
        },
        stored,
        acknowledged: acked,
      };
      out(
        `  stored once the queues drained (${drained.toFixed(1)} s after the last answer): ${stored} of ${acked} accepted${stored === acked ? ' (all)' : ` (MISSING ${acked - stored})`}\n`,
      );
    }

    if (o.only.includes('history')) {
      const people = { few: { id: 'history-10', n: 10 }, many: { id: `history-${o.history}`, n: o.history } };
      const login = (id: string): Login => ({
        userId: id,
        email: `${id}@example.com`,
        ip: '81.2.69.142',
        fingerprint: `${id}-fp`,
        headers: {
          'User-Agent':
            'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Safari/605.1.15',
          Accept: 'text/html',
          'Accept-Language': 'en-GB,en;q=0.9',
          'Accept-Encoding': 'gzip',
        },
      });
      // History imported as it happened: events spread over the last 60 days (event time), in
      // chunks that wait for the server's queues to drain, as an importer that respects
      // backpressure would (one stream as fast as it can go outruns the embedded database's
      // writes after a few thousand events, and is then refused with UNAVAILABLE, which the
      // client resumes after a wait: the history's timing would include those waits).
      const now = Date.now();
      const CHUNK = 1_000;
      for (const p of Object.values(people)) {
        let i = 0;
        for (let sent = 0; sent < p.n; sent += CHUNK) {
          await closed.trackStream(Math.min(CHUNK, p.n - sent), () => ({
            ...toTrack(login(p.id)),
            event: '$login.succeeded',
            timestamp: timestampOf(now - 60 * 86_400_000 + Math.floor(((i++ + 0.5) / p.n) * 60 * 86_400_000)),
          }));
          await server.settle();
        }
      }
      await server.settle();
      const measure = async (call: (id: string) => Promise<boolean>) => {
        const r: Record<'few' | 'many', Result[]> = { few: [], many: [] };
        for (let round = 0; round < 4; round++) {
          for (const k of round % 2 === 0 ? (['few', 'many'] as const) : (['many', 'few'] as const))
            r[k].push(await closedLoop(500, 4, () => call(people[k].id)));
        }
        return { few: summarize(r.few), many: summarize(r.many) };
      };
      const risk = await measure((id) => closed.riskFor(login(id)));
      const devices = await measure((id) => closed.devicesOf(id));
      figures.history = { events: { few: people.few.n, many: people.many.n }, risk, devices };
      out(
        table(`Latency against a user's history (concurrency 4, 2,000 calls each)`, [
          [`risk, ${people.few.n} events`, risk.few],
          [`risk, ${people.many.n} events`, risk.many],
          [`devices, ${people.few.n} events`, devices.few],
          [`devices, ${people.many.n} events`, devices.many],
        ]),
      );
      out(
        `  ${people.many.n} ÷ ${people.few.n} events: risk p50 ${x(risk.many.p50, risk.few.p50)}, p99 ${x(risk.many.p99, risk.few.p99)}; devices p50 ${x(devices.many.p50, devices.few.p50)}\n`,
      );
    }

    if (o.only.includes('analyst')) {
      // The bulkhead: scoring beside the heaviest analysis the GraphQL limits allow (every
      // analysis over all of the environment's events), run back to back by two dashboards.
      const heaviest =
        '{ analytics { total actions { count } signals { signal count } top(dimension: IP) { distinct } users: top(dimension: USER) { distinct } timeSeries(bucket: DAY) { scanned } } }';
      await server.settle();
      const alone = summarize([await closedLoop(3000, 4, closed.doors.rest, server.cpu)]);
      let running = true;
      const analyses = { answered: 0, refusedOrStopped: 0 };
      const dashboards = Array.from({ length: 2 }, async () => {
        while (running) {
          if (await closed.graphql(heaviest)) analyses.answered++;
          else analyses.refusedOrStopped++;
        }
      });
      const beside = summarize([await closedLoop(3000, 4, closed.doors.rest, server.cpu)]);
      running = false;
      await Promise.all(dashboards);
      figures.analyst = { alone, beside, answered: analyses.answered, refused: analyses.refusedOrStopped };
      out(
        table(
          'Scoring beside the heaviest allowed analysis (REST /v1/risk, concurrency 4, 3,000 calls each)',
          [
            ['alone', alone],
            ['beside two dashboards', beside],
          ],
        ),
      );
      out(
        `  beside ÷ alone: p50 ${x(beside.p50, alone.p50)}, p99 ${x(beside.p99, alone.p99)}; analyses meanwhile: ${analyses.answered} answered (with their data, or stopped at their time limit), ${analyses.refusedOrStopped} refused\n`,
      );
    }

    if (o.only.includes('outage')) {
      if (ready.dbPid === null)
        out('\nA hung database: skipped (MONGODB_URI: no embedded database to stop)\n');
      else out(await hungDatabase(ready.dbPid, closed.get));
    }

    if (o.only.includes('imports')) {
      await server.settle();
      figures.imports = await benchListImport(
        ready,
        { rows: o['import-rows'] },
        { out, risk: closed.doors.rest, cpu: server.cpu, settle: server.settle },
      );
    }

    if (o.only.includes('dashboards')) {
      await benchDashboards(
        ready,
        { events: o['dash-events'], users: o['dash-users'], reps: o['dash-reps'] },
        {
          out,
          memory: () => server.ask({ type: 'memory' }, 'memory'),
          risk: closed.doors.rest,
          settle: server.settle,
        },
      );
    }

    if (o.only.includes('webhooks')) {
      await server.settle();
      figures.webhooks = await benchWebhooks(
        ready,
        { history: o['wh-history'], burst: o['wh-burst'], rate: o['wh-rate'], seconds: o['wh-seconds'] },
        { out, cpu: server.cpu, settle: server.settle },
      );
    }

    if (o.soak > 0) await soak(o.soak, o['soak-rate'], server, open, traffic, out);

    const stats = await server.ask({ type: 'stats', liveHeap: true }, 'stats');
    figures.memory = {
      peakRss: stats.peakRss,
      rss: stats.rss,
      liveHeap: stats.liveHeap,
      peakDbRss: stats.peakDbRss,
      dbRss: stats.dbRss,
    };
    out(
      `\nMemory: Rampart peak ${megabytes(stats.peakRss)} under load, ${megabytes(stats.rss)} now (live heap after a full collection ${megabytes(stats.liveHeap)}); the embedded database peak ${megabytes(stats.peakDbRss)}, ${megabytes(stats.dbRss)} now\n`,
    );
  } finally {
    closed.close();
    open.close();
    const exited = new Promise((resolve) => server.child.once('exit', resolve));
    server.child.send({ type: 'stop' } satisfies ToServer);
    await exited;
    if (o.prof) out(`\nServer CPU profile in ${o.prof} (open it in Chrome DevTools or speedscope)\n`);
  }
  record();
}

entry('bench', main);
