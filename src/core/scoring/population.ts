/**
 * What Rampart knows across users, per environment, kept in counter documents (one look-up per
 * key, changed by commutative deltas):
 *  - the population: how common each feature value is among legitimate events (decayed counts,
 *    half-life 30 days), for the likelihood ratio's numerator and for cold start; and how often
 *    each browser arrives with the headers an honest browser sends (to notice the ones missing);
 *  - sliding windows in event time, per address, /24 (/48), autonomous system, device, request
 *    shape, e-mail domain and the whole environment: attempts, failures, successes,
 *    registrations, attempts on accounts Rampart does not know, and the distinct accounts
 *    involved. A window is the current hour's document plus the previous hour's, weighted by how
 *    much of the previous hour still falls within the last sixty minutes.
 *
 * Pure: this module names the documents, reads snapshots of them, and says what to add.
 */
import type { CounterBump, CounterSnapshot } from '../ports';
import { atTime, epochWeight, type PopulationCounts } from './behaviour';
import type { Features, Level } from './features';
import { NEW_DOMAIN_BELOW, TOKEN_FLOW_MS, TOKEN_MAX_USES } from './weights';

export const POPULATION_HALF_LIFE_MS = 30 * 86_400_000;
/** Half-life of the usual share of attempts on unknown accounts (EnvironmentStats.usualUnknownShare). */
export const USUAL_SHARE_HALF_LIFE_MS = 7 * 86_400_000;
/** Population levels with counts (finer ones are too many to count: see behaviour.ts). */
export const POPULATION_LEVELS: readonly Level[] = ['cc', 'asn', 'dt', 'os', 'bf', 'br', 'ua', 'lang', 'fp'];
/** How long documents live: windows a day past their hour, population a year past its last use. */
export const WINDOW_KEEP_MS = 26 * 3_600_000;
export const POPULATION_KEEP_MS = 365 * 86_400_000;
/** Members kept per distinct set (enough to tell three from thirty). */
export const SET_CAP = 40;

/** Names of the distinct sets in counter documents (a purge removes the user from each). */
export const COUNTER_SETS = ['u', 'uf'] as const;
/** How an account appears in the distinct sets when only its e-mail is known. */
export const emailAccount = (email: string) => `email:${email.trim().toLowerCase()}`;

/** `mk`: the machine of a mobile token's phone (its model, OS and screen: one farm's emulator images share it) or of a browser token (its machine vector: a farm wiping storage between sign-ups keeps it). */
export const WINDOW_KINDS = ['ip', 'net', 'asn', 'dev', 'shape', 'dom', 'env', 'mk'] as const;
export type WindowKind = (typeof WINDOW_KINDS)[number];

const popKey = (level: Level, value: string) => `p:${level}:${value}`;
/** Legitimate events per country and browser language (how a country's browsers ask for pages). */
const languageKey = (cc: string, lang: string) => `p:cl:${cc}|${lang}`;
const ENV_KEY = 'p:*';
/** A domain whose decayed count of legitimate users is below NEW_DOMAIN_BELOW (weights.ts) is one no legitimate user has. */
export { NEW_DOMAIN_BELOW };
const headersKey = (browser: string) => `h:${browser}`;
const windowKey = (kind: WindowKind, value: string, hour: number) => `w:${kind}:${value}:${hour}`;
/** The environment's attempts, unknown accounts, failures and sign-ups of one day of event time (UTC days). */
const dayKey = (day: number) => `w:day:*:${day}`;
const dayOf = (f: Features) => Math.floor(f.hourBucket / 24);
/** Day documents live two days past their day. */
const DAY_KEEP_MS = 72 * 3_600_000;
export const emailKey = (emailHash: string) => `e:${emailHash}`;
/**
 * What a native app's install reported of itself (core/client/events.ts), per device key: installs
 * (`n`), opens (`o`), screens (`s`), closes (`c`), all events (`e`), its first event (`first`), and
 * the accounts that used it (set `u`: identified in the app, or named by a verdict that carried
 * its token). Kept a week past its last change, as the app events themselves.
 */
export const activityKey = (deviceKey: string) => `i:${deviceKey}`;
export const ACTIVITY_KEEP_MS = 7 * 86_400_000;
/** Legitimate logins with a mobile token whose install had, or had not, announced itself (`p:ma:y`, `p:ma:n`). */
const activityHabitKey = (announced: boolean) => `p:ma:${announced ? 'y' : 'n'}`;
/** The same for installs that had shown a screen (`p:ms:y`, `p:ms:n`). */
const screenHabitKey = (shown: boolean) => `p:ms:${shown ? 'y' : 'n'}`;
/** Legitimate events from native apps' HTTP stacks with, and without, a client token (`p:fpa:y`, `p:fpa:n`). */
const appFingerprintKey = (carried: boolean) => `p:fpa:${carried ? 'y' : 'n'}`;
/**
 * Legitimate logins with a verified browser token whose collection did, or did not, carry a proof
 * of work (`p:pow:y`, `p:pow:n`); and among those whose page reported its behaviour for the
 * request, whether a person did something on the page first (`p:ui:y`, `p:ui:n`).
 */
const proofHabitKey = (proved: boolean) => `p:pow:${proved ? 'y' : 'n'}`;
const interactionHabitKey = (yes: boolean) => `p:ui:${yes ? 'y' : 'n'}`;
/** Legitimate events from phones of one machine key (how common the model is here). */
const machineKey = (mk: string) => `p:mk:${mk}`;
/** The uses of one client token (single use, see tokenReplayed). */
const tokenKey = (jti: string) => `t:${jti}`;
/** How long a token's uses are remembered (longer than a token is accepted). */
export const TOKEN_USES_KEEP_MS = 15 * 60_000;
/** Calls one token may serve within one login flow (filter, risk, track), all within TOKEN_FLOW_MS, from one address (weights.ts). */
export { TOKEN_MAX_USES };

/** The value of each window kind for an event (null: the event has none). */
export function windowValues(f: Features): Record<WindowKind, string | null> {
  return { ip: f.values.ip, net: f.values.net, asn: f.values.asn, dev: f.values.dev, shape: f.shape, dom: f.emailDomain, env: '*', mk: machineOf(f) };
}

/** The machine an event names: a mobile token's phone model, or a browser token's machine vector (null: none). */
export const machineOf = (f: Features): string | null => f.mobile?.machineKey ?? f.machine;

/** Every counter document a verdict reads: population entries, header habits, windows, the e-mail's account and the client token's uses. */
export function keysToRead(f: Features, emailHash: string | null, tokenId: string | null = null): string[] {
  const keys = [ENV_KEY];
  for (const level of POPULATION_LEVELS) {
    const v = f.values[level];
    if (v !== null && level !== 'fp') keys.push(popKey(level, v));
  }
  // Both sides of the fingerprint level: its share, not only this event's count, is evidence.
  keys.push(popKey('fp', 'y'), popKey('fp', 'n'));
  if (f.values.bf) keys.push(headersKey(f.values.bf));
  keys.push(popKey('shape' as Level, f.shape));
  if (f.emailDomain) keys.push(popKey('dom' as Level, f.emailDomain));
  if (f.values.cc && f.values.lang) keys.push(languageKey(f.values.cc, f.values.lang));
  for (const [kind, value] of Object.entries(windowValues(f)) as [WindowKind, string | null][]) {
    if (value === null) continue;
    keys.push(windowKey(kind, value, f.hourBucket), windowKey(kind, value, f.hourBucket - 1));
  }
  keys.push(dayKey(dayOf(f)), dayKey(dayOf(f) - 1));
  if (emailHash) keys.push(emailKey(emailHash));
  if (tokenId) keys.push(tokenKey(tokenId));
  if (f.app) keys.push(appFingerprintKey(true), appFingerprintKey(false));
  if (f.browserToken) keys.push(proofHabitKey(true), proofHabitKey(false), interactionHabitKey(true), interactionHabitKey(false));
  if (f.mobile) keys.push(activityKey(f.mobile.deviceKey), activityHabitKey(true), activityHabitKey(false), screenHabitKey(true), screenHabitKey(false));
  const machine = machineOf(f);
  if (machine) keys.push(machineKey(machine));
  return keys;
}

/** What an install reported of itself (null: nothing: it never sent an app event, or not within a week). */
export interface AppActivity {
  installs: number;
  opens: number;
  screens: number;
  events: number;
  /** Distinct accounts that used it (identified in the app, or named by a verdict with its token). */
  accounts: number;
  /** Its first event (epoch ms). */
  first: number | null;
}

export function appActivity(s: Snapshots, deviceKey: string): AppActivity | null {
  const a = s.get(activityKey(deviceKey));
  if (!a) return null;
  const c = a.counts;
  return { installs: c.n ?? 0, opens: c.o ?? 0, screens: c.s ?? 0, events: c.e ?? 0, accounts: a.sets.u?.length ?? 0, first: c.first ?? null };
}

/** Whether an install's activity shows it announced itself (an install or an open). */
const announced = (a: AppActivity | null) => a !== null && a.installs + a.opens > 0;

/**
 * How many legitimate logins with a mobile token the environment had (decayed), the share of them
 * whose install had announced itself, and the share whose install had shown a screen.
 */
export function activityHabit(s: Snapshots, now: number): { events: number; share: number; screens: number } {
  const c = (key: string) => atTime(snap(s, key).counts.c ?? 0, now, POPULATION_HALF_LIFE_MS);
  const y = c(activityHabitKey(true));
  const n = c(activityHabitKey(false));
  const shown = c(screenHabitKey(true));
  const none = c(screenHabitKey(false));
  return { events: y + n, share: y + n > 0 ? y / (y + n) : 0, screens: shown + none > 0 ? shown / (shown + none) : 0 };
}

/** The share of the environment's legitimate events from native apps' HTTP stacks that carried a client token. */
export function appFingerprintShare(s: Snapshots, now: number): { events: number; share: number } {
  const y = atTime(snap(s, appFingerprintKey(true)).counts.c ?? 0, now, POPULATION_HALF_LIFE_MS);
  const n = atTime(snap(s, appFingerprintKey(false)).counts.c ?? 0, now, POPULATION_HALF_LIFE_MS);
  return { events: y + n, share: y + n > 0 ? y / (y + n) : 0 };
}

/**
 * Among the environment's legitimate logins with a verified browser token: how many (decayed) and
 * the share whose collection carried a proof of work; among those whose page reported its
 * behaviour for the request, how many and the share where a person did something on the page.
 */
export function proofHabit(s: Snapshots, now: number): { events: number; proved: number; reported: number; interacted: number } {
  const c = (key: string) => atTime(snap(s, key).counts.c ?? 0, now, POPULATION_HALF_LIFE_MS);
  const [y, n, ui, none] = [c(proofHabitKey(true)), c(proofHabitKey(false)), c(interactionHabitKey(true)), c(interactionHabitKey(false))];
  return { events: y + n, proved: y + n > 0 ? y / (y + n) : 0, reported: ui + none, interacted: ui + none > 0 ? ui / (ui + none) : 0 };
}

/** An app event, as the activity counts it. */
export interface ActivityEvent {
  type: string;
  at: number;
  /** The user an identify named. */
  userId: string | null;
}

/** The counter changes a batch of an install's events makes (`snapshot`: its document as read, for the set's cap). */
export function activityBump(deviceKey: string, snapshot: CounterSnapshot | undefined, events: readonly ActivityEvent[]): CounterBump[] {
  const key = activityKey(deviceKey);
  const inc: Record<string, number> = { e: events.length };
  const count = (field: string) => (inc[field] = (inc[field] ?? 0) + 1);
  let first = Infinity;
  for (const e of events) {
    first = Math.min(first, e.at);
    if (e.type === 'app_installed') count('n');
    else if (e.type === 'app_opened') count('o');
    else if (e.type === 'screen') count('s');
    else if (e.type === 'app_closed') count('c');
  }
  const bumps: CounterBump[] = [{ key, inc, min: { first }, keepMs: ACTIVITY_KEEP_MS }];
  const members = new Set(snapshot?.sets.u ?? []);
  for (const e of events) {
    if (!e.userId || members.has(e.userId) || members.size >= SET_CAP) continue;
    members.add(e.userId);
    bumps.push({ key, add: { u: e.userId }, keepMs: ACTIVITY_KEEP_MS });
  }
  return bumps;
}

/**
 * Whether this use of a client token is a replay: a token serves one login flow (the pre-auth
 * check, the verdict after the password, a track call), so more than TOKEN_MAX_USES calls, a
 * call more than a minute after its first, or a call from another address is a replay.
 */
export function tokenReplayed(s: Snapshots, tokenId: string, now: number, ip: string | null): boolean {
  const t = snap(s, tokenKey(tokenId));
  const uses = t.counts.n ?? 0;
  if (uses === 0) return false;
  const first = t.counts.first ?? now;
  const ips = t.sets.ip ?? [];
  return uses >= TOKEN_MAX_USES || now - first > TOKEN_FLOW_MS || (ip !== null && ips.length > 0 && !ips.includes(ip));
}

/** Record one use of a client token. */
export function tokenBump(tokenId: string, now: number, ip: string | null): CounterBump {
  return { key: tokenKey(tokenId), inc: { n: 1 }, min: { first: now }, ...(ip ? { add: { ip } } : {}), keepMs: TOKEN_USES_KEEP_MS };
}

/**
 * The counter documents read for an event, by key. A Map, not an object: each event names keys
 * never seen before (its address's windows), and an object would take a new hidden class for each.
 */
export type Snapshots = ReadonlyMap<string, CounterSnapshot>;
/** No counter documents (nothing read). */
export const NO_SNAPSHOTS: Snapshots = new Map();
const EMPTY: CounterSnapshot = { counts: {}, sets: {} };
const snap = (s: Snapshots, key: string) => s.get(key) ?? EMPTY;

/** The population as the behavioural model and the evidence read it, at `now`. */
export interface Population extends PopulationCounts {
  shape(shape: string): number;
  /** Legitimate events from phones of this machine key. */
  machine(mk: string): number;
  domain(domain: string): number;
  /** Legitimate events from this country with this browser language. */
  languageIn(cc: string, lang: string): number;
}

export function populationCounts(s: Snapshots, now: number): Population {
  const at = (key: string) => atTime(snap(s, key).counts.c ?? 0, now, POPULATION_HALF_LIFE_MS);
  return {
    total: at(ENV_KEY),
    count: (level, value) => at(popKey(level, value)),
    shape: (shape) => at(popKey('shape' as Level, shape)),
    machine: (mk) => at(machineKey(mk)),
    domain: (domain) => at(popKey('dom' as Level, domain)),
    languageIn: (cc, lang) => at(languageKey(cc, lang)),
  };
}

/** Legitimate events from a country, those of them with one browser language, and that language's share of all events. */
export interface LanguageCounts {
  country: number;
  inCountry: number;
  overall: number;
}

/** The event's browser language among the environment's legitimate events (null: no language or no country). */
export function languageCounts(pop: Population, f: Features): LanguageCounts | null {
  const { cc, lang } = f.values;
  if (!cc || !lang) return null;
  return { country: pop.count('cc', cc), inCountry: pop.languageIn(cc, lang), overall: pop.total > 0 ? pop.count('lang', lang) / pop.total : 0 };
}

/** The environment's long-run habits, decayed to `now`. */
export interface EnvironmentStats {
  /** Legitimate events. */
  legit: number;
  /** Attempts, failures, attempts on unknown accounts and sign-ups, per hour, over the last weeks. */
  attemptsPerHour: number;
  failuresPerHour: number;
  unknownPerHour: number;
  /**
   * The share of attempts that named an unknown account and that Rampart let through, over the
   * last week or so (half-life USUAL_SHARE_HALF_LIFE_MS): what a day of attempts is held to
   * (slowWave). Those Rampart stopped are left out, so that a campaign it stops does not become
   * what is usual; a short memory, so that the weeks after the environment started, when every
   * account was new, stop counting by the time they are over.
   */
  usualUnknownShare: number;
  /** The same for sign-ups: their share of attempts, those Rampart let through, over the last week or so. */
  usualSignupShare: number;
  registrationsPerHour: number;
  /** Legitimate (allowed) sign-ups with an e-mail address, and those of them whose domain no legitimate user had before. */
  signups: number;
  newDomainSignups: number;
  /** Answered challenges ($challenge.succeeded/failed): the application reports them. */
  feedback: number;
  /** Hours of history the environment has (caps the per-hour averages while it is young). */
  ageHours: number;
}

export function environmentStats(s: Snapshots, now: number): EnvironmentStats {
  const e = snap(s, ENV_KEY).counts;
  const d = (name: string) => atTime(e[name] ?? 0, now, POPULATION_HALF_LIFE_MS);
  const first = e.first ?? now;
  const ageHours = Math.max(1, (now - first) / 3_600_000);
  // A decayed count of a steady hourly rate r tends to r·H/ln 2 (H in hours).
  const span = Math.min(ageHours, POPULATION_HALF_LIFE_MS / 3_600_000 / Math.LN2);
  // Shares of the attempts counted with the short half-life (the same decay on both sides).
  const ofRecentAttempts = (name: string) => (e.aw ? (e[name] ?? 0) / e.aw : 0);
  return { legit: d('c'), attemptsPerHour: d('a') / span, failuresPerHour: d('f') / span, unknownPerHour: d('x') / span, usualUnknownShare: ofRecentAttempts('xw'), usualSignupShare: ofRecentAttempts('rw'), registrationsPerHour: d('r') / span, signups: d('rs'), newDomainSignups: d('rn'), feedback: d('fb'), ageHours };
}

/** How often a browser arrives with the headers an honest one sends (shares of its events). */
export interface HeaderHabits {
  events: number;
  acceptLanguage: number;
  secFetch: number;
  clientHints: number;
  /** For a native app's HTTP stack: logins whose password was right, and failed logins (decayed). */
  credentialed?: number;
  failed?: number;
  /** For a native app's HTTP stack: the share of its events with Accept-Encoding. */
  acceptEncoding?: number;
}

export function headerHabits(s: Snapshots, browser: string | null, now: number): HeaderHabits | null {
  if (!browser) return null;
  const c = snap(s, headersKey(browser)).counts;
  const d = (name: string) => atTime(c[name] ?? 0, now, POPULATION_HALF_LIFE_MS);
  const events = d('n');
  if (events <= 0) return { events: 0, acceptLanguage: 0, secFetch: 0, clientHints: 0, credentialed: 0, failed: 0 };
  return { events, acceptLanguage: d('al') / events, secFetch: d('sf') / events, clientHints: d('ch') / events, credentialed: d('ok'), failed: d('fl'), acceptEncoding: d('ae') / events };
}

/** One sliding window (the last sixty minutes of event time). */
export interface Window {
  attempts: number;
  failures: number;
  successes: number;
  registrations: number;
  unknown: number;
  /** Distinct accounts attempted, and those that failed. */
  accounts: number;
  failedAccounts: number;
  /** The environment-wide window only: the same counts over its last RECENT_SLOT_MINUTES slots. */
  recent?: RecentCounts;
  /** The environment-wide window only: attempts, unknown accounts, failures and sign-ups over the last 24 hours. */
  day?: DayCounts;
}

/**
 * The environment's last 24 hours of event time: today's document and yesterday's in proportion
 * to what is left of it. A campaign spread over days ("low and slow") keeps every hour, and every
 * five minutes, near their usual counts, but not the day's share of attempts on unknown accounts.
 */
export interface DayCounts {
  attempts: number;
  unknown: number;
  failures: number;
  registrations: number;
}

/** A sliding window's count: the current period's and the previous one's in proportion `w` (what is left of it). */
const sliding = (cur: CounterSnapshot, prev: CounterSnapshot, w: number) => (name: string) => (cur.counts[name] ?? 0) + w * (prev.counts[name] ?? 0);

function dayCounts(s: Snapshots, f: Features): DayCounts {
  const n = sliding(snap(s, dayKey(dayOf(f))), snap(s, dayKey(dayOf(f) - 1)), 1 - ((f.hourBucket % 24) + f.hourFraction) / 24);
  return { attempts: n('a'), unknown: n('x'), failures: n('f'), registrations: n('r') };
}

/**
 * The environment-wide window also counts attempts, attempts on unknown accounts, failures and
 * registrations per slot of RECENT_SLOT_MINUTES (fields `a<slot>`, `x<slot>`, `f<slot>`, `r<slot>`
 * of the hour's document), so that a wave is seen in its first minutes rather than once an hour's
 * worth has gathered.
 */
export const RECENT_SLOT_MINUTES = 5;
const SLOTS_PER_HOUR = 60 / RECENT_SLOT_MINUTES;
export interface RecentCounts {
  attempts: number;
  unknown: number;
  failures: number;
  registrations: number;
  /** Minutes covered: the previous slot whole and the current one so far (5–10). */
  minutes: number;
}

const slotOf = (f: Features) => Math.min(SLOTS_PER_HOUR - 1, Math.floor(f.hourFraction * SLOTS_PER_HOUR));

function recentCounts(cur: CounterSnapshot, prev: CounterSnapshot, f: Features): RecentCounts {
  const slot = slotOf(f);
  const [before, beforeDoc] = slot > 0 ? [slot - 1, cur] : [SLOTS_PER_HOUR - 1, prev];
  const n = (name: string) => (cur.counts[`${name}${slot}`] ?? 0) + (beforeDoc.counts[`${name}${before}`] ?? 0);
  const minutes = RECENT_SLOT_MINUTES + (f.hourFraction * 60 - slot * RECENT_SLOT_MINUTES);
  return { attempts: n('a'), unknown: n('x'), failures: n('f'), registrations: n('r'), minutes };
}

/**
 * One window as it stands before this event. `account` (the account this event is about) counts
 * among the distinct accounts attempted: the event is one of them.
 */
export function readWindow(s: Snapshots, f: Features, kind: WindowKind, account: string | null = null): Window | null {
  const value = windowValues(f)[kind];
  if (value === null) return null;
  const cur = snap(s, windowKey(kind, value, f.hourBucket));
  const prev = snap(s, windowKey(kind, value, f.hourBucket - 1));
  const w = 1 - f.hourFraction;
  const n = sliding(cur, prev, w);
  const withPrevious = w > 0.25;
  const accounts = distinct(cur.sets.u, withPrevious ? prev.sets.u : undefined, account !== null && kind !== 'env' ? account : null);
  const failedAccounts = distinct(cur.sets.uf, withPrevious ? prev.sets.uf : undefined, null);
  const window: Window = { attempts: n('a'), failures: n('f'), successes: n('s'), registrations: n('r'), unknown: n('x'), accounts, failedAccounts };
  if (kind === 'env') {
    window.recent = recentCounts(cur, prev, f);
    window.day = dayCounts(s, f);
  }
  return window;
}

/** How many distinct members two sets and one more member make (without building a set when one is empty: every verdict reads seven windows). */
function distinct(a: readonly string[] | undefined, b: readonly string[] | undefined, extra: string | null): number {
  const x = a ?? [];
  const y = b ?? [];
  if (y.length === 0 || x.length === 0) {
    const only = x.length === 0 ? y : x;
    return only.length + (extra !== null && !only.includes(extra) ? 1 : 0);
  }
  const all = new Set(x);
  for (const m of y) all.add(m);
  if (extra !== null) all.add(extra);
  return all.size;
}

/** The account an e-mail belongs to, as far as Rampart has seen it. */
export function accountOfEmail(s: Snapshots, emailHash: string | null): string | null {
  if (!emailHash) return null;
  return snap(s, emailKey(emailHash)).sets.u?.[0] ?? null;
}

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
  /** The account, for the distinct sets. */
  account: string | null;
}

/** The counter changes an event makes. `s` is what was read (set sizes, to respect their caps). */
export function counterBumps(f: Features, o: Outcome, s: Snapshots, at: number, headers: { acceptLanguage: boolean; secFetch: boolean; clientHints: boolean; acceptEncoding?: boolean }): CounterBump[] {
  const bumps: CounterBump[] = [];
  const popW = epochWeight(at, POPULATION_HALF_LIFE_MS);
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
  if (Object.keys(env).length) bumps.push({ key: ENV_KEY, inc: env, min: { first: at }, keepMs: POPULATION_KEEP_MS });
  if (o.success) {
    for (const level of POPULATION_LEVELS) {
      const v = f.values[level];
      if (v !== null) bumps.push({ key: popKey(level, v), inc: { c: popW }, keepMs: POPULATION_KEEP_MS });
    }
    bumps.push({ key: popKey('shape' as Level, f.shape), inc: { c: popW }, keepMs: POPULATION_KEEP_MS });
    if (f.emailDomain) bumps.push({ key: popKey('dom' as Level, f.emailDomain), inc: { c: popW }, keepMs: POPULATION_KEEP_MS });
    if (f.values.cc && f.values.lang) bumps.push({ key: languageKey(f.values.cc, f.values.lang), inc: { c: popW }, keepMs: POPULATION_KEEP_MS });
    if (f.app) bumps.push({ key: appFingerprintKey(f.fingerprinted), inc: { c: popW }, keepMs: POPULATION_KEEP_MS });
    const machine = machineOf(f);
    if (machine) bumps.push({ key: machineKey(machine), inc: { c: popW }, keepMs: POPULATION_KEEP_MS });
    if (f.browserToken) {
      bumps.push({ key: proofHabitKey(f.browserToken.proved), inc: { c: popW }, keepMs: POPULATION_KEEP_MS });
      if (f.browserToken.interacted !== null) bumps.push({ key: interactionHabitKey(f.browserToken.interacted), inc: { c: popW }, keepMs: POPULATION_KEEP_MS });
    }
    if (f.mobile) {
      const activity = appActivity(s, f.mobile.deviceKey);
      bumps.push({ key: activityHabitKey(announced(activity)), inc: { c: popW }, keepMs: POPULATION_KEEP_MS });
      bumps.push({ key: screenHabitKey((activity?.screens ?? 0) > 0), inc: { c: popW }, keepMs: POPULATION_KEEP_MS });
    }
  }
  if (o.attempt && f.values.bf) {
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
    bumps.push({ key: headersKey(f.values.bf), inc, keepMs: POPULATION_KEEP_MS });
  }
  // The accounts an install was used for (a phone opening account after account, wiped or not).
  if (f.mobile && o.account && (o.attempt || o.failure)) {
    const sets = snap(s, activityKey(f.mobile.deviceKey)).sets;
    if ((sets.u?.length ?? 0) < SET_CAP && !sets.u?.includes(o.account)) bumps.push({ key: activityKey(f.mobile.deviceKey), add: { u: o.account }, keepMs: ACTIVITY_KEEP_MS });
  }
  if (!o.attempt && !o.failure) return bumps;
  for (const [kind, value] of Object.entries(windowValues(f)) as [WindowKind, string | null][]) {
    if (value === null) continue;
    const key = windowKey(kind, value, f.hourBucket);
    const inc: Record<string, number> = {};
    if (o.attempt) inc.a = 1;
    if (o.failure) inc.f = 1;
    if (o.success) inc.s = 1;
    if (o.registration) inc.r = 1;
    if (o.unknownAccount) inc.x = 1;
    if (kind === 'env') {
      if (o.attempt) inc[`a${slotOf(f)}`] = 1;
      if (o.unknownAccount) inc[`x${slotOf(f)}`] = 1;
      if (o.failure) inc[`f${slotOf(f)}`] = 1;
      if (o.registration) inc[`r${slotOf(f)}`] = 1;
    }
    const add: Record<string, string> = {};
    const sets = snap(s, key).sets;
    // The environment-wide window counts; its sets would only hold everyone.
    if (o.account && kind !== 'env') {
      if ((sets.u?.length ?? 0) < SET_CAP && !sets.u?.includes(o.account)) add.u = o.account;
      if (o.failure && (sets.uf?.length ?? 0) < SET_CAP && !sets.uf?.includes(o.account)) add.uf = o.account;
    }
    bumps.push({ key, inc, add, keepMs: WINDOW_KEEP_MS });
  }
  const day: Record<string, number> = {};
  if (o.attempt) day.a = 1;
  if (o.unknownAccount) day.x = 1;
  if (o.failure) day.f = 1;
  if (o.registration) day.r = 1;
  if (Object.keys(day).length) bumps.push({ key: dayKey(dayOf(f)), inc: day, keepMs: DAY_KEEP_MS });
  return bumps;
}

/** Record which account an e-mail belongs to (written when it is new or changed). */
export function emailBump(s: Snapshots, emailHash: string, account: string): CounterBump | null {
  if (accountOfEmail(s, emailHash) === account) return null;
  return { key: emailKey(emailHash), replaceSet: { u: [account] }, keepMs: POPULATION_KEEP_MS };
}
