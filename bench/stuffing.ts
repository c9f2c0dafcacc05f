/**
 * `npm run bench -- --only stuffing`: does detection hold when the machine is slow? The same
 * seeded evaluation world (bench/eval: legitimate web and app users, credential stuffing from
 * hosting ranges, residential proxies and country-matched VPNs, stuffing on the app's API, bots)
 * is replayed twice, each time against a fresh Rampart on a fresh embedded database with its
 * default settings (150 ms verdict budget, load shedding on): once on a quiet machine, once beside
 * CPU hogs (busy loops at the same priority, one per core). A verdict whose state read misses its
 * budget is answered degraded, from the counters held in memory (docs/state.md); an attacker who
 * can make the service slow must not make it permissive. Printed per run: the stuffing stopped,
 * legitimate logins challenged, degraded verdicts, requests refused or failed, and how long the
 * replay took (the hogs' cost).
 */
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { rng } from './lib/traffic';
import { prioritiseGenerator, startHogs } from './lib/overload';
import { serveChild } from './lib/server';
import { Networks } from './eval/world';
import { generate, type Scenario, type Step } from './eval/scenario';
import { drive, type Outcome } from './eval/drive';

export interface StuffingOptions {
  users: number;
  days: number;
  seed: number;
  /** Busy loops beside Rampart in the second run. */
  hogs: number;
  concurrency: number;
  out: (s: string) => void;
}

/** The figures of one replay. */
export interface StuffingRun {
  hogs: number;
  seconds: number;
  /**
   * Credential-stuffing attempts (web and app API) and those stopped (challenge or deny); of those
   * that passed, how many met a request error (the application fails open, as Castle's SDKs do by
   * default) or a degraded verdict.
   */
  stuffing: { attempts: number; stopped: number; passedOnError: number; passedDegraded: number };
  /** Every other attack row together. */
  otherAttacks: { attempts: number; stopped: number };
  /** Legitimate logins and the share that met a challenge or a deny. */
  legitimate: { logins: number; stopped: number };
  /** Verdicts answered degraded: all of them, and those of stuffing attempts. */
  degraded: { all: number; stuffing: number };
  /** Requests that failed or were refused (429/503 included). */
  errors: number;
}

export interface StuffingFigures {
  quiet: StuffingRun;
  hogs: StuffingRun;
}

const isStuffing = (s: Scenario): boolean => s.startsWith('stuffing_') || s === 'app_stuffing';

function summarise(steps: readonly Step[], outcomes: readonly Outcome[], hogs: number, seconds: number) {
  const run: StuffingRun = {
    hogs,
    seconds,
    stuffing: { attempts: 0, stopped: 0, passedOnError: 0, passedDegraded: 0 },
    otherAttacks: { attempts: 0, stopped: 0 },
    legitimate: { logins: 0, stopped: 0 },
    degraded: { all: 0, stuffing: 0 },
    errors: 0,
  };
  outcomes.forEach((o, i) => {
    run.degraded.all += o.degraded;
    run.errors += o.errors;
    const step = steps[i];
    if (o.scenario === 'legit') {
      if (step?.kind !== 'login') return;
      run.legitimate.logins++;
      if (o.stopped) run.legitimate.stopped++;
      return;
    }
    if (!isStuffing(o.scenario)) {
      run.otherAttacks.attempts++;
      if (o.stopped) run.otherAttacks.stopped++;
      return;
    }
    run.stuffing.attempts++;
    run.degraded.stuffing += o.degraded;
    if (o.stopped) run.stuffing.stopped++;
    else if (o.errors > 0) run.stuffing.passedOnError++;
    else if (o.degraded > 0) run.stuffing.passedDegraded++;
  });
  return run;
}

async function replay(o: StuffingOptions, hogs: number): Promise<StuffingRun> {
  // The evaluation's server: Rampart as `npm start` runs it, on a fresh embedded database, with
  // the environment's own RAMPART_* settings (none: the defaults) and an easy proof of work, as
  // `npm run eval` asks for (the detection is the same at any difficulty).
  const env = { ...process.env, RAMPART_CLIENT_POW_BITS: process.env.RAMPART_CLIENT_POW_BITS ?? '8' };
  const { ready, stop } = await serveChild(path.join(__dirname, 'eval', 'run.js'), env);
  const started: ReturnType<typeof startHogs> = [];
  const restore = prioritiseGenerator();
  try {
    const r = rng(o.seed);
    const nets = new Networks(r);
    const end = Date.now() - (Date.now() % 86_400_000);
    const steps = generate(
      { users: o.users, days: o.days, seed: o.seed, tokens: 'client', attackScale: 1, apps: true },
      nets,
      r,
      end,
    );
    started.push(...startHogs(hogs));
    const t0 = performance.now();
    const outcomes = await drive(steps, {
      baseUrl: ready.rest,
      secret: ready.secret,
      publishableKey: ready.publishableKey,
      concurrency: o.concurrency,
      feedback: true,
      preauth: true,
    });
    return summarise(steps, outcomes, hogs, (performance.now() - t0) / 1000);
  } finally {
    for (const h of started) h.kill('SIGKILL');
    restore();
    await stop();
  }
}

const pct = (n: number, of: number) => (of === 0 ? '–' : `${((100 * n) / of).toFixed(2)}%`);

function line(name: string, r: StuffingRun): string {
  return (
    `  ${name.padEnd(22)} ${r.seconds.toFixed(0).padStart(5)} s  ` +
    `stuffing stopped ${pct(r.stuffing.stopped, r.stuffing.attempts)} of ${r.stuffing.attempts} ` +
    `(passed on a request error ${r.stuffing.passedOnError}, on a degraded verdict ${r.stuffing.passedDegraded}), ` +
    `other attacks ${pct(r.otherAttacks.stopped, r.otherAttacks.attempts)} of ${r.otherAttacks.attempts}, ` +
    `legitimate logins stopped ${pct(r.legitimate.stopped, r.legitimate.logins)} of ${r.legitimate.logins}; ` +
    `degraded verdicts ${r.degraded.all} (stuffing ${r.degraded.stuffing}), request errors ${r.errors}\n`
  );
}

export async function runStuffing(o: StuffingOptions): Promise<StuffingFigures> {
  o.out(
    `Stuffing on a slow machine: the evaluation's world (seed ${o.seed}, ${o.users} users, ${o.days} days, Rampart's clients) replayed at concurrency ${o.concurrency}, Rampart's default settings\n`,
  );
  const quiet = await replay(o, 0);
  o.out(line('quiet', quiet));
  const hogs = await replay(o, o.hogs);
  o.out(line(`${o.hogs} CPU hogs`, hogs));
  const share = (r: StuffingRun) =>
    r.stuffing.attempts ? (100 * r.stuffing.stopped) / r.stuffing.attempts : 0;
  o.out(
    `  with the hogs the replay took ×${(hogs.seconds / Math.max(quiet.seconds, 1e-9)).toFixed(2)} as long; stuffing stopped ${(share(hogs) - share(quiet)).toFixed(2)} points against the quiet run\n`,
  );
  return { quiet, hogs };
}

/** One hog per core: Rampart, its database and the generator then get about half the machine. */
export const DEFAULT_STUFFING_HOGS = os.availableParallelism();
