/**
 * The counter documents Rampart keeps per environment, and what a verdict reads of them: each is
 * named by a key (one look-up per key, changed by commutative deltas) and lives for a while past
 * its last change.
 *  - `p:<level>:<value>` and the other `p:` keys: the population (population-habits.ts);
 *  - `h:<browser>`: how often a browser arrives with the headers an honest one sends;
 *  - `w:<kind>:<value>:<hour>` and `w:day:*:<day>`: sliding windows (windows.ts);
 *  - `e:`, `i:`, `t:`: an e-mail's account, an install's activity, a client token's uses (records.ts).
 * What an event adds to them is counter-bumps.ts.
 *
 * Pure: this module names the documents and says which a verdict reads.
 */
import type { CounterSnapshot } from '../ports';
import { FUTURE_TOLERANCE_MS } from '../events/parse';
import { HOUR_MS, hostInNetwork, LEVEL, networkOf, type Features, type Level } from './features';
import { POPULATION_HALF_LIFE_MS, SET_CAP, USUAL_SHARE_HALF_LIFE_MS } from './weights';

/** The half-lives (of the population, and of the usual shares: EnvironmentStats.usualUnknownShare) and SET_CAP are the model's (weights.ts). */
export { POPULATION_HALF_LIFE_MS, SET_CAP, USUAL_SHARE_HALF_LIFE_MS };
/** Population levels with counts (finer ones are too many to count: see behaviour.ts). */
export const POPULATION_LEVELS: readonly Level[] = ['cc', 'asn', 'dt', 'os', 'bf', 'br', 'ua', 'lang', 'fp'];
/** How long documents live: windows a day past their hour, population a year past its last use. */
export const WINDOW_KEEP_MS = 26 * 3_600_000;
export const POPULATION_KEEP_MS = 365 * 86_400_000;

/** Names of the distinct sets in counter documents (a purge removes the user from each). */
export const COUNTER_SETS = ['u', 'uf'] as const;
/** How an account appears in the distinct sets when only its e-mail is known. */
export const emailAccount = (email: string) => `email:${email.trim().toLowerCase()}`;

/** `mk`: the machine of a mobile token's phone (its model, OS and screen: one farm's emulator images share it) or of a browser token (its machine vector: a farm wiping storage between sign-ups keeps it). */
export const WINDOW_KINDS = ['ip', 'net', 'asn', 'dev', 'shape', 'dom', 'env', 'mk'] as const;
export type WindowKind = (typeof WINDOW_KINDS)[number];

/**
 * Keys many events share (a country's, a browser's, the day's), kept by their parts: an event
 * names ~30 documents, and building each name again made ~30 strings per verdict. Each kind of key
 * keeps at most KEYS_KEPT values (forgotten all at once when full).
 */
const KEYS_KEPT = 5_000;
type KeyMemo = Map<string | number, string>;
const keyMemos = new Map<string, KeyMemo>();
/** The keys kept of one kind (a level, a prefix, a country's languages). */
function keysOf(kind: string, memos: Map<string, KeyMemo> = keyMemos): KeyMemo {
  let keys = memos.get(kind);
  if (keys === undefined) {
    if (memos.size >= KEYS_KEPT) memos.clear();
    memos.set(kind, (keys = new Map()));
  }
  return keys;
}
const languageMemos = new Map<string, KeyMemo>();
function keep(keys: KeyMemo, part: string | number, key: string): string {
  if (keys.size >= KEYS_KEPT) keys.clear();
  keys.set(part, key);
  return key;
}

export function popKey(level: Level, value: string): string {
  const keys = keysOf(level);
  return keys.get(value) ?? keep(keys, value, `p:${level}:${value}`);
}
/** Legitimate events per country and browser language (how a country's browsers ask for pages). */
export function languageKey(cc: string, lang: string): string {
  const keys = keysOf(cc, languageMemos);
  return keys.get(lang) ?? keep(keys, lang, `p:cl:${cc}|${lang}`);
}
export const ENV_KEY = 'p:*';
export function headersKey(browser: string): string {
  const keys = keysOf('h:');
  return keys.get(browser) ?? keep(keys, browser, `h:${browser}`);
}
export const windowKey = (kind: WindowKind, value: string, hour: number) => `w:${kind}:${value}:${hour}`;
/** The environment's attempts, unknown accounts, failures and sign-ups of one day of event time (UTC days). */
export function dayKey(day: number): string {
  const keys = keysOf('w:day:');
  return keys.get(day) ?? keep(keys, day, `w:day:*:${day}`);
}
export const dayOf = (f: Features) => Math.floor(f.hourBucket / 24);
/** Day documents live two days past their day. */
export const DAY_KEEP_MS = 72 * 3_600_000;
/**
 * The first hour of event time a window or day document counts (`w:<kind>:<value>:<hour>`,
 * `w:day:*:<day>`), or null for a document without one: what says how early it can have been
 * written (see windowHorizon).
 */
export function firstHourOf(key: string): number | null {
  if (!key.startsWith('w:')) return null;
  const n = Number(key.slice(key.lastIndexOf(':') + 1));
  if (!Number.isSafeInteger(n)) return null;
  return key.startsWith('w:day:') ? n * 24 : n;
}

/**
 * Where an address's window can be kept with its network's (`w:ip:<host>:<hour>` inside
 * `w:net:<network>:<hour>`): the network window's key, and the host's part, which prefixes the
 * address's counts and sets there (`<part>_<name>`). One document is then written per attempt for
 * both windows. null: not an address's window, or an address without a network.
 */
export function addressWindowFold(key: string): { doc: string; part: string } | null {
  if (!key.startsWith('w:ip:')) return null;
  // A verdict asks for its address's windows several times (reads, bumps): parsed once.
  let fold = folds.get(key);
  if (fold === undefined) {
    const at = key.lastIndexOf(':');
    const host = key.slice(5, at);
    const net = networkOf(host);
    const part = hostInNetwork(host);
    fold =
      net !== null && part !== null ? Object.freeze({ doc: `w:net:${net}${key.slice(at)}`, part }) : null;
    if (folds.size >= MAX_FOLDS) folds.clear();
    folds.set(key, fold);
  }
  return fold;
}
/** The folds of address windows asked for lately (read-only; cleared when full). */
const folds = new Map<string, Readonly<{ doc: string; part: string }> | null>();
const MAX_FOLDS = 10_000;

/** Clocks of earlier runs that were ahead of this one's by up to this much still count as before it. */
const CLOCK_SLACK_MS = 10 * 60_000;

/**
 * The last hour of event time whose window documents can have been written before `startedAt`:
 * event time is at most FUTURE_TOLERANCE_MS ahead of the clock that received it (events/parse.ts),
 * and earlier runs' clocks at most CLOCK_SLACK_MS ahead of this one's. A window of a later hour
 * exists only if this run wrote it.
 */
export const windowHorizon = (startedAt: number): number =>
  Math.floor((startedAt + FUTURE_TOLERANCE_MS + CLOCK_SLACK_MS) / HOUR_MS);
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
export const activityHabitKey = (announced: boolean) => (announced ? 'p:ma:y' : 'p:ma:n');
/** The same for installs that had shown a screen (`p:ms:y`, `p:ms:n`). */
export const screenHabitKey = (shown: boolean) => (shown ? 'p:ms:y' : 'p:ms:n');
/** Legitimate events from native apps' HTTP stacks with, and without, a client token (`p:fpa:y`, `p:fpa:n`). */
export const appFingerprintKey = (carried: boolean) => (carried ? 'p:fpa:y' : 'p:fpa:n');
/**
 * Legitimate events from one app release (features.ts, appReleaseOf) with a client token (`y`) and
 * without (`n`): a release from before the client never carries one, and its users' logins are
 * judged as that release's traffic, not against the token users.
 */
export const releaseFingerprintKey = (release: string) => `p:fpr:${release}`;
/**
 * Legitimate logins with a verified browser token whose collection did, or did not, carry a proof
 * of work (`p:pow:y`, `p:pow:n`); and among those whose page reported its behaviour for the
 * request, whether a person did something on the page first (`p:ui:y`, `p:ui:n`).
 */
export const proofHabitKey = (proved: boolean) => (proved ? 'p:pow:y' : 'p:pow:n');
export const interactionHabitKey = (yes: boolean) => (yes ? 'p:ui:y' : 'p:ui:n');
/** Legitimate events from phones of one machine key (how common the model is here). */
export function machineKey(mk: string): string {
  const keys = keysOf('p:mk:');
  return keys.get(mk) ?? keep(keys, mk, `p:mk:${mk}`);
}
/** The uses of one client token (single use, see tokenReplayed). */
export const tokenKey = (jti: string) => `t:${jti}`;
/** How long a token's uses are remembered (longer than a token is accepted). */
export const TOKEN_USES_KEEP_MS = 15 * 60_000;

/** An event's window values and keys, made once per event (see windowValues). */
interface WindowsOf {
  /** The features' values they were made from (a copy of the features with other values is another event's). */
  values: Features['values'];
  hour: number;
  window: Readonly<Record<WindowKind, string | null>>;
  /** Each kind's keys of this hour and the one before (null: the event has no value for it). */
  keys: Partial<Record<WindowKind, readonly [string, string] | null>>;
}
const windowsOf = new WeakMap<Features, WindowsOf>();

function memoOf(f: Features): WindowsOf {
  let m = windowsOf.get(f);
  if (m === undefined || m.values !== f.values || m.hour !== f.hourBucket) {
    m = {
      values: f.values,
      hour: f.hourBucket,
      window: {
        ip: f.values[LEVEL.address],
        net: f.values[LEVEL.network],
        asn: f.values[LEVEL.operator],
        dev: f.values[LEVEL.device],
        shape: f.shape,
        dom: f.emailDomain,
        env: '*',
        mk: machineOf(f),
      },
      keys: {},
    };
    windowsOf.set(f, m);
  }
  return m;
}

/**
 * The value of each window kind for an event (null: the event has none). Made once per event
 * (a verdict asks for it about twenty times) and read-only.
 */
export function windowValues(f: Features): Readonly<Record<WindowKind, string | null>> {
  return memoOf(f).window;
}

/**
 * The keys of an event's window of one kind: this hour's and the one before (null: the event has
 * no value for it). Made once per event: the reads, the engine and the bumps share the strings.
 */
export function windowKeys(f: Features, kind: WindowKind): readonly [string, string] | null {
  const m = memoOf(f);
  let keys = m.keys[kind];
  if (keys === undefined) {
    const value = m.window[kind];
    keys = value === null ? null : sharedWindowKeys(kind, value, f.hourBucket);
    m.keys[kind] = keys;
  }
  return keys;
}

/** Window kinds whose values many events share (a network operator, a request shape, a domain...). */
const SHARED_KINDS: ReadonlySet<WindowKind> = new Set(['asn', 'shape', 'dom', 'env', 'mk']);
/** Their keys made lately, by kind and value, with the hour they are of. */
const sharedKeys = new Map<WindowKind, Map<string, { hour: number; keys: readonly [string, string] }>>();

/** A window's keys of `hour` and the one before; those of shared values made once an hour. */
function sharedWindowKeys(kind: WindowKind, value: string, hour: number): readonly [string, string] {
  if (!SHARED_KINDS.has(kind)) return [windowKey(kind, value, hour), windowKey(kind, value, hour - 1)];
  let byValue = sharedKeys.get(kind);
  if (byValue === undefined) sharedKeys.set(kind, (byValue = new Map()));
  const kept = byValue.get(value);
  if (kept !== undefined && kept.hour === hour) return kept.keys;
  const keys = [windowKey(kind, value, hour), windowKey(kind, value, hour - 1)] as const;
  if (byValue.size >= KEYS_KEPT) byValue.clear();
  byValue.set(value, { hour, keys });
  return keys;
}

/** The machine an event names: a mobile token's phone model, or a browser token's machine vector (null: none). */
export const machineOf = (f: Features): string | null => f.mobile?.machineKey ?? f.machine;

/** Every counter document a verdict reads: population entries, header habits, windows, the e-mail's account and the client token's uses. */
export function keysToRead(f: Features, emailHash: string | null, tokenId: string | null = null): string[] {
  const keys = [ENV_KEY];
  for (const level of POPULATION_LEVELS) {
    const v = f.values[level];
    if (v !== null && level !== LEVEL.fingerprint) keys.push(popKey(level, v));
  }
  // Both sides of the fingerprint level: its share, not only this event's count, is evidence.
  keys.push(popKey(LEVEL.fingerprint, 'y'), popKey(LEVEL.fingerprint, 'n'));
  const browser = f.values[LEVEL.browser];
  if (browser) keys.push(headersKey(browser));
  keys.push(popKey('shape' as Level, f.shape));
  if (f.emailDomain) keys.push(popKey('dom' as Level, f.emailDomain));
  const country = f.values[LEVEL.country];
  const language = f.values[LEVEL.language];
  if (country && language) keys.push(languageKey(country, language));
  for (const kind of WINDOW_KINDS) {
    const both = windowKeys(f, kind);
    if (both !== null) keys.push(both[0], both[1]);
  }
  keys.push(dayKey(dayOf(f)), dayKey(dayOf(f) - 1));
  if (emailHash) keys.push(emailKey(emailHash));
  if (tokenId) keys.push(tokenKey(tokenId));
  if (f.app) keys.push(appFingerprintKey(true), appFingerprintKey(false));
  if (f.app && f.release) keys.push(releaseFingerprintKey(f.release));
  if (f.browserToken)
    keys.push(
      proofHabitKey(true),
      proofHabitKey(false),
      interactionHabitKey(true),
      interactionHabitKey(false),
    );
  // The accounts a browser's page named in its events (castle-js's page, form, custom: core/client/events.ts).
  if (f.browserToken?.deviceKey) keys.push(activityKey(f.browserToken.deviceKey));
  if (f.mobile)
    keys.push(
      activityKey(f.mobile.deviceKey),
      activityHabitKey(true),
      activityHabitKey(false),
      screenHabitKey(true),
      screenHabitKey(false),
    );
  const machine = machineOf(f);
  if (machine) keys.push(machineKey(machine));
  return keys;
}

/**
 * The counter documents read for an event, by key. A Map, not an object: each event names keys
 * never seen before (its address's windows), and an object would take a new hidden class for each.
 */
export type Snapshots = ReadonlyMap<string, CounterSnapshot>;
/** No counter documents (nothing read). */
export const NO_SNAPSHOTS: Snapshots = new Map();
const EMPTY: CounterSnapshot = { counts: {}, sets: {} };
export const snap = (s: Snapshots, key: string) => s.get(key) ?? EMPTY;
