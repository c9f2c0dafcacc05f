/**
 * `npm run eval`: Rampart's detection, measured. Starts Rampart as `npm start` does (on a fresh
 * embedded database, or MONGODB_URI), generates seeded, labelled traffic (scenario.ts) from real
 * network and browser data (world.ts), plays it over REST by event time (drive.ts) and prints the
 * figures (score.ts): per attack scenario the share stopped, legitimate friction by history
 * length, denies, AUC and the catch rate at 1% and 5% legitimate challenges, for web and app
 * users (and the attacks on each) apart and together.
 *
 *   npm run eval
 *   node dist/bench/eval/run.js --users 600 --days 45 --seed 7 --tokens --no-feedback --json out.json
 *   node dist/bench/eval/run.js --no-apps      # the web traffic alone, as before the app users
 */
import { writeFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { rng } from '../lib/traffic';
import { DEFAULT_MAX_EVENT_AGE_MS } from '../../src/core/verdicts/evaluate';
import { entry, serveChild } from '../lib/server';
import { Networks } from './world';
import { generate } from './scenario';
import { drive } from './drive';
import { report, score } from './score';
import { runInfo } from '../lib/run-info';

interface Options {
  users: number;
  days: number;
  seed: number;
  tokens: 'none' | 'opaque' | 'client';
  feedback: boolean;
  concurrency: number;
  attackScale: number;
  /** See GenerateOptions.attackHours (null: each campaign's own). */
  attackHours: number | null;
  /** See GenerateOptions: IPv6 homes and carriers, home IPv4 addresses that change. */
  ipv6: boolean;
  dynamicHome: boolean;
  /** The application forwards only the User-Agent header (a minimal integration). */
  uaOnly: boolean;
  /** See GenerateOptions.rotateAgents. */
  rotateAgents: boolean;
  /** The application skips the pre-auth check and filters failed logins instead (see DriveOptions.preauth). */
  preauth: boolean;
  /** See GenerateOptions.apps: app users and the attacks on the app's API (`--no-apps`: none). */
  apps: boolean;
  json: string | null;
  /** Write every outcome (one JSON line each), to study what fired. */
  dump: string | null;
}

const USAGE =
  'usage: run.js [--users N] [--days N] [--seed N] [--concurrency N] [--attack-scale X] [--attack-hours H] [--tokens | --client] [--no-feedback] [--ipv6] [--dynamic-home] [--ua-only] [--rotate-agents] [--no-preauth] [--no-apps] [--json FILE] [--dump FILE]';

function options(argv: string[]): Options {
  const o: Options = {
    users: 1200,
    days: 60,
    seed: 1,
    tokens: 'none',
    feedback: true,
    concurrency: 24,
    attackScale: 1,
    attackHours: null,
    ipv6: false,
    dynamicHome: false,
    uaOnly: false,
    rotateAgents: false,
    preauth: true,
    apps: true,
    json: null,
    dump: null,
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const next = () => {
      const v = argv[++i];
      if (v === undefined) throw new Error(USAGE);
      return v;
    };
    if (a === '--tokens') o.tokens = 'opaque';
    else if (a === '--client') o.tokens = 'client';
    else if (a === '--no-feedback') o.feedback = false;
    else if (a === '--ipv6') o.ipv6 = true;
    else if (a === '--dynamic-home') o.dynamicHome = true;
    else if (a === '--ua-only') o.uaOnly = true;
    else if (a === '--rotate-agents') o.rotateAgents = true;
    else if (a === '--no-preauth') o.preauth = false;
    else if (a === '--no-apps') o.apps = false;
    else if (a === '--json') o.json = next();
    else if (a === '--dump') o.dump = next();
    else if (a === '--attack-scale') o.attackScale = Number(next());
    else if (a === '--attack-hours') {
      const v = Number(next());
      if (!(v > 0)) throw new Error(USAGE);
      o.attackHours = v;
    } else if (a === '--users' || a === '--days' || a === '--seed' || a === '--concurrency') {
      const v = Number(next());
      if (!Number.isInteger(v) || v <= 0) throw new Error(USAGE);
      o[a.slice(2) as 'users' | 'days' | 'seed' | 'concurrency'] = v;
    } else throw new Error(`${USAGE} (unknown ${a})`);
  }
  return o;
}

/** Monday 00:00 UTC of the week `now` falls in (1970-01-01 was a Thursday). */
function weekStart(now: number): number {
  const day = Math.floor(now / 86_400_000);
  return (day - ((day + 3) % 7)) * 86_400_000;
}

async function main(): Promise<void> {
  const o = options(process.argv.slice(2));
  const started = performance.now();
  // The evaluation replays its days through the verdict endpoints, each verdict's `timestamp` the
  // event's time; the service's default bound (a year) takes them all as such. Only a longer
  // simulation raises it (docs/detection.md, "Event time").
  const bound =
    (o.days + 9) * 86_400_000 > DEFAULT_MAX_EVENT_AGE_MS
      ? { RAMPART_MAX_EVENT_AGE_DAYS: process.env.RAMPART_MAX_EVENT_AGE_DAYS ?? String(o.days + 9) }
      : {};
  // Every page proves work (docs/client.md): the detection is the same at any difficulty, so the
  // replay asks for an easy one (8 bits) rather than spend 50–170 ms of CPU on each of its logins.
  const proof = { RAMPART_CLIENT_POW_BITS: process.env.RAMPART_CLIENT_POW_BITS ?? '8' };
  const env = { ...process.env, ...bound, ...proof };
  const { ready, stop } = await serveChild(__filename, env);
  try {
    const r = rng(o.seed);
    const nets = new Networks(r);
    // The traffic ends at the start of this week (Monday 00:00 UTC): the same seed gives the same
    // steps all week, and the same ones, a whole number of weeks later, every week (the
    // generator's weekdays and hours stay where they were), so figures can be compared across days.
    const end = weekStart(Date.now());
    const steps = generate(
      {
        users: o.users,
        days: o.days,
        seed: o.seed,
        tokens: o.tokens,
        attackScale: o.attackScale,
        ...(o.attackHours !== null ? { attackHours: o.attackHours } : {}),
        ipv6: o.ipv6,
        dynamicHome: o.dynamicHome,
        rotateAgents: o.rotateAgents,
        apps: o.apps,
      },
      nets,
      r,
      end,
    );
    // An application that forwards only the User-Agent (and the address): the same steps, fewer headers.
    if (o.uaOnly)
      for (const s of steps)
        s.context.headers =
          s.context.headers['User-Agent'] === undefined
            ? {}
            : { 'User-Agent': s.context.headers['User-Agent'] };
    const appUsers = new Set(
      steps.filter((s) => s.scenario === 'legit' && s.channel !== 'web').map((s) => s.userId),
    ).size;
    const appSteps = steps.filter((s) => s.channel !== 'web');
    process.stdout.write(
      `rampart eval: seed ${o.seed}, ${o.users} ${o.apps ? `web users and ${appUsers} users of the app` : 'users (no app users)'} over ${o.days} days, ${steps.length} steps (${steps.filter((s) => s.scenario === 'legit').length} legitimate` +
        (o.apps
          ? `; from the app ${appSteps.filter((s) => s.scenario === 'legit').length} legitimate and ${appSteps.filter((s) => s.scenario !== 'legit').length} attacks on its API`
          : '') +
        `); ${o.tokens === 'client' ? "Rampart's browser and mobile clients" : o.tokens === 'opaque' ? 'client tokens' : 'headers only'}, challenge answers ${o.feedback ? 'reported' : 'not reported'}${o.ipv6 ? '; IPv6 homes and carriers' : ''}${o.dynamicHome ? '; home addresses that change' : ''}${o.uaOnly ? '; only the User-Agent header forwarded' : ''}${o.rotateAgents ? '; stuffing rotates user agents' : ''}${o.preauth ? '' : '; no pre-auth check, failed logins filtered'}${o.attackHours !== null ? `; each campaign spread over ${o.attackHours} hours` : ''}; ${ready.database}\n`,
    );
    let lastShown = 0;
    const outcomes = await drive(steps, {
      baseUrl: ready.rest,
      secret: ready.secret,
      publishableKey: o.tokens === 'client' ? ready.publishableKey : null,
      concurrency: o.concurrency,
      feedback: o.feedback,
      preauth: o.preauth,
      onProgress: (done, total) => {
        if (done - lastShown >= total / 10 || done === total) {
          lastShown = done;
          process.stderr.write(
            `  ${Math.round((100 * done) / total)}% (${((performance.now() - started) / 1000).toFixed(0)} s)\n`,
          );
        }
      },
    });
    const figures = score(outcomes);
    process.stdout.write(report(figures));
    process.stdout.write(`\n(${((performance.now() - started) / 1000).toFixed(0)} s)\n`);
    if (o.dump)
      writeFileSync(o.dump, outcomes.map((x, k) => JSON.stringify({ ...x, step: steps[k] })).join('\n'));
    if (o.json)
      writeFileSync(o.json, JSON.stringify({ kind: 'eval', run: runInfo(), options: o, figures }, null, 2));
  } finally {
    await stop();
  }
}

entry('eval', main);
