/**
 * The population: how common each feature value is among the environment's legitimate events
 * (decayed counts, half-life POPULATION_HALF_LIFE_MS), for the likelihood ratio's numerator and
 * for cold start; and the environment's long-run habits: its rates of attempts, failures and
 * sign-ups, how often each browser arrives with the headers an honest browser sends (to notice
 * the ones missing), and how often its logins carry a client token's proofs.
 *
 * Pure: reads snapshots of counter documents (counters.ts).
 */
import type { PopulationCounts } from './behaviour';
import { atTime } from './behaviour-tables';
import {
  activityHabitKey,
  appFingerprintKey,
  ENV_KEY,
  headersKey,
  interactionHabitKey,
  languageKey,
  machineKey,
  popKey,
  POPULATION_HALF_LIFE_MS,
  proofHabitKey,
  releaseFingerprintKey,
  screenHabitKey,
  snap,
  type Snapshots,
} from './counters';
import { LEVEL, type Features, type Level } from './features';
import { RELEASE_TOKEN_PRIOR } from './weights';

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
  return new SnapshotPopulation(s, now);
}

/** The population read from counter snapshots (one object, its methods shared: made every verdict). */
class SnapshotPopulation implements Population {
  readonly total: number;
  constructor(
    private readonly s: Snapshots,
    private readonly now: number,
  ) {
    this.total = this.at(ENV_KEY);
  }
  private at(key: string): number {
    return atTime(snap(this.s, key).counts.c ?? 0, this.now, POPULATION_HALF_LIFE_MS);
  }
  count(level: Level, value: string): number {
    return this.at(popKey(level, value));
  }
  shape(shape: string): number {
    return this.at(popKey('shape' as Level, shape));
  }
  machine(mk: string): number {
    return this.at(machineKey(mk));
  }
  domain(domain: string): number {
    return this.at(popKey('dom' as Level, domain));
  }
  languageIn(cc: string, lang: string): number {
    return this.at(languageKey(cc, lang));
  }
}

/** Legitimate events from a country, those of them with one browser language, and that language's share of all events. */
export interface LanguageCounts {
  country: number;
  inCountry: number;
  overall: number;
}

/** The event's browser language among the environment's legitimate events (null: no language or no country). */
export function languageCounts(pop: Population, f: Features): LanguageCounts | null {
  const country = f.values[LEVEL.country];
  const language = f.values[LEVEL.language];
  if (!country || !language) return null;
  return {
    country: pop.count(LEVEL.country, country),
    inCountry: pop.languageIn(country, language),
    overall: pop.total > 0 ? pop.count(LEVEL.language, language) / pop.total : 0,
  };
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

/** A population count of a counter document, decayed to `now`. */
const decayed = (counts: Readonly<Record<string, number>>, name: string, now: number): number =>
  atTime(counts[name] ?? 0, now, POPULATION_HALF_LIFE_MS);

export function environmentStats(s: Snapshots, now: number): EnvironmentStats {
  const e = snap(s, ENV_KEY).counts;
  const d = (name: string) => decayed(e, name, now);
  const first = e.first ?? now;
  const ageHours = Math.max(1, (now - first) / 3_600_000);
  // A decayed count of a steady hourly rate r tends to r·H/ln 2 (H in hours).
  const span = Math.min(ageHours, POPULATION_HALF_LIFE_MS / 3_600_000 / Math.LN2);
  // Shares of the attempts counted with the short half-life (the same decay on both sides).
  const ofRecentAttempts = (name: string) => (e.aw ? (e[name] ?? 0) / e.aw : 0);
  return {
    legit: d('c'),
    attemptsPerHour: d('a') / span,
    failuresPerHour: d('f') / span,
    unknownPerHour: d('x') / span,
    usualUnknownShare: ofRecentAttempts('xw'),
    usualSignupShare: ofRecentAttempts('rw'),
    registrationsPerHour: d('r') / span,
    signups: d('rs'),
    newDomainSignups: d('rn'),
    feedback: d('fb'),
    ageHours,
  };
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
  const events = decayed(c, 'n', now);
  if (events <= 0)
    return { events: 0, acceptLanguage: 0, secFetch: 0, clientHints: 0, credentialed: 0, failed: 0 };
  return {
    events,
    acceptLanguage: decayed(c, 'al', now) / events,
    secFetch: decayed(c, 'sf', now) / events,
    clientHints: decayed(c, 'ch', now) / events,
    credentialed: decayed(c, 'ok', now),
    failed: decayed(c, 'fl', now),
    acceptEncoding: decayed(c, 'ae', now) / events,
  };
}

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
  return {
    events: y + n,
    share: y + n > 0 ? y / (y + n) : 0,
    screens: shown + none > 0 ? shown / (shown + none) : 0,
  };
}

/** How often legitimate events carried a client token; for an app release, its own events and how many of them did. */
export interface TokenHabit {
  events: number;
  share: number;
  release?: { name: string; events: number };
}

/**
 * The share of the environment's legitimate events from native apps' HTTP stacks that carried a
 * client token. Given the event's app release (features.ts, appReleaseOf), the share is that
 * release's own, its counts shrunk towards the apps' share by RELEASE_TOKEN_PRIOR events: a
 * release never seen is judged as the apps are, one whose legitimate logins have come without a
 * token (a release from before the client) is judged as its own traffic. `events` stays the apps'
 * (how long the environment has known the habit at all).
 */
export function appFingerprintShare(s: Snapshots, now: number, release: string | null = null): TokenHabit {
  const y = atTime(snap(s, appFingerprintKey(true)).counts.c ?? 0, now, POPULATION_HALF_LIFE_MS);
  const n = atTime(snap(s, appFingerprintKey(false)).counts.c ?? 0, now, POPULATION_HALF_LIFE_MS);
  const apps = { events: y + n, share: y + n > 0 ? y / (y + n) : 0 };
  if (release === null) return apps;
  const counts = snap(s, releaseFingerprintKey(release)).counts;
  const ry = atTime(counts.y ?? 0, now, POPULATION_HALF_LIFE_MS);
  const rn = atTime(counts.n ?? 0, now, POPULATION_HALF_LIFE_MS);
  return {
    events: apps.events,
    share: (ry + RELEASE_TOKEN_PRIOR * apps.share) / (ry + rn + RELEASE_TOKEN_PRIOR),
    release: { name: release, events: ry + rn },
  };
}

/**
 * Among the environment's legitimate logins with a verified browser token: how many (decayed) and
 * the share whose collection carried a proof of work; among those whose page reported its
 * behaviour for the request, how many and the share where a person did something on the page.
 */
export function proofHabit(
  s: Snapshots,
  now: number,
): { events: number; proved: number; reported: number; interacted: number } {
  const c = (key: string) => atTime(snap(s, key).counts.c ?? 0, now, POPULATION_HALF_LIFE_MS);
  const [y, n, ui, none] = [
    c(proofHabitKey(true)),
    c(proofHabitKey(false)),
    c(interactionHabitKey(true)),
    c(interactionHabitKey(false)),
  ];
  return {
    events: y + n,
    proved: y + n > 0 ? y / (y + n) : 0,
    reported: ui + none,
    interacted: ui + none > 0 ? ui / (ui + none) : 0,
  };
}
