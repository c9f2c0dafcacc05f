/**
 * The server side of `npm run bench`, in a child process of its own so that its CPU and memory
 * are measured apart from the load generator's: Rampart started exactly as `npm start` starts it
 * (src/app/runtime.ts, on its embedded database unless MONGODB_URI is set), and beside it, in the
 * same process, the two references its figures are divided by:
 *   - the ceiling: a bare Fastify route that parses a JSON body and answers a small JSON object,
 *     so the ratio says what share of the machine's HTTP capacity a verdict keeps;
 *   - the door only: Rampart's REST door over a core whose verdict validates the body as usual
 *     and answers a verdict computed once, so the ratio says what the engine costs.
 * It answers the load generator's questions over the IPC channel (CPU, memory, queues, stored
 * event counts) and samples its own and its database's resident memory all along.
 */
import { fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import path from 'node:path';
import { GCProfiler, getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import Fastify from 'fastify';
import { MongoClient } from 'mongodb';
import { loadConfig } from '../../src/config';
import { createLogger } from '../../src/app/logger';
import { run, type Running } from '../../src/app/runtime';
import { buildRestServer } from '../../src/rest/server';
import { validateEvent } from '../../src/core/events/parse';
import { eventCommand } from '../../src/rest/event-command';
import { embeddedInfoFile, embeddedSqliteDir } from '../../src/store/embedded';
import { cpuOf, rssOf } from './proc';
import type { Services } from '../../src/core/services';

export interface Endpoints {
  secret: string;
  rest: string;
  grpc: string;
  ceiling: string;
  door: string;
  database: string;
  envId: string;
  /** The environment's publishable key (the browser client's collector). */
  publishableKey: string;
  /** The embedded database's process (null on MONGODB_URI). */
  dbPid: number | null;
  /** Where Rampart's database is and its name (bench/dashboards.ts loads documents straight into it). */
  dbUri: string;
  dbName: string;
}

export type ToServer =
  | { type: 'stats'; resetPeak?: boolean; liveHeap?: boolean }
  | { type: 'memory'; liveHeap?: boolean }
  | { type: 'settle' }
  | { type: 'count'; event: string }
  | { type: 'stop' };

/** One memory sample of the server side (bytes; null where there is no such process). */
export interface MemorySample {
  rss: number;
  heapUsed: number;
  /** Buffers and other memory outside V8's heap. */
  external: number;
  liveHeap: number | null;
  /** Documents the state layer holds in its cache. */
  cachedDocuments: number;
  backlog: number;
  dbRss: number | null;
  readerRss: number | null;
  /** The embedded database's write-ahead log now, its largest since the previous sample, and the database file (null on MONGODB_URI). */
  walBytes: number | null;
  peakWalBytes: number | null;
  databaseBytes: number | null;
}
export type FromServer =
  | ({ type: 'ready' } & Endpoints)
  | {
      type: 'stats';
      cpuMicros: number;
      dbCpuMicros: number | null;
      rss: number;
      peakRss: number;
      dbRss: number | null;
      peakDbRss: number | null;
      backlog: number;
      liveHeap: number | null;
      writes: number;
      allocated: number;
      promoted: number;
    }
  | ({ type: 'memory' } & MemorySample)
  | { type: 'settled'; backlog: number }
  | { type: 'count'; stored: number }
  | { type: 'failed'; error: string };

const MB = 1024 * 1024;

/** V8 heap spaces whose objects are young: what a scavenge keeps moves out of them (promotion). */
const YOUNG_SPACES = new Set(['new_space', 'new_large_object_space']);
type HeapSpaces = { spaceName: string; spaceUsedSize: number }[];
const oldBytes = (spaces: HeapSpaces) =>
  spaces.reduce((n, s) => (YOUNG_SPACES.has(s.spaceName) ? n : n + s.spaceUsedSize), 0);

/**
 * Bytes this process allocated on V8's heap so far, and of them the bytes promoted to the old
 * generation by scavenges (objects that outlived a young collection). V8 (on Node 20) has no
 * allocation counter, but its heap in use grows only by allocation and shrinks only by
 * collection: allocated = in use now − in use at the start + what every collection freed, each
 * collection's before and after taken from a GCProfiler (restarted on each reading). A count, not
 * a time: a busy machine does not change it. Buffers' memory outside the heap is not counted.
 */
class AllocationCounter {
  private profiler = new GCProfiler();
  private readonly start = getHeapStatistics().used_heap_size;
  private freed = 0;
  private promoted = 0;
  constructor() {
    this.profiler.start();
  }
  read(): { allocated: number; promoted: number } {
    const used = getHeapStatistics().used_heap_size;
    const { statistics } = this.profiler.stop() as unknown as {
      statistics: {
        gcType: string;
        beforeGC: { heapStatistics: { usedHeapSize: number }; heapSpaceStatistics: HeapSpaces };
        afterGC: { heapStatistics: { usedHeapSize: number }; heapSpaceStatistics: HeapSpaces };
      }[];
    };
    this.profiler = new GCProfiler();
    this.profiler.start();
    for (const gc of statistics) {
      this.freed += gc.beforeGC.heapStatistics.usedHeapSize - gc.afterGC.heapStatistics.usedHeapSize;
      if (gc.gcType === 'Scavenge')
        this.promoted += Math.max(
          0,
          oldBytes(gc.afterGC.heapSpaceStatistics) - oldBytes(gc.beforeGC.heapSpaceStatistics),
        );
    }
    return { allocated: used - this.start + this.freed, promoted: this.promoted };
  }
}

/** The heap still in use after a full collection (what the process holds, not its garbage). */
function liveHeap(): number {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  gc();
  return process.memoryUsage().heapUsed;
}

/**
 * The embedded FerretDB processes this process started (its children named ferretdb): the
 * primary, and the analysts' reader (started with FERRETDB_RELOAD_METADATA_ON_MISS=1).
 */
function databasePids(): { primary: number | null; reader: number | null } {
  const found = { primary: null as number | null, reader: null as number | null };
  try {
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      const status = readFileSync(`/proc/${entry}/status`, 'utf8');
      if (!/^Name:\s+ferretdb$/m.test(status) || !new RegExp(`^PPid:\\s+${process.pid}$`, 'm').test(status))
        continue;
      const environ = readFileSync(`/proc/${entry}/environ`, 'utf8').split('\0');
      if (environ.includes('FERRETDB_RELOAD_METADATA_ON_MISS=1')) found.reader = Number(entry);
      else found.primary = Number(entry);
    }
  } catch {
    // no /proc: memory of the database is not reported
  }
  return found;
}

export async function serve(): Promise<void> {
  const send = (m: FromServer) => process.send?.(m);
  const root = path.resolve(
    __dirname,
    '..',
    '..',
    ...(__dirname.includes(`${path.sep}dist${path.sep}`) ? ['..'] : []),
  );
  const dataDir = path.join(root, '.data', `bench-${process.pid}`);
  const secret = `sk_bench_${randomBytes(16).toString('hex')}`;
  const dbName = `rampart_bench_${randomBytes(4).toString('hex')}`;
  // Rampart's own settings pass through (RAMPART_STATE_CACHE_ENTRIES=…, to measure them); the
  // bench decides where the data goes, the ports, the secret and the rate limit.
  const config = loadConfig({
    ...Object.fromEntries(
      Object.entries(process.env).filter(([k]) => k.startsWith('RAMPART_') || k === 'MONGODB_URI'),
    ),
    RAMPART_DATA_DIR: dataDir,
    RAMPART_DB_NAME: dbName,
    RAMPART_HTTP_PORT: '0',
    RAMPART_GRPC_PORT: '0',
    RAMPART_API_SECRET: secret,
    // The benchmark measures the engine, not the per-environment rate limit (1,000/s by default).
    RAMPART_RATE_LIMIT: '100000000',
    // The load comes from one address here, not from a browser each.
    RAMPART_CLIENT_RATE_LIMIT: '100000000',
    RAMPART_LOG_LEVEL: process.env.RAMPART_LOG_LEVEL ?? 'error',
  });
  const log = createLogger(config.logLevel);
  const running: Running = await run(config, log);
  const allocations = await startAllocationSampling(process.env.RAMPART_BENCH_ALLOC_PROF);
  const allocated = new AllocationCounter();
  const services = running.built.services;
  const principal = await services.environments.authenticate(secret);

  const ceiling = Fastify({ logger: false, bodyLimit: config.bodyLimit });
  ceiling.post('/ceiling', async () => ({ ok: true }));
  await ceiling.listen({ host: '127.0.0.1', port: 0 });

  // Door only: validation as usual, then a verdict the real core computed once.
  const sample = {
    event: '$login',
    user: { id: 'bench-door', email: 'door@example.com' },
    request_token: 'bench-door-fp',
    context: { ip: '81.2.69.142', headers: { 'User-Agent': 'Mozilla/5.0 (Macintosh) Chrome/124.0' } },
  };
  const canned = await services.verdicts.evaluate(principal, 'risk', eventCommand(sample));
  const verdicts = Object.create(services.verdicts) as Services['verdicts'];
  verdicts.evaluate = async (p, endpoint, command) => {
    validateEvent(endpoint, command, { sandbox: p.env.sandbox, now: new Date() });
    return canned;
  };
  const door = await buildRestServer({
    services: { ...services, verdicts },
    log,
    bodyLimit: config.bodyLimit,
    trustProxy: false,
    requireHttps: false,
  });
  await door.listen({ host: '127.0.0.1', port: 0 });

  const uri =
    config.mongoUri ?? (JSON.parse(readFileSync(embeddedInfoFile(dataDir), 'utf8')) as { uri: string }).uri;
  const client = await new MongoClient(uri, { serverSelectionTimeoutMS: 5000 }).connect();
  const db = client.db(dbName);

  const pids = config.mongoUri ? { primary: null, reader: null } : databasePids();
  const dbPid = pids.primary;
  let peak = 0;
  let peakDb = 0;
  // The embedded database's files, read as Rampart's own watcher reads them (its metrics).
  const sqliteFile = config.mongoUri ? null : path.join(embeddedSqliteDir(dataDir), `${dbName}.sqlite`);
  const sizeOf = (file: string | null): number | null => {
    if (!file) return null;
    try {
      return statSync(file).size;
    } catch {
      return 0;
    }
  };
  let peakWal = 0;
  const measure = () => {
    peak = Math.max(peak, process.memoryUsage().rss);
    if (dbPid) peakDb = Math.max(peakDb, rssOf(dbPid) ?? 0);
    peakWal = Math.max(peakWal, sizeOf(sqliteFile && `${sqliteFile}-wal`) ?? 0);
  };
  const sampler = setInterval(measure, 200);
  // Documents the state layer's flushes have written so far (updates and inserts), from the
  // metric GET /metrics exports, so that the bench can print documents written per verdict.
  const documentsWritten = async (): Promise<number> => {
    const metric = running.built.metrics.registry.getSingleMetric('rampart_state_flushed_writes_total');
    return metric ? (await metric.get()).values.reduce((n, v) => n + v.value, 0) : 0;
  };

  process.on('message', (m: ToServer) => {
    void (async () => {
      if (m.type === 'stats') {
        measure();
        const u = process.cpuUsage();
        const heap = allocated.read();
        const dbRss = dbPid ? rssOf(dbPid) : null;
        send({
          type: 'stats',
          cpuMicros: u.user + u.system,
          dbCpuMicros: dbPid ? cpuOf(dbPid) : null,
          rss: process.memoryUsage().rss,
          peakRss: peak,
          dbRss,
          peakDbRss: dbPid ? peakDb : null,
          backlog: running.built.state.backlog,
          liveHeap: m.liveHeap ? liveHeap() : null,
          writes: await documentsWritten(),
          ...heap,
        });
        if (m.resetPeak) {
          peak = 0;
          peakDb = 0;
        }
      } else if (m.type === 'memory') {
        const u = process.memoryUsage();
        // The reader starts with the first analyst query: look again until it is there.
        if (pids.reader === null && !config.mongoUri) pids.reader = databasePids().reader;
        send({
          type: 'memory',
          rss: u.rss,
          heapUsed: u.heapUsed,
          external: u.external,
          liveHeap: m.liveHeap ? liveHeap() : null,
          cachedDocuments: running.built.state.cachedDocuments,
          backlog: running.built.state.backlog,
          dbRss: pids.primary ? rssOf(pids.primary) : null,
          readerRss: pids.reader === null ? null : rssOf(pids.reader),
          walBytes: sizeOf(sqliteFile && `${sqliteFile}-wal`),
          peakWalBytes: sqliteFile ? Math.max(peakWal, sizeOf(`${sqliteFile}-wal`) ?? 0) : null,
          databaseBytes: sizeOf(sqliteFile),
        });
        peakWal = 0;
      } else if (m.type === 'settle') {
        await services.track.drain(false);
        await running.built.state.flush();
        send({ type: 'settled', backlog: running.built.state.backlog });
      } else if (m.type === 'count') {
        send({
          type: 'count',
          stored: await db.collection('events').countDocuments({ envId: principal.env.id, name: m.event }),
        });
      } else if (m.type === 'stop') {
        clearInterval(sampler);
        await allocations?.();
        await ceiling.close();
        await door.close();
        await running.stop();
        // On MONGODB_URI the bench database is dropped; the embedded one goes with its directory.
        if (config.mongoUri) await db.dropDatabase().catch(() => undefined);
        await client.close();
        // RAMPART_BENCH_KEEP_DATA=1 keeps the embedded database's files, to inspect what was stored.
        if (process.env.RAMPART_BENCH_KEEP_DATA !== '1') rmSync(dataDir, { recursive: true, force: true });
        process.exit(0);
      }
    })().catch((err: unknown) =>
      send({ type: 'failed', error: err instanceof Error ? err.message : String(err) }),
    );
  });
  const port = (s: { server: { address(): unknown } }) => (s.server.address() as { port: number }).port;
  send({
    type: 'ready',
    secret,
    rest: running.httpUrl,
    grpc: running.grpcAddress,
    ceiling: `http://127.0.0.1:${port(ceiling)}/ceiling`,
    door: `http://127.0.0.1:${port(door)}`,
    database: config.mongoUri ? 'MONGODB_URI' : 'the embedded FerretDB (SQLite)',
    envId: principal.env.id,
    publishableKey: principal.env.publishableKey,
    dbPid,
    dbUri: uri,
    dbName,
  });
}

export const megabytes = (bytes: number | null) => (bytes === null ? '-' : `${(bytes / MB).toFixed(0)} MB`);

/**
 * A benchmark's entry point: run as `--serve`, this process is the server child; otherwise it is
 * the driver, and `main` runs (exiting non-zero with its stack on failure).
 */
/**
 * Starts `script --serve` (a file that calls `entry`) as a child process with `env`, and waits
 * for its endpoints; `stop` asks it to stop and waits for it to exit.
 */
export async function serveChild(
  script: string,
  env: NodeJS.ProcessEnv,
): Promise<{ ready: Extract<FromServer, { type: 'ready' }>; stop: () => Promise<void> }> {
  const child = fork(script, ['--serve'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], env });
  const ready = await new Promise<FromServer>((resolve, reject) => {
    child.once('message', (m: FromServer) => resolve(m));
    child.once('exit', (code) => reject(new Error(`the server exited (${code})`)));
  });
  if (ready.type !== 'ready')
    throw new Error(ready.type === 'failed' ? ready.error : `unexpected ${ready.type}`);
  const stop = async () => {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.send({ type: 'stop' } satisfies ToServer);
    await exited;
  };
  return { ready, stop };
}

export function entry(name: string, main: () => Promise<void>): void {
  if (process.argv[2] === '--serve') {
    serve().catch((err: unknown) => {
      process.send?.({
        type: 'failed',
        error: err instanceof Error ? err.message : String(err),
      } satisfies FromServer);
      process.exit(1);
    });
  } else {
    main().catch((err: unknown) => {
      process.stderr.write(`${name} failed: ${err instanceof Error ? err.stack : String(err)}\n`);
      process.exit(1);
    });
  }
}

/**
 * With RAMPART_BENCH_ALLOC_PROF=<file>, samples every allocation of the server, collected ones
 * included (where the garbage comes from), and writes a .heapprofile (Chrome DevTools) at the end.
 */
async function startAllocationSampling(file: string | undefined): Promise<(() => Promise<void>) | null> {
  if (!file) return null;
  const session = new Session();
  session.connect();
  const post = <T>(method: string, params?: object) =>
    new Promise<T>((resolve, reject) =>
      session.post(method, params ?? {}, (err, result) => (err ? reject(err) : resolve(result as T))),
    );
  await post('HeapProfiler.enable');
  await post('HeapProfiler.startSampling', {
    samplingInterval: 32_768,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  });
  return async () => {
    const { profile } = await post<{ profile: unknown }>('HeapProfiler.stopSampling');
    writeFileSync(file, JSON.stringify(profile));
    session.disconnect();
  };
}
