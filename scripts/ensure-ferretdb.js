#!/usr/bin/env node
// Makes sure the embedded database binary exists, unless MONGODB_URI points at a real MongoDB.
'use strict';
const { execFileSync } = require('node:child_process');
const path = require('node:path');

if (process.env.MONGODB_URI) process.exit(0);
execFileSync('bash', [path.join(__dirname, 'install-ferretdb.sh')], { stdio: 'inherit' });
