/**
 * The embedded default database: a local FerretDB (MongoDB wire protocol, SQLite backend) under
 * the data directory, on loopback, started when MONGODB_URI is not given and stopped on shutdown.
 */
import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';

export interface EmbeddedDatabase {
  uri: string;
  /** The FerretDB process (null when attached to another Rampart's). */
  pid: number | null;
  stop(): Promise<void>;
}

const ROOT = path.resolve(__dirname, '..', '..', ...(__dirname.includes(`${path.sep}dist${path.sep}`) ? ['..'] : []));

export function ferretdbBinary(): string {
  return process.env.FERRETDB_BIN ?? path.join(ROOT, '.tools', 'bin', 'ferretdb');
}

/** Install FerretDB through the project's script when the binary is missing. */
export function ensureFerretdb(): string {
  const bin = ferretdbBinary();
  if (!existsSync(bin)) {
    execFileSync('bash', [path.join(ROOT, 'scripts', 'install-ferretdb.sh')], { stdio: 'inherit' });
  }
  return bin;
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

function waitForPort(port: number, child: ChildProcess, timeoutMs: number): Promise<void> {
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
        if (Date.now() > deadline) reject(new Error(`FerretDB did not listen on 127.0.0.1:${port} within ${timeoutMs} ms`));
        else setTimeout(attempt, 100);
      });
    };
    attempt();
  });
}

/** Start FerretDB with its SQLite files in `dataDir`, listening on loopback only. */
export async function startEmbedded(dataDir: string, port?: number): Promise<EmbeddedDatabase> {
  const bin = ensureFerretdb();
  const sqliteDir = path.join(dataDir, 'ferretdb');
  await stopOrphan(dataDir, sqliteDir);
  mkdirSync(sqliteDir, { recursive: true });
  const listenPort = port ?? (await freePort());
  const log = createWriteStream(path.join(dataDir, 'ferretdb.log'), { flags: 'a' });
  const child = spawn(
    bin,
    [
      '--handler=sqlite',
      // WAL with synchronous=NORMAL: commits survive a crash of Rampart or FerretDB; only an OS
      // crash or power loss can lose the last moments. It makes writes several times cheaper.
      `--sqlite-url=file:${sqliteDir}/?_pragma=synchronous(normal)`,
      `--state-dir=${sqliteDir}`,
      `--listen-addr=127.0.0.1:${listenPort}`,
      '--telemetry=disable',
      '--debug-addr=-',
      '--log-level=warn',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  child.stdout?.pipe(log);
  child.stderr?.pipe(log);
  await waitForPort(listenPort, child, 20_000);
  return {
    uri: `mongodb://127.0.0.1:${listenPort}/`,
    pid: child.pid ?? null,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
        child.once('exit', () => {
          clearTimeout(timer);
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
}

export function recordEmbedded(dataDir: string, db: EmbeddedDatabase): void {
  writeFileSync(embeddedInfoFile(dataDir), JSON.stringify({ uri: db.uri, pid: process.pid, ferretdbPid: db.pid }));
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
  const pid = info?.ferretdbPid;
  if (!info || alive(info.pid) || !alive(pid)) return;
  // Make sure the pid still is that FerretDB (pids are reused): its command line names our files.
  let cmdline = '';
  try {
    cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    return;
  }
  if (!cmdline.includes('ferretdb') || !cmdline.includes(sqliteDir)) return;
  process.kill(pid, 'SIGTERM');
  for (let i = 0; i < 50 && alive(pid); i++) await new Promise((r) => setTimeout(r, 100));
}

/** Use the embedded database of a running Rampart, or start one for the duration of a command. */
export async function attachOrStartEmbedded(dataDir: string): Promise<EmbeddedDatabase> {
  const info = readInfo(dataDir);
  if (info && typeof info.uri === 'string' && alive(info.pid)) return { uri: info.uri, pid: null, stop: async () => undefined };
  return startEmbedded(dataDir);
}
