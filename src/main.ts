/** Entry point: read the configuration once, run, and drain on SIGTERM/SIGINT. */
import { ConfigError, loadConfig } from './config';
import { createLogger } from './app/logger';
import { run } from './app/runtime';

/** Longest a SIGTERM or SIGINT may take to end the process (service managers allow 30 s or more). */
const SHUTDOWN_LIMIT_MS = 28_000;

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig(process.env);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`rampart: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  const log = createLogger(config.logLevel);
  const running = await run(config, log);
  let signalled = false;
  const shutdown = (signal: string) => {
    if (signalled) return;
    signalled = true;
    log.info({ signal }, 'draining');
    // Whatever the load or the database, the process is gone within SHUTDOWN_LIMIT_MS (the drain
    // itself gives up writing before that, see Built.stop).
    setTimeout(() => {
      log.error({ limitMs: SHUTDOWN_LIMIT_MS }, 'shutdown did not finish in time; exiting');
      process.exit(1);
    }, SHUTDOWN_LIMIT_MS).unref();
    running.stop().then(
      () => process.exit(0),
      (err) => {
        log.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

main().catch((err) => {
  process.stderr.write(`rampart: failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
