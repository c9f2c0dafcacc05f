/**
 * What the collector's proof of work costs (docs/client.md, "What the proof costs"), at one
 * difficulty, on challenges with random salts as the collector issues them:
 *
 *  1. A real page: headless Chromium (Debian's `chromium`, as the e2e tests use) loads the built
 *     browser script (dist/browser/rampart.js) and solves with its own solver,
 *     `Rampart.proveWork(salt, bits)`: on the page's main thread in slices that yield to the page
 *     (as it runs while the user types). Wall-clock ms per proof, and hashes per second.
 *  2. A stuffing run: Node solving the same, CPU ms per token (process.cpuUsage) and hashes per
 *     second, two ways: with node:crypto's SHA-256 in one tight loop (what a script would write
 *     first), and with the page's own solver lifted out of rampart.js (run in a `vm` context with
 *     the few browser names it touches stubbed): a script that copies it pays what a page pays.
 *
 * The number of hashes a proof takes is geometric (mean 2^bits): the median is about 0.69 of
 * the mean, and one proof in a hundred takes 4.6 times the mean. Figures are printed, never
 * asserted anywhere.
 *
 *   npm run build && node dist/bench/client-pow.js [--bits 17] [--runs 40]
 */
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import vm from 'node:vm';
import puppeteer from 'puppeteer-core';
import { DEFAULT_POW_BITS, leadingZeroBits } from '../src/core/client/proof';

const arg = (name: string, fallback: number): number => {
  const i = process.argv.indexOf(`--${name}`);
  const v = i >= 0 ? Number(process.argv[i + 1]) : fallback;
  if (!Number.isInteger(v) || v < 0) throw new Error(`--${name} must be a whole number`);
  return v;
};

interface Run {
  ms: number;
  hashes: number;
}

function stats(label: string, unit: string, runs: Run[]): string {
  const ms = runs.map((r) => r.ms).sort((a, b) => a - b);
  const at = (q: number) => ms[Math.min(ms.length - 1, Math.floor(q * ms.length))] ?? 0;
  const mean = ms.reduce((a, b) => a + b, 0) / ms.length;
  const hashes = runs.reduce((a, r) => a + r.hashes, 0);
  const rate = hashes / (ms.reduce((a, b) => a + b, 0) / 1000);
  const f = (n: number) => n.toFixed(1).padStart(8);
  return `${label.padEnd(34)} ${unit.padEnd(14)} mean ${f(mean)}  median ${f(at(0.5))}  p90 ${f(at(0.9))}  max ${f(ms[ms.length - 1] ?? 0)}   ${(rate / 1e6).toFixed(2)} M hashes/s`;
}

/** Solve in Node as a script would: node:crypto, one hash per nonce. */
function nodeSolve(salt: string, bits: number): Run {
  const before = process.cpuUsage();
  let n = 0;
  while (leadingZeroBits(createHash('sha256').update(`${salt}${n}`).digest()) < bits) n++;
  const used = process.cpuUsage(before);
  return { ms: (used.user + used.system) / 1000, hashes: n + 1 };
}

const SCRIPT = path.join(__dirname, '..', 'browser', 'rampart.js');

/** The page's solver, `Rampart.proveWork`, run in Node: the built script in a context with the browser names it touches at load stubbed. */
function liftedSolver(): (salt: string, bits: number) => Promise<string> {
  if (!existsSync(SCRIPT)) throw new Error(`${SCRIPT} is missing: npm run build`);
  class Element {}
  const context: Record<string, unknown> = {
    document: {
      currentScript: null,
      addEventListener: () => undefined,
      querySelectorAll: () => [],
      cookie: '',
    },
    location: { origin: 'null', hostname: 'localhost', protocol: 'http:' },
    HTMLScriptElement: Element,
    HTMLInputElement: Element,
    HTMLFormElement: Element,
    performance,
    MessageChannel,
    setTimeout,
    clearTimeout,
  };
  context.window = context;
  vm.createContext(context);
  vm.runInContext(readFileSync(SCRIPT, 'utf8'), context);
  return (context.Rampart as { proveWork(s: string, b: number): Promise<string> }).proveWork;
}

async function liftedSolve(
  solve: (salt: string, bits: number) => Promise<string>,
  salt: string,
  bits: number,
): Promise<Run> {
  const before = process.cpuUsage();
  const nonce = await solve(salt, bits);
  const used = process.cpuUsage(before);
  return { ms: (used.user + used.system) / 1000, hashes: Number(nonce) + 1 };
}

async function pageSolve(salts: string[], bits: number): Promise<Run[]> {
  const chromium =
    process.env.RAMPART_CHROMIUM ??
    ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => existsSync(p));
  if (!chromium) throw new Error('Chromium is missing: apt-get install chromium (or set RAMPART_CHROMIUM)');
  const script = SCRIPT;
  if (!existsSync(script)) throw new Error(`${script} is missing: npm run build`);
  const browser = await puppeteer.launch({
    executablePath: chromium,
    headless: true,
    args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'],
  });
  try {
    const page = await browser.newPage();
    await page.setContent('<!doctype html><title>proof of work</title>');
    await page.addScriptTag({ content: readFileSync(script, 'utf8') });
    // One proof first: the solver's code is compiled and warm, as on a page that has run a while.
    await page.evaluate(
      (b) =>
        (
          globalThis as unknown as { Rampart: { proveWork(s: string, b: number): Promise<string> } }
        ).Rampart.proveWork('warm-up-salt-0123456789', Math.min(b, 12)),
      bits,
    );
    return await page.evaluate(
      async (list, b) => {
        const rampart = (
          globalThis as unknown as { Rampart: { proveWork(s: string, b: number): Promise<string> } }
        ).Rampart;
        const out: { ms: number; hashes: number }[] = [];
        for (const salt of list) {
          const t0 = performance.now();
          const nonce = await rampart.proveWork(salt, b);
          out.push({ ms: performance.now() - t0, hashes: Number(nonce) + 1 });
        }
        return out;
      },
      salts,
      bits,
    );
  } finally {
    await browser.close();
  }
}

async function main(): Promise<void> {
  const bits = arg('bits', DEFAULT_POW_BITS);
  const runs = arg('runs', 40);
  const salts = Array.from({ length: runs }, () => randomBytes(16).toString('base64url'));
  process.stdout.write(
    `proof of work at ${bits} bits (2^${bits} = ${2 ** bits} hashes expected), ${runs} challenges each\n`,
  );
  const page = await pageSolve(salts, bits);
  process.stdout.write(`${stats('Chromium page (rampart.js)', 'wall ms/proof', page)}\n`);
  nodeSolve('warm-up-salt-0123456789', Math.min(bits, 12));
  const node = salts.map((s) => nodeSolve(s, bits));
  process.stdout.write(`${stats('Node script (node:crypto)', 'CPU ms/token', node)}\n`);
  const solve = liftedSolver();
  await solve('warm-up-salt-0123456789', Math.min(bits, 12));
  const lifted: Run[] = [];
  for (const s of salts) lifted.push(await liftedSolve(solve, s, bits));
  process.stdout.write(`${stats("Node script (the page's solver)", 'CPU ms/token', lifted)}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
