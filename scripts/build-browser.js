#!/usr/bin/env node
/**
 * Build @rampart/browser (src/browser, entry index.ts) into dist/browser/, and pack it:
 *  - rampart.mjs: the ES module, bundled by esbuild (no dependencies);
 *  - rampart.js: the classic script (entry global.ts), which defines `window.Rampart` and
 *    `window.Castle`; Rampart serves both at /client/v1/;
 *  - package/: the npm package @rampart/browser (index.mjs, rampart.js, types/*.d.ts from
 *    tsconfig.browser.json, package.json with the root's version, README.md from
 *    src/browser/README.md), packed by `npm pack` into dist/rampart-browser-<version>.tgz.
 * `--check` only type-checks; `--out DIR` builds into DIR/browser and packs into DIR.
 */
'use strict';
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const tsc = require.resolve('typescript/bin/tsc');
const config = path.join(root, 'tsconfig.browser.json');

if (process.argv.includes('--check')) {
  execFileSync(process.execPath, [tsc, '-p', config, '--noEmit'], { stdio: 'inherit' });
  process.exit(0);
}

const outArg = process.argv.indexOf('--out');
const dist = outArg > 0 ? path.resolve(process.argv[outArg + 1]) : path.join(root, 'dist');
const out = path.join(dist, 'browser');
const pkgDir = path.join(out, 'package');
const rootPkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));

fs.rmSync(out, { recursive: true, force: true });
fs.mkdirSync(pkgDir, { recursive: true });

const esbuild = require('esbuild');
const bundle = (entry, format) =>
  esbuild.buildSync({
    entryPoints: [path.join(root, 'src', 'browser', entry)],
    bundle: true,
    platform: 'browser',
    // Browsers of the last years: what the script's own syntax needs, no more.
    target: 'es2019',
    format,
    legalComments: 'none',
    logLevel: 'warning',
    tsconfig: config,
    write: false,
  }).outputFiles[0].text;
const esm = bundle('index.ts', 'esm');
const classic = bundle('global.ts', 'iife');
// The client has no dependencies: nothing may be left to import at run time.
if (/^import\s/m.test(esm) || /\brequire\(/.test(esm))
  throw new Error('build-browser: the browser client must bundle to a module with no imports');
fs.writeFileSync(path.join(out, 'rampart.mjs'), esm);
fs.writeFileSync(path.join(out, 'rampart.js'), classic);

// The npm package: the module, the classic script (castle-js's `dist/castle.browser.js` counterpart), types.
fs.writeFileSync(path.join(pkgDir, 'index.mjs'), esm);
fs.writeFileSync(path.join(pkgDir, 'rampart.js'), classic);
execFileSync(
  process.execPath,
  [tsc, '-p', config, '--declaration', '--emitDeclarationOnly', '--outDir', path.join(pkgDir, 'types')],
  { stdio: 'inherit' },
);
const pkg = {
  name: '@rampart/browser',
  version: rootPkg.version,
  description:
    "Rampart's browser client: device evidence in signed request tokens, and client-side events (castle-js 2.x's API)",
  license: rootPkg.license,
  type: 'module',
  main: './index.mjs',
  module: './index.mjs',
  types: './types/browser/index.d.ts',
  exports: {
    '.': { types: './types/browser/index.d.ts', import: './index.mjs', default: './index.mjs' },
    './rampart.js': './rampart.js',
    './package.json': './package.json',
  },
  files: ['index.mjs', 'rampart.js', 'types', 'README.md'],
  sideEffects: true,
  keywords: ['fraud', 'account-takeover', 'device-fingerprint', 'castle', 'rampart'],
};
fs.writeFileSync(path.join(pkgDir, 'package.json'), `${JSON.stringify(pkg, null, 2)}\n`);
fs.copyFileSync(path.join(root, 'src', 'browser', 'README.md'), path.join(pkgDir, 'README.md'));

// npm pack of a folder: no network, no scripts of ours. --json keeps its chatter off the output.
const packed = JSON.parse(
  execFileSync('npm', ['pack', pkgDir, '--pack-destination', dist, '--json', '--silent'], {
    cwd: root,
    encoding: 'utf8',
  }),
);
const size = (f) => `${(fs.statSync(path.join(out, f)).size / 1024).toFixed(0)} KiB`;
process.stdout.write(
  `build-browser: ${path.relative(root, out) || out}/rampart.mjs (${size('rampart.mjs')}), rampart.js (${size('rampart.js')}), package/; ${path.relative(root, path.join(dist, packed[0].filename))}\n`,
);
