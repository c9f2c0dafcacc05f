/**
 * The first start's message: the API secret generated for the `sandbox` environment, and what to
 * do next. Rampart's stdout is its JSON log, which systemd's journal, container runtimes and log
 * shippers keep, so the secret never goes there (nor to stderr). It goes to the terminal Rampart
 * was started from (its controlling terminal, /dev/tty), whatever stdout is redirected to; with no
 * terminal (a service manager, a container without `-t`, a pipeline in CI) it is written to a file
 * only this user can read (0600) in the data directory, and the log says where, not what.
 */
import { mkdirSync, openSync, closeSync, rmSync, writeSync } from 'node:fs';
import path from 'node:path';
import type { Logger } from './logger';

/** Where the secret is written when there is no terminal. */
export const SECRET_FILE = 'sandbox-secret.txt';

export interface GeneratedSecret {
  secret: string;
  /** The REST listener's URL (null when start-up failed before it listened). */
  httpUrl: string | null;
  dataDir: string;
}

export type Delivered = { to: 'terminal' } | { to: 'file'; file: string };

/** The message, as printed: the secret, the console, a first call, and what to do when it is lost. */
export function firstStartMessage(g: GeneratedSecret): string {
  const url = (g.httpUrl ?? 'http://127.0.0.1:3000').replace(/\/+$/, '');
  return [
    '',
    'Rampart created the "sandbox" environment. Its API secret, shown only now:',
    '',
    `  ${g.secret}`,
    '',
    'Next steps:',
    `  - Open the web console, ${url}/console, and sign in with this secret.`,
    '  - Score an event:',
    `      curl -u :${g.secret} -H 'content-type: application/json' ${url}/v1/risk \\`,
    `        -d '{"event": "$login", "user": {"id": "42"}, "context": {"ip": "81.2.69.142", "headers": {"User-Agent": "Mozilla/5.0"}}}'`,
    '  - Lost it? Add another secret (this one stays valid until you revoke it):',
    '      npx rampart secret add sandbox',
    '      npx rampart secret list sandbox            # hashes of the secrets',
    '      npx rampart secret revoke sandbox <hash>',
    '',
    '',
  ].join('\n');
}

/** Opens the controlling terminal for writing; throws when the process has none. */
export type TerminalOpener = () => number;
const openTerminal: TerminalOpener = () => openSync('/dev/tty', 'w');

/** Show the generated secret on the terminal, or else put it in an owner-only file; never in the log. */
export function deliverGeneratedSecret(
  g: GeneratedSecret,
  log: Logger,
  terminal: TerminalOpener = openTerminal,
): Delivered {
  const message = firstStartMessage(g);
  let fd: number | null = null;
  try {
    fd = terminal();
  } catch {
    // No controlling terminal (ENXIO): a service manager, a container, a detached process.
  }
  if (fd !== null) {
    try {
      writeSync(fd, message);
      log.info('created the sandbox environment; its generated API secret was shown on the terminal');
      return { to: 'terminal' };
    } catch {
      // A terminal that was hung up: fall back to the file.
    } finally {
      closeSync(fd);
    }
  }
  mkdirSync(g.dataDir, { recursive: true, mode: 0o700 });
  const file = path.join(g.dataDir, SECRET_FILE);
  // Created afresh, so it is 0600 whatever an earlier file's mode was.
  rmSync(file, { force: true });
  const out = openSync(file, 'wx', 0o600);
  try {
    writeSync(out, message);
  } finally {
    closeSync(out);
  }
  log.warn(
    { file },
    'created the sandbox environment; no terminal to show its generated API secret on, so it is in this file (readable by this user only): read it, then delete it',
  );
  return { to: 'file', file };
}
