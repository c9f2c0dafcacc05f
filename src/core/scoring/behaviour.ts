/**
 * The behavioural model of one user (after Freeman et al., NDSS 2016): how likely this event's
 * features are for the user, against how likely they are for anyone (the environment's
 * population, standing in for an attacker), as a likelihood ratio per hierarchy.
 *
 * The user's history is a set of bounded frequency tables, one per feature level, of decayed
 * counts in event time: a count is stored as the sum of 2^((t - T0)/H) over the events that
 * added to it, so adding is commutative (deltas from any number of requests or instances), the
 * ratio of two counts needs no decay at all, and the count at time t is the stored value times
 * 2^(-(t - T0)/H). Importing 60 days of history gives the same tables as living through them.
 *
 * Smoothing follows each hierarchy from its coarsest level down (Witten–Bell): the mass a user
 * leaves to unseen values at a level is the number of distinct values seen there, so a user whose
 * addresses change all the time is not surprised by a new one, and an unseen value at a finer
 * level backs off to the user's probability of its parent times the population's share of the
 * value within that parent. A user with no history has the population's distribution, so the
 * first logins are neither familiar nor unfamiliar.
 *
 * Only evidence that the user was really there goes into these tables (an allowed successful
 * login, a passed challenge); failed logins, failed challenges and reported devices go into a
 * separate hostile record (see `hostileMatch`).
 *
 * Pure: no I/O.
 */
import { networkOf, type FeatureValues, type Features, type Level } from './features';
import {
  BROWSER_VERSION_FLOOR, HOSTILE_ENTRY_MIN, HOUR_MIN_HISTORY, IP_FLOOR, NET_FLOOR, OWN_IP_MIN, OWN_NET_MIN, PLACE_MIN_LOGINS, POP_PSEUDO, POP_PSEUDO_DEFAULT, Q_DEVICE, Q_IP_IN_NET, Q_NET_IN_ASN, Q_PLACE_IN_ASN,
  RECURRING_AFTER_MS, RECURRING_WITHIN_MS, SOFTWARE_MIN_EVENTS, USER_AGENT_FLOOR,
} from './weights';

export { RECURRING_AFTER_MS, RECURRING_WITHIN_MS };

/** Reference time and half-life of the user tables. */
export const EPOCH_MS = Date.UTC(2025, 0, 1);
export const USER_HALF_LIFE_MS = 120 * 86_400_000;

/**
 * `2^((t - T0)/H)`: what one event at `t` adds to a decayed count. Scoring one event asks for the
 * same time and one of two half-lives dozens of times, so the last answer for each half-life is kept.
 */
const memo = { t1: NaN, h1: NaN, w1: 1, t2: NaN, h2: NaN, w2: 1 };
export const epochWeight = (t: number, halfLifeMs = USER_HALF_LIFE_MS): number => {
  if (t === memo.t1 && halfLifeMs === memo.h1) return memo.w1;
  if (t === memo.t2 && halfLifeMs === memo.h2) return memo.w2;
  const w = 2 ** ((t - EPOCH_MS) / halfLifeMs);
  if (halfLifeMs === memo.h1 || Number.isNaN(memo.h1)) {
    memo.t1 = t;
    memo.h1 = halfLifeMs;
    memo.w1 = w;
  } else {
    memo.t2 = t;
    memo.h2 = halfLifeMs;
    memo.w2 = w;
  }
  return w;
};
/** A stored decayed count as a count at time `t`. */
export const atTime = (stored: number, t: number, halfLifeMs = USER_HALF_LIFE_MS): number => stored / epochWeight(t, halfLifeMs);

/** Most values kept per level; beyond it the least used value is forgotten. */
export const TABLE_CAPS: Readonly<Record<Level, number>> = { ip: 24, net: 16, asn: 10, cc: 8, ua: 10, br: 8, bf: 6, os: 6, dt: 4, dev: 12, fp: 2, lang: 6, hr: 24, mk: 8, sw: 8, sa: 16, sn: 24, an: 16, ap: 16 };
/** Levels of the hostile record (what an attacker brings along from one attempt to the next). */
export const HOSTILE_LEVELS = ['ip', 'net', 'asn', 'dev', 'ua'] as const;
export type HostileLevel = (typeof HOSTILE_LEVELS)[number];
export const HOSTILE_CAP = 16;

/**
 * One value of a user's table, as stored (the short keys are the database's: do not rename).
 * `c`: count, `l`: last seen, `f`: first seen.
 */
export interface TableEntry {
  /** Decayed count (epoch-scaled). */
  c: number;
  /** Last time seen (ms). */
  l: number;
  /** First time seen (ms), kept for the levels in FIRST_SEEN_LEVELS. */
  f?: number;
}

/**
 * Levels whose novelty is how many values the user showed for the first time lately, rather than
 * how many they ever showed: a user adds devices early and then rarely, so three devices set up
 * months ago do not make a fourth today as likely as three set up this week.
 */
export const FIRST_SEEN_LEVELS: ReadonlySet<Level> = new Set<Level>(['dev']);
/** Half-life of a first sighting's weight in that novelty. */
export const NOVELTY_HALF_LIFE_MS = 30 * 86_400_000;
export type Table = Record<string, TableEntry>;

export interface PendingChallenge {
  at: number;
  values: Partial<FeatureValues>;
  /** What was added to the legitimate tables at once (0 when nothing was). */
  tentative: number;
  /** The operator (`asn`) was among what was added at once (see recurringOperator). */
  operator?: boolean;
}

/** A user's behavioural history, as the store decodes it. */
export interface Behaviour {
  /** Decayed number of legitimate events. */
  n: number;
  tables: Partial<Record<Level, Table>>;
  hostileN: number;
  hostile: Partial<Record<HostileLevel, Table>>;
  /** Challenges not answered yet, by event id. */
  pending: Record<string, PendingChallenge>;
  /** Where the user last really was (for impossible travel). */
  lastLegit: { at: number; lat: number; lon: number; cc: string | null } | null;
}

export const emptyBehaviour = (): Behaviour => ({ n: 0, tables: {}, hostileN: 0, hostile: {}, pending: {}, lastLegit: null });

/** The environment's population, as the likelihood ratio needs it (decayed counts at `now`). */
export interface PopulationCounts {
  /** Legitimate events in the environment. */
  total: number;
  /** Legitimate events with this value at this level (0 when unknown). */
  count(level: Level, value: string): number;
}

/*
 * Q_NET_IN_ASN, Q_IP_IN_NET, Q_DEVICE (weights.ts): shares assumed where the population keeps no
 * counts (addresses and networks are too many). POP_PSEUDO: pseudo-counts of distinct values per
 * level, for the population's own smoothing.
 */

/** The population's share of `value` at `level` within its parent's count (or the total). */
function popShare(pop: PopulationCounts, level: Level, value: string, parentCount: number): number {
  const pseudo = POP_PSEUDO[level] ?? POP_PSEUDO_DEFAULT;
  const c = Math.min(pop.count(level, value), parentCount);
  return (c + 0.5) / (parentCount + 0.5 * pseudo);
}

export interface LevelView {
  /** Decayed count of the value at `now`. */
  count: number;
  /**
   * How many new values the user showed at the level: the distinct values, or, for the levels in
   * FIRST_SEEN_LEVELS, their first sightings decayed to `now` (a value stored without its first
   * sighting counts as one).
   */
  distinct: number;
}

/** A user's table at `now`. */
function levelView(b: Behaviour, level: Level, value: string | null, now: number): LevelView {
  const t = b.tables[level] ?? {};
  const e = value !== null ? t[value] : undefined;
  let distinct = 0;
  if (FIRST_SEEN_LEVELS.has(level)) {
    for (const entry of Object.values(t)) distinct += entry.f === undefined ? 1 : 2 ** (-Math.max(0, now - entry.f) / NOVELTY_HALF_LIFE_MS);
  } else distinct = Object.keys(t).length;
  return { count: e ? atTime(e.c, now) : 0, distinct };
}

export interface ChainLevel {
  level: Level;
  value: string | null;
  /** The population's share of the value within its parent, where the population keeps no count. */
  fixedShare?: number;
  /** Smallest novelty mass, as a share of the user's events (of the parent's, with `within`). */
  floor?: number;
  /**
   * The user's own record of the parent value: its decayed count and how many distinct values of
   * this level the user showed under it. When the user has shown the parent, this level is scored
   * given it (a home network that never changes makes a new one within the same operator
   * surprising; a phone operator whose addresses always change does not).
   */
  within?: { count: number; distinct: number };
}

export interface ChainResult {
  /** ln(p_attacker / p_user) at the finest level the event has. */
  llr: number;
  /** The coarsest level whose value the user had never shown (null: all seen). */
  firstUnseen: Level | null;
}

/**
 * The log-likelihood ratio of one hierarchy, coarsest level first. `floor` gives the smallest
 * novelty mass at a level as a share of the user's events (addresses and browser versions change
 * by themselves).
 *
 * Each level the user never showed multiplies the surprise by its novelty, so a value new at
 * several levels counts as new several times: a new kind of device is a new OS, browser, version
 * and user agent at once. With `backOff`, the levels below the first one the user never showed
 * take the population's share within it instead (the user's record says nothing about them), and
 * the surprise is that level's alone.
 */
export function chainRatio(
  b: Behaviour,
  pop: PopulationCounts,
  chain: readonly ChainLevel[],
  now: number,
  backOff = false,
): ChainResult {
  const n = atTime(b.n, now);
  let pUser = 1;
  let pPop = 1;
  let parentPopCount = Math.max(pop.total, 0);
  let firstUnseen: Level | null = null;
  for (const { level, value, fixedShare, floor, within } of chain) {
    if (value === null) continue;
    const share = fixedShare ?? popShare(pop, level, value, parentPopCount);
    if (fixedShare === undefined) parentPopCount = Math.min(pop.count(level, value), parentPopCount);
    const prior = pUser * share;
    pPop *= share;
    // No history, or (backing off) below a level the user never showed: the population's share.
    if (n <= 1e-9 || (backOff && firstUnseen !== null)) {
      pUser = prior;
      continue;
    }
    const v = levelView(b, level, value, now);
    if (within && within.count > 1e-9) {
      // Within a parent the user has shown: the value's share of the parent's events, smoothed
      // by how many values of this level the user has shown under that parent.
      const novelty = Math.max(1, within.distinct, floor ? floor * within.count : 0);
      pUser *= (Math.min(v.count, within.count) + novelty * share) / (within.count + novelty);
    } else {
      const novelty = Math.max(1, v.distinct, floor ? floor * n : 0);
      pUser = (v.count + novelty * prior) / (n + novelty);
    }
    if (v.count <= 1e-9 && firstUnseen === null) firstUnseen = level;
  }
  return { llr: Math.log(pPop / pUser), firstUnseen };
}

/**
 * ln(p_user(value) / p_user(value | software)): how much less usual the operator (or network)
 * is for this software than for the user at large. A laptop that always logs in from home,
 * seen on a network only the user's phone used, is unusual even though the network is not.
 */
export function conditionalRatio(b: Behaviour, level: 'sa' | 'sn', parent: 'asn' | 'net', f: Features, now: number): number {
  const sw = f.values.sw;
  const joint = f.values[level];
  const value = f.values[parent];
  if (!sw || !joint || !value) return 0;
  const nSw = atTime(b.tables.sw?.[sw]?.c ?? 0, now);
  if (nSw < SOFTWARE_MIN_EVENTS) return 0;
  const n = atTime(b.n, now);
  const table = b.tables[parent] ?? {};
  const distinct = Math.max(1, Object.keys(table).length);
  const pUser = (atTime(table[value]?.c ?? 0, now) + distinct * 0.01) / (n + distinct);
  const prefix = `${sw}|`;
  const jointTable = b.tables[level] ?? {};
  let distinctForSw = 0;
  for (const k of Object.keys(jointTable)) if (k.startsWith(prefix)) distinctForSw++;
  const novelty = Math.max(1, distinctForSw);
  const pGiven = (atTime(jointTable[joint]?.c ?? 0, now) + novelty * pUser) / (nSw + novelty);
  return Math.log(pUser / pGiven);
}

export interface Familiarity {
  /** Operator and network given the software (conditionalRatio). */
  softwareOperator: number;
  /** The place within a familiar operator (placeRatio). */
  place: number;
  softwareNetwork: number;
  network: ChainResult;
  software: ChainResult;
  device: ChainResult;
  fingerprint: ChainResult;
  language: ChainResult;
  hour: number;
  /** Decayed number of the user's legitimate events at `now`. */
  history: number;
}

/*
 * NET_FLOOR (weights.ts): least novelty of a network within a known operator, as a share of the
 * user's events there: home addresses are reassigned now and then, so even a user who always
 * showed one network is not certain to keep it.
 */

/**
 * The user's count of an operator and the networks they showed within it (from the joint
 * operator|network table). Undefined for a profile kept before that table existed.
 */
function netsWithin(b: Behaviour, asn: string | null, now: number): ChainLevel['within'] {
  const joint = b.tables.an;
  if (!asn || !joint) return undefined;
  const prefix = `${asn}|`;
  let distinct = 0;
  for (const k of Object.keys(joint)) if (k.startsWith(prefix)) distinct++;
  return { count: atTime(b.tables.asn?.[asn]?.c ?? 0, now), distinct };
}

/** The user's count of a network and the addresses they showed within it. */
function addressesWithin(b: Behaviour, net: string | null, now: number): ChainLevel['within'] {
  const ips = b.tables.ip;
  if (!net || !ips) return undefined;
  let distinct = 0;
  // An IPv4 network's addresses share its first three octets (no parse per address).
  const v4 = net.endsWith('.0/24') ? net.slice(0, -4) : null;
  for (const k of Object.keys(ips)) if (v4 !== null ? k.startsWith(v4) : networkOf(k) === net) distinct++;
  return { count: atTime(b.tables.net?.[net]?.c ?? 0, now), distinct };
}

/** How familiar the event is for the user, hierarchy by hierarchy (log-likelihood ratios). */
export function familiarity(b: Behaviour, pop: PopulationCounts, f: Features, now: number): Familiarity {
  const v = f.values;
  const network = chainRatio(
    b,
    pop,
    [
      { level: 'cc', value: v.cc },
      { level: 'asn', value: v.asn },
      { level: 'net', value: v.net, fixedShare: Q_NET_IN_ASN, floor: NET_FLOOR, within: netsWithin(b, v.asn, now) },
      { level: 'ip', value: v.ip, fixedShare: Q_IP_IN_NET, floor: IP_FLOOR, within: addressesWithin(b, v.net, now) },
    ],
    now,
  );
  // With a client fingerprint the device term says whether the device is new; the software then
  // only corroborates, and a new kind of device counts as new once (its coarsest new level).
  // Without one, the software stands in for the device, and a device new at every level is that
  // much stranger than a new browser version.
  const software = chainRatio(
    b,
    pop,
    [
      { level: 'dt', value: v.dt },
      { level: 'os', value: v.os },
      { level: 'bf', value: v.bf },
      { level: 'br', value: v.br, floor: BROWSER_VERSION_FLOOR },
      { level: 'ua', value: v.ua, floor: USER_AGENT_FLOOR },
    ],
    now,
    f.fingerprinted,
  );
  const device = chainRatio(b, pop, [{ level: 'dev', value: v.dev, fixedShare: Q_DEVICE }], now);
  const fingerprint = chainRatio(b, pop, [{ level: 'fp', value: v.fp }], now);
  const language = chainRatio(b, pop, [{ level: 'lang', value: v.lang }], now);
  return {
    softwareOperator: conditionalRatio(b, 'sa', 'asn', f, now),
    place: placeRatio(b, v.asn, v.ap, now),
    softwareNetwork: conditionalRatio(b, 'sn', 'net', f, now),
    network,
    software,
    device,
    fingerprint,
    language,
    hour: hourRatio(b, v.hr, now),
    history: atTime(b.n, now),
  };
}

/* Q_PLACE_IN_ASN (weights.ts): share of an operator's logins an attacker on that operator would show from any one place. */

/**
 * ln(q / p_user(place | operator)), for an operator the user has shown at least 3 times: where
 * the operator placed this address, against where it placed the user's. A home's address changes
 * now and then, but its operator keeps it in the same city; someone else on the same operator is
 * usually somewhere else. Smoothed by how many places the user showed on that operator (a phone's
 * carrier shows several). 0 when the address has no place (see features) or the operator is new.
 */
export function placeRatio(b: Behaviour, asn: string | null, place: string | null, now: number): number {
  if (!asn || !place) return 0;
  const nAsn = atTime(b.tables.asn?.[asn]?.c ?? 0, now);
  const joint = b.tables.ap;
  if (nAsn < PLACE_MIN_LOGINS || !joint) return 0;
  const prefix = `${asn}|`;
  let distinct = 0;
  let inAsn = 0;
  for (const [k, e] of Object.entries(joint)) {
    if (!k.startsWith(prefix)) continue;
    distinct++;
    inAsn += atTime(e.c, now);
  }
  // A profile from before places were kept, or addresses without one: nothing to compare.
  if (inAsn < PLACE_MIN_LOGINS) return 0;
  const novelty = Math.max(1, distinct);
  const pUser = (atTime(joint[place]?.c ?? 0, now) + novelty * Q_PLACE_IN_ASN) / (inAsn + novelty);
  return Math.log(Q_PLACE_IN_ASN / pUser);
}

/** ln(p_uniform / p_user) of the hour of day, smoothed over the neighbouring hours. */
function hourRatio(b: Behaviour, hour: string | null, now: number): number {
  const n = atTime(b.n, now);
  if (hour === null || n < HOUR_MIN_HISTORY) return 0;
  const t = b.tables.hr ?? {};
  const h = Number(hour);
  const at = (k: number) => {
    const e = t[String((k + 24) % 24)];
    return e ? atTime(e.c, now) : 0;
  };
  const near = at(h) + 0.5 * (at(h - 1) + at(h + 1));
  const pUser = (near + 2 * (1 / 24) * 2) / (2 * n + 2);
  return Math.log(1 / 24 / pUser);
}

/** Values of this event found in the user's hostile record, with the record's decayed weight. */
export function hostileMatch(b: Behaviour, f: Features, now: number): { levels: HostileLevel[]; weight: number } {
  const levels: HostileLevel[] = [];
  let weight = 0;
  for (const level of HOSTILE_LEVELS) {
    const value = f.values[level];
    if (value === null) continue;
    const e = b.hostile[level]?.[value];
    if (!e) continue;
    const w = atTime(e.c, now);
    if (w < HOSTILE_ENTRY_MIN) continue;
    levels.push(level);
    weight = Math.max(weight, w);
  }
  return { levels, weight };
}

/** Whether the event's network is one the user has logged in from (the address, or its /24 or /48). */
export function ownNetwork(b: Behaviour, f: Features, now: number): boolean {
  const { ip, net } = f.values;
  return (ip !== null && atTime(b.tables.ip?.[ip]?.c ?? 0, now) >= OWN_IP_MIN) || (net !== null && atTime(b.tables.net?.[net]?.c ?? 0, now) >= OWN_NET_MIN);
}

/** A change to a user's behaviour, applied by the store as commutative deltas. */
export interface BehaviourChange {
  /** Add to the legitimate tables (negative to take back a tentative addition). */
  legit?: { values: Partial<FeatureValues>; weight: number; at: number; location: Behaviour['lastLegit'] };
  /** Add to the hostile record. */
  hostile?: { values: Partial<FeatureValues>; weight: number; at: number };
  /** Remember a challenge until its answer. */
  pend?: { id: string; challenge: PendingChallenge };
  /** Forget a challenge (answered). */
  resolve?: string;
}

/** The values of an event that the tables keep. */
export const learnedValues = (f: Features): Partial<FeatureValues> => ({ ...f.values });

/** The challenge a `$challenge.succeeded/failed` answers: the latest one within a day before it. */
export function answeredChallenge(b: Behaviour, at: number): [string, PendingChallenge] | null {
  let best: [string, PendingChallenge] | null = null;
  for (const entry of Object.entries(b.pending)) {
    const [, p] = entry;
    if (p.at > at + 5 * 60_000 || at - p.at > 86_400_000) continue;
    if (!best || p.at > best[1].at) best = entry;
  }
  return best;
}

/*
 * RECURRING_AFTER_MS (weights.ts): how long before an unanswered challenge from the same operator
 * must lie for the operator to be learnt tentatively: a person challenged at the office on Monday
 * is there again on Tuesday; an attacker retrying from another address of the same network within
 * hours gains nothing. Older than RECURRING_WITHIN_MS, it does not count as the operator recurring.
 */

/**
 * Where the application does not report challenge answers: whether the event's operator was
 * already met at an unanswered challenge of this user between RECURRING_WITHIN_MS and
 * RECURRING_AFTER_MS before it (the user keeps coming back from it).
 */
export function recurringOperator(b: Behaviour, asn: string | null | undefined, at: number): boolean {
  if (!asn) return false;
  for (const p of Object.values(b.pending)) {
    const age = at - p.at;
    if (p.values.asn === asn && age >= RECURRING_AFTER_MS && age <= RECURRING_WITHIN_MS) return true;
  }
  return false;
}

/** The levels that name the event's operator (alone, with the software, with the network). */
const OPERATOR_LEVELS = ['asn', 'sa', 'an', 'ap'] as const;

/** The values without the operator's: what an unanswered challenge teaches at first. */
export function withoutOperator(values: Partial<FeatureValues>): Partial<FeatureValues> {
  const out = { ...values };
  for (const level of OPERATOR_LEVELS) out[level] = null;
  return out;
}

/** Pending challenges beyond this many are forgotten, oldest first. */
export const PENDING_CAP = 5;

/** The value to evict from a full table to make room for a new one: the least weight, then the oldest. */
export function evictionCandidate(table: Table | undefined, cap: number, incoming: string): string | null {
  if (!table || table[incoming] || Object.keys(table).length < cap) return null;
  let victim: string | null = null;
  let least = Infinity;
  for (const [value, e] of Object.entries(table)) {
    if (e.c < least || (e.c === least && victim !== null && e.l < (table[victim]?.l ?? 0))) {
      least = e.c;
      victim = value;
    }
  }
  return victim;
}
