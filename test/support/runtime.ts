/**
 * A runtime started as `npm start` starts it (src/app/runtime.ts), on an embedded database of its
 * own in a new directory under .data/: for the tests that need the whole process (its event loop,
 * its metrics, its database files) rather than the shared test database.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { loadConfig } from '../../src/config';
import { createLogger } from '../../src/app/logger';
import { run, type Running } from '../../src/app/runtime';

export interface TempRuntime {
  /** The data directory (the embedded database's files are in it). */
  dir: string;
  running: Running;
  /** Where REST answers, and the API secret it takes. */
  app: { baseUrl: string; secret: string };
  /** Stop the runtime and remove its directory. */
  stop(): Promise<void>;
}

/**
 * Start a runtime in `.data/<prefix>XXXXXX` with ports chosen by the system, a new API secret
 * (unless `env` gives one) and no log; `env` adds or overrides the settings (RAMPART_DB_NAME, …).
 * A start that fails removes its directory.
 */
export async function startTempRuntime(prefix: string, env: Record<string, string>): Promise<TempRuntime> {
  const dir = mkdtempSync(path.resolve(__dirname, '..', '..', '.data', prefix));
  const secret = env.RAMPART_API_SECRET ?? `sk_test_${randomBytes(16).toString('hex')}`;
  try {
    const config = loadConfig({
      RAMPART_DATA_DIR: dir,
      RAMPART_HTTP_PORT: '0',
      RAMPART_GRPC_PORT: '0',
      RAMPART_LOG_LEVEL: 'silent',
      ...env,
      RAMPART_API_SECRET: secret,
    });
    const running = await run(config, createLogger('silent'));
    return {
      dir,
      running,
      app: { baseUrl: running.httpUrl, secret },
      stop: async () => {
        try {
          await running.stop();
        } finally {
          rmSync(dir, { recursive: true, force: true });
        }
      },
    };
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}
