#!/usr/bin/env node
/**
 * The container's health check (Dockerfile HEALTHCHECK): exits 0 when this machine's Rampart
 * answers GET /healthz (or the path given as the first argument) with 200, 1 otherwise. It reads
 * the listener from the same variables as Rampart: RAMPART_HOST (a wildcard address is asked on
 * loopback), RAMPART_HTTP_PORT, and RAMPART_TLS_CERT (then HTTPS; the certificate is not verified,
 * the check is about this process). /healthz answers over plain HTTP also where the API requires
 * HTTPS (production behind the TLS proxy). The slim image has no curl; node is there.
 */
'use strict';
const http = require('node:http');
const https = require('node:https');

const env = process.env;
const wildcard = { '0.0.0.0': '127.0.0.1', '::': '::1', '': '127.0.0.1' };
const host = wildcard[env.RAMPART_HOST ?? ''] ?? env.RAMPART_HOST;
const port = Number(env.RAMPART_HTTP_PORT || 3000);
const client = env.RAMPART_TLS_CERT ? https : http;

const req = client.get(
  { host, port, path: process.argv[2] || '/healthz', rejectUnauthorized: false, timeout: 2500 },
  (res) => {
    res.resume();
    process.exit(res.statusCode === 200 ? 0 : 1);
  },
);
req.on('timeout', () => req.destroy(new Error('timed out')));
req.on('error', (err) => {
  process.stderr.write(`healthcheck: ${err.message}\n`);
  process.exit(1);
});
