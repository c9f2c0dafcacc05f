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
 * One build at a time: two starts at once (or two test files) wait for each other's build rather
 * than write dist/ together, and the second then finds it fresh. Output goes to stderr: under
 * `npm start` stdout is the service's JSON log.
 */
'use strict';
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const stamp = require('./build-stamp');

const root = path.resolve(__dirname, '..');

function build() {
  const inputs = stamp.fingerprint(root);
  stamp.clearStamp(root);
  const run = (args) => execFileSync(process.execPath, args, { cwd: root, stdio: ['ignore', 2, 2] });
  run([require.resolve('typescript/bin/tsc'), '-p', path.join(root, 'tsconfig.build.json')]);
  for (const script of ['build-browser.js', 'build-console.js', 'build-react-native.js'])
    run([path.join(__dirname, script)]);
  stamp.writeStamp(inputs, root);
}

const alive = (pid) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return err.code === 'EPERM';
  }
};
const sleep = (ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

/** Run `fn` holding dist/.build-lock (a directory naming its holder's pid; a dead holder's is taken over). */
function locked(fn) {
  const lock = path.join(root, 'dist', '.build-lock');
  fs.mkdirSync(path.dirname(lock), { recursive: true });
  for (let waited = false; ; waited = true) {
    try {
      fs.mkdirSync(lock);
      fs.writeFileSync(path.join(lock, 'pid'), String(process.pid));
      break;
    } catch (err) {
      if (err.code !== 'EEXIST') throw err;
      let holder = NaN;
      try {
        holder = Number(fs.readFileSync(path.join(lock, 'pid'), 'utf8'));
      } catch {
        // being created or removed right now
      }
      if (Number.isInteger(holder) && holder > 0 && !alive(holder))
        fs.rmSync(lock, { recursive: true, force: true });
      else {
        if (!waited) process.stderr.write('build: another build is running; waiting for it\n');
        sleep(200);
      }
    }
  }
  try {
    return fn();
  } finally {
    fs.rmSync(lock, { recursive: true, force: true });
  }
}

if (require.main === module) {
  const ifStale = process.argv.includes('--if-stale');
  if (ifStale && stamp.isFresh(root)) process.exit(0);
  try {
    // Checked again once the lock is ours: the build we waited for may have been this one.
    locked(() => (ifStale && stamp.isFresh(root) ? undefined : build()));
  } catch (err) {
    process.stderr.write(`build: failed${err && err.status ? ` (exit ${err.status})` : ''}\n`);
    process.exit(1);
  }
}

module.exports = { build };
