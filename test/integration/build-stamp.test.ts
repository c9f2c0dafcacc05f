/**
 * `npm start` rebuilds only when a source changed (scripts/start.js, build.js, build-stamp.js).
 * Driven as real processes on a project of one TypeScript file that has the repository's start
 * and build scripts, the real compiler, and stand-ins for the three bundlers that record each run.
 */
import { spawn, spawnSync } from 'node:child_process';
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
  existsSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '..', '..');
let project: string;

const BUNDLER = (name: string) =>
  `require('node:fs').appendFileSync(require('node:path').join(__dirname, '..', 'bundlers.log'), '${name}\\n');\n`;
const MAIN = (v: string) =>
  `declare const console: { log(s: string): void };\nconsole.log('running ${v}');\n`;

beforeAll(() => {
  project = mkdtempSync(path.join(tmpdir(), 'rampart-start-'));
  mkdirSync(path.join(project, 'scripts'));
  mkdirSync(path.join(project, 'src'));
  for (const f of ['start.js', 'build.js', 'build-stamp.js'])
    copyFileSync(path.join(ROOT, 'scripts', f), path.join(project, 'scripts', f));
  for (const name of ['browser', 'console', 'react-native'])
    writeFileSync(path.join(project, 'scripts', `build-${name}.js`), BUNDLER(name));
  symlinkSync(path.join(ROOT, 'node_modules'), path.join(project, 'node_modules'));
  writeFileSync(path.join(project, 'package.json'), '{ "name": "start-fixture", "private": true }\n');
  writeFileSync(
    path.join(project, 'tsconfig.build.json'),
    JSON.stringify({
      compilerOptions: {
        target: 'ES2022',
        module: 'commonjs',
        lib: ['ES2022'],
        types: [],
        strict: true,
        outDir: 'dist',
        rootDir: '.',
      },
      include: ['src'],
    }),
  );
  writeFileSync(path.join(project, 'src', 'main.ts'), MAIN('v1'));
});
afterAll(() => {
  rmSync(project, { recursive: true, force: true });
});

/** How many times the stand-in bundlers ran so far. */
function bundlerRuns(): number {
  const log = path.join(project, 'bundlers.log');
  return existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter(Boolean).length : 0;
}

/** `npm start`'s script in the fixture: what it printed, and how many bundler runs it caused. */
function start(): { status: number | null; stdout: string; stderr: string; bundled: number } {
  const before = bundlerRuns();
  const r = spawnSync(process.execPath, [path.join(project, 'scripts', 'start.js')], {
    cwd: project,
    encoding: 'utf8',
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr, bundled: bundlerRuns() - before };
}

it('builds before the first start, then runs what was built until a source changes', () => {
  const first = start();
  expect(first).toMatchObject({ status: 0, stdout: 'running v1\n', bundled: 3 });
  expect(first.stderr).toMatch(/building first/);
  // Build output never goes to stdout (the service's log).
  expect(first.stdout).not.toMatch(/build/);

  expect(start()).toEqual({ status: 0, stdout: 'running v1\n', stderr: '', bundled: 0 });

  // A newer modification time with the same content is no change.
  const main = path.join(project, 'src', 'main.ts');
  utimesSync(main, new Date(), new Date(Date.now() + 60_000));
  expect(start()).toEqual({ status: 0, stdout: 'running v1\n', stderr: '', bundled: 0 });

  writeFileSync(main, MAIN('v2'));
  expect(start()).toMatchObject({ status: 0, stdout: 'running v2\n', bundled: 3 });
  expect(start()).toMatchObject({ status: 0, stdout: 'running v2\n', bundled: 0 });

  // A new file is a change too, and so is a build configuration.
  writeFileSync(path.join(project, 'src', 'extra.ts'), 'export const extra = 1;\n');
  expect(start()).toMatchObject({ status: 0, stdout: 'running v2\n', bundled: 3 });
  const config = path.join(project, 'tsconfig.build.json');
  writeFileSync(
    config,
    readFileSync(config, 'utf8').replace('"strict":true', '"strict":true,"removeComments":true'),
  );
  expect(start()).toMatchObject({ status: 0, stdout: 'running v2\n', bundled: 3 });
  expect(start()).toMatchObject({ status: 0, bundled: 0 });
});

it('builds once when two start at the same time: the second waits for the first build', async () => {
  writeFileSync(path.join(project, 'src', 'main.ts'), MAIN('v4'));
  const before = bundlerRuns();
  const startOne = () =>
    new Promise<{ code: number | null; stdout: string }>((resolve) => {
      const child = spawn(process.execPath, [path.join(project, 'scripts', 'start.js')], {
        cwd: project,
        stdio: ['ignore', 'pipe', 'ignore'],
      });
      let stdout = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      child.on('close', (code) => resolve({ code, stdout }));
    });
  const both = await Promise.all([startOne(), startOne()]);
  expect(both).toEqual([
    { code: 0, stdout: 'running v4\n' },
    { code: 0, stdout: 'running v4\n' },
  ]);
  expect(bundlerRuns() - before).toBe(3);
  expect(existsSync(path.join(project, 'dist', '.build-lock'))).toBe(false);
});

it('does not start after a failed build, and builds again at the next start', () => {
  const main = path.join(project, 'src', 'main.ts');
  writeFileSync(main, `${MAIN('v3')}const broken: number = 'not a number';\n`);
  const failed = start();
  expect(failed.status).toBe(1);
  expect(failed.stdout).toBe('');
  expect(failed.stderr).toMatch(/the build failed; not starting/);

  writeFileSync(main, MAIN('v3'));
  expect(start()).toMatchObject({ status: 0, stdout: 'running v3\n', bundled: 3 });
});
