/**
 * The evaluation's figures from the outcomes: per attack scenario the share stopped (challenged
 * or denied anywhere), at the pre-auth check and overall, the attacks on the web login and those
 * on the app's API apart; for legitimate users the friction (challenges and denies) by length of
 * history and the denies, for all of them and for web and app users apart (and the app's users
 * on Android and iOS apart), since the two meet different evidence; the AUC of the risk, and the
 * share of attacks caught at the thresholds where 1% and 5% of legitimate logins are challenged,
 * overall and within each surface (web users against web attacks, app users against app attacks).
 */
import type { Outcome } from './drive';
import { APP_SCENARIOS, SCENARIOS, type Channel, type Scenario } from './scenario';

export interface ScenarioFigures {
  scenario: Scenario;
  /** A part of the scenario's attempts (`from a new operator`: the victim never used its network operator). */
  part?: string;
  /** What the attack goes through: the web login or the app's API. */
  surface: Surface;
  attempts: number;
  stopped: number;
  stoppedPreauth: number;
  denied: number;
  errors: number;
}

export type Surface = 'web' | 'app';

/** Legitimate users' friction, for one group of users. */
export interface LegitFigures {
  logins: number;
  /** Challenged or denied by any of its verdicts (what the person met). */
  stopped: number;
  challenged: number;
  denied: number;
  preauthChallenged: number;
  byHistory: { bucket: string; logins: number; friction: number }[];
  signups: number;
  signupFriction: number;
  /** Of those, the sign-ups during an attack's sign-up wave. */
  waveSignups: number;
  waveSignupFriction: number;
}

/** How well the risk ranks attacks above legitimate attempts. */
export interface Ranking {
  auc: number;
  tprAt1: number;
  tprAt5: number;
}

export interface Figures {
  scenarios: ScenarioFigures[];
  /** Every legitimate user. */
  legit: LegitFigures;
  /** Web users, app users, and the app's users on Android and on iOS. */
  channels: Record<Surface | Exclude<Channel, 'web'>, LegitFigures>;
  auc: number;
  tprAt1: number;
  tprAt5: number;
  /** Web users against the attacks on the web login; app users against the attacks on the app's API. */
  surfaces: Record<Surface, Ranking>;
  errors: number;
  degraded: number;
  /** Attack logins to accounts whose own sign-up was stopped (played, not counted). */
  moot: number;
  /** The app's mobile client (`--client`): sessions registered, kept from an earlier open, refused by the collector; event batches not accepted. */
  appClient: { registered: number; kept: number; refused: number; eventsRejected: number; old: number };
  /** The browser's page events (castle-js 2.x's `page`): sent, not accepted. */
  pageEvents: { sent: number; rejected: number };
}

const BUCKETS: [string, number, number][] = [
  ['0', 0, 0],
  ['1-4', 1, 4],
  ['5-9', 5, 9],
  ['10-29', 10, 29],
  ['30+', 30, Infinity],
];

/** Mann–Whitney AUC: the chance an attack scores above a legitimate attempt (ties count half). */
export function auc(legit: number[], attacks: number[]): number {
  const all = [...legit.map((v) => ({ v, a: false })), ...attacks.map((v) => ({ v, a: true }))].sort(
    (x, y) => x.v - y.v,
  );
  let rankSum = 0;
  for (let i = 0; i < all.length;) {
    let j = i;
    while (j < all.length && all[j]!.v === all[i]!.v) j++;
    const rank = (i + j + 1) / 2;
    for (let k = i; k < j; k++) if (all[k]!.a) rankSum += rank;
    i = j;
  }
  const n1 = attacks.length;
  const n0 = legit.length;
  return n0 && n1 ? (rankSum - (n1 * (n1 + 1)) / 2) / (n0 * n1) : NaN;
}

/** Share of attacks scoring above the threshold that `fpr` of legitimate attempts exceed. */
function tprAt(legit: number[], attacks: number[], fpr: number): number {
  const sorted = [...legit].sort((a, b) => b - a);
  const threshold = sorted[Math.floor(fpr * sorted.length)] ?? 1;
  return attacks.filter((v) => v > threshold).length / Math.max(1, attacks.length);
}

const surfaceOf = (scenario: Scenario): Surface => (APP_SCENARIOS.includes(scenario) ? 'app' : 'web');

/** Friction of the legitimate users among `outcomes`. */
function legitFigures(outcomes: readonly Outcome[]): LegitFigures {
  // Every legitimate login, whichever verdict stopped it: a person challenged at the pre-auth
  // check (or after a typo) met friction even when the login verdict let them in, and one denied
  // there never reached it.
  const logins = outcomes.filter((o) => o.scenario === 'legit' && o.kind === 'login');
  const signups = outcomes.filter((o) => o.scenario === 'legit' && o.kind === 'register');
  const friction = (o: Outcome) => o.stopped;
  return {
    logins: logins.length,
    stopped: logins.filter(friction).length,
    challenged: logins.filter((o) => o.main?.action === 'challenge').length,
    denied: logins.filter((o) => o.main?.action === 'deny' || o.preauth?.action === 'deny').length,
    preauthChallenged: logins.filter((o) => o.preauth?.action === 'challenge').length,
    byHistory: BUCKETS.map(([bucket, lo, hi]) => {
      const inBucket = logins.filter((o) => o.history >= lo && o.history <= hi);
      return { bucket, logins: inBucket.length, friction: inBucket.filter(friction).length };
    }),
    signups: signups.length,
    signupFriction: signups.filter((o) => o.stopped).length,
    waveSignups: signups.filter((o) => o.duringWave).length,
    waveSignupFriction: signups.filter((o) => o.duringWave && o.stopped).length,
  };
}

function ranking(legit: readonly Outcome[], attacks: readonly Outcome[]): Ranking {
  const l = legit.map((o) => o.risk);
  const a = attacks.map((o) => o.risk);
  return { auc: auc(l, a), tprAt1: tprAt(l, a, 0.01), tprAt5: tprAt(l, a, 0.05) };
}

export function score(played: readonly Outcome[]): Figures {
  // Logins to accounts whose sign-up was stopped were turned away by the application itself:
  // counting them would count that sign-up twice (drive.ts, Outcome.moot).
  const outcomes = played.filter((o) => !o.moot);
  const figuresOf = (scenario: Scenario, list: readonly Outcome[], part?: string): ScenarioFigures => {
    return {
      scenario,
      ...(part ? { part } : {}),
      surface: surfaceOf(scenario),
      attempts: list.length,
      stopped: list.filter((o) => o.stopped).length,
      stoppedPreauth: list.filter((o) => o.preauth && o.preauth.action !== 'allow').length,
      denied: list.filter((o) => o.preauth?.action === 'deny' || o.main?.action === 'deny').length,
      errors: list.reduce((n, o) => n + o.errors, 0),
    };
  };
  const scenarios = SCENARIOS.filter((s) => s !== 'legit').flatMap((scenario) => {
    const list = outcomes.filter((o) => o.scenario === scenario);
    const fresh = list.filter((o) => o.newOperator === true);
    return fresh.length
      ? [figuresOf(scenario, list), figuresOf(scenario, fresh, 'from a new operator')]
      : [figuresOf(scenario, list)];
  });
  const legit = outcomes.filter((o) => o.scenario === 'legit');
  const attacks = outcomes.filter((o) => o.scenario !== 'legit');
  const all = ranking(legit, attacks);
  const onWeb = (o: Outcome) => o.channel === 'web';
  return {
    scenarios,
    legit: legitFigures(outcomes),
    channels: {
      web: legitFigures(legit.filter(onWeb)),
      app: legitFigures(legit.filter((o) => !onWeb(o))),
      android: legitFigures(legit.filter((o) => o.channel === 'android')),
      ios: legitFigures(legit.filter((o) => o.channel === 'ios')),
    },
    auc: all.auc,
    tprAt1: all.tprAt1,
    tprAt5: all.tprAt5,
    surfaces: {
      web: ranking(
        legit.filter(onWeb),
        attacks.filter((o) => surfaceOf(o.scenario) === 'web'),
      ),
      app: ranking(
        legit.filter((o) => !onWeb(o)),
        attacks.filter((o) => surfaceOf(o.scenario) === 'app'),
      ),
    },
    errors: outcomes.reduce((n, o) => n + o.errors, 0),
    degraded: outcomes.reduce((n, o) => n + o.degraded, 0),
    moot: played.length - outcomes.length,
    appClient: {
      registered: outcomes.filter((o) => o.app?.session === 'registered').length,
      kept: outcomes.filter((o) => o.app?.session === 'kept').length,
      refused: outcomes.filter((o) => o.app?.session === 'refused').length,
      eventsRejected: outcomes.reduce((n, o) => n + (o.app?.eventsRejected ?? 0), 0),
      old: outcomes.filter((o) => o.app?.session === 'none').length,
    },
    pageEvents: {
      sent: outcomes.reduce((n, o) => n + (o.page?.sent ?? 0), 0),
      rejected: outcomes.reduce((n, o) => n + (o.page?.rejected ?? 0), 0),
    },
  };
}

const pct = (n: number, d: number) => (d ? `${((100 * n) / d).toFixed(2)}%` : '-');

function attackRows(list: readonly ScenarioFigures[]): string {
  let out = '';
  for (const s of list.filter((x) => x.attempts > 0))
    out += `  ${(s.part ? `  ${s.part}` : s.scenario).padEnd(22)}${String(s.attempts).padStart(9)}${pct(s.stoppedPreauth, s.attempts).padStart(10)}${pct(s.stopped, s.attempts).padStart(10)}${pct(s.denied, s.attempts).padStart(10)}\n`;
  return out;
}

const legitLine = (l: LegitFigures) =>
  `${l.logins}; stopped anywhere ${pct(l.stopped, l.logins)} (the login verdict challenged ${pct(l.challenged, l.logins)}, the pre-auth check ${pct(l.preauthChallenged, l.logins)}), denied ${pct(l.denied, l.logins)}; sign-ups ${l.signups}, stopped ${pct(l.signupFriction, l.signups)}${l.waveSignups > 0 ? ` (during a sign-up wave ${l.waveSignups}, stopped ${pct(l.waveSignupFriction, l.waveSignups)})` : ''}`;
const historyLine = (l: LegitFigures) =>
  l.byHistory.map((b) => `  ${b.bucket}: ${pct(b.friction, b.logins)} of ${b.logins}`).join('');
const rankingLine = (r: Ranking) =>
  `AUC ${r.auc.toFixed(4)}; caught at 1%: ${pct(r.tprAt1, 1)}, at 5%: ${pct(r.tprAt5, 1)}`;

export function report(f: Figures): string {
  const apps =
    f.channels.app.logins + f.channels.app.signups > 0 ||
    f.scenarios.some((s) => s.surface === 'app' && s.attempts > 0);
  let out = '\nAttacks: share stopped (challenged or denied), at the pre-auth check and anywhere\n';
  out += `  ${'scenario'.padEnd(22)}${'attempts'.padStart(9)}${'pre-auth'.padStart(10)}${'stopped'.padStart(10)}${'denied'.padStart(10)}\n`;
  out += attackRows(f.scenarios.filter((s) => s.surface === 'web'));
  if (apps) out += `  on the app's API:\n${attackRows(f.scenarios.filter((s) => s.surface === 'app'))}`;
  const l = f.legit;
  out += `\nLegitimate logins: ${legitLine(l)}\n`;
  out += `  friction by history (successful logins before):${historyLine(l)}\n`;
  if (apps) {
    const c = f.channels;
    out += `  web users: ${legitLine(c.web)}\n    by history:${historyLine(c.web)}\n`;
    out += `  app users: ${legitLine(c.app)}\n    by history:${historyLine(c.app)}\n`;
    out += `    Android: ${legitLine(c.android)}\n      by history:${historyLine(c.android)}\n`;
    out += `    iOS: ${legitLine(c.ios)}\n      by history:${historyLine(c.ios)}\n`;
  }
  out += `\nAUC ${f.auc.toFixed(4)}; attacks caught with 1% of legitimate attempts challenged: ${pct(f.tprAt1, 1)}, with 5%: ${pct(f.tprAt5, 1)}; request errors ${f.errors}, degraded verdicts ${f.degraded}${f.moot ? `; ${f.moot} attack logins to accounts whose sign-up was stopped, not counted` : ''}\n`;
  if (apps)
    out += `  web users against web attacks: ${rankingLine(f.surfaces.web)}\n  app users against app attacks: ${rankingLine(f.surfaces.app)}\n`;
  const a = f.appClient;
  if (a.registered + a.kept + a.refused > 0) {
    out += `  the app's mobile client: sessions registered ${a.registered}, kept from an earlier open ${a.kept}, refused by the collector ${a.refused} (the app went on without a token); event batches not accepted ${a.eventsRejected}; steps from releases without the client ${a.old}\n`;
  }
  if (f.pageEvents.sent > 0)
    out += `  the browser's pages: events sent ${f.pageEvents.sent}, not accepted ${f.pageEvents.rejected}\n`;
  return out;
}
