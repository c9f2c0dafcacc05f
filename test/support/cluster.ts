/**
 * Several Rampart processes on one database, as an operator runs them: each is `npm start`'s
 * script (scripts/start.js) with `MONGODB_URI` pointing at a database server the caller started,
 * its own data directory and ports (0: chosen by the system), and the shared settings every
 * instance of one deployment must share (the master key, the API secret, the webhook URL).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import path from 'node:path';
import { alive } from './process';
import { waitFor } from './wait';

const ROOT = path.resolve(__dirname, '..', '..');

/** Settings a test's own Rampart must not inherit from the suite's environment. */
const SUITE_ONLY = [
  'MONGODB_URI',
  'RAMPART_API_SECRET',
  'RAMPART_TEST_EMBEDDED',
  'RAMPART_PUBLIC_URL',
  'RAMPART_DB_NAME',
  'RAMPART_WEBHOOK_URL',
  'RAMPART_MASTER_KEY',
];

export interface Instance {
  readonly name: string;
  readonly child: ChildProcess;
  /** http://127.0.0.1:port */
  readonly http: string;
  /** 127.0.0.1:port */
  readonly grpc: string;
  /** What it has logged so far (JSON lines). */
  output(): string;
  /** Resolves with the exit code (null after a signal) once the process has ended. */
  exited(): Promise<number | null>;
  /** SIGTERM (a clean stop: queued writes are written) or SIGKILL (a crash). */
  stop(signal?: 'SIGTERM' | 'SIGKILL'): Promise<number | null>;
}

/** Start one instance; resolves once it logs that it listens (rejects if it exits first). */
export async function startInstance(name: string, settings: Record<string, string>): Promise<Instance> {
  const dataDir = mkdtempSync(path.join(ROOT, '.data', `${name}-`));
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const key of SUITE_ONLY) delete env[key];
  Object.assign(env, {
    RAMPART_DATA_DIR: dataDir,
    RAMPART_HTTP_PORT: '0',
    RAMPART_GRPC_PORT: '0',
    RAMPART_LOG_LEVEL: 'info',
    ...settings,
  });
  const child = spawn(process.execPath, [path.join(ROOT, 'scripts', 'start.js')], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  const ended = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  void ended.then(() => rmSync(dataDir, { recursive: true, force: true }));
  const gone = () => child.exitCode !== null || child.signalCode !== null;
  const line = await waitFor(
    () => {
      if (gone()) throw new Error(`${name} exited before listening:\n${out}`);
      return out.split('\n').find((l) => l.includes('"rampart listening"'));
    },
    { timeoutMs: 240_000, intervalMs: 50, what: `${name} to listen` },
  ).catch((err: Error) => {
    child.kill('SIGKILL');
    throw new Error(`${err.message}; it logged:\n${out.slice(-4000)}`);
  });
  const listening = JSON.parse(line) as { http: string; grpc: string };
  return {
    name,
    child,
    http: listening.http,
    grpc: listening.grpc,
    output: () => out,
    exited: () => ended,
    async stop(signal = 'SIGTERM') {
      if (child.pid !== undefined && alive(child.pid) && !gone()) child.kill(signal);
      return ended;
    },
  };
}
