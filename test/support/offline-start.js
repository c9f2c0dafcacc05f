#!/usr/bin/env node
/**
 * Run inside a network namespace with only loopback (test/integration/start.test.ts starts it
 * with `unshare -rn`): proves there is no route out, runs `npm start` as a user would, asks it
 * /healthz, a verdict and its root over HTTP, stops it with SIGTERM, and prints what it saw (and
 * how npm exited) as one JSON line on stdout. The service's own output goes to the files named by OUT_LOG / OUT_ERR.
 * (JavaScript, not TypeScript: it runs with plain node, in a namespace where nothing is installed.)
 *
 * Environment: PROJECT (the repository), SECRET (RAMPART_API_SECRET), OUT_LOG, OUT_ERR, and the
 * RAMPART_* variables npm start should see.
 */
/* global fetch */
'use strict';
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const path = require('node:path');

const port = process.env.RAMPART_HTTP_PORT;
const base = `http://127.0.0.1:${port}`;
const secret = process.env.SECRET;

/**
 * Polls GET `url` every 100 ms until it answers, resolving with its status and JSON body; or with
 * null once `gaveUp()` holds (the service exited: the test then reads its output). This file's
 * only timer: a polling helper of its own, as it runs with plain node and cannot use
 * test/support/wait.ts.
 */
async function untilAnswers(url, gaveUp) {
  const { setTimeout: pause } = require('node:timers/promises');
  while (!gaveUp()) {
    try {
      const r = await fetch(url);
      return { status: r.status, body: await r.json() };
    } catch {
      await pause(100);
    }
  }
  return null;
}

/** How connecting to a public address ends: an error code, or 'connected'. */
function reachOut() {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '1.1.1.1', port: 443 });
    socket.setTimeout(3000, () => {
      socket.destroy();
      resolve('timeout');
    });
    socket.on('connect', () => {
      socket.destroy();
      resolve('connected');
    });
    socket.on('error', (err) => resolve(err.code || String(err)));
  });
}

async function main() {
  const result = { network: await reachOut() };
  const child = spawn('npm', ['start'], {
    cwd: process.env.PROJECT,
    env: process.env,
    stdio: ['ignore', fs.openSync(process.env.OUT_LOG, 'w'), fs.openSync(process.env.OUT_ERR, 'w')],
  });
  let exited = null;
  const exit = new Promise((resolve) =>
    child.on('exit', (code, signal) => resolve((exited = { code, signal }))),
  );

  // Until it answers, or until it has exited (the test then reads its output).
  const health = await untilAnswers(`${base}/healthz`, () => exited !== null);
  if (health) {
    result.health = health;
    // A machine short of CPU is answered 503 with Retry-After while the service sheds load (its
    // event loop behind, or a first credential look-up past its wait): a client comes back then,
    // for at most a minute.
    const { setTimeout: pause } = require('node:timers/promises');
    const until = Date.now() + 60_000;
    let risk;
    for (;;) {
      risk = await fetch(`${base}/v1/risk`, {
        method: 'POST',
        headers: {
          authorization: `Basic ${Buffer.from(`:${secret}`).toString('base64')}`,
          'content-type': 'application/json',
        },
        body: JSON.stringify({
          event: '$login',
          user: { id: 'offline-1', email: 'ada@example.com' },
          context: { ip: '81.2.69.142', headers: { 'User-Agent': 'Mozilla/5.0 (Macintosh) Chrome/120.0' } },
        }),
      });
      const retryAfter = risk.headers.get('retry-after');
      if (risk.status !== 503 || retryAfter === null || Date.now() >= until) break;
      await risk.arrayBuffer();
      await pause(Number(retryAfter) * 1000);
    }
    result.risk = { status: risk.status, body: await risk.json() };
    const home = await fetch(`${base}/`, { redirect: 'manual' });
    result.home = { status: home.status, location: home.headers.get('location') };
    // SIGTERM to Rampart itself, as a service manager sends it (npm, killed, would not wait for it).
    const { pid } = JSON.parse(
      fs.readFileSync(path.join(process.env.RAMPART_DATA_DIR, 'embedded.json'), 'utf8'),
    );
    process.kill(pid, 'SIGTERM');
  }
  result.exit = await exit;
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

main().catch((err) => {
  process.stdout.write(`${JSON.stringify({ error: String(err && err.stack ? err.stack : err) })}\n`);
  process.exit(1);
});
