/**
 * The embedded database's write-ahead log (WAL) while it is written and read at once, without
 * Rampart: the project's FerretDB as Rampart runs it (src/store/embedded.ts: the primary with the
 * SQLite pragmas, GOGC=200 and its soft memory limit; the analysts' reader, a second FerretDB on
 * the same files at niceness 10 with its own limit), on a temporary directory, preloaded with
 * 3,000 users (~3 KB), 20,000 counters (~0.4 KB) and an `outbox` of --docs documents (~2.6 KB,
 * the size of an event). Writes never stop: every --tick ms a flush-shaped batch (60 counter and
 * 10 user upserts, 10 event inserts, an `_id` look-up). Phases of --seconds each, in order:
 *
 *   writes    writes alone;
 *   held      an analyst cursor on the events, on the reader, kept open with five documents read
 *             every second (a dashboard's cursor, a sweep pausing between its batches);
 *   overlap   two analyst scans of the outbox on the reader, back to back and overlapping (what
 *             dashboards and sweeps do in turn);
 *   scans     two scans of the outbox on the primary, back to back, each holding every document
 *             for an in-memory sort (what the webhook outbox's polls did with a backlog), for the
 *             primary's resident memory;
 *
 * each followed by --rest seconds of writes alone. Every second it reads the size of the
 * `-wal` file, and prints it every 5 s (MB), with the batches written and both processes'
 * resident memory; then each phase's peak. With --guard-mb N (default: Rampart's limit, 64), it
 * runs Rampart's own WAL watcher (src/store/embedded-wal.ts) on the primary, as `npm start` does;
 * 0: SQLite alone.
 *
 *   npm run build && node dist/bench/wal.js
 *   node dist/bench/wal.js --bin /tmp/ferretdb-before --guard-mb 0 --memory-mb 0   # an older build, as it ran
 *   node dist/bench/wal.js --phases held,overlap --seconds 60 --hogs 6
 *
 * --bin another FerretDB build (default the project's); --memory-mb the primary's soft memory
 * limit (0: none); --hogs N busy processes at niceness 0 meanwhile (a machine shared with other
 * work: the reader, at niceness 10, then gets little CPU and its reads last longer).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { MongoClient, type Db, type Document } from 'mongodb';
import {
  DEFAULT_EMBEDDED_MEMORY_MB,
  ensureFerretdb,
  FERRETDB_ENV,
  freePort,
  primaryEnv,
  readerEnv,
  sqliteUrl,
  waitForPort,
} from '../src/store/embedded';
import { WalGuard, type CheckpointOutcome } from '../src/store/embedded-wal';
import { rssOf } from './lib/proc';
import { seeded } from './lib/traffic';

const PHASES = ['writes', 'held', 'overlap', 'scans'] as const;
type Phase = (typeof PHASES)[number];

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
}
const num = (name: string, fallback: number): number => {
  const v = Number(arg(name) ?? fallback);
  if (!Number.isFinite(v) || v < 0) throw new Error(`--${name} must be a number ≥ 0`);
  return v;
};

const UPSERT = 'rampart:upsert';
const MB = 1024 * 1024;
const { rnd, int, hex } = seeded(7);

const eventDoc = (): Document => ({
  _id: `evt_${hex(24)}`,
  envId: 'env_bench',
  name: '$login',
  userId: `u${int(3000)}`,
  occurredAt: new Date(),
  ip: `${int(223) + 1}.${int(256)}.${int(256)}.${int(256)}`,
  headers: {
    'User-Agent':
      'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36',
  },
  signals: Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`s${i}`, rnd()])),
  properties: JSON.stringify({ path: '/login', extra: hex(1600) }),
});
const userDoc = (i: number): Document => ({
  _id: `env_bench:u${i}`,
  envId: 'env_bench',
  _p: JSON.stringify({ devices: hex(2400), hours: hex(200), notes: hex(300) }),
});
const counterDoc = (i: number): Document => ({
  _id: `env_bench:c${i}`,
  envId: 'env_bench',
  _p: JSON.stringify({ n: int(99), set: hex(300) }),
});

/** A FerretDB on `dir`'s SQLite files, as src/store/embedded.ts starts one. */
async function ferretdb(
  bin: string,
  dir: string,
  env: Record<string, string>,
  nice: number,
): Promise<{ child: ChildProcess; port: number }> {
  const port = await freePort();
  const state = path.join(dir, `state-${port}`);
  mkdirSync(state);
  const args = [
    '--handler=sqlite',
    `--sqlite-url=${sqliteUrl(dir)}`,
    `--state-dir=${state}`,
    `--listen-addr=127.0.0.1:${port}`,
    '--telemetry=disable',
    '--debug-addr=-',
    '--log-level=error',
  ];
  const child = spawn(bin, args, { stdio: 'ignore', env: { ...FERRETDB_ENV, ...process.env, ...env } });
  if (nice > 0 && child.pid) os.setPriority(child.pid, nice);
  await waitForPort(port, child, 20_000);
  return { child, port };
}

interface PhaseFigures {
  phase: string;
  peakWal: number;
  endWal: number;
  batches: number;
  seconds: number;
  peakPrimaryRss: number;
  peakReaderRss: number;
  checkpoints: Record<CheckpointOutcome, number>;
}

async function main(): Promise<void> {
  const bin = arg('bin') ?? ensureFerretdb();
  const seconds = num('seconds', 30);
  const rest = num('rest', 10);
  const tick = num('tick', 20);
  const outboxDocs = num('docs', 20_000);
  const guardMb = num('guard-mb', 64);
  const memoryMb = num('memory-mb', DEFAULT_EMBEDDED_MEMORY_MB);
  const hogs = num('hogs', 0);
  const phases = (arg('phases') ?? PHASES.join(',')).split(',').map((p) => {
    if (!(PHASES as readonly string[]).includes(p))
      throw new Error(`--phases: one or more of ${PHASES.join(',')}`);
    return p as Phase;
  });
  const dir = mkdtempSync(path.join(os.tmpdir(), 'rampart-wal-bench-'));
  const walFile = path.join(dir, 'bench.sqlite-wal');
  const walSize = () => {
    try {
      return statSync(walFile).size;
    } catch {
      return 0;
    }
  };
  const procs: ChildProcess[] = [];
  // Interrupted: the FerretDB processes and the busy ones go too.
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      for (const p of procs) p.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
      process.exit(130);
    });
  }
  const clients: MongoClient[] = [];
  let guard: WalGuard | null = null;
  try {
    const primary = await ferretdb(bin, dir, memoryMb > 0 ? primaryEnv(memoryMb) : {}, 0);
    procs.push(primary.child);
    const writer = await new MongoClient(`mongodb://127.0.0.1:${primary.port}/`, {
      maxPoolSize: 16,
    }).connect();
    clients.push(writer);
    const db = writer.db('bench');
    for (let i = 0; i < outboxDocs; i += 200)
      await db
        .collection('outbox')
        .insertMany(Array.from({ length: Math.min(200, outboxDocs - i) }, eventDoc));
    await db.collection('events').insertMany(Array.from({ length: 1000 }, eventDoc));
    for (let i = 0; i < 3000; i += 100)
      await db.collection('users').insertMany(
        Array.from({ length: 100 }, (_, k) => userDoc(i + k)),
        { comment: UPSERT },
      );
    for (let i = 0; i < 20_000; i += 500)
      await db.collection('counters').insertMany(
        Array.from({ length: 500 }, (_, k) => counterDoc(i + k)),
        { comment: UPSERT },
      );
    const reader = await ferretdb(bin, dir, readerEnv(256), 10);
    procs.push(reader.child);
    const analyst = await new MongoClient(`mongodb://127.0.0.1:${reader.port}/`, {
      maxPoolSize: 4,
    }).connect();
    clients.push(analyst);
    const rdb = analyst.db('bench');
    await rdb.collection('events').findOne({});

    const checkpoints: Record<CheckpointOutcome, number> = { truncated: 0, busy: 0, failed: 0 };
    if (guardMb > 0) {
      guard = new WalGuard({
        db,
        dir,
        dbName: 'bench',
        collection: 'users',
        limitBytes: guardMb * MB,
        onCheckpoint: (o) => checkpoints[o]++,
      });
      guard.start();
    }
    for (let i = 0; i < hogs; i++) {
      const hog = spawn(process.execPath, ['-e', 'for(;;){}'], { stdio: 'ignore' });
      procs.push(hog);
    }

    let writing = true;
    let batches = 0;
    const writes = (async () => {
      while (writing) {
        const next = Date.now() + tick;
        await Promise.all([
          upsert(db, 'counters', [...new Set(Array.from({ length: 60 }, () => int(20_000)))].map(counterDoc)),
          upsert(db, 'users', [...new Set(Array.from({ length: 10 }, () => int(3000)))].map(userDoc)),
          db.collection('events').insertMany(Array.from({ length: 10 }, eventDoc)),
          db
            .collection('users')
            .find({ _id: { $in: Array.from({ length: 8 }, () => `env_bench:u${int(3000)}`) } } as Document)
            .toArray(),
        ]);
        batches++;
        const wait = next - Date.now();
        if (wait > 0) await sleep(wait);
      }
    })();

    const t0 = Date.now();
    const out = (s: string) => process.stdout.write(s);
    out(
      `rampart WAL bench: ${arg('bin') ? `FerretDB ${path.basename(bin)}` : "the project's FerretDB"}, an outbox of ${outboxDocs} documents, a batch every ${tick} ms; Rampart's WAL watcher ${guardMb > 0 ? `at ${guardMb} MB` : 'off'}; primary GOMEMLIMIT ${memoryMb > 0 ? `${memoryMb} MiB` : 'none'}; ${hogs} busy processes\n`,
    );
    out(
      `  ${'s'.padStart(5)} ${'phase'.padEnd(12)} ${'WAL MB'.padStart(8)} ${'batches'.padStart(8)} ${'primary'.padStart(8)} ${'reader'.padStart(8)}\n`,
    );
    const figures: PhaseFigures[] = [];
    const run = async (name: string, body: (going: () => boolean) => Promise<void>, length: number) => {
      const f: PhaseFigures = {
        phase: name,
        peakWal: 0,
        endWal: 0,
        batches: 0,
        seconds: 0,
        peakPrimaryRss: 0,
        peakReaderRss: 0,
        checkpoints: { truncated: 0, busy: 0, failed: 0 },
      };
      const before = { batches, checkpoints: { ...checkpoints }, at: Date.now() };
      let sampling = true;
      const sampler = (async () => {
        for (let n = 0; sampling; n++) {
          const wal = walSize();
          f.peakWal = Math.max(f.peakWal, wal);
          f.peakPrimaryRss = Math.max(f.peakPrimaryRss, rssOf(primary.child.pid ?? 0) ?? 0);
          f.peakReaderRss = Math.max(f.peakReaderRss, rssOf(reader.child.pid ?? 0) ?? 0);
          if (n % 5 === 0)
            out(
              `  ${((Date.now() - t0) / 1000).toFixed(0).padStart(5)} ${name.padEnd(12)} ${(wal / MB).toFixed(1).padStart(8)} ${String(batches).padStart(8)} ${((rssOf(primary.child.pid ?? 0) ?? 0) / MB).toFixed(0).padStart(8)} ${((rssOf(reader.child.pid ?? 0) ?? 0) / MB).toFixed(0).padStart(8)}\n`,
            );
          await sleep(1000);
        }
      })();
      const end = Date.now() + length * 1000;
      await body(() => Date.now() < end);
      const left = end - Date.now();
      if (left > 0) await sleep(left);
      sampling = false;
      await sampler;
      f.endWal = walSize();
      f.batches = batches - before.batches;
      f.seconds = (Date.now() - before.at) / 1000;
      for (const k of Object.keys(checkpoints) as CheckpointOutcome[])
        f.checkpoints[k] = checkpoints[k] - before.checkpoints[k];
      figures.push(f);
    };
    const scanLoops = (target: Db, sort: boolean) => async (going: () => boolean) => {
      const loop = async (delayMs: number) => {
        await sleep(delayMs);
        while (going()) {
          // Sorting: every event matches and is held for the sort, as a large backlog of
          // deliveries was by each poll; else every event is decoded and dropped.
          if (sort)
            await target
              .collection('outbox')
              .find({ envId: 'env_bench' })
              .sort({ occurredAt: 1 })
              .limit(100)
              .toArray();
          else await target.collection('outbox').find({ absent: true }).toArray();
        }
      };
      await Promise.all([loop(0), loop(300)]);
    };

    for (const phase of phases) {
      if (phase === 'writes') await run('writes', async () => undefined, seconds);
      else if (phase === 'held')
        await run(
          'held',
          async (going) => {
            const cursor = rdb.collection('events').find({}, { batchSize: 5 });
            await cursor.next();
            while (going()) {
              await sleep(1000);
              for (let i = 0; i < 5; i++) await cursor.next();
            }
            await cursor.close();
          },
          seconds,
        );
      else if (phase === 'overlap') await run('overlap', scanLoops(rdb, false), seconds);
      else await run('scans', scanLoops(db, true), seconds);
      if (rest > 0) await run(`after ${phase}`, async () => undefined, rest);
    }
    writing = false;
    await writes;

    out(
      `\n  ${'phase'.padEnd(14)} ${'peak WAL MB'.padStart(12)} ${'end WAL MB'.padStart(11)} ${'batches/s'.padStart(10)} ${'primary MB'.padStart(11)} ${'reader MB'.padStart(10)}  checkpoints (truncated/busy/failed)\n`,
    );
    for (const f of figures) {
      out(
        `  ${f.phase.padEnd(14)} ${(f.peakWal / MB).toFixed(1).padStart(12)} ${(f.endWal / MB).toFixed(1).padStart(11)} ${(f.batches / f.seconds).toFixed(1).padStart(10)} ${(f.peakPrimaryRss / MB).toFixed(0).padStart(11)} ${(f.peakReaderRss / MB).toFixed(0).padStart(10)}  ${f.checkpoints.truncated}/${f.checkpoints.busy}/${f.checkpoints.failed}\n`,
      );
    }
  } finally {
    await guard?.stop();
    for (const c of clients) await c.close().catch(() => undefined);
    for (const p of procs.reverse()) {
      if (p.exitCode !== null) continue;
      const exited = new Promise((resolve) => p.once('exit', resolve));
      p.kill('SIGTERM');
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  }
}

async function upsert(db: Db, collection: string, docs: Document[]): Promise<void> {
  if (docs.length > 0) await db.collection(collection).insertMany(docs, { ordered: false, comment: UPSERT });
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
