#!/usr/bin/env node
/**
 * `npm run build`: the server (tsc, into dist/src and dist/bench), the browser client, the web
 * console and @rampart/react-native, then the stamp that says what they were built from
 * (scripts/build-stamp.js). The stamp is removed first, so an interrupted build is never taken
 * for a complete one.
 *
 *   node scripts/build.js             build
 *   node scripts/build.js --if-stale  build only when a source changed since the last build
 *
 * Output goes to stderr: under `npm start` stdout is the service's JSON log.
 */
'use strict';
const { execFileSync } = require('node:child_process');
const path = require('node:path');
const stamp = require('./build-stamp');

const root = path.resolve(__dirname, '..');

function build() {
  const inputs = stamp.fingerprint(root);
  stamp.clearStamp(root);
  const run = (args) => execFileSync(process.execPath, args, { cwd: root, stdio: ['ignore', 2, 2] });
  run([require.resolve('typescript/bin/tsc'), '-p', path.join(root, 'tsconfig.build.json')]);
  for (const script of ['build-browser.js', 'build-console.js', 'build-react-native.js']) run([path.join(__dirname, script)]);
  stamp.writeStamp(inputs, root);
}

if (require.main === module) {
  if (process.argv.includes('--if-stale') && stamp.isFresh(root)) process.exit(0);
  try {
    build();
  } catch (err) {
    process.stderr.write(`build: failed${err && err.status ? ` (exit ${err.status})` : ''}\n`);
    process.exit(1);
  }
}

module.exports = { build };
