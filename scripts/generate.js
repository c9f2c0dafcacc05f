#!/usr/bin/env node
// Regenerates every generated file: gRPC types (proto-loader-gen-types) and GraphQL types
// (graphql-codegen). `npm run generate:check` fails when the committed output is stale.
'use strict';
const { execFileSync } = require('node:child_process');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const run = (cmd, args) => execFileSync(cmd, args, { cwd: root, stdio: 'inherit' });

run(process.execPath, [path.join(__dirname, 'generate-grpc.js')]);
run(process.execPath, [path.join(root, 'node_modules', '.bin', 'graphql-codegen'), '--config', 'codegen.ts']);

if (process.argv.includes('--check')) {
  const out = execFileSync(
    'git',
    ['status', '--porcelain', '--', 'src/grpc/generated', 'src/graphql/generated'],
    { cwd: root },
  ).toString();
  if (out.trim()) {
    process.stderr.write(`generated code is stale; run \`npm run generate\` and commit:\n${out}`);
    process.exit(1);
  }
}
