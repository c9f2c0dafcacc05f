/**
 * What an event adds to the counter documents (counters.ts): the population and its habits when
 * it was legitimate, the sliding windows when it was an attempt, the day, the accounts an install
 * was used for. Commutative increments and set-adds only, within each set's cap.
 *
 * Pure: says what to add; the store adds it.
 */
import type { CounterBump } from '../ports';
import { epochWeight } from './behaviour-tables';
import {
  ACTIVITY_KEEP_MS,
  activityHabitKey,
  activityKey,
  appFingerprintKey,
  DAY_KEEP_MS,
  dayKey,
  dayOf,
  ENV_KEY,
  headersKey,
  interactionHabitKey,
  languageKey,
  machineKey,
  machineOf,
  popKey,
  POPULATION_HALF_LIFE_MS,
  POPULATION_KEEP_MS,
  POPULATION_LEVELS,
  proofHabitKey,
  releaseFingerprintKey,
  screenHabitKey,
  SET_CAP,
  snap,
  USUAL_SHARE_HALF_LIFE_MS,
  WINDOW_KEEP_MS,
  WINDOW_KINDS,
  windowKeys,
  type Snapshots,
  type WindowKind,
} from './counters';
import { LEVEL, type Features, type Level } from './features';
import { populationCounts } from './population-habits';
import { announced, appActivity } from './records';
import { slotOf } from './windows';
import { NEW_DOMAIN_BELOW, SCREENS_EXPECTED_FROM_OPENS } from './weights';

/** What an event was, for the counters. */
export interface Outcome {
  /** A login, pre-auth check, registration or reset request (not feedback). */
  attempt: boolean;
  failure: boolean;
  /** A successful login or registration that was allowed (legitimate evidence). */
  success: boolean;
  registration: boolean;
  /** It named an account Rampart has never seen. */
  unknownAccount: boolean;
  /** A login the application asked about after checking the password (whatever the verdict). */
  credentialed?: boolean;
  /** Its verdict challenged or denied it (Rampart stopped it). */
  stopped: boolean;
  /** A `$challenge.succeeded/failed` (the application reports challenge outcomes). */
  challengeFeedback: boolean;
  /**
   * A `$challenge.succeeded` answering a challenged login: whether that login carried a client
   * token, came from an app's HTTP stack, and the release it named. The client-token habits learn
   * from it as from an allowed login (below).
   */
  passedChallenge?: { fingerprinted: boolean; app: boolean; release: string | null };
  /** The account, for the distinct sets. */
  account: string | null;
  /** A sign-up whose browser language is rare in its address's country (its verdict's `language_country_mismatch`). */
  foreignLanguage?: boolean;
}

/**
 * Windows whose value many users share (a network operator, a request shape, an e-mail domain, a
 * machine model, the whole environment): written late (CounterBump.late), once a second however
 * many events touch them. An address's, a /24's and a device's windows are written at once: each
 * is touched by few events a second, so holding them would save nothing.
 */
const SHARED_WINDOWS: ReadonlySet<WindowKind> = new Set(['asn', 'shape', 'dom', 'env', 'mk']);

/**
 * The apps' and an app release's client-token habit, counted for a login an app made (with a
 * token or not): by an allowed login, and by a challenged one once its challenge is passed.
 */
function appHabitBumps(
  bumps: CounterBump[],
  login: { fingerprinted: boolean; app: boolean; release: string | null },
  popW: number,
  popInc: Readonly<Record<string, number>>,
): void {
  if (!login.app) return;
  bumps.push({
    key: appFingerprintKey(login.fingerprinted),
    inc: popInc,
    keepMs: POPULATION_KEEP_MS,
    late: 'population',
  });
  if (login.release)
    bumps.push({
      key: releaseFingerprintKey(login.release),
      inc: { [login.fingerprinted ? 'y' : 'n']: popW },
      keepMs: POPULATION_KEEP_MS,
      late: 'population',
    });
}

/** The counter changes an event makes. `s` is what was read (set sizes, to respect their caps). */
export function counterBumps(
  f: Features,
  o: Outcome,
  s: Snapshots,
  at: number,
  headers: { acceptLanguage: boolean; secFetch: boolean; clientHints: boolean; acceptEncoding?: boolean },
): CounterBump[] {
  const bumps: CounterBump[] = [];
  const popW = epochWeight(at, POPULATION_HALF_LIFE_MS);
  // One legitimate event's count, the same for every population document (the store only reads it).
  const popInc: Readonly<Record<string, number>> = { c: popW };
  const env: Record<string, number> = {};
  if (o.attempt) env.a = popW;
  if (o.failure) env.f = popW;
  if (o.unknownAccount) env.x = popW;
  // The usual share that a day's attempts on unknown accounts are held to (slowWave).
  if (o.attempt) {
    const shortW = epochWeight(at, USUAL_SHARE_HALF_LIFE_MS);
    env.aw = shortW;
    if (o.unknownAccount && !o.stopped) env.xw = shortW;
    if (o.registration && !o.stopped) env.rw = shortW;
  }
  if (o.challengeFeedback) env.fb = popW;
  if (o.registration) env.r = popW;
  if (o.success) env.c = popW;
  if (o.success && o.registration && f.emailDomain) {
    env.rs = popW;
    if (populationCounts(s, at).domain(f.emailDomain) < NEW_DOMAIN_BELOW) env.rn = popW;
  }
  if (Object.keys(env).length)
    bumps.push({
      key: ENV_KEY,
      inc: env,
      min: { first: at },
      keepMs: POPULATION_KEEP_MS,
      late: 'population',
    });
  if (o.success) {
    for (const level of POPULATION_LEVELS) {
      const v = f.values[level];
      if (v !== null)
        bumps.push({
          key: popKey(level, v),
          inc: popInc,
          keepMs: POPULATION_KEEP_MS,
          late: 'population',
        });
    }
    bumps.push({
      key: popKey('shape' as Level, f.shape),
      inc: popInc,
      keepMs: POPULATION_KEEP_MS,
      late: 'population',
    });
    if (f.emailDomain)
      bumps.push({
        key: popKey('dom' as Level, f.emailDomain),
        inc: popInc,
        keepMs: POPULATION_KEEP_MS,
        late: 'population',
      });
    const country = f.values[LEVEL.country];
    const language = f.values[LEVEL.language];
    if (country && language)
      bumps.push({
        key: languageKey(country, language),
        inc: popInc,
        keepMs: POPULATION_KEEP_MS,
        late: 'population',
      });
    appHabitBumps(bumps, f, popW, popInc);
    const machine = machineOf(f);
    if (machine)
      bumps.push({
        key: machineKey(machine),
        inc: popInc,
        keepMs: POPULATION_KEEP_MS,
        late: 'population',
      });
    if (f.browserToken) {
      bumps.push({
        key: proofHabitKey(f.browserToken.proved),
        inc: popInc,
        keepMs: POPULATION_KEEP_MS,
        late: 'population',
      });
      if (f.browserToken.interacted !== null)
        bumps.push({
          key: interactionHabitKey(f.browserToken.interacted),
          inc: popInc,
          keepMs: POPULATION_KEEP_MS,
          late: 'population',
        });
    }
    if (f.mobile) {
      const activity = appActivity(s, f.mobile.deviceKey);
      bumps.push({
        key: activityHabitKey(announced(activity)),
        inc: popInc,
        keepMs: POPULATION_KEEP_MS,
        late: 'population',
      });
      // Screens are expected only from an install that opened before (its first ones may still be queued).
      if (activity !== null && activity.opens >= SCREENS_EXPECTED_FROM_OPENS)
        bumps.push({
          key: screenHabitKey(activity.screens > 0),
          inc: popInc,
          keepMs: POPULATION_KEEP_MS,
          late: 'population',
        });
    }
  }
  // A passed challenge is the user being there, as an allowed login is: the client-token habits
  // (the environment's, the apps', an app release's) count the login it answered. Otherwise a class
  // of legitimate logins that `missing_fingerprint` challenges (an app release from before the
  // client, at first) would never teach the habit that challenges it: only the logins it let in do.
  const passed = o.passedChallenge;
  if (passed && !o.success) {
    bumps.push({
      key: popKey(LEVEL.fingerprint, passed.fingerprinted ? 'y' : 'n'),
      inc: popInc,
      keepMs: POPULATION_KEEP_MS,
      late: 'population',
    });
    appHabitBumps(bumps, passed, popW, popInc);
  }
  const browser = f.values[LEVEL.browser];
  if (o.attempt && browser) {
    const inc: Record<string, number> = { n: popW };
    if (headers.acceptLanguage) inc.al = popW;
    if (headers.secFetch) inc.sf = popW;
    if (headers.clientHints) inc.ch = popW;
    // For a native app's HTTP stack: logins whose password was right (the application asks for a
    // verdict after checking it), and failed logins: what tells the application's own app from a
    // script that borrows its library (see request-evidence.ts, appClientEvidence).
    if (f.app && o.credentialed) inc.ok = popW;
    if (f.app && o.failure) inc.fl = popW;
    // Apps' HTTP stacks add Accept-Encoding on their own (OkHttp, URLSession, Dart): counted for them.
    if (f.app && headers.acceptEncoding) inc.ae = popW;
    bumps.push({ key: headersKey(browser), inc, keepMs: POPULATION_KEEP_MS, late: 'population' });
  }
  // The accounts an install was used for (a phone opening account after account, wiped or not).
  if (f.mobile && o.account && (o.attempt || o.failure)) {
    const sets = snap(s, activityKey(f.mobile.deviceKey)).sets;
    if ((sets.u?.length ?? 0) < SET_CAP && !sets.u?.includes(o.account))
      bumps.push({ key: activityKey(f.mobile.deviceKey), add: { u: o.account }, keepMs: ACTIVITY_KEEP_MS });
  }
  if (!o.attempt && !o.failure) return bumps;
  // What every window counts of the event: one object, read (never changed) by the store for each.
  const inc: Record<string, number> = {};
  if (o.attempt) inc.a = 1;
  if (o.failure) inc.f = 1;
  if (o.success) inc.s = 1;
  if (o.registration) inc.r = 1;
  if (o.unknownAccount) inc.x = 1;
  for (const kind of WINDOW_KINDS) {
    const keys = windowKeys(f, kind);
    if (keys === null) continue;
    const key = keys[0];
    const bump: CounterBump = { key, inc, keepMs: WINDOW_KEEP_MS };
    if (kind === 'env') {
      const envInc: Record<string, number> = { ...inc };
      if (o.attempt) envInc[`a${slotOf(f)}`] = 1;
      if (o.unknownAccount) envInc[`x${slotOf(f)}`] = 1;
      if (o.failure) envInc[`f${slotOf(f)}`] = 1;
      if (o.registration) envInc[`r${slotOf(f)}`] = 1;
      if (o.registration && o.foreignLanguage) envInc.rl = 1;
      bump.inc = envInc;
    } else if (o.account) {
      // The environment-wide window counts; its sets would only hold everyone.
      const sets = snap(s, key).sets;
      const addU = (sets.u?.length ?? 0) < SET_CAP && !sets.u?.includes(o.account);
      const addUf = o.failure && (sets.uf?.length ?? 0) < SET_CAP && !sets.uf?.includes(o.account);
      if (addU && addUf) bump.add = { u: o.account, uf: o.account };
      else if (addU) bump.add = { u: o.account };
      else if (addUf) bump.add = { uf: o.account };
    }
    if (SHARED_WINDOWS.has(kind)) bump.late = true;
    bumps.push(bump);
  }
  const day: Record<string, number> = {};
  if (o.attempt) day.a = 1;
  if (o.unknownAccount) day.x = 1;
  if (o.failure) day.f = 1;
  if (o.registration) day.r = 1;
  if (Object.keys(day).length)
    bumps.push({ key: dayKey(dayOf(f)), inc: day, keepMs: DAY_KEEP_MS, late: true });
  return bumps;
}
