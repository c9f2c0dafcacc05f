/** Entry point: read the configuration once, run, and drain on SIGTERM/SIGINT. */
import { ConfigError, loadConfig } from './config';
import { createLogger } from './app/logger';
import { run } from './app/runtime';

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
