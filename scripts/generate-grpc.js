#!/usr/bin/env node
// Regenerates src/grpc/generated from proto/rampart/v1/*.proto with proto-loader-gen-types, using
// exactly the options the server and the client pass to loadSync (src/grpc/loader-options.json),
// so that the generated types describe the objects seen at run time. The output directory is
// replaced as a whole so that a removed message leaves no stale file behind.
'use strict';
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const protoRoot = path.join(root, 'proto');
const outDir = path.join(root, 'src', 'grpc', 'generated');
const options = JSON.parse(fs.readFileSync(path.join(root, 'src', 'grpc', 'loader-options.json'), 'utf8'));

/** loadSync options as proto-loader-gen-types flags. */
function optionFlags(opts) {
  const flags = [];
  for (const key of Object.keys(opts).sort()) {
    const value = opts[key];
    if (key === 'includeDirs') throw new Error('includeDirs is computed, not configured');
    if (value === true) flags.push(`--${key}`);
    else if (value === false) continue;
    else if (typeof value === 'string') flags.push(`--${key}`, value);
    else throw new Error(`loader option ${key}: unsupported value ${JSON.stringify(value)}`);
  }
  return flags;
}

const files = fs
  .readdirSync(path.join(protoRoot, 'rampart', 'v1'))
  .filter((f) => f.endsWith('.proto'))
  .sort()
  .map((f) => `rampart/v1/${f}`);

fs.rmSync(outDir, { recursive: true, force: true });
const bin = path.join(
  root,
  'node_modules',
  '.bin',
  process.platform === 'win32' ? 'proto-loader-gen-types.cmd' : 'proto-loader-gen-types',
);
execFileSync(
  bin,
  [
    ...optionFlags(options),
    '--includeComments',
    '--grpcLib',
    '@grpc/grpc-js',
    '--includeDirs',
    'proto',
    '--outDir',
    path.relative(root, outDir),
    ...files,
  ],
  { cwd: root, stdio: 'inherit' },
);
process.stdout.write(`generated gRPC types for ${files.join(', ')} in ${path.relative(root, outDir)}\n`);
