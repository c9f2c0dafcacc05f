/**
 * The @rampart/react-native package as an app would receive it: scripts/build-react-native.js
 * builds it into a temporary folder and packs it; the tarball, unpacked into an app's
 * node_modules with @noble/hashes and no React Native, holds what package.json promises
 * and nothing else; the CommonJS build loads without React Native installed (the adapter
 * requires it only when created); the ES module loads; and a TypeScript consumer type-checks
 * against the shipped declarations. No database: it runs in seconds.
 */
import { execFileSync } from 'node:child_process';
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const root = path.resolve(__dirname, '..', '..');
const rootPkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));
let dir: string;
let pkgDir: string;

beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'rampart-rn-pack-'));
  execFileSync(process.execPath, [path.join(root, 'scripts', 'build-react-native.js'), '--out', dir], {
    cwd: root,
    stdio: 'pipe',
  });
  pkgDir = path.join(dir, 'react-native');
  // An app's node_modules, as npm would lay it: the tarball unpacked, its one dependency, no React Native.
  const modules = path.join(dir, 'app', 'node_modules');
  mkdirSync(path.join(modules, '@rampart'), { recursive: true });
  mkdirSync(path.join(modules, '@noble'), { recursive: true });
  execFileSync('tar', [
    'xzf',
    path.join(dir, `rampart-react-native-${rootPkg.version}.tgz`),
    '-C',
    path.join(modules, '@rampart'),
  ]);
  renameSync(path.join(modules, '@rampart', 'package'), path.join(modules, '@rampart', 'react-native'));
  symlinkSync(
    path.join(root, 'node_modules', '@noble', 'hashes'),
    path.join(modules, '@noble', 'hashes'),
    'dir',
  );
}, 60_000);

afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const run = (args: string[], cwd: string) => execFileSync(process.execPath, args, { cwd, encoding: 'utf8' });

describe('@rampart/react-native package', () => {
  it('packs the builds, the declarations, the README and package.json, nothing else', () => {
    const [report] = JSON.parse(
      execFileSync('npm', ['pack', pkgDir, '--dry-run', '--json', '--silent'], {
        cwd: dir,
        encoding: 'utf8',
      }),
    );
    const files = (report.files as { path: string }[]).map((f) => f.path).sort();
    expect(files.filter((f) => !f.startsWith('types/'))).toEqual([
      'README.md',
      'index.js',
      'index.mjs',
      'package.json',
    ]);
    expect(files.filter((f) => f.startsWith('types/'))).toContain('types/index.d.ts');
    expect(files.every((f) => /^(types\/[\w-]+\.d\.ts|README\.md|index\.m?js|package\.json)$/.test(f))).toBe(
      true,
    );
    expect(report.name).toBe('@rampart/react-native');
    // The build packed the tarball too.
    expect(readdirSync(dir)).toContain(`rampart-react-native-${rootPkg.version}.tgz`);
  });

  it('is installed as its README says: the tarball the build writes, by path', () => {
    const readme = readFileSync(path.join(root, 'src', 'react-native', 'README.md'), 'utf8');
    const install = readme.slice(readme.indexOf('## Install'), readme.indexOf('## Configure'));
    expect(install).toContain('node scripts/build-react-native.js');
    expect(install).toContain('dist/rampart-react-native-<version>.tgz');
    expect(install).toContain(`npm install ./vendor/rampart-react-native-${rootPkg.version}.tgz`);
    expect(install).toContain(
      `"@rampart/react-native": "file:vendor/rampart-react-native-${rootPkg.version}.tgz"`,
    );
    // Not `npm install @rampart/react-native`: the package is on no registry.
    expect(readme).not.toMatch(/npm install @rampart\/react-native/);
    // npm installs it by path into an app, under its name, with its dependency taken from the app's.
    const appDir = path.join(dir, 'installed-app');
    mkdirSync(path.join(appDir, 'vendor'), { recursive: true });
    copyFileSync(
      path.join(dir, `rampart-react-native-${rootPkg.version}.tgz`),
      path.join(appDir, 'vendor', `rampart-react-native-${rootPkg.version}.tgz`),
    );
    // The app already has @noble/hashes (here from this clone, so that nothing is downloaded); React Native's peers are not installed.
    const noble = path.join(root, 'node_modules', '@noble', 'hashes');
    writeFileSync(
      path.join(appDir, 'package.json'),
      JSON.stringify({
        name: 'shop-app',
        version: '1.0.0',
        private: true,
        dependencies: { '@noble/hashes': `file:${noble}` },
      }),
    );
    execFileSync(
      'npm',
      [
        'install',
        `./vendor/rampart-react-native-${rootPkg.version}.tgz`,
        '--offline',
        '--ignore-scripts',
        '--no-audit',
        '--no-fund',
        '--legacy-peer-deps',
      ],
      { cwd: appDir, stdio: 'pipe' },
    );
    expect(
      JSON.parse(readFileSync(path.join(appDir, 'package.json'), 'utf8')).dependencies[
        '@rampart/react-native'
      ],
    ).toBe(`file:vendor/rampart-react-native-${rootPkg.version}.tgz`);
    expect(
      JSON.parse(
        readFileSync(path.join(appDir, 'node_modules', '@rampart', 'react-native', 'package.json'), 'utf8'),
      ).name,
    ).toBe('@rampart/react-native');
  });

  it('declares its entry points, its one dependency and its peers', () => {
    const pkg = JSON.parse(readFileSync(path.join(pkgDir, 'package.json'), 'utf8'));
    expect(pkg).toMatchObject({
      name: '@rampart/react-native',
      version: rootPkg.version,
      license: 'Apache-2.0',
      main: './index.js',
      module: './index.mjs',
      types: './types/index.d.ts',
      'react-native': './index.js',
      exports: {
        '.': {
          types: './types/index.d.ts',
          'react-native': './index.js',
          import: './index.mjs',
          require: './index.js',
        },
      },
      dependencies: { '@noble/hashes': rootPkg.devDependencies['@noble/hashes'] },
    });
    expect(Object.keys(pkg.peerDependencies).sort()).toEqual([
      '@react-native-async-storage/async-storage',
      'jail-monkey',
      'react-native',
      'react-native-device-info',
      'react-native-get-random-values',
      'react-native-keychain',
    ]);
    expect(pkg.peerDependenciesMeta).toEqual({
      'jail-monkey': { optional: true },
      'react-native-get-random-values': { optional: true },
    });
    expect(readFileSync(path.join(pkgDir, 'README.md'), 'utf8')).toBe(
      readFileSync(path.join(root, 'src', 'react-native', 'README.md'), 'utf8'),
    );
  });

  it('the CommonJS build loads and runs without React Native; only creating the adapter needs it', () => {
    const script = `
      const m = require('@rampart/react-native');
      const out = { exports: Object.keys(m).sort(), clientId: m.Rampart.clientId(), same: m.default === m.Rampart };
      try { m.createReactNativePlatform(); } catch (e) { out.adapter = e.message.split('\\n')[0]; }
      m.Rampart.configure({ publishableKey: 'pk_x', baseUrl: 'https://rampart.example' }).catch((e) => {
        out.configure = e.message.split('\\n')[0];
        process.stdout.write(JSON.stringify(out));
      });`;
    const out = JSON.parse(run(['-e', script], path.join(dir, 'app')));
    expect(out.exports).toEqual(
      expect.arrayContaining([
        'Rampart',
        'RampartClient',
        'createRampart',
        'createReactNativePlatform',
        'default',
      ]),
    );
    expect(out).toMatchObject({ clientId: null, same: true });
    expect(out.adapter).toMatch(/Cannot find module 'react-native'/);
    expect(out.configure).toMatch(/Cannot find module 'react-native'/);
    // Bundlers follow only literal requires of the peers.
    const cjs = readFileSync(path.join(pkgDir, 'index.js'), 'utf8');
    for (const peer of [
      'react-native',
      '@react-native-async-storage/async-storage',
      'react-native-keychain',
      'react-native-device-info',
      'jail-monkey',
    ])
      expect(cjs).toContain(`require("${peer}")`);
    // @noble/hashes is a dependency, not bundled in.
    expect(cjs).toContain('require("@noble/hashes/sha2.js")');
    expect(cjs).not.toContain('class SHA256');
  });

  it("the core works from the built CommonJS over a platform of the app's own", () => {
    const script = `
      const { createRampart } = require('@rampart/react-native');
      const crypto = require('node:crypto');
      const mem = () => { const m = new Map(); return { getItem: async (k) => m.get(k) ?? null, setItem: async (k, v) => { m.set(k, v); }, removeItem: async (k) => { m.delete(k); } }; };
      const key = 'k'.repeat(43);
      const session = 'rps1.claims.mac';
      const res = (status, body) => ({ status, headers: { get: () => null }, text: async () => JSON.stringify(body) });
      const client = createRampart({
        storage: mem(), secureStorage: mem(),
        appState: { current: () => 'active', subscribe: () => () => {} },
        deviceInfo: async () => ({ platform: 'ios', osVersion: '17.5', model: 'iPhone15,3', app: { id: 'com.example.shop', name: 'Shop', version: '1.0' }, integrity: [] }),
        fetch: async (url) => url.endsWith('/token') ? res(201, { token: 't', expires_in: 300, session, session_key: key, session_expires_in: 86400, server_time: Date.now() }) : res(202, { accepted: 1 }),
        clock: { now: () => Date.now(), setTimeout, clearTimeout },
        randomBytes: (n) => new Uint8Array(crypto.randomBytes(n)),
        logger: { debug: () => {} },
      });
      client.configure({ publishableKey: 'pk_x', baseUrl: 'https://rampart.example' }).then(() => client.createRequestToken()).then((token) => {
        const signed = token.slice(0, token.lastIndexOf('.'));
        const ok = crypto.createHmac('sha256', key).update(signed).digest('base64url') === token.slice(token.lastIndexOf('.') + 1);
        client.destroy();
        process.stdout.write(JSON.stringify({ prefix: token.split('.')[0], ok }));
      });`;
    expect(JSON.parse(run(['-e', script], path.join(dir, 'app')))).toEqual({ prefix: 'rpm1', ok: true });
  });

  it('the ES module loads', () => {
    const out = run(
      [
        '--input-type=module',
        '-e',
        "const m = await import('@rampart/react-native'); process.stdout.write(JSON.stringify([typeof m.default.configure, typeof m.createRampart]));",
      ],
      path.join(dir, 'app'),
    );
    expect(JSON.parse(out)).toEqual(['function', 'function']);
    expect(readFileSync(path.join(pkgDir, 'index.mjs'), 'utf8')).not.toContain('__require');
  });

  it('a TypeScript app type-checks against the shipped declarations', () => {
    const app = path.join(dir, 'app');
    writeFileSync(
      path.join(app, 'app.ts'),
      `import Rampart, { createRampart, type Platform, type RampartConfig } from '@rampart/react-native';
const config: RampartConfig = { publishableKey: 'pk_x', baseUrl: 'https://rampart.example', baseURLAllowList: ['https://api.example.com'] };
void Rampart.configure({ ...config, screenTrackingEnabled: true });
declare const fetchImpl: (input: string, init?: { headers?: Record<string, string> }) => Promise<{ ok: boolean }>;
const api: typeof fetchImpl = Rampart.wrapFetch(fetchImpl);
void api('https://api.example.com/login');
const token: string | null = Rampart.clientId();
declare const platform: Platform;
void createRampart(platform).createRequestToken().then((t: string) => t.length);
void token;
`,
    );
    writeFileSync(
      path.join(app, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          noEmit: true,
          module: 'commonjs',
          moduleResolution: 'node',
          target: 'ES2020',
          lib: ['ES2020'],
          types: [],
          skipLibCheck: false,
        },
        files: ['app.ts'],
      }),
    );
    run([require.resolve('typescript/bin/tsc'), '-p', app], app);
  });
});
