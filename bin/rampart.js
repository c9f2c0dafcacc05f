#!/usr/bin/env node
// `npx rampart …`: the command-line tool. Builds the project first when it has not been built.
'use strict';
const { existsSync } = require('node:fs');
const { execFileSync } = require('node:child_process');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const entry = path.join(root, 'dist', 'src', 'cli', 'main.js');
if (!existsSync(entry)) {
  // `npm ci` builds dist/; a checkout without it is built once, here (most of a minute).
  process.stderr.write('rampart: building dist/ first (npm run build)...\n');
  execFileSync(
    process.execPath,
    [
      path.join(root, 'node_modules', 'typescript', 'bin', 'tsc'),
      '-p',
      path.join(root, 'tsconfig.build.json'),
    ],
    { stdio: 'inherit' },
  );
}
require(entry).cli();
