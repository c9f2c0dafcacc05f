#!/usr/bin/env node
/**
 * Build @rampart/react-native (src/react-native) into dist/react-native/, and pack it:
 *  - index.js (CommonJS: what Metro and jest resolve) and index.mjs (ES module), bundled by
 *    esbuild, with the peer dependencies and @noble/hashes left as imports;
 *  - types/*.d.ts, from tsconfig.react-native.json (declarations only);
 *  - package.json (version from the root package.json) and README.md (src/react-native/README.md);
 *  - dist/rampart-react-native-<version>.tgz, by `npm pack`.
 * `--check` only type-checks; `--out DIR` builds into DIR/react-native and packs into DIR.
 */
'use strict';
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const tsc = require.resolve('typescript/bin/tsc');
const config = path.join(root, 'tsconfig.react-native.json');

if (process.argv.includes('--check')) {
  execFileSync(process.execPath, [tsc, '-p', config, '--noEmit'], { stdio: 'inherit' });
  process.exit(0);
}

const outArg = process.argv.indexOf('--out');
const dist = outArg > 0 ? path.resolve(process.argv[outArg + 1]) : path.join(root, 'dist');
const out = path.join(dist, 'react-native');
const rootPkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));

// The version is a constant in the source (Metro reads no package.json at run time): it must be this one.
const versionSource = fs.readFileSync(path.join(root, 'src', 'react-native', 'version.ts'), 'utf8');
const sdkVersion = /SDK_VERSION = '([^']+)'/.exec(versionSource)?.[1];
if (sdkVersion !== rootPkg.version) {
  throw new Error(
    `build-react-native: src/react-native/version.ts says ${sdkVersion}, package.json ${rootPkg.version}: make them equal`,
  );
}

/** Peer dependencies: the app installs them (native modules must be linked once, by the app). */
const PEERS = {
  'react-native': '>=0.71.0',
  '@react-native-async-storage/async-storage': '>=1.17.0',
  'react-native-keychain': '>=8.0.0',
  'react-native-device-info': '>=10.0.0',
  'react-native-get-random-values': '>=1.8.0',
  'jail-monkey': '>=2.8.0',
};
/** Optional: jail-monkey's checks are skipped without it; any crypto.getRandomValues polyfill will do. */
const OPTIONAL_PEERS = ['jail-monkey', 'react-native-get-random-values'];
const noble = rootPkg.devDependencies['@noble/hashes'];
if (!noble) throw new Error('build-react-native: @noble/hashes is missing from the root devDependencies');

fs.rmSync(out, { recursive: true, force: true });
fs.mkdirSync(out, { recursive: true });

const esbuild = require('esbuild');
const common = {
  entryPoints: [path.join(root, 'src', 'react-native', 'index.ts')],
  bundle: true,
  platform: 'neutral',
  // Hermes and JavaScriptCore of the supported React Native versions; Metro transpiles further if asked.
  target: 'es2019',
  external: [...Object.keys(PEERS), '@noble/hashes', '@noble/hashes/*'],
  legalComments: 'none',
  logLevel: 'warning',
  write: false,
};
const cjs = esbuild.buildSync({ ...common, format: 'cjs' }).outputFiles[0].text;
let esm = esbuild.buildSync({ ...common, format: 'esm' }).outputFiles[0].text;
// esbuild turns the adapter's lazy `require('react-native')` into `__require(…)` in an ES module,
// which no bundler can follow. Plain `require` calls are what Metro and webpack resolve.
esm = esm.replace(/\b__require\("/g, 'require("');
esm = esm.replace(/^var __require = [\s\S]*?\n\}\);\n/m, '');
if (/__require/.test(esm)) throw new Error('build-react-native: index.mjs still calls __require');
fs.writeFileSync(path.join(out, 'index.js'), cjs);
fs.writeFileSync(path.join(out, 'index.mjs'), esm);

execFileSync(process.execPath, [tsc, '-p', config, '--outDir', path.join(out, 'types')], {
  stdio: 'inherit',
});

const pkg = {
  name: '@rampart/react-native',
  version: rootPkg.version,
  description:
    "Rampart's React Native client: device sessions, request tokens minted on the device, and app events (Castle's mobile API shape)",
  license: rootPkg.license,
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
      default: './index.js',
    },
    './package.json': './package.json',
  },
  files: ['index.js', 'index.mjs', 'types', 'README.md'],
  sideEffects: false,
  dependencies: { '@noble/hashes': noble },
  peerDependencies: PEERS,
  peerDependenciesMeta: Object.fromEntries(OPTIONAL_PEERS.map((p) => [p, { optional: true }])),
  keywords: ['react-native', 'fraud', 'account-takeover', 'castle', 'rampart'],
};
fs.writeFileSync(path.join(out, 'package.json'), `${JSON.stringify(pkg, null, 2)}\n`);
fs.copyFileSync(path.join(root, 'src', 'react-native', 'README.md'), path.join(out, 'README.md'));

// npm pack of a folder: no network, no scripts of ours. --json keeps its chatter off the output.
const packed = JSON.parse(
  execFileSync('npm', ['pack', out, '--pack-destination', dist, '--json', '--silent'], {
    cwd: root,
    encoding: 'utf8',
  }),
);
const size = (f) => `${(fs.statSync(path.join(out, f)).size / 1024).toFixed(0)} KiB`;
process.stdout.write(
  `build-react-native: ${path.relative(root, out) || out}/index.js (${size('index.js')}), index.mjs, types/, package.json; ${path.relative(root, path.join(dist, packed[0].filename))}\n`,
);
