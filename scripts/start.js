#!/usr/bin/env node
/**
 * `npm start`: run the built service (dist/src/main.js) in this process. It first rebuilds, only
 * when a source changed since the last build (scripts/build-stamp.js: a content hash, ~20 ms).
 * Nothing is downloaded or installed here: the embedded database and the address lists come from
 * the install (`npm ci` runs scripts/setup.sh; so does `npm run setup`), and a missing one stops
 * start-up with a message naming the command.
 */
'use strict';
const { execFileSync } = require('node:child_process');
const path = require('node:path');
const stamp = require('./build-stamp');

const root = path.resolve(__dirname, '..');

if (!stamp.isFresh(root)) {
  process.stderr.write(
    'rampart: the sources changed since the last build (or it never ran): building first\n',
  );
  try {
    // --if-stale: a start that waited for another's build finds it done.
    execFileSync(process.execPath, [path.join(__dirname, 'build.js'), '--if-stale'], {
      cwd: root,
      stdio: ['ignore', 2, 2],
    });
  } catch {
    process.stderr.write('rampart: the build failed; not starting\n');
    process.exit(1);
  }
}
require(path.join(root, 'dist', 'src', 'main.js'));
