#!/usr/bin/env node
/**
 * Build the web console (src/console/ui, Preact + uPlot) into dist/console/: app.js and app.css
 * bundled and minified by esbuild, favicon.svg, and index.html. Rampart serves them at /console
 * (src/console/server.ts). `--check` only type-checks (tsconfig.console.json).
 */
'use strict';
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const tsc = require.resolve('typescript/bin/tsc');

if (process.argv.includes('--check')) {
  execFileSync(process.execPath, [tsc, '-p', path.join(root, 'tsconfig.console.json')], { stdio: 'inherit' });
  process.exit(0);
}

const esbuild = require('esbuild');
const out = path.join(root, 'dist', 'console');
fs.mkdirSync(out, { recursive: true });
esbuild.buildSync({
  entryPoints: { app: path.join(root, 'src', 'console', 'ui', 'main.tsx') },
  outdir: out,
  bundle: true,
  minify: true,
  format: 'iife',
  target: ['es2020', 'chrome100', 'firefox100', 'safari15'],
  jsx: 'automatic',
  jsxImportSource: 'preact',
  legalComments: 'linked',
  logLevel: 'warning',
  define: { 'process.env.NODE_ENV': '"production"' },
});
// The page's icon: an SVG, served with its type (the page's CSP allows images from its own origin).
fs.copyFileSync(path.join(root, 'src', 'console', 'ui', 'favicon.svg'), path.join(out, 'favicon.svg'));
fs.writeFileSync(
  path.join(out, 'index.html'),
  `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>Rampart console</title>
<link rel="icon" type="image/svg+xml" href="/console/assets/favicon.svg">
<link rel="stylesheet" href="/console/assets/app.css">
<script defer src="/console/assets/app.js"></script>
</head>
<body>
<div id="app"><noscript>The Rampart console needs JavaScript.</noscript></div>
</body>
</html>
`,
);
const size = (f) => `${(fs.statSync(path.join(out, f)).size / 1024).toFixed(0)} KiB`;
process.stdout.write(
  `build-console: dist/console/app.js (${size('app.js')}), app.css (${size('app.css')}), favicon.svg, index.html\n`,
);
