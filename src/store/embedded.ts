/**
 * The embedded default database: a local FerretDB (MongoDB wire protocol, SQLite backend) under
 * the data directory, on loopback, started when MONGODB_URI is not given and stopped on shutdown.
 */
import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  createWriteStream,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import net from 'node:net';
import { availableParallelism, setPriority } from 'node:os';
import path from 'node:path';
import { PROJECT_ROOT } from '../paths';

export interface EmbeddedDatabase {
  uri: string;
  /** The FerretDB process now running (null when attached to another Rampart's, or between restarts). */
  readonly pid: number | null;
  stop(): Promise<void>;
  /**
   * Kill the running FerretDB so that the supervisor starts a new one on the same files (a
   * process that answers pings but no longer writes: see the runtime's write watchdog). SQLite's
   * WAL makes that as safe as a crash. Absent where this process does not own the database.
   */
  restart?(why: string): void;
}

export function ferretdbBinary(): string {
  return process.env.FERRETDB_BIN ?? path.join(PROJECT_ROOT, '.tools', 'bin', 'ferretdb');
}

const INSTALL_SCRIPT = path.join(PROJECT_ROOT, 'scripts', 'install-ferretdb.sh');

/**
 * What the install script stamps a build with: the FerretDB version and the sha256 of Rampart's
 * patches (scripts/ferretdb/*.patch), computed exactly as the script computes it.
 */
export function wantedStamp(): string {
  const version = /^VERSION="([^"]+)"/m.exec(readFileSync(INSTALL_SCRIPT, 'utf8'))?.[1] ?? '';
  const dir = path.join(PROJECT_ROOT, 'scripts', 'ferretdb');
  const patches = readdirSync(dir)
    .filter((f) => f.endsWith('.patch'))
    .sort()
    .map((f) => readFileSync(path.join(dir, f)));
  return createHash('sha256').update(`${version}\n`).update(Buffer.concat(patches)).digest('hex');
}

/**
 * The FerretDB binary, checked to be the current patched build (its stamp): an unpatched binary
 * would scan on every _id look-up and lose concurrent updates. When it is missing or stale,
 * `install` builds it through the project's script (the tests, the benchmark and the CLI);
 * without it (the service: start-up never downloads or builds) it is an error naming the command
 * that installs it.
 */
export function ensureFerretdb(install = true): string {
  const bin = ferretdbBinary();
  let stamp = '';
  try {
    stamp = readFileSync(`${bin}.stamp`, 'utf8').trim();
  } catch {
    // no stamp: not built by the script (or an older version of it)
  }
  if (!existsSync(bin) || stamp !== wantedStamp()) {
    if (!install) {
      throw new Error(
        `the embedded database is ${existsSync(bin) ? 'not the current patched build' : 'not installed'} (${bin}): run \`npm run setup\` (it builds FerretDB with Go), or set MONGODB_URI`,
      );
    }
    execFileSync('bash', [INSTALL_SCRIPT], { stdio: 'inherit' });
  }
  return bin;
}

/**
 * The SQLite pragmas every connection of the embedded FerretDB opens with (FerretDB itself adds
 * journal_mode(wal), busy_timeout and auto_vacuum(none)). See docs/embedded-database.md for the
 * measured effect of each.
 */
export const SQLITE_PRAGMAS: readonly string[] = [
  // WAL with synchronous=NORMAL: commits survive a crash of Rampart or FerretDB; only an OS
  // crash or power loss can lose the last moments. It makes writes several times cheaper.
  'synchronous(normal)',
  // Checkpoint the WAL into the database every ~16 MB of frames (4,000 pages) instead of SQLite's
  // ~4 MB: a page rewritten many times between checkpoints is copied once, and the checkpoint's
  // fsyncs come a quarter as often (~3% less FerretDB CPU per document written). Durability is
  // the same: a commit is in the WAL either way. The WAL file is cut back to 64 MB when it is
  // reset after growing past that (a long read holding a checkpoint back).
  'wal_autocheckpoint(4000)',
  'journal_size_limit(67108864)',
  // A deleted or rewritten row is overwritten with zeros, and freed pages too: a purged user's
  // old copies do not stay readable on free space (the purge then truncates the WAL, whose frames
  // still hold the pages as they were: see MongoPrivacyStore.purgeUser and patch 0008).
  'secure_delete(on)',
];

/**
 * The cores FerretDB's Go runtime runs on at once (GOMAXPROCS): all but one, at least one.
 * Rampart answers on one thread, its event loop; a FerretDB that runs goroutines on every core
 * during a flush takes that core from it, and its own threads spin looking for work. On two
 * cores, one for FerretDB: −8% of its CPU per verdict and a lower open-loop tail, for a longer
 * tail at saturation (docs/embedded-database.md).
 */
export const ferretdbCores = (cores: number = availableParallelism()): number => Math.max(1, cores - 1);

/**
 * The environment FerretDB starts with (the caller's own variables win): its Go garbage collector
 * runs half as often (GOGC=200): ~9% less CPU per document written, for ~7 MB more resident
 * memory; and it leaves Rampart's event loop a core (ferretdbCores).
 */
export const FERRETDB_ENV: Readonly<Record<string, string>> = {
  GOGC: '200',
  GOMAXPROCS: String(ferretdbCores()),
};

/** The primary's soft memory limit by default (RAMPART_EMBEDDED_MEMORY_MB). */
export const DEFAULT_EMBEDDED_MEMORY_MB = 512;

/**
 * The primary's Go runtime beyond FERRETDB_ENV: a soft memory limit (Go's GOMEMLIMIT). With
 * GOGC=200 its heap may grow to three times what is live before a collection; a scan decodes a
 * whole collection into garbage (FerretDB grew from 1.0 to 3.9 GB in 5 minutes while the webhook
 * outbox's polls scanned a backlog). Near the limit the collector runs sooner and gives memory
 * back; far below it nothing changes (docs/embedded-database.md: 1,512 → 545 MB in bench/wal.ts).
 */
export function primaryEnv(memoryMb: number): Record<string, string> {
  return { GOMEMLIMIT: `${memoryMb}MiB` };
}

/** Where the embedded database's SQLite files are, under the data directory. */
export const embeddedSqliteDir = (dataDir: string): string => path.join(dataDir, 'ferretdb');

/** FerretDB's `--sqlite-url` for SQLite files in `dir`, with these pragmas (modernc's `_pragma=` parameters). */
export function sqliteUrl(dir: string, pragmas: readonly string[] = SQLITE_PRAGMAS): string {
  const query = pragmas.map((p) => `_pragma=${p}`).join('&');
  return `file:${dir.endsWith('/') ? dir : `${dir}/`}${query ? `?${query}` : ''}`;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/** Resolves once `child` (a FerretDB) accepts connections on loopback `port`; rejects if it exits or times out. */
export function waitForPort(port: number, child: ChildProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  return new Promise((resolve, reject) => {
    const attempt = () => {
      if (child.exitCode !== null) return reject(new Error(`FerretDB exited with code ${child.exitCode}`));
      const sock = net.connect(port, '127.0.0.1');
      sock.once('connect', () => {
        sock.destroy();
        resolve();
      });
      sock.once('error', () => {
        sock.destroy();
        if (Date.now() > deadline)
          reject(new Error(`FerretDB did not listen on 127.0.0.1:${port} within ${timeoutMs} ms`));
        else setTimeout(attempt, 100);
      });
    };
    attempt();
  });
}

/** Where the supervisor reports a FerretDB that exited by itself and its restarts. */
export interface EmbeddedLog {
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export interface EmbeddedOptions {
  /** Listen port (default: a free one). A restarted FerretDB listens on the same one. */
  port?: number;
  log?: EmbeddedLog;
  /** Restart FerretDB when it exits by itself (default true). */
  supervise?: boolean;
  /** Called with the new process id after each restart. */
  onRestart?: (pid: number | null) => void;
  /** Delays before successive restarts (default: at once, then 250 ms doubling to 2 s). */
  restartDelaysMs?: readonly number[];
  /** Build FerretDB when it is missing or stale (default true); false: fail instead (the service never builds at start). */
  install?: boolean;
  /** The primary's soft memory limit in MB (Go's GOMEMLIMIT; default DEFAULT_EMBEDDED_MEMORY_MB). */
  memoryMb?: number;
}

/** Restart delays after FerretDB exits by itself: at once, then growing, at most 2 s. */
const RESTART_DELAYS_MS = [0, 250, 500, 1000, 2000];
/** A FerretDB that ran this long before exiting starts the delays again from the first. */
const STABLE_MS = 30_000;

/**
 * Start FerretDB with its SQLite files in `dataDir`, listening on loopback only, and supervise
 * it: if it exits by itself (a crash, `kill -9`), it is started again on the same port and files,
 * so the MongoDB driver reconnects to it without Rampart noticing more than a few failed
 * operations (which its write queue retries). `stop()` ends supervision and the process.
 */
export async function startEmbedded(
  dataDir: string,
  portOrOptions: number | EmbeddedOptions = {},
): Promise<EmbeddedDatabase> {
  const opts: EmbeddedOptions = typeof portOrOptions === 'number' ? { port: portOrOptions } : portOrOptions;
  const sqliteDir = embeddedSqliteDir(dataDir);
  await stopOrphan(dataDir, sqliteDir);
  ownerOnly(dataDir, sqliteDir);
  return supervised(
    {
      dataDir,
      sqliteDir,
      stateDir: sqliteDir,
      logName: 'ferretdb.log',
      name: 'the embedded FerretDB',
      socket: true,
      env: primaryEnv(opts.memoryMb ?? DEFAULT_EMBEDDED_MEMORY_MB),
    },
    opts,
  );
}

export interface ReaderOptions extends EmbeddedOptions {
  /** Niceness of the reader process (0–19): how much it yields the CPU to everything else. */
  nice: number;
  /** The reader's soft memory limit in MB (Go's GOMEMLIMIT; default 256). */
  memoryMb?: number;
}

/**
 * The reader's Go runtime: a soft memory limit, and the collector at its default pace (GOGC=100,
 * not the primary's 200). A dashboard's scan decodes many documents at once; without a limit the
 * heap grew to three times the largest scan and stayed there (28 → 739 MB over a 12-minute soak).
 * With it, the collector works harder near the limit and returns freed memory to the system, at
 * the cost of CPU the reader's low priority takes only when scoring leaves it idle. A scan that
 * needs more than the limit still gets it (the limit is soft): see docs/operations.md.
 */
export function readerEnv(memoryMb: number): Record<string, string> {
  return { FERRETDB_RELOAD_METADATA_ON_MISS: '1', GOGC: '100', GOMEMLIMIT: `${memoryMb}MiB` };
}

/**
 * A second FerretDB on the same SQLite files, for the analysts' reads only, at a lower CPU
 * priority (`nice`): a scan for a dashboard then takes only CPU that scoring leaves idle (SQLite
 * in WAL mode lets readers in other processes read while the primary writes). It is started
 * after the primary has created the database, and it reloads the list of collections when it
 * meets one it does not know (patch 0006), so collections created later are read too. Supervised
 * like the primary.
 */
export async function startEmbeddedReader(dataDir: string, opts: ReaderOptions): Promise<EmbeddedDatabase> {
  const sqliteDir = embeddedSqliteDir(dataDir);
  const stateDir = path.join(dataDir, 'ferretdb-reader');
  ownerOnly(stateDir);
  return supervised(
    {
      dataDir,
      sqliteDir,
      stateDir,
      logName: 'ferretdb-reader.log',
      name: "the analysts' FerretDB reader",
      env: readerEnv(opts.memoryMb ?? 256),
      nice: opts.nice,
    },
    opts,
  );
}

/**
 * Where the embedded FerretDB listens for Rampart: a Unix domain socket in its state directory
 * (owner-only, 0700), null when the path is too long for one (then loopback TCP). Measured under
 * `npm run bench`, a socket costs both processes less CPU per command than loopback TCP, whose
 * kernel work is charged to each side; FerretDB also keeps listening on loopback TCP.
 */
function unixSocketPath(stateDir: string): string | null {
  const socket = path.join(stateDir, 'ferretdb.sock');
  // sun_path holds 108 bytes on Linux (104 elsewhere), the terminating NUL included.
  return Buffer.byteLength(socket) < 100 ? socket : null;
}

interface Instance {
  dataDir: string;
  sqliteDir: string;
  stateDir: string;
  logName: string;
  /** How the supervisor's log lines name it. */
  name: string;
  env?: Record<string, string>;
  nice?: number;
  /** Serve Rampart through a Unix domain socket (the primary; dashboards' reader stays on TCP). */
  socket?: boolean;
}

async function supervised(instance: Instance, opts: EmbeddedOptions): Promise<EmbeddedDatabase> {
  const bin = ensureFerretdb(opts.install ?? true);
  const listenPort = opts.port ?? (await freePort());
  // Opened at once (a stream opens its file later): the log exists, owner-only, before FerretDB writes to it.
  const log = createWriteStream('', {
    fd: openSync(path.join(instance.dataDir, instance.logName), 'a', 0o600),
  });
  const socket = instance.socket ? unixSocketPath(instance.stateDir) : null;
  const args = [
    ...(socket ? [`--listen-unix=${socket}`] : []),
    '--handler=sqlite',
    `--sqlite-url=${sqliteUrl(instance.sqliteDir)}`,
    `--state-dir=${instance.stateDir}`,
    `--listen-addr=127.0.0.1:${listenPort}`,
    '--telemetry=disable',
    '--debug-addr=-',
    '--log-level=warn',
  ];
  const launch = (): ChildProcess => {
    // A FerretDB that was killed leaves its socket file behind, and a new one cannot bind over it
    // (this instance owns the directory; an orphan on the same files was stopped before).
    if (socket) rmSync(socket, { force: true });
    // Through a shell that sets an owner-only umask and then becomes FerretDB (`exec`: the same
    // process, signals and all): the SQLite files it creates while it runs (a new database, its
    // WAL and shared memory) are 0600 from the start, not only the ones there at launch.
    const c = spawn('/bin/sh', ['-c', 'umask 077 && exec "$0" "$@"', bin, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...FERRETDB_ENV, ...process.env, ...instance.env },
    });
    c.stdout?.pipe(log, { end: false });
    c.stderr?.pipe(log, { end: false });
    if (instance.nice !== undefined && c.pid !== undefined) {
      try {
        setPriority(c.pid, instance.nice);
      } catch (err) {
        opts.log?.warn(
          { err: err instanceof Error ? err.message : String(err) },
          `${instance.name}: could not lower its priority`,
        );
      }
    }
    return c;
  };
  let child = launch();
  await waitForPort(listenPort, child, 20_000);

  let stopping = false;
  let restarts = 0;
  let startedAt = Date.now();
  let timer: NodeJS.Timeout | null = null;
  const supervise = (c: ChildProcess) => {
    c.once('exit', (code, signal) => {
      if (stopping || opts.supervise === false) return;
      if (Date.now() - startedAt >= STABLE_MS) restarts = 0;
      const delays = opts.restartDelaysMs?.length ? opts.restartDelaysMs : RESTART_DELAYS_MS;
      const delay = delays[Math.min(restarts, delays.length - 1)] as number;
      restarts++;
      opts.log?.error({ code, signal, restartInMs: delay }, `${instance.name} exited; restarting it`);
      timer = setTimeout(() => {
        timer = null;
        if (stopping) return;
        startedAt = Date.now();
        child = launch();
        supervise(child);
        waitForPort(listenPort, child, 20_000).then(
          () => {
            opts.log?.warn({ pid: child.pid, restarts }, `${instance.name} is running again`);
            opts.onRestart?.(child.pid ?? null);
          },
          (err: unknown) =>
            opts.log?.error(
              { err: err instanceof Error ? err.message : String(err) },
              `${instance.name} did not come back; trying again`,
            ),
        );
      }, delay);
    });
  };
  supervise(child);

  return {
    uri: socket ? `mongodb://${encodeURIComponent(socket)}/` : `mongodb://127.0.0.1:${listenPort}/`,
    get pid() {
      return child.exitCode === null ? (child.pid ?? null) : null;
    },
    restart(why: string) {
      if (stopping || child.exitCode !== null || child.signalCode !== null) return;
      opts.log?.error(
        { why, pid: child.pid },
        `${instance.name} is not writing; killing it so that it is started again`,
      );
      child.kill('SIGKILL');
    },
    stop: () =>
      new Promise<void>((resolve) => {
        stopping = true;
        if (timer) clearTimeout(timer);
        if (child.exitCode !== null || child.signalCode !== null) {
          log.end();
          return resolve();
        }
        const kill = setTimeout(() => child.kill('SIGKILL'), 5000);
        child.once('exit', () => {
          clearTimeout(kill);
          log.end();
          resolve();
        });
        child.kill('SIGTERM');
      }),
  };
}

/** Where a running Rampart records its embedded database, so the CLI can use the same one. */
export const embeddedInfoFile = (dataDir: string) => path.join(dataDir, 'embedded.json');

interface EmbeddedInfo {
  uri?: unknown;
  /** The Rampart process that owns the database. */
  pid?: unknown;
  ferretdbPid?: unknown;
  /** The analysts' reader (startEmbeddedReader), if one runs. */
  readerPid?: unknown;
}

export function recordEmbedded(
  dataDir: string,
  db: EmbeddedDatabase,
  reader: EmbeddedDatabase | null = null,
): void {
  writeFileSync(
    embeddedInfoFile(dataDir),
    JSON.stringify({ uri: db.uri, pid: process.pid, ferretdbPid: db.pid, readerPid: reader?.pid ?? null }),
    { mode: 0o600 },
  );
}

/**
 * The data directory and the database's directory readable by this user only (the SQLite files
 * hold every event): created 0700, or made so, and the files already in them 0600 (an older
 * start's; FerretDB itself runs with an owner-only umask, see launch).
 */
function ownerOnly(...dirs: string[]): void {
  for (const dir of dirs) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    chmodSync(dir, 0o700);
    for (const name of readdirSync(dir)) {
      const file = path.join(dir, name);
      if (statSync(file).isFile()) chmodSync(file, 0o600);
    }
  }
}

function readInfo(dataDir: string): EmbeddedInfo | null {
  try {
    return JSON.parse(readFileSync(embeddedInfoFile(dataDir), 'utf8')) as EmbeddedInfo;
  } catch {
    return null;
  }
}

function alive(pid: unknown): pid is number {
  if (typeof pid !== 'number') return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * A Rampart killed without a chance to stop its FerretDB leaves it running on the same SQLite
 * files; a second server on them would be unsafe, so the orphan is stopped first.
 */
async function stopOrphan(dataDir: string, sqliteDir: string): Promise<void> {
  const info = readInfo(dataDir);
  if (!info || alive(info.pid)) return;
  for (const pid of [info.ferretdbPid, info.readerPid]) {
    if (!alive(pid)) continue;
    // Make sure the pid still is that FerretDB (pids are reused): its command line names our files.
    let cmdline = '';
    try {
      cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    } catch {
      continue;
    }
    if (!cmdline.includes('ferretdb') || !cmdline.includes(sqliteDir)) continue;
    process.kill(pid, 'SIGTERM');
    for (let i = 0; i < 50 && alive(pid); i++) await new Promise((r) => setTimeout(r, 100));
  }
}

/** Use the embedded database of a running Rampart, or start one for the duration of a command. */
export async function attachOrStartEmbedded(dataDir: string): Promise<EmbeddedDatabase> {
  const info = readInfo(dataDir);
  if (info && typeof info.uri === 'string' && alive(info.pid))
    return { uri: info.uri, pid: null, stop: async () => undefined };
  return startEmbedded(dataDir);
}
