/**
 * FerretDB's CPU per document written on the state layer's write pattern, without Rampart: the
 * project's FerretDB binary on a temporary directory with the embedded database's SQLite URL
 * (src/store/embedded.ts), preloaded, then fed flush-shaped batches. Each batch is what one 20 ms
 * flush of a busy Rampart sends, all collections at once as the flusher sends them:
 *   ~60 counter upserts (packed, ~370 B, 80% existing ids), ~10 user upserts (packed, ~3 KB),
 *   ~10 event inserts (~2 KB, nested), ~6 device upserts (~2.5 KB, nested), ~5 token inserts
 *   (~400 B), and ~3 `find({_id: {$in: [...]}})` look-ups of ~8 ids each.
 * It prints FerretDB's CPU (utime+stime from /proc, so other load on the machine does not count)
 * per document written and per batch, and its peak resident memory. The documents are the same
 * on every run (seeded). FerretDB runs with the embedded database's environment (FERRETDB_ENV;
 * variables set for this command win, e.g. `GOGC=100`).
 *
 *   npm run build && node dist/bench/ferretdb-writes.js
 *   node dist/bench/ferretdb-writes.js --batches 1500 --pragmas 'synchronous(normal);temp_store(memory)'
 *   node dist/bench/ferretdb-writes.js --bin /tmp/ferretdb-other --debug-addr 127.0.0.1:8088
 *
 * --pragmas replaces the embedded database's list (';'-separated); --bin another FerretDB build
 * (default: the project's, FERRETDB_BIN); --batches how many batches to time (default 1000);
 * --tick the ms between batches (default 20); --find-ids the ids per look-up (default 8; 0: no
 * look-ups, writes only); --debug-addr FerretDB's pprof address.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { MongoClient, type Db, type Document } from 'mongodb';
import {
  ensureFerretdb,
  FERRETDB_ENV,
  freePort,
  SQLITE_PRAGMAS,
  sqliteUrl,
  waitForPort,
} from '../src/store/embedded';
import { cpuOf } from './lib/proc';
import { rng } from './lib/traffic';

const UPSERT = 'rampart:upsert';

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

// Seeded, so every run writes the same documents.
const rnd = rng(42);
const int = (n: number) => Math.floor(rnd() * n);
const hex = (n: number) => {
  let s = '';
  while (s.length < n)
    s += Math.floor(rnd() * 4294967296)
      .toString(16)
      .padStart(8, '0');
  return s.slice(0, n);
};
const ip = () => `${int(223) + 1}.${int(256)}.${int(256)}.${int(256)}`;

function counterDoc(id: string): Document {
  const hour = 493_000 + int(48);
  const members = Array.from({ length: 3 + int(4) }, () => hex(12));
  const rest = {
    key: id,
    window: 'hour',
    bucket: hour,
    n: { risk: int(50), login: int(20), fail: int(5) },
    set: { dev: members },
    updatedAt: { $date: Date.now() },
  };
  return {
    _id: id,
    envId: 'env_bench',
    expiresAt: new Date(Date.now() + 86_400_000),
    _p: JSON.stringify(rest),
  };
}

function userDoc(id: string): Document {
  const devices = Array.from({ length: 4 }, () => ({
    key: hex(32),
    firstSeen: { $date: Date.now() - int(1e9) },
    lastSeen: { $date: Date.now() },
    ips: Array.from({ length: 5 }, ip),
    ua: 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36',
    n: int(100),
  }));
  const rest = {
    countries: { FR: int(50), DE: int(9) },
    asns: [3215, 12322, 5410],
    devices,
    hours: Array.from({ length: 24 }, () => int(9)),
    logins: int(500),
    fails: int(20),
    score: rnd(),
    lastIp: ip(),
    notes: hex(400),
  };
  return {
    _id: id,
    envId: 'env_bench',
    userId: id.slice(4),
    email: `${id.slice(4)}@example.com`,
    lastSeenAt: new Date(),
    _p: JSON.stringify(rest),
  };
}

function eventDoc(): Document {
  return {
    _id: `evt_${hex(24)}`,
    envId: 'env_bench',
    type: 'login.succeeded',
    userId: `u${int(5000)}`,
    at: new Date(),
    ip: ip(),
    geo: {
      country: 'FR',
      region: 'IDF',
      city: 'Paris',
      lat: 48.85,
      lon: 2.35,
      asn: 3215,
      org: 'Orange S.A.',
    },
    device: {
      key: hex(32),
      ua: 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36',
      os: 'Linux',
      browser: 'Chrome',
      version: '120.0',
    },
    verdict: {
      action: 'allow',
      score: rnd(),
      reasons: ['new_ip', 'usual_country'],
      rules: [
        { id: 'r1', hit: false },
        { id: 'r2', hit: true },
      ],
    },
    signals: Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`s${i}`, rnd()])),
    properties: JSON.stringify({ path: '/login', ref: hex(200), extra: hex(300) }),
  };
}

function deviceDoc(id: string): Document {
  return {
    _id: id,
    envId: 'env_bench',
    userId: `u${int(5000)}`,
    firstSeen: new Date(Date.now() - int(1e9)),
    lastSeen: new Date(),
    context: {
      ua: 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36',
      screen: { w: 1920, h: 1080, dpr: 1 },
      tz: 'Europe/Paris',
      langs: ['fr-FR', 'en'],
    },
    ips: Array.from({ length: 8 }, () => ({ ip: ip(), at: new Date(), country: 'FR', asn: 3215 })),
    fingerprints: Array.from({ length: 6 }, () => ({ h: hex(40), at: new Date() })),
    trust: { level: 'known', since: new Date(), by: 'login', score: rnd() },
    properties: JSON.stringify({ note: hex(600) }),
  };
}

function tokenDoc(): Document {
  return {
    _id: `tok_${hex(24)}`,
    envId: 'env_bench',
    userId: `u${int(5000)}`,
    deviceKey: hex(32),
    createdAt: new Date(),
    expiresAt: new Date(Date.now() + 3_600_000),
    nonce: hex(64),
  };
}

async function upsert(db: Db, collection: string, docs: Document[]): Promise<void> {
  if (docs.length > 0) await db.collection(collection).insertMany(docs, { ordered: false, comment: UPSERT });
}

async function insert(db: Db, collection: string, docs: Document[]): Promise<void> {
  if (docs.length > 0) await db.collection(collection).insertMany(docs, { ordered: false });
}

/** n around `mean` (±50%). */
const around = (mean: number) => Math.max(0, Math.round(mean * (0.5 + rnd())));

async function main(): Promise<void> {
  const bin = arg('bin') ?? ensureFerretdb();
  const batches = Number(arg('batches') ?? 1000);
  const tick = Number(arg('tick') ?? 20);
  const findIds = Number(arg('find-ids') ?? 8);
  const pragmasArg = arg('pragmas');
  const pragmas = pragmasArg === undefined ? SQLITE_PRAGMAS : pragmasArg.split(';').filter(Boolean);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'rampart-fdb-bench-'));
  const port = await freePort();
  const args = [
    '--handler=sqlite',
    `--sqlite-url=${sqliteUrl(dir, pragmas)}`,
    `--state-dir=${dir}`,
    `--listen-addr=127.0.0.1:${port}`,
    '--telemetry=disable',
    `--debug-addr=${arg('debug-addr') ?? '-'}`,
    '--log-level=warn',
  ];
  const child = spawn(bin, args, { stdio: 'ignore', env: { ...FERRETDB_ENV, ...process.env } });
  const client = new MongoClient(`mongodb://127.0.0.1:${port}/`, { maxPoolSize: 16 });
  try {
    await waitForPort(port, child, 20_000);
    await client.connect();
    const db = client.db('bench');
    const pid = child.pid!;

    // Preload: 20,000 counters, 3,000 users, 3,000 events, 1,000 devices, 500 tokens.
    const counterIds = Array.from({ length: 20_000 }, (_, i) => `env_bench:ip:${i}:${hex(6)}`);
    const userIds = Array.from({ length: 3_000 }, (_, i) => `env:u${i}`);
    const deviceIds = Array.from({ length: 1_000 }, () => `dev_${hex(24)}`);
    for (let i = 0; i < counterIds.length; i += 100)
      await upsert(db, 'counters', counterIds.slice(i, i + 100).map(counterDoc));
    for (let i = 0; i < userIds.length; i += 100)
      await upsert(db, 'users', userIds.slice(i, i + 100).map(userDoc));
    for (let i = 0; i < 3_000; i += 100) await insert(db, 'events', Array.from({ length: 100 }, eventDoc));
    for (let i = 0; i < deviceIds.length; i += 100)
      await upsert(db, 'devices', deviceIds.slice(i, i + 100).map(deviceDoc));
    for (let i = 0; i < 500; i += 100) await insert(db, 'tokens', Array.from({ length: 100 }, tokenDoc));
    await sleep(500);

    const pick = <T>(xs: T[]) => xs[int(xs.length)];
    let docs = 0;
    let finds = 0;
    const cpuNow = () => cpuOf(pid) ?? Number.NaN;
    const before = cpuNow();
    const t0 = Date.now();
    for (let b = 0; b < batches; b++) {
      const next = Date.now() + tick;
      const counters = Array.from({ length: around(60) }, () => {
        if (rnd() < 0.8) return pick(counterIds);
        const id = `env_bench:ip:n${counterIds.length}:${hex(6)}`;
        counterIds.push(id);
        return id;
      });
      const batch = {
        counters: [...new Set(counters)].map(counterDoc),
        users: [...new Set(Array.from({ length: around(10) }, () => pick(userIds)))].map(userDoc),
        events: Array.from({ length: around(10) }, eventDoc),
        devices: [...new Set(Array.from({ length: around(6) }, () => pick(deviceIds)))].map(deviceDoc),
        tokens: Array.from({ length: around(5) }, tokenDoc),
      };
      docs +=
        batch.counters.length +
        batch.users.length +
        batch.events.length +
        batch.devices.length +
        batch.tokens.length;
      const lookups = Array.from({ length: findIds > 0 ? 3 : 0 }, (_, i) => {
        const [coll, ids] =
          i === 0 ? ['counters', counterIds] : i === 1 ? ['users', userIds] : ['devices', deviceIds];
        return db
          .collection<{ _id: string }>(coll)
          .find({ _id: { $in: Array.from({ length: findIds }, () => pick(ids)) } })
          .toArray();
      });
      finds += lookups.length;
      await Promise.all([
        upsert(db, 'counters', batch.counters),
        upsert(db, 'users', batch.users),
        insert(db, 'events', batch.events),
        upsert(db, 'devices', batch.devices),
        insert(db, 'tokens', batch.tokens),
        ...lookups,
      ]);
      const wait = next - Date.now();
      if (wait > 0) await sleep(wait);
    }
    const cpu = cpuNow() - before;
    const peakRss = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    const wall = Date.now() - t0;
    let walBytes = 0;
    try {
      walBytes = statSync(path.join(dir, 'bench.sqlite-wal')).size;
    } catch {
      // no WAL file
    }
    const label = arg('label') ?? (pragmasArg === undefined ? 'default' : pragmasArg);
    console.log(
      JSON.stringify({
        label,
        batches,
        docs,
        finds,
        ferretdbCpuMs: Math.round(cpu / 1000),
        cpuPerDocUs: Math.round(cpu / docs),
        cpuPerBatchUs: Math.round(cpu / batches),
        wallMs: wall,
        walMB: Math.round(walBytes / 1e5) / 10,
        peakRssMB: Math.round(Number(peakRss) / 1024),
      }),
    );
  } finally {
    await client.close().catch(() => undefined);
    child.kill('SIGTERM');
    await new Promise((r) => (child.exitCode !== null ? r(null) : child.once('exit', r)));
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
