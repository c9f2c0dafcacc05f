/**
 * Starting Rampart as a user does, in real processes over real HTTP:
 *  - `npm start` in a network namespace with only loopback (nothing reachable but the machine
 *    itself) starts the service from what the install left, and it answers /healthz and a verdict:
 *    start-up downloads and installs nothing;
 *  - the first start's generated secret goes to the terminal Rampart was started from, never into
 *    its JSON log (stdout, stderr); with no terminal, into an owner-only file in the data directory;
 *  - `GET /` sends a browser to the web console.
 * Each start has its own embedded database in a fresh data directory. (Generous timeouts: after a
 * source change, the first start builds, which takes most of a minute on a loaded 2-core machine.)
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, unlinkSync } from 'node:fs';
import path from 'node:path';
import { SECRET_FILE } from '../../src/app/first-start';
import { alive } from '../support/process';
import { waitFor } from '../support/wait';

const ROOT = path.resolve(__dirname, '..', '..');
const embeddedOnly = process.env.RAMPART_TEST_EMBEDDED === '1' ? describe : describe.skip;

/** Whether this machine lets us make a network namespace with only loopback (user namespaces, `ip`). */
function namespaceProblem(): string | null {
  const r = spawnSync('unshare', ['-rn', 'sh', '-c', 'ip link set lo up'], { encoding: 'utf8' });
  if (r.error) return `unshare is not installed (${r.error.message})`;
  if (r.status !== 0)
    return `\`unshare -rn sh -c 'ip link set lo up'\` fails here: ${(r.stderr || `exit ${r.status}`).trim()}`;
  return null;
}

/** The environment of a Rampart of its own: the suite's database (MONGODB_URI) is not its. */
function serviceEnv(dataDir: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    RAMPART_DATA_DIR: dataDir,
    RAMPART_LOG_LEVEL: 'info',
    ...extra,
  };
  for (const key of ['MONGODB_URI', 'RAMPART_API_SECRET', 'RAMPART_TEST_EMBEDDED', 'RAMPART_PUBLIC_URL'])
    if (!(key in extra)) delete env[key];
  return env;
}

type LogLine = { msg?: string; http?: string; file?: string; level?: number };

/** Parse a JSON log; every line must be JSON. */
function logLines(text: string): LogLine[] {
  return text
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as LogLine);
}

/** Resolves with Rampart's URL once its log (`out()`) says it listens; rejects if `child` exits first. */
async function listening(child: ChildProcess, out: () => string): Promise<string> {
  const line = await waitFor(
    () => {
      const found = out()
        .split('\n')
        .find((l) => l.includes('"rampart listening"'));
      if (!found && (child.exitCode !== null || child.signalCode !== null))
        throw new Error(`Rampart exited before listening:\n${out()}`);
      return found;
    },
    // The first start after a source change builds first: most of a minute on a loaded machine.
    { what: 'Rampart to log "rampart listening"', timeoutMs: 150_000, intervalMs: 100 },
  );
  return (JSON.parse(line) as LogLine).http as string;
}

function exited(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

async function verdict(url: string, secret: string): Promise<number> {
  const r = await fetch(`${url}/v1/risk`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(`:${secret}`).toString('base64')}`,
      'content-type': 'application/json',
    },
    body: JSON.stringify({
      event: '$login',
      user: { id: 'first-start' },
      context: { ip: '81.2.69.142', headers: { 'User-Agent': 'Mozilla/5.0 (Macintosh) Chrome/120.0' } },
    }),
  });
  await r.arrayBuffer();
  return r.status;
}

let dirs: string[] = [];
const dataDir = (name: string) => {
  const dir = mkdtempSync(path.join(ROOT, '.data', `${name}-`));
  dirs.push(dir);
  return dir;
};
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  dirs = [];
});

const problem = namespaceProblem();

embeddedOnly('npm start after the install', () => {
  // The install's build (npm ci runs it; `npm test` too, before the tests): after a source change
  // without it, npm start would build first, offline as well.
  beforeAll(() => {
    expect(
      spawnSync(process.execPath, [path.join(ROOT, 'scripts', 'build.js'), '--if-stale'], {
        cwd: ROOT,
        stdio: 'ignore',
      }).status,
    ).toBe(0);
  }, 240_000);

  const name = 'starts with no network at all and answers /healthz, a verdict and its root';
  (problem ? it.skip : it)(
    problem ? `${name} (SKIPPED: ${problem})` : name,
    async () => {
      const dir = dataDir('offline');
      const secret = `sk_offline_${randomBytes(12).toString('hex')}`;
      const result = spawnSync(
        'unshare',
        [
          '-rn',
          'sh',
          '-c',
          'ip link set lo up && exec node "$0"',
          path.join(ROOT, 'test', 'support', 'offline-start.js'),
        ],
        {
          cwd: ROOT,
          encoding: 'utf8',
          timeout: 170_000,
          env: serviceEnv(dir, {
            PROJECT: ROOT,
            SECRET: secret,
            RAMPART_API_SECRET: secret,
            // Its own namespace: nothing else listens there.
            RAMPART_HTTP_PORT: '3000',
            RAMPART_GRPC_PORT: '50051',
            OUT_LOG: path.join(dir, 'stdout.log'),
            OUT_ERR: path.join(dir, 'stderr.log'),
          }),
        },
      );
      const out = () =>
        `stdout:\n${readFileSync(path.join(dir, 'stdout.log'), 'utf8')}\nstderr:\n${readFileSync(path.join(dir, 'stderr.log'), 'utf8')}\nhelper: ${result.stdout}${result.stderr}`;
      expect({ status: result.status, helper: result.stderr }).toEqual({ status: 0, helper: '' });
      const seen = JSON.parse(result.stdout) as {
        network: string;
        health?: { status: number; body: unknown };
        risk?: { status: number; body: { policy?: { action?: string } } };
        home?: { status: number; location: string };
        exit: { code: number | null };
      };
      // No route out of the namespace: whatever start-up needed, it found on this machine.
      expect(seen.network).toBe('ENETUNREACH');
      if (!seen.health) throw new Error(`npm start never answered:\n${out()}`);
      expect(seen.health).toEqual({ status: 200, body: { status: 'ok' } });
      expect(seen.risk?.status).toBe(201);
      expect(['allow', 'challenge', 'deny']).toContain(seen.risk?.body.policy?.action);
      expect(seen.home).toEqual({ status: 302, location: '/console' });
      // Stopped by SIGTERM, it drained and exited 0 (and npm with it).
      expect(seen.exit.code).toBe(0);
      expect(
        logLines(readFileSync(path.join(dir, 'stdout.log'), 'utf8').replace(/^(?!\{).*$/gm, '')).map(
          (l) => l.msg,
        ),
      ).toContain('draining');
      // It ran what the install built: no build at start.
      expect(readFileSync(path.join(dir, 'stderr.log'), 'utf8')).not.toMatch(/building first/);
    },
    180_000,
  );
});

embeddedOnly('the first start', () => {
  it('without a terminal, puts the generated secret in an owner-only file, never in the log; GET / leads to the console', async () => {
    const dir = dataDir('first-file');
    let stdout = '';
    let stderr = '';
    // Detached: a session of its own, so it has no controlling terminal even when jest has one.
    const start = () =>
      spawn(process.execPath, [path.join(ROOT, 'scripts', 'start.js')], {
        cwd: ROOT,
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe'],
        env: serviceEnv(dir, {
          RAMPART_HTTP_PORT: '0',
          RAMPART_GRPC_PORT: '0',
          RAMPART_ANALYST_READER: 'shared',
        }),
      });
    let child = start();
    child.stdout?.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
    try {
      const url = await listening(child, () => stdout);
      const file = path.join(dir, SECRET_FILE);
      // Written once it listens, before it answers: the file is there now.
      await waitFor(() => logLines(stdout).some((l) => l.file === file), {
        what: `the log line naming ${file}`,
        timeoutMs: 30_000,
        intervalMs: 50,
      });
      expect(statSync(file).mode & 0o777).toBe(0o600);
      const message = readFileSync(file, 'utf8');
      const secret = /\b(sk_[A-Za-z0-9_-]+)/.exec(message)?.[1] as string;
      expect(secret).toBeDefined();
      expect(message).toContain(`${url}/console`);
      expect(message).toContain('npx rampart secret add sandbox');
      // The log says where the secret is, not what it is; and the log is JSON only.
      const lines = logLines(stdout);
      expect(lines.find((l) => l.file === file)?.msg).toMatch(/read it, then delete it/);
      expect(stdout).not.toContain(secret);
      expect(stderr).not.toContain(secret);

      expect(await verdict(url, secret)).toBe(201);
      const home = await fetch(`${url}/`, { redirect: 'manual' });
      expect(home.status).toBe(302);
      expect(home.headers.get('location')).toBe('/console');
      const page = await fetch(new URL(home.headers.get('location') as string, url));
      expect(page.status).toBe(200);
      expect(page.headers.get('content-type')).toMatch(/^text\/html/);
      await page.arrayBuffer();

      child.kill('SIGTERM');
      expect(await exited(child)).toBe(0);

      // The next start generates nothing: the sandbox and its secret are there.
      unlinkSync(file);
      stdout = '';
      child = start();
      child.stdout?.on('data', (d: Buffer) => (stdout += d.toString()));
      const again = await listening(child, () => stdout);
      expect(await verdict(again, secret)).toBe(201);
      expect(existsSync(file)).toBe(false);
      child.kill('SIGTERM');
      expect(await exited(child)).toBe(0);
    } finally {
      if (child.pid && alive(child.pid)) child.kill('SIGKILL');
    }
  }, 240_000);

  const haveScript = spawnSync('script', ['--version']).status === 0;
  (haveScript ? it : it.skip)(
    'on a terminal, shows the secret and the next steps there, with stdout (the log) redirected elsewhere',
    async () => {
      const dir = dataDir('first-tty');
      const log = path.join(dir, 'stdout.log');
      const err = path.join(dir, 'stderr.log');
      // util-linux `script` gives the command a pseudo-terminal of its own as its controlling
      // terminal, and copies what is written there to its own stdout: the "terminal" we read.
      const cmd = `exec node scripts/start.js > '${log}' 2> '${err}'`;
      const term = spawn('script', ['-qfec', cmd, '/dev/null'], {
        cwd: ROOT,
        stdio: ['pipe', 'pipe', 'pipe'],
        env: serviceEnv(dir, {
          RAMPART_HTTP_PORT: '0',
          RAMPART_GRPC_PORT: '0',
          RAMPART_ANALYST_READER: 'shared',
        }),
      });
      let terminal = '';
      term.stdout?.on('data', (d: Buffer) => (terminal += d.toString()));
      let pid = 0;
      try {
        const url = await listening(term, () => (existsSync(log) ? readFileSync(log, 'utf8') : ''));
        await waitFor(
          () => {
            if (terminal.includes('npx rampart secret revoke')) return true;
            if (term.exitCode !== null) throw new Error(`script exited: ${terminal}`);
            return false;
          },
          { what: 'the generated secret on the terminal', timeoutMs: 30_000, intervalMs: 50 },
        );
        const secret = /\b(sk_[A-Za-z0-9_-]+)/.exec(terminal)?.[1] as string;
        expect(secret).toBeDefined();
        expect(terminal).toContain(`${url}/console`);
        expect(terminal).toContain('npx rampart secret add sandbox');
        const stdout = readFileSync(log, 'utf8');
        const lines = logLines(stdout);
        expect(
          lines.some(
            (l) =>
              l.msg === 'created the sandbox environment; its generated API secret was shown on the terminal',
          ),
        ).toBe(true);
        expect(stdout).not.toContain(secret);
        expect(readFileSync(err, 'utf8')).not.toContain(secret);
        expect(existsSync(path.join(dir, SECRET_FILE))).toBe(false);
        expect(await verdict(url, secret)).toBe(201);

        pid = (JSON.parse(readFileSync(path.join(dir, 'embedded.json'), 'utf8')) as { pid: number }).pid;
        process.kill(pid, 'SIGTERM');
        expect(await exited(term)).toBe(0);
      } finally {
        if (pid && alive(pid)) process.kill(pid, 'SIGKILL');
        term.stdin?.end();
      }
    },
    240_000,
  );
});
