/**
 * The evaluation's figures from the outcomes: per attack scenario the share stopped (challenged
 * or denied anywhere), at the pre-auth check and overall; for legitimate users the friction
 * (challenges and denies) by length of history, and the denies; the AUC of the risk, and the
 * share of attacks caught at the thresholds where 1% and 5% of legitimate logins are challenged.
 */
import type { Outcome } from './drive';
import { SCENARIOS, type Scenario } from './scenario';

export interface ScenarioFigures {
  scenario: Scenario;
  attempts: number;
  stopped: number;
  stoppedPreauth: number;
  denied: number;
  errors: number;
}

export interface Figures {
  scenarios: ScenarioFigures[];
  legit: {
    logins: number;
    /** Challenged or denied by any of its verdicts (what the person met). */
    stopped: number;
    challenged: number;
    denied: number;
    preauthChallenged: number;
    byHistory: { bucket: string; logins: number; friction: number }[];
    signups: number;
    signupFriction: number;
  };
  auc: number;
  tprAt1: number;
  tprAt5: number;
  errors: number;
  degraded: number;
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
  const all = [...legit.map((v) => ({ v, a: false })), ...attacks.map((v) => ({ v, a: true }))].sort((x, y) => x.v - y.v);
  let rankSum = 0;
  for (let i = 0; i < all.length; ) {
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

export function score(outcomes: readonly Outcome[]): Figures {
  const scenarios = SCENARIOS.filter((s) => s !== 'legit').map((scenario) => {
    const list = outcomes.filter((o) => o.scenario === scenario);
    return {
      scenario,
      attempts: list.length,
      stopped: list.filter((o) => o.stopped).length,
      stoppedPreauth: list.filter((o) => o.preauth && o.preauth.action !== 'allow').length,
      denied: list.filter((o) => o.preauth?.action === 'deny' || o.main?.action === 'deny').length,
      errors: list.reduce((n, o) => n + o.errors, 0),
    };
  });
  // Every legitimate login, whichever verdict stopped it: a person challenged at the pre-auth
  // check (or after a typo) met friction even when the login verdict let them in, and one denied
  // there never reached it.
  const logins = outcomes.filter((o) => o.scenario === 'legit' && o.kind === 'login');
  const signups = outcomes.filter((o) => o.scenario === 'legit' && o.kind === 'register');
  const friction = (o: Outcome) => o.stopped;
  const legitScores = outcomes.filter((o) => o.scenario === 'legit').map((o) => o.risk);
  const attackScores = outcomes.filter((o) => o.scenario !== 'legit').map((o) => o.risk);
  return {
    scenarios,
    legit: {
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
    },
    auc: auc(legitScores, attackScores),
    tprAt1: tprAt(legitScores, attackScores, 0.01),
    tprAt5: tprAt(legitScores, attackScores, 0.05),
    errors: outcomes.reduce((n, o) => n + o.errors, 0),
    degraded: outcomes.reduce((n, o) => n + o.degraded, 0),
  };
}

const pct = (n: number, d: number) => (d ? `${((100 * n) / d).toFixed(2)}%` : '-');

export function report(f: Figures): string {
  let out = '\nAttacks: share stopped (challenged or denied), at the pre-auth check and anywhere\n';
  out += `  ${'scenario'.padEnd(22)}${'attempts'.padStart(9)}${'pre-auth'.padStart(10)}${'stopped'.padStart(10)}${'denied'.padStart(10)}\n`;
  for (const s of f.scenarios.filter((x) => x.attempts > 0)) out += `  ${s.scenario.padEnd(22)}${String(s.attempts).padStart(9)}${pct(s.stoppedPreauth, s.attempts).padStart(10)}${pct(s.stopped, s.attempts).padStart(10)}${pct(s.denied, s.attempts).padStart(10)}\n`;
  const l = f.legit;
  out += `\nLegitimate logins: ${l.logins}; stopped anywhere ${pct(l.stopped, l.logins)} (the login verdict challenged ${pct(l.challenged, l.logins)}, the pre-auth check ${pct(l.preauthChallenged, l.logins)}), denied ${pct(l.denied, l.logins)}; sign-ups ${l.signups}, stopped ${pct(l.signupFriction, l.signups)}\n`;
  out += '  friction by history (successful logins before):';
  for (const b of l.byHistory) out += `  ${b.bucket}: ${pct(b.friction, b.logins)} of ${b.logins}`;
  out += `\n\nAUC ${f.auc.toFixed(4)}; attacks caught with 1% of legitimate attempts challenged: ${pct(f.tprAt1, 1)}, with 5%: ${pct(f.tprAt5, 1)}; request errors ${f.errors}, degraded verdicts ${f.degraded}\n`;
  return out;
}
