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
 *
 * --user-split whole|parts|devices writes each batch's ~10 user changes as users of the measured
 * composition of the bench's traffic (docs/performance.md, "What a verdict writes"): a packed
 * profile (~300 B with its query fields), 1–5 devices of ~870 B (1 for 74% of the changes, 2 for
 * 20%), behaviour tables of ~1.4–6 KB and now and then a pending challenge. `whole`: one packed
 * document per change, as the state layer writes it. `parts`: the parts a change touches as
 * documents of their own in the same collection (one command, as now): a login writes its
 * profile, the device it came from and its behaviour; another event (`--user-other`, the share of
 * such changes, default 0: the closed loop's logins only) its profile and device. `devices`: the
 * devices apart, the profile and behaviour in one document: a change writes that and its device.
 * --user-devices N gives every user N devices; --users-only writes nothing else (no counters,
 * events, devices, tokens or look-ups), so FerretDB's CPU is the users' alone. It also prints
 * Rampart's side of the same documents: µs to pack (state/pack.ts) and BSON-encode them.
 * --rampart-side measures only that, without FerretDB (--rounds, default 5, of --changes, default
 * 20,000, per layout, alternating).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { BSON, MongoClient, type Db, type Document } from 'mongodb';
import {
  ensureFerretdb,
  FERRETDB_ENV,
  freePort,
  SQLITE_PRAGMAS,
  sqliteUrl,
  waitForPort,
} from '../src/store/embedded';
import type { Doc } from '../src/store/state/delta';
import { pack } from '../src/store/state/pack';
import { USER_QUERY_FIELDS } from '../src/store/user-state';
import { cpuOf } from './lib/proc';
import { seeded } from './lib/traffic';

const UPSERT = 'rampart:upsert';

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

// Seeded, so every run writes the same documents.
const { rnd, int, hex } = seeded(42);
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

// --user-split: users of the composition measured on the bench's traffic, from a generator of
// their own, so that the other documents are the same in every mode.
const { rnd: urnd, int: uint, hex: uhex } = seeded(7);
const uoctets = () => [uint(223) + 1, uint(256), uint(256)];
const BENCH_ENV = '35c97592-2dc2-4bfc-a796-223cc9a2bd79';
const UA =
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36';

type UserSplit = 'whole' | 'parts' | 'devices';

/** One user as the state layer holds it (src/store/user-state.ts), by part. */
interface BenchUser {
  id: string;
  /** The query fields and the profile (first and latest times, count, location, countries, traits). */
  profile: Doc;
  /** The devices, by key. */
  devices: Doc[];
  /** The behavioural model (`p`): decayed tables per level, last location, pending challenges. */
  behaviour: Doc;
}

/** A value of each level of the behavioural tables, as stored (field names escaped). */
function levelValues(): Record<string, string> {
  const [a, b, c] = uoctets();
  const net = `${a}%2E${b}%2E${c}%2E0/24`;
  const asn = `AS${1000 + uint(60000)}`;
  return {
    ip: `${a}%2E${b}%2E${c}%2E${uint(256)}`,
    net,
    asn,
    cc: ['FR', 'DE', 'AT', 'PL', 'ES', 'GB', 'US'][uint(7)] as string,
    ua: uhex(16),
    br: 'Chrome 124',
    bf: 'Chrome',
    os: 'Windows 10',
    dt: 'desktop',
    dev: `f:${uhex(40)}`,
    fp: 'y',
    lang: 'fr-fr',
    hr: String(uint(24)),
    sw: 'Windows 10|Chrome',
    sa: `Windows 10|Chrome|${asn}`,
    sn: `Windows 10|Chrome|${net}`,
    an: `${asn}|${net}`,
    ap: `${asn}|FR|Saint-Germain-en-Laye`,
  };
}
/** The levels a user's tables grow in (addresses, networks, hours, devices...). */
const GROWING = ['ip', 'net', 'hr', 'sn', 'dev', 'asn', 'sa', 'an', 'ap', 'cc'];

function benchDevice(now: number): Doc {
  const key = `f:${uhex(40)}`;
  const [a, b, c] = uoctets();
  return {
    key,
    identity: 'fingerprint',
    createdAt: new Date(now - uint(1e9)),
    lastSeenAt: new Date(now),
    tokens: [uhex(32)],
    n: 1 + uint(50),
    context: {
      ip: `${a}.${b}.${c}.${uint(256)}`,
      location: {
        country_code: 'DE',
        country: 'Germany',
        region: 'Baden-Wurttemberg',
        region_code: null,
        city: 'Adelsheim',
        lat: 49.3807,
        lon: 9.3951,
      },
      userAgent: {
        raw: UA,
        browser: 'Chrome',
        version: '124.0.0.0',
        os: 'Windows 10',
        mobile: false,
        platform: 'Windows',
        device: 'Unknown',
        family: 'Chrome',
        type: 'desktop',
        bot: false,
        headless: false,
        crawler: false,
      },
      type: 'desktop',
      properties: '{"identity":"fingerprint"}',
    },
    lastEventRisk: Math.round(urnd() * 1e4) / 1e4,
    pj: new Date(now),
  };
}

/**
 * A user of the measured composition (docs/performance.md, "What a verdict writes", weighted by
 * the writes): devices 1 (74%), 2 (20%), 3 (3%), 4 (3%); behaviour tables of one value per level
 * (~1.4 KB) for half the changes, more values (exponential, 10 on average) for the others; a
 * pending challenge for one in ten.
 */
function benchUser(i: number, devices: number | undefined): BenchUser {
  const now = Date.now();
  const userId = `bench-${i}`;
  const u = urnd();
  const nDevices = devices ?? (u < 0.74 ? 1 : u < 0.945 ? 2 : u < 0.972 ? 3 : 4);
  const t: Record<string, Record<string, Doc>> = {};
  const entry = (level: string) => ({
    l: now - uint(1e8),
    ...(level === 'dev' ? { f: now - uint(1e9) } : {}),
    c: urnd() * 10_000,
  });
  for (const [level, value] of Object.entries(levelValues())) t[level] = { [value]: entry(level) };
  const extra = urnd() < 0.5 ? 0 : Math.round(-Math.log(1 - urnd()) * 10);
  for (let k = 0; k < extra; k++) {
    const level = GROWING[uint(GROWING.length)] as string;
    (t[level] as Record<string, Doc>)[levelValues()[level] as string] = entry(level);
  }
  const behaviour: Doc = { n: urnd() * 10_000, t, ll: `2026-11-28T18:44:11.392Z|47.4423|16.0671|AT` };
  if (urnd() < 0.1) {
    const v = levelValues();
    behaviour.pd = {
      [`01a22378-a8fc-7ed2-934f-${uhex(12)}`]: { at: now, v, tw: 0.3, ca: false },
    };
  }
  return {
    id: `${BENCH_ENV}:${userId}`,
    profile: {
      envId: BENCH_ENV,
      userId,
      email: `bench${i}@example.com`,
      lastSeenAt: new Date(now),
      createdAt: new Date(now - uint(1e9)),
      n: 1 + uint(200),
      traits: { email: `"bench${i}@example.com"` },
      lastLoc: '2026-11-28T18:44:11.392Z|47.4423|16.0671|AT',
      countries: ['AT', 'DE'],
    },
    devices: Array.from({ length: nDevices }, () => benchDevice(now)),
    behaviour,
  };
}

const PART_FIELDS = ['envId', 'userId'];

/**
 * The documents one change of `u` writes (`login`: its behaviour changed too), packed as the
 * flusher packs them, with their `_id`s. `seen` is the device the event came from.
 */
function userWrites(u: BenchUser, split: UserSplit, login: boolean, seen: number): Doc[] {
  const now = new Date();
  u.profile.lastSeenAt = now;
  u.profile.n = (u.profile.n as number) + 1;
  const device = u.devices[seen % u.devices.length] as Doc;
  device.lastSeenAt = now;
  device.n = (device.n as number) + 1;
  if (login) (u.behaviour as { n: number }).n += 1;
  const deviceDocs = () => {
    const d = pack({ envId: BENCH_ENV, userId: u.profile.userId, ...device }, PART_FIELDS);
    d._id = `${u.id}:d:${device.key as string}`;
    return d;
  };
  if (split === 'whole') {
    const d: Doc = {};
    for (const x of u.devices) d[x.key as string] = x;
    const doc = pack({ ...u.profile, d, p: u.behaviour }, USER_QUERY_FIELDS);
    doc._id = u.id;
    return [doc];
  }
  if (split === 'devices') {
    const doc = pack({ ...u.profile, p: u.behaviour }, USER_QUERY_FIELDS);
    doc._id = u.id;
    return [doc, deviceDocs()];
  }
  const profile = pack(u.profile, USER_QUERY_FIELDS);
  profile._id = u.id;
  if (!login) return [profile, deviceDocs()];
  const behaviour = pack({ envId: BENCH_ENV, userId: u.profile.userId, p: u.behaviour }, PART_FIELDS);
  behaviour._id = `${u.id}:b`;
  return [profile, deviceDocs(), behaviour];
}

/** Every document of `u` in the `split` layout (the preload). */
function userDocsAll(u: BenchUser, split: UserSplit): Doc[] {
  if (split === 'whole') return userWrites(u, split, true, 0);
  const first = userWrites(u, split, true, 0);
  const rest = u.devices.slice(1).map((_, k) => userWrites(u, 'devices', false, k + 1)[1] as Doc);
  return [...first, ...rest];
}

async function upsert(db: Db, collection: string, docs: Document[]): Promise<void> {
  if (docs.length > 0) await db.collection(collection).insertMany(docs, { ordered: false, comment: UPSERT });
}

async function insert(db: Db, collection: string, docs: Document[]): Promise<void> {
  if (docs.length > 0) await db.collection(collection).insertMany(docs, { ordered: false });
}

/** n around `mean` (±50%). */
const around = (mean: number) => Math.max(0, Math.round(mean * (0.5 + rnd())));

/**
 * --rampart-side: Rampart's CPU for the same user changes without FerretDB: packing each document
 * (state/pack.ts, the flusher's JSON.stringify) and encoding it to BSON (the driver), per change,
 * in rounds that alternate the three layouts.
 */
function rampartSide(rounds: number, changes: number, userOther: number, userDevices?: number): void {
  const users = Array.from({ length: 3_000 }, (_, i) => benchUser(i, userDevices));
  const splits: UserSplit[] = ['whole', 'parts', 'devices'];
  const one = (split: UserSplit) => {
    let bytes = 0;
    let docs = 0;
    const t = process.cpuUsage();
    for (let k = 0; k < changes; k++) {
      const written = userWrites(users[k % users.length] as BenchUser, split, urnd() >= userOther, k % 4);
      for (const d of written) bytes += BSON.serialize(d).length;
      docs += written.length;
    }
    const used = process.cpuUsage(t);
    return {
      split,
      docsPerChange: Math.round((docs / changes) * 100) / 100,
      bytesPerChange: Math.round(bytes / changes),
      usPerChange: Math.round(((used.user + used.system) / changes) * 10) / 10,
    };
  };
  for (const split of splits) one(split); // warm-up
  for (let r = 1; r <= rounds; r++)
    for (const split of splits) console.log(JSON.stringify({ round: r, userOther, ...one(split) }));
}

async function main(): Promise<void> {
  if (process.argv.includes('--rampart-side')) {
    const devices = arg('user-devices');
    rampartSide(
      Number(arg('rounds') ?? 5),
      Number(arg('changes') ?? 20_000),
      Number(arg('user-other') ?? 0),
      devices === undefined ? undefined : Number(devices),
    );
    return;
  }
  const bin = arg('bin') ?? ensureFerretdb();
  const batches = Number(arg('batches') ?? 1000);
  const tick = Number(arg('tick') ?? 20);
  const findIds = Number(arg('find-ids') ?? 8);
  const pragmasArg = arg('pragmas');
  const pragmas = pragmasArg === undefined ? SQLITE_PRAGMAS : pragmasArg.split(';').filter(Boolean);
  const splitArg = arg('user-split');
  if (splitArg !== undefined && !['whole', 'parts', 'devices'].includes(splitArg))
    throw new Error(`--user-split: whole, parts or devices, not ${splitArg}`);
  const split = splitArg as UserSplit | undefined;
  const userOther = Number(arg('user-other') ?? 0);
  const userDevices = arg('user-devices') === undefined ? undefined : Number(arg('user-devices'));
  const usersOnly = process.argv.includes('--users-only');
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
    const benchUsers = split ? userIds.map((_, i) => benchUser(i, userDevices)) : [];
    if (split) {
      const all = benchUsers.flatMap((u) => userDocsAll(u, split));
      for (let i = 0; i < all.length; i += 100) await upsert(db, 'users', all.slice(i, i + 100));
    } else
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
    let userChanges = 0;
    let userDocs = 0;
    let userBytes = 0;
    let rampartNs = 0n;
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
      const users: Document[] = [];
      if (split) {
        // ~10 changes of distinct users (picked by the users' own generator), each packed and
        // BSON-encoded as the flusher and the driver do it (Rampart's side of the write).
        const picked = new Set(Array.from({ length: Math.round(10 * (0.5 + urnd())) }, () => uint(3_000)));
        for (const i of picked) {
          const login = urnd() >= userOther;
          const seen = uint(4);
          const t = process.hrtime.bigint();
          const written = userWrites(benchUsers[i] as BenchUser, split, login, seen);
          for (const d of written) userBytes += BSON.serialize(d).length;
          rampartNs += process.hrtime.bigint() - t;
          users.push(...written);
          userChanges++;
        }
        userDocs += users.length;
      }
      const batch = {
        counters: usersOnly ? [] : [...new Set(counters)].map(counterDoc),
        users: split
          ? users
          : [...new Set(Array.from({ length: around(10) }, () => pick(userIds)))].map(userDoc),
        events: usersOnly ? [] : Array.from({ length: around(10) }, eventDoc),
        devices: usersOnly
          ? []
          : [...new Set(Array.from({ length: around(6) }, () => pick(deviceIds)))].map(deviceDoc),
        tokens: usersOnly ? [] : Array.from({ length: around(5) }, tokenDoc),
      };
      docs +=
        batch.counters.length +
        batch.users.length +
        batch.events.length +
        batch.devices.length +
        batch.tokens.length;
      const lookups = Array.from({ length: findIds > 0 && !usersOnly ? 3 : 0 }, (_, i) => {
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
        ...(split
          ? {
              split,
              userOther,
              usersOnly,
              userChanges,
              userDocs,
              userDocsPerChange: Math.round((userDocs / userChanges) * 100) / 100,
              userBytesPerChange: Math.round(userBytes / userChanges),
              cpuPerUserChangeUs: Math.round(cpu / userChanges),
              rampartPackBsonUsPerChange: Math.round(Number(rampartNs) / 1000 / userChanges),
            }
          : {}),
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
