#!/usr/bin/env node
/**
 * Build @rampart/browser (src/browser/rampart.ts) into dist/browser/:
 *  - rampart.mjs: the ES module, as TypeScript compiles it;
 *  - rampart.js: the same code as a classic script that defines `window.Rampart`.
 * Rampart serves both at /client/v1/. `--check` only type-checks.
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
execFileSync(process.execPath, [tsc, '-p', config], { stdio: 'inherit' });
// The browser file imports only types (core/client/wire.ts), which compile to nothing.
const esm = fs.readFileSync(path.join(root, 'dist', 'browser-tsc', 'browser', 'rampart.js'), 'utf8');
if (/^import /m.test(esm)) throw new Error('build-browser: src/browser/rampart.ts may import types only');
const out = path.join(root, 'dist', 'browser');
fs.mkdirSync(out, { recursive: true });
const compiled = path.join(out, 'rampart.js');
fs.writeFileSync(path.join(out, 'rampart.mjs'), esm);

// The classic script: the module's top-level `export` keywords removed (the source exports only
// functions and interfaces), wrapped so that nothing but `window.Rampart` leaks.
const names = [...esm.matchAll(/^export (?:async )?function (\w+)/gm)].map((m) => m[1]);
if (names.length === 0 || /^export (?!(?:async )?function )/m.test(esm)) {
  throw new Error('build-browser: src/browser/rampart.ts must export functions only (export function …)');
}
const body = esm.replace(/^export (?=(?:async )?function )/gm, '');
fs.writeFileSync(compiled, `(function () {\n'use strict';\n${body}\nwindow.Rampart = { ${names.join(', ')} };\n})();\n`);
process.stdout.write(`build-browser: dist/browser/rampart.mjs and rampart.js (${names.join(', ')})\n`);
