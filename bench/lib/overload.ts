/**
 * Overload: Rampart as `npm start` runs it (scripts/start.js, its embedded database), on a
 * machine whose cores are taken by CPU hogs (busy loops at the same priority: a noisy neighbour,
 * or a traffic spike's own work), offered an open-loop mix of REST verdicts and track events at a
 * rate that ramps up until Rampart refuses a tenth of it (then held there: more than it serves). Used by
 * `npm run bench -- --only overload` (15 minutes) and by test/integration/overload.test.ts
 * (3 minutes), which asserts what this measures:
 *
 *   A. overload: every answer is 2xx or 503 with Retry-After (never a 500); the database is
 *      stopped (SIGSTOP) for a while in the middle, and /readyz must say 503 while writes stall;
 *      Rampart's memory and the SQLite WAL are sampled all along; once the load stops, how long
 *      until a verdict answers and /readyz says 200 again; then every acknowledged event, verdicts
 *      and track events alike, must be in the database;
 *   B. SIGKILL under the same load: every acknowledged track event must be in the database, and
 *      the verdict events lost must all have been acknowledged within the last moments before the
 *      kill (the bound on unwritten changes, a second);
 *   C. SIGTERM under the same load: how long the process takes to exit, and every acknowledged
 *      event, verdicts included, must be in the database.
 *
 * Every call carries a unique `properties.seq`, which is how acknowledged events are found in the
 * database afterwards (read straight from its files, with a FerretDB of its own after the kill).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { MongoClient } from 'mongodb';
import { startEmbedded } from '../../src/store/embedded';
import { rssOf } from './proc';

export interface OverloadOptions {
  /** The project's root (scripts/start.js, .data/). */
  root: string;
  /** Seconds of phase A's load. */
  overloadSeconds: number;
  /** Seconds of load before the SIGKILL (B) and before the SIGTERM (C). */
  killSeconds: number;
  termSeconds: number;
  /** Busy-loop processes started beside Rampart (default: cores + 1). */
  hogs: number;
  /** Offered calls per second: from `start`, `step` more every `everyMs` until a tenth of a step's answers are refusals, at most `max`. */
  rate: { start: number; step: number; max: number; everyMs: number };
  /** Seconds the database is stopped (SIGSTOP) in the middle of phase A (0: not). */
  stallSeconds: number;
  /** A call's client-side timeout. */
  timeoutMs: number;
  /** Extra settings for Rampart (RAMPART_...). */
  settings?: Record<string, string>;
  out: (line: string) => void;
}

/** How the calls of one phase were answered. */
export interface Answers {
  offered: number;
  /** HTTP status (or `timeout`, `error`) → count. */
  byStatus: Record<string, number>;
  /** 503s without a Retry-After header. */
  refusedWithoutRetryAfter: number;
  acked: { risk: number; track: number };
  /** The held rate (calls/s offered once refusals came). */
  rate: number;
}

export interface Sample {
  t: number;
  ready: number | 'timeout';
  reason: string | null;
  rss: number | null;
  dbRss: number | null;
  walBytes: number;
  oldestUnwrittenS: number | null;
  stuckS: number | null;
  backlog: number | null;
  /** Verdicts computing, waiting for a turn, and the bound (core/work-limiter.ts). */
  verdicts: { inFlight: number | null; waiting: number | null; limit: number | null };
  /** Calls the load generator has sent and not yet had answered. */
  pending: number;
}

export interface OverloadReport {
  a: Answers & {
    samples: Sample[];
    /** Samples of /readyz taken while the database was stopped, past the write stall bound. */
    readyDuringStall: (number | 'timeout')[];
    recoverySeconds: number | null;
    lost: { risk: number; track: number };
    maxRss: number;
    maxDbRss: number;
    maxWalBytes: number;
  };
  b: Answers & {
    lost: { risk: number; track: number };
    /** Seconds between the first lost verdict's acknowledgement and the kill (0: none lost). */
    lossWindowSeconds: number;
    /** Seconds between the first and the last lost verdict's acknowledgements. */
    lossSpanSeconds: number;
  };
  c: Answers & { exitSeconds: number | null; exitCode: number | null; lost: { risk: number; track: number } };
}

const UA =
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36';

/** Rampart started as `npm start` starts it, on `dataDir` (kept when it ends). */
interface Server {
  child: ChildProcess;
  url: string;
  output(): string;
  exited: Promise<number | null>;
}

export async function startServer(
  root: string,
  dataDir: string,
  secret: string,
  settings: Record<string, string>,
  errors: (line: string) => void = () => undefined,
): Promise<Server> {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const key of Object.keys(env))
    if (key.startsWith('RAMPART_') || key === 'MONGODB_URI') delete env[key];
  Object.assign(env, {
    RAMPART_DATA_DIR: dataDir,
    RAMPART_HTTP_PORT: '0',
    RAMPART_GRPC_PORT: '0',
    RAMPART_API_SECRET: secret,
    RAMPART_MASTER_KEY: 'a'.repeat(64),
    RAMPART_RATE_LIMIT: '1000000',
    // Info: the line that says where it listens (no line per request at this level).
    RAMPART_LOG_LEVEL: 'info',
    ...settings,
  });
  const child = spawn(process.execPath, [path.join(root, 'scripts', 'start.js')], {
    cwd: root,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // At the priority every process here started with, whatever the load generator's own (below).
  atNormalPriority(child);
  let out = '';
  let partial = '';
  const keep = (d: Buffer) => {
    const text = d.toString();
    // Rampart's errors (pino level 50 and up) are shown as they come: they say why it refuses.
    const lines = (partial + text).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) if (/"level":(5|6)0/.test(line)) errors(`  [rampart] ${line.slice(0, 400)}\n`);
    out += text;
    // Only the latest lines matter (errors at the end); a long run must not hold them all.
    if (out.length > 1_000_000) out = out.slice(-500_000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const deadline = Date.now() + 240_000;
  for (;;) {
    const line = out.split('\n').find((l) => l.includes('"rampart listening"'));
    if (line) return { child, url: (JSON.parse(line) as { http: string }).http, output: () => out, exited };
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`rampart exited before listening:\n${out.slice(-4000)}`);
    if (Date.now() > deadline) throw new Error(`rampart did not listen within 240 s:\n${out.slice(-4000)}`);
    await sleep(50);
  }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** The embedded database's process and address, as the running Rampart recorded them. */
function embeddedInfo(dataDir: string): { uri: string; ferretdbPid: number | null } {
  const info = JSON.parse(readFileSync(path.join(dataDir, 'embedded.json'), 'utf8')) as {
    uri: string;
    ferretdbPid: number | null;
  };
  return info;
}

/** The SQLite write-ahead logs' size (bytes). */
export function walBytes(dataDir: string): number {
  const dir = path.join(dataDir, 'ferretdb');
  let total = 0;
  try {
    for (const name of readdirSync(dir))
      if (name.endsWith('-wal')) total += statSync(path.join(dir, name)).size;
  } catch {
    // not created yet
  }
  return total;
}

/** One HTTP call with a client-side timeout: its status (or timeout/error) and its Retry-After. */
function request(
  agent: http.Agent,
  url: URL,
  method: string,
  headers: Record<string, string>,
  body: string | null,
  timeoutMs: number,
): Promise<{ status: number | 'timeout' | 'error'; retryAfter: string | null; text: string }> {
  return new Promise((resolve) => {
    let done = false;
    const finish = (r: { status: number | 'timeout' | 'error'; retryAfter: string | null; text: string }) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve(r);
    };
    const req = http.request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method,
        agent,
        headers: body === null ? headers : { ...headers, 'content-length': String(Buffer.byteLength(body)) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          finish({
            status: res.statusCode ?? 0,
            retryAfter: (res.headers['retry-after'] as string | undefined) ?? null,
            text: Buffer.concat(chunks).toString('utf8'),
          }),
        );
        res.on('error', () => finish({ status: 'error', retryAfter: null, text: '' }));
      },
    );
    const timer = setTimeout(() => {
      req.destroy();
      finish({ status: 'timeout', retryAfter: null, text: '' });
    }, timeoutMs);
    req.on('error', () => finish({ status: 'error', retryAfter: null, text: '' }));
    req.end(body ?? undefined);
  });
}

/** An open-loop load of REST risk and track calls, each acknowledged one remembered by its seq. */
export class Load {
  /**
   * As many connections as calls in flight, as many independent clients would open: a bounded
   * pool queues calls in this process instead, where Rampart cannot see them (it answers the few
   * it is sent in time and refuses nothing) and where they time out before they are sent.
   */
  private readonly agent = new http.Agent({ keepAlive: true, maxSockets: Infinity });
  private readonly auth: string;
  private n = 0;
  private stopped = false;
  private readonly inflight = new Set<Promise<void>>();
  readonly answers: Answers;
  /** Acknowledged calls: seq → [kind, when (performance.now())]. */
  readonly acked = new Map<string, { kind: 'risk' | 'track'; at: number }>();
  /** 503s, and answers of any kind, counted since the ramp last looked. */
  private refusedSinceLook = 0;
  private answeredSinceLook = 0;

  constructor(
    private readonly url: string,
    secret: string,
    private readonly tag: string,
    private readonly timeoutMs: number,
    rate: number,
  ) {
    this.auth = `Basic ${Buffer.from(`:${secret}`).toString('base64')}`;
    this.answers = {
      offered: 0,
      byStatus: {},
      refusedWithoutRetryAfter: 0,
      acked: { risk: 0, track: 0 },
      rate,
    };
  }

  private call(): void {
    const n = this.n++;
    const seq = `${this.tag}-${n}`;
    const kind: 'risk' | 'track' = n % 2 === 0 ? 'risk' : 'track';
    const user = `ov-${n % 3000}`;
    const ip = `81.${2 + (n % 40)}.${(n >> 3) % 250}.${1 + (n % 250)}`;
    const context = { ip, headers: { 'User-Agent': UA, 'Accept-Language': 'en-US,en;q=0.9' } };
    const body =
      kind === 'risk'
        ? {
            event: '$login',
            user: { id: user, email: `${user}@example.com` },
            request_token: `ov-device-${n % 5000}`,
            context,
            properties: { seq },
          }
        : { event: '$login.failed', user_id: user, context, properties: { seq } };
    this.answers.offered++;
    const p = request(
      this.agent,
      new URL(`/v1/${kind}`, this.url),
      'POST',
      { authorization: this.auth, 'content-type': 'application/json' },
      JSON.stringify(body),
      this.timeoutMs,
    ).then((r) => {
      const key = String(r.status);
      this.answers.byStatus[key] = (this.answers.byStatus[key] ?? 0) + 1;
      this.answeredSinceLook++;
      if (r.status === 201 || r.status === 204) {
        this.acked.set(seq, { kind, at: performance.now() });
        this.answers.acked[kind]++;
      }
      if (r.status === 503) {
        this.refusedSinceLook++;
        if (r.retryAfter === null) this.answers.refusedWithoutRetryAfter++;
      }
    });
    this.inflight.add(p);
    void p.finally(() => this.inflight.delete(p));
  }

  /** Offer `rate()` calls per second until `seconds` have passed (or stop()); `ramp` may raise the rate. */
  async run(seconds: number, ramp: OverloadOptions['rate'] | null): Promise<void> {
    const started = performance.now();
    let last = started;
    let owed = 0;
    let lastLook = started;
    let holding = ramp === null;
    while (!this.stopped && performance.now() - started < seconds * 1000) {
      await sleep(10);
      const now = performance.now();
      owed += (this.answers.rate * (now - last)) / 1000;
      last = now;
      for (; owed >= 1; owed--) this.call();
      if (ramp && now - lastLook >= ramp.everyMs) {
        lastLook = now;
        // Held once a tenth of a step's answers are refusals: more than it serves, not a refusal
        // or two of a moment (the start's own work, a pause).
        if (this.refusedSinceLook >= Math.max(1, this.answeredSinceLook / 10)) holding = true;
        else if (!holding) this.answers.rate = Math.min(ramp.max, this.answers.rate + ramp.step);
        this.refusedSinceLook = 0;
        this.answeredSinceLook = 0;
      }
    }
  }

  stop(): void {
    this.stopped = true;
  }

  /** Calls sent and not yet answered. */
  get pending(): number {
    return this.inflight.size;
  }

  /** Wait for the calls in flight to be answered (or time out). */
  async settle(): Promise<void> {
    while (this.inflight.size > 0) await Promise.allSettled([...this.inflight]);
  }

  close(): void {
    this.agent.destroy();
  }
}

/** Busy loops, one process each: they take the cores at Rampart's own priority. */
/** The scheduling priority (nice value) this process started with. */
const NORMAL_PRIORITY = os.getPriority();

function atNormalPriority(child: ChildProcess): void {
  try {
    if (child.pid !== undefined) os.setPriority(child.pid, NORMAL_PRIORITY);
  } catch {
    // Not permitted: it runs at the generator's priority, which was then not raised either.
  }
}

/**
 * The load generator stands for clients on other machines: it runs ahead of Rampart, its
 * database and the hogs (nice 10 below them, where the system allows it), so that what is
 * measured is how Rampart answers, not how late a starved generator reads the answers. Returns
 * what puts the priority back.
 */
export function prioritiseGenerator(): () => void {
  try {
    os.setPriority(Math.max(-20, NORMAL_PRIORITY - 10));
  } catch {
    return () => undefined;
  }
  return () => {
    try {
      os.setPriority(NORMAL_PRIORITY);
    } catch {
      // Lowering it back is always permitted; nothing to do otherwise.
    }
  };
}

export function startHogs(count: number): ChildProcess[] {
  // Each loop checks now and then that whoever started it is still there, and ends when it is
  // not: a run killed before its cleanup must not leave busy loops behind to skew the next one.
  const loop = `const parent = ${process.pid}; for (let i = 1; ; i++) if ((i & 0xffffff) === 0) { try { process.kill(parent, 0); } catch { process.exit(0); } }`;
  return Array.from({ length: count }, () => {
    const hog = spawn(process.execPath, ['-e', loop], { stdio: 'ignore' });
    atNormalPriority(hog);
    return hog;
  });
}

/** The seqs of the events stored in the database (read straight from it). */
async function storedSeqs(uri: string, dbName: string): Promise<Set<string>> {
  const client = new MongoClient(uri, { serverSelectionTimeoutMS: 30_000, socketTimeoutMS: 600_000 });
  try {
    await client.connect();
    const seqs = new Set<string>();
    const cursor = client
      .db(dbName)
      .collection<{ properties?: unknown }>('events')
      .find({}, { projection: { properties: 1 } });
    for await (const e of cursor) {
      const p =
        typeof e.properties === 'string'
          ? (JSON.parse(e.properties) as { seq?: unknown })
          : (e.properties as { seq?: unknown } | undefined);
      if (typeof p?.seq === 'string') seqs.add(p.seq);
    }
    return seqs;
  } finally {
    await client.close();
  }
}

function lostOf(load: Load, stored: Set<string>): { risk: number; track: number; verdicts: number[] } {
  const lost = { risk: 0, track: 0, verdicts: [] as number[] };
  for (const [seq, { kind, at }] of load.acked) {
    if (stored.has(seq)) continue;
    lost[kind]++;
    if (kind === 'risk') lost.verdicts.push(at);
  }
  return lost;
}

/** The metrics and /readyz of the running server, and the memory and WAL of it and its database. */
async function sample(
  server: Server,
  dataDir: string,
  t0: number,
  agent: http.Agent,
  pending = 0,
): Promise<Sample> {
  const ready = await request(agent, new URL('/readyz', server.url), 'GET', {}, null, 5_000);
  const metrics = await request(agent, new URL('/metrics', server.url), 'GET', {}, null, 5_000);
  const metric = (name: string): number | null => {
    const m = new RegExp(`^${name} ([0-9.e+-]+)$`, 'm').exec(metrics.text);
    return m ? Number(m[1]) : null;
  };
  let reason: string | null = null;
  try {
    reason = (JSON.parse(ready.text) as { reason?: string }).reason ?? null;
  } catch {
    reason = null;
  }
  const dbPid = embeddedInfo(dataDir).ferretdbPid;
  return {
    t: (performance.now() - t0) / 1000,
    ready: ready.status === 'error' ? 'timeout' : ready.status,
    reason,
    rss: server.child.pid ? rssOf(server.child.pid) : null,
    dbRss: dbPid ? rssOf(dbPid) : null,
    walBytes: walBytes(dataDir),
    oldestUnwrittenS: metric('rampart_state_oldest_unwritten_seconds'),
    stuckS: metric('rampart_state_writes_stuck_seconds'),
    backlog: metric('rampart_state_write_backlog'),
    verdicts: {
      inFlight: metric('rampart_verdicts_in_flight'),
      waiting: metric('rampart_verdicts_waiting'),
      limit: metric('rampart_verdict_concurrency_limit'),
    },
    pending,
  };
}

const MB = 1024 * 1024;

export async function runOverload(o: OverloadOptions): Promise<OverloadReport> {
  const dataRoot = path.join(o.root, '.data');
  mkdirSync(dataRoot, { recursive: true });
  const dataDir = path.join(dataRoot, `overload-${process.pid}-${randomBytes(3).toString('hex')}`);
  const secret = `sk_overload_${randomBytes(12).toString('hex')}`;
  const dbName = 'rampart';
  const settings = { RAMPART_DB_NAME: dbName, ...o.settings };
  const hogs: ChildProcess[] = [];
  let server: Server | null = null;
  const probe = new http.Agent({ keepAlive: true, maxSockets: 2 });
  const restorePriority = prioritiseGenerator();
  try {
    server = await startServer(o.root, dataDir, secret, settings, o.out);
    o.out(
      `overload: Rampart at ${server.url}; ${o.hogs} CPU hogs; offered rate from ${o.rate.start}/s, +${o.rate.step}/s every ${o.rate.everyMs / 1000} s until a tenth is refused (at most ${o.rate.max}/s)\n`,
    );
    hogs.push(...startHogs(o.hogs));

    // A. Overload, with the database stopped for a while in the middle.
    const t0 = performance.now();
    const a = new Load(server.url, secret, 'a', o.timeoutMs, o.rate.start);
    const samples: Sample[] = [];
    const readyDuringStall: (number | 'timeout')[] = [];
    let stalling = false;
    let stallFrom = 0;
    let sampling = true;
    const current = server;
    const sampler = (async () => {
      while (sampling) {
        const s = await sample(current, dataDir, t0, probe, a.pending);
        samples.push(s);
        // Writes stall once the database has not written for RAMPART_WRITE_STALL_MS (5 s): from
        // then on, plus a sample's slack, /readyz must say so.
        if (stalling && performance.now() - stallFrom > 7_000) readyDuringStall.push(s.ready);
        if (samples.length % 3 === 0)
          o.out(
            `  ${s.t.toFixed(0)} s: offered ${a.answers.rate}/s, ${JSON.stringify(a.answers.byStatus)}, /readyz ${s.ready}${s.reason ? ` (${s.reason})` : ''}, rss ${((s.rss ?? 0) / MB).toFixed(0)} MB, db ${((s.dbRss ?? 0) / MB).toFixed(0)} MB, wal ${(s.walBytes / MB).toFixed(1)} MB, oldest unwritten ${s.oldestUnwrittenS ?? '?'} s, verdicts ${s.verdicts.inFlight ?? '?'} running / ${s.verdicts.waiting ?? '?'} waiting / bound ${s.verdicts.limit ?? '?'}, ${s.pending} calls pending\n`,
          );
        await sleep(1000);
      }
    })();
    const stall = (async () => {
      if (o.stallSeconds <= 0) return;
      await sleep((o.overloadSeconds / 2) * 1000);
      const pid = embeddedInfo(dataDir).ferretdbPid;
      if (!pid) return;
      o.out(`  the database stops (SIGSTOP) for ${o.stallSeconds} s\n`);
      stallFrom = performance.now();
      stalling = true;
      process.kill(pid, 'SIGSTOP');
      await sleep(o.stallSeconds * 1000);
      stalling = false;
      process.kill(pid, 'SIGCONT');
      o.out('  the database resumes (SIGCONT)\n');
    })();
    await a.run(o.overloadSeconds, o.rate);
    await stall;
    const loadStopped = performance.now();
    a.stop();
    // Recovery: a verdict answered and /readyz 200, with the hogs still running.
    let recoverySeconds: number | null = null;
    const recoveryAgent = new http.Agent({ keepAlive: true, maxSockets: 4 });
    const auth = `Basic ${Buffer.from(`:${secret}`).toString('base64')}`;
    for (let i = 0; performance.now() - loadStopped < 120_000; i++) {
      const body = JSON.stringify({
        event: '$login',
        user: { id: `ov-recovery-${i}` },
        context: { ip: '81.2.69.142', headers: { 'User-Agent': UA } },
      });
      const [verdict, ready] = await Promise.all([
        request(
          recoveryAgent,
          new URL('/v1/risk', server.url),
          'POST',
          { authorization: auth, 'content-type': 'application/json' },
          body,
          5_000,
        ),
        request(recoveryAgent, new URL('/readyz', server.url), 'GET', {}, null, 5_000),
      ]);
      if (verdict.status === 201 && ready.status === 200) {
        recoverySeconds = (performance.now() - loadStopped) / 1000;
        break;
      }
      await sleep(250);
    }
    recoveryAgent.destroy();
    await a.settle();
    sampling = false;
    await sampler;
    // Everything acknowledged is written once the writes have caught up.
    const info = embeddedInfo(dataDir);
    for (let i = 0; i < 600; i++) {
      const s = await sample(server, dataDir, t0, probe);
      if (s.oldestUnwrittenS === 0 && s.stuckS === 0) break;
      await sleep(200);
    }
    const storedA = await storedSeqs(info.uri, dbName);
    const lostA = lostOf(a, storedA);
    a.close();
    const maxOf = (pick: (s: Sample) => number | null) => Math.max(0, ...samples.map((s) => pick(s) ?? 0));
    const reportA = {
      ...a.answers,
      samples,
      readyDuringStall,
      recoverySeconds,
      lost: { risk: lostA.risk, track: lostA.track },
      maxRss: maxOf((s) => s.rss),
      maxDbRss: maxOf((s) => s.dbRss),
      maxWalBytes: maxOf((s) => s.walBytes),
    };
    o.out(
      `A. overload ${o.overloadSeconds} s at up to ${a.answers.rate}/s offered: ${a.answers.offered} calls, ${JSON.stringify(a.answers.byStatus)}, 503 without Retry-After ${a.answers.refusedWithoutRetryAfter}; acknowledged ${a.answers.acked.risk} verdicts and ${a.answers.acked.track} track events, lost ${lostA.risk} and ${lostA.track}; /readyz during the stall ${JSON.stringify(countOf(readyDuringStall))}; recovered ${recoverySeconds === null ? 'not within 120 s' : `${recoverySeconds.toFixed(1)} s`} after the load stopped; peak Rampart ${(reportA.maxRss / MB).toFixed(0)} MB, FerretDB ${(reportA.maxDbRss / MB).toFixed(0)} MB, WAL ${(reportA.maxWalBytes / MB).toFixed(1)} MB\n`,
    );

    // B. SIGKILL under the same load.
    const b = new Load(server.url, secret, 'b', o.timeoutMs, a.answers.rate);
    await b.run(o.killSeconds, null);
    server.child.kill('SIGKILL');
    const killedAt = performance.now();
    b.stop();
    await server.exited;
    await b.settle();
    b.close();
    // Its FerretDB is left running (an orphan): a database of our own on the same files stops it
    // first, then reads what was written.
    const reopened = await startEmbedded(dataDir, { supervise: false, install: false });
    const storedB = await storedSeqs(reopened.uri, dbName);
    await reopened.stop();
    const lostB = lostOf(b, storedB);
    const first = lostB.verdicts.length ? Math.min(...lostB.verdicts) : killedAt;
    const last = lostB.verdicts.length ? Math.max(...lostB.verdicts) : killedAt;
    const reportB = {
      ...b.answers,
      lost: { risk: lostB.risk, track: lostB.track },
      lossWindowSeconds: (killedAt - first) / 1000,
      lossSpanSeconds: (last - first) / 1000,
    };
    o.out(
      `B. SIGKILL after ${o.killSeconds} s at ${b.answers.rate}/s: ${JSON.stringify(b.answers.byStatus)}; acknowledged ${b.answers.acked.risk} verdicts and ${b.answers.acked.track} track events; lost ${lostB.risk} verdict events (acknowledged in the last ${reportB.lossWindowSeconds.toFixed(2)} s before the kill, over ${reportB.lossSpanSeconds.toFixed(2)} s) and ${lostB.track} track events\n`,
    );

    // C. SIGTERM under the same load (Rampart started again on the same files).
    server = await startServer(o.root, dataDir, secret, settings, o.out);
    const c = new Load(server.url, secret, 'c', o.timeoutMs, a.answers.rate);
    await c.run(o.termSeconds, null);
    server.child.kill('SIGTERM');
    const termAt = performance.now();
    // The calls already sent go on; the listener closes and refuses what comes after.
    const exitCode = await Promise.race([server.exited, sleep(120_000).then(() => 'late' as const)]);
    const exitSeconds = exitCode === 'late' ? null : (performance.now() - termAt) / 1000;
    c.stop();
    await c.settle();
    c.close();
    if (exitCode === 'late') server.child.kill('SIGKILL');
    const again = await startEmbedded(dataDir, { supervise: false, install: false });
    const storedC = await storedSeqs(again.uri, dbName);
    await again.stop();
    const lostC = lostOf(c, storedC);
    const reportC = {
      ...c.answers,
      exitSeconds,
      exitCode: exitCode === 'late' ? null : exitCode,
      lost: { risk: lostC.risk, track: lostC.track },
    };
    o.out(
      `C. SIGTERM after ${o.termSeconds} s at ${c.answers.rate}/s: exited ${exitSeconds === null ? 'not within 120 s' : `after ${exitSeconds.toFixed(1)} s`} (code ${reportC.exitCode}); ${JSON.stringify(c.answers.byStatus)}; acknowledged ${c.answers.acked.risk} verdicts and ${c.answers.acked.track} track events, lost ${lostC.risk} and ${lostC.track}\n`,
    );
    server = null;
    return { a: reportA, b: reportB, c: reportC };
  } catch (err) {
    if (server) o.out(`rampart's last output:\n${server.output().slice(-4000)}\n`);
    throw err;
  } finally {
    restorePriority();
    for (const h of hogs) h.kill('SIGKILL');
    probe.destroy();
    if (server && server.child.exitCode === null && server.child.signalCode === null) {
      server.child.kill('SIGKILL');
      await server.exited;
    }
    // A FerretDB left behind by a killed Rampart is stopped by the next start on these files.
    if (existsSync(dataDir)) {
      const orphan = await startEmbedded(dataDir, { supervise: false, install: false }).catch(() => null);
      await orphan?.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }
}

function countOf(values: readonly (number | string)[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const v of values) out[String(v)] = (out[String(v)] ?? 0) + 1;
  return out;
}
