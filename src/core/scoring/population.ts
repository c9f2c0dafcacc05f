/**
 * What Rampart knows across users, per environment, kept in counter documents (one look-up per
 * key, changed by commutative deltas). Its parts, one job each:
 *  - counters.ts: the documents' names and lifetimes, and which a verdict reads;
 *  - population-habits.ts: the population (how common each feature value is among legitimate
 *    events) and the environment's long-run habits;
 *  - windows.ts: sliding windows in event time, per address, network, operator, device, request
 *    shape, e-mail domain, machine and the whole environment;
 *  - records.ts: an install's activity, a client token's uses, an e-mail's account;
 *  - counter-bumps.ts: what an event adds to all of them.
 * This module is their one surface: callers import from here.
 *
 * Pure: no I/O.
 */
export {
  ACTIVITY_KEEP_MS,
  activityKey,
  COUNTER_SETS,
  emailAccount,
  emailKey,
  keysToRead,
  machineOf,
  NO_SNAPSHOTS,
  POPULATION_HALF_LIFE_MS,
  POPULATION_KEEP_MS,
  POPULATION_LEVELS,
  SET_CAP,
  TOKEN_USES_KEEP_MS,
  USUAL_SHARE_HALF_LIFE_MS,
  WINDOW_KEEP_MS,
  WINDOW_KINDS,
  windowValues,
  type Snapshots,
  type WindowKind,
} from './counters';
export {
  activityHabit,
  appFingerprintShare,
  environmentStats,
  headerHabits,
  languageCounts,
  populationCounts,
  proofHabit,
  type EnvironmentStats,
  type HeaderHabits,
  type LanguageCounts,
  type Population,
  type TokenHabit,
} from './population-habits';
export {
  readWindow,
  RECENT_SLOT_MINUTES,
  SIGNUP_RECENT_MINUTES,
  type DayCounts,
  type RecentCounts,
  type Window,
} from './windows';
export {
  accountOfEmail,
  activityBump,
  appActivity,
  emailBump,
  tokenBump,
  tokenReplayed,
  type ActivityEvent,
  type AppActivity,
} from './records';
export { counterBumps, type Outcome } from './counter-bumps';
/*
 * NEW_DOMAIN_BELOW: a domain whose decayed count of legitimate users is below it is one no
 * legitimate user has. TOKEN_MAX_USES: calls one token may serve within one login flow (filter,
 * risk, track), all within TOKEN_FLOW_MS, from one address. Both live in weights.ts.
 */
export { NEW_DOMAIN_BELOW, TOKEN_MAX_USES } from './weights';
