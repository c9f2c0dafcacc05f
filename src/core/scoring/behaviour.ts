/**
 * The behavioural model of one user (after Freeman et al., NDSS 2016): how likely this event's
 * features are for the user, against how likely they are for anyone (the environment's
 * population, standing in for an attacker), as a likelihood ratio per hierarchy. The user's
 * history it reads is a set of bounded tables of decayed counts (behaviour-tables.ts).
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
 * The record's data, its eviction and what challenges teach live beside this module
 * (behaviour-tables.ts, behaviour-eviction.ts, challenges.ts); their names are exported from here
 * too, as before the split.
 *
 * Pure: no I/O.
 */
import { LEVEL, networkOf, type Features, type Level } from './features';
import {
  atTime,
  countAt,
  FIRST_SEEN_LEVELS,
  HOSTILE_LEVELS,
  NOVELTY_HALF_LIFE_MS,
  userCount,
  type Behaviour,
  type HostileLevel,
  type Table,
  type TableEntry,
} from './behaviour-tables';
import {
  BROWSER_VERSION_FLOOR,
  HOSTILE_ENTRY_MIN,
  HOUR_MIN_HISTORY,
  HOUR_NEIGHBOUR_SHARE,
  HOUR_PRIOR_EVENTS,
  IP_FLOOR,
  NET_FLOOR,
  OWN_IP_MIN,
  OWN_NET_MIN,
  PLACE_MIN_LOGINS,
  POP_PSEUDO,
  POP_PSEUDO_DEFAULT,
  POP_VALUE_PRIOR,
  Q_DEVICE,
  Q_IP_IN_NET,
  Q_NET_IN_ASN,
  Q_PLACE_IN_ASN,
  SOFTWARE_MIN_EVENTS,
  SOFTWARE_PARENT_PRIOR,
  USER_AGENT_FLOOR,
} from './weights';

export {
  atTime,
  emptyBehaviour,
  epochWeight,
  EPOCH_MS,
  FIRST_SEEN_LEVELS,
  HOSTILE_CAP,
  HOSTILE_LEVELS,
  NOVELTY_HALF_LIFE_MS,
  PENDING_CAP,
  TABLE_CAPS,
  USER_HALF_LIFE_MS,
  type Behaviour,
  type BehaviourChange,
  type HostileLevel,
  type PendingChallenge,
  type Table,
  type TableEntry,
} from './behaviour-tables';
export { evictionCandidate, planBehaviourEviction, type EvictionPlan } from './behaviour-eviction';
export {
  answeredChallenge,
  learnedValues,
  recurringOperator,
  RECURRING_AFTER_MS,
  RECURRING_WITHIN_MS,
  withoutOperator,
} from './challenges';

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
 * level, for the population's own smoothing, with POP_VALUE_PRIOR for the value's own count.
 */

/** No table (a level the user has none of). */
const NO_TABLE: Readonly<Table> = {};
const own = (o: object, k: string): boolean => Object.prototype.hasOwnProperty.call(o, k);
/** How many values a table holds (without listing them). */
function ownCount(t: Readonly<Table>): number {
  let n = 0;
  for (const k in t) if (own(t, k)) n++;
  return n;
}

/** The population's share of `value` at `level` within its parent's count (or the total). */
function popShare(pop: PopulationCounts, level: Level, value: string, parentCount: number): number {
  const pseudo = POP_PSEUDO[level] ?? POP_PSEUDO_DEFAULT;
  const c = Math.min(pop.count(level, value), parentCount);
  return (c + POP_VALUE_PRIOR) / (parentCount + POP_VALUE_PRIOR * pseudo);
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
  const t = b.tables[level] ?? NO_TABLE;
  const e = value !== null ? t[value] : undefined;
  let distinct = 0;
  if (FIRST_SEEN_LEVELS.has(level)) {
    for (const k in t) {
      if (!own(t, k)) continue;
      const entry = t[k] as TableEntry;
      distinct += entry.f === undefined ? 1 : 2 ** (-Math.max(0, now - entry.f) / NOVELTY_HALF_LIFE_MS);
    }
  } else distinct = ownCount(t);
  return { count: e ? countAt(e, now) : 0, distinct };
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
  /**
   * How many of the user's values at this level do not count towards the user's range of them
   * (their novelty mass): those the user showed only through networks shared with strangers, when
   * the event's own network is not one (see `sharedWithStrangers`).
   */
  shared?: number;
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
  for (const { level, value, fixedShare, floor, within, shared } of chain) {
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
      const novelty = Math.max(1, v.distinct - (shared ?? 0), floor ? floor * n : 0);
      pUser = (v.count + novelty * prior) / (n + novelty);
    }
    if (v.count <= 1e-9 && firstUnseen === null) firstUnseen = level;
  }
  return { llr: Math.log(pPop / pUser), firstUnseen };
}

/** Where the software is scored against: the joint level of the software with it, and its own level. */
const SOFTWARE_ON = {
  operator: { joint: LEVEL.softwareOnOperator, parent: LEVEL.operator },
  network: { joint: LEVEL.softwareOnNetwork, parent: LEVEL.network },
} as const;

/**
 * ln(p_user(value) / p_user(value | software)): how much less usual the operator (or network)
 * is for this software than for the user at large. A laptop that always logs in from home,
 * seen on a network only the user's phone used, is unusual even though the network is not.
 */
export function conditionalRatio(
  b: Behaviour,
  where: keyof typeof SOFTWARE_ON,
  f: Features,
  now: number,
): number {
  const { joint: level, parent } = SOFTWARE_ON[where];
  const sw = f.values[LEVEL.software];
  const joint = f.values[level];
  const value = f.values[parent];
  if (!sw || !joint || !value) return 0;
  const nSw = userCount(b, LEVEL.software, sw, now);
  if (nSw < SOFTWARE_MIN_EVENTS) return 0;
  const n = atTime(b.n, now);
  const table = b.tables[parent] ?? NO_TABLE;
  const distinct = Math.max(1, ownCount(table));
  const pUser = (userCount(b, parent, value, now) + distinct * SOFTWARE_PARENT_PRIOR) / (n + distinct);
  const prefix = `${sw}|`;
  const jointTable = b.tables[level] ?? NO_TABLE;
  let distinctForSw = 0;
  for (const k in jointTable) if (own(jointTable, k) && k.startsWith(prefix)) distinctForSw++;
  const novelty = Math.max(1, distinctForSw);
  const pGiven = (userCount(b, level, joint, now) + novelty * pUser) / (nSw + novelty);
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
  const joint = b.tables[LEVEL.networkInOperator];
  if (!asn || !joint) return undefined;
  const prefix = `${asn}|`;
  let distinct = 0;
  for (const k in joint) if (own(joint, k) && k.startsWith(prefix)) distinct++;
  return { count: userCount(b, LEVEL.operator, asn, now), distinct };
}

/** How many of the user's values at each network level came only through networks shared with strangers. */
export interface SharedValues {
  operators: number;
  networks: number;
  addresses: number;
}
const NONE_SHARED: SharedValues = { operators: 0, networks: 0, addresses: 0 };

/**
 * The user's operators, networks and addresses that came only through a commercial VPN, Tor or a
 * data centre (`LEVEL.anonymisingOperator`), when the event's own address is none of these: such
 * networks are shared with strangers, and a user who logs in through two VPN providers (a new
 * exit, a new /24, every few logins) roams among home and mobile networks no more than one who
 * does not. A new home or mobile operator is judged against the networks the user really
 * connected from. On an anonymising network itself they count (a user who hops between VPN
 * providers and their exits is not surprised by a third).
 */
export function sharedWithStrangers(b: Behaviour, f: Features): SharedValues {
  const anonymising = b.tables[LEVEL.anonymisingOperator];
  const operators = b.tables[LEVEL.operator];
  if (f.values[LEVEL.anonymisingOperator] !== null || !anonymising || !operators) return NONE_SHARED;
  // An operator that also placed the user somewhere (LEVEL.placeInOperator) was the user's own network too.
  const placed = Object.keys(b.tables[LEVEL.placeInOperator] ?? {});
  const only: string[] = [];
  for (const asn of Object.keys(anonymising))
    if (operators[asn] !== undefined && !placed.some((k) => k.startsWith(`${asn}|`))) only.push(asn);
  if (only.length === 0) return NONE_SHARED;
  // Their networks, from the operator|network table, and the addresses within those networks.
  const nets = new Set<string>();
  for (const k of Object.keys(b.tables[LEVEL.networkInOperator] ?? {})) {
    const bar = k.indexOf('|');
    if (only.includes(k.slice(0, bar))) nets.add(k.slice(bar + 1));
  }
  let addresses = 0;
  if (nets.size > 0)
    for (const ip of Object.keys(b.tables[LEVEL.address] ?? {})) {
      const net = networkOf(ip);
      if (net !== null && nets.has(net)) addresses++;
    }
  return { operators: only.length, networks: nets.size, addresses };
}

/** The user's count of a network and the addresses they showed within it. */
function addressesWithin(b: Behaviour, net: string | null, now: number): ChainLevel['within'] {
  const ips = b.tables[LEVEL.address];
  if (!net || !ips) return undefined;
  let distinct = 0;
  // An IPv4 network's addresses share its first three octets (no parse per address).
  const v4 = net.endsWith('.0/24') ? net.slice(0, -4) : null;
  for (const k in ips) if (own(ips, k) && (v4 !== null ? k.startsWith(v4) : networkOf(k) === net)) distinct++;
  return { count: userCount(b, LEVEL.network, net, now), distinct };
}

/** How familiar the event is for the user, hierarchy by hierarchy (log-likelihood ratios). */
export function familiarity(b: Behaviour, pop: PopulationCounts, f: Features, now: number): Familiarity {
  const v = f.values;
  const shared = sharedWithStrangers(b, f);
  const network = chainRatio(
    b,
    pop,
    [
      { level: 'cc', value: v.cc },
      { level: 'asn', value: v.asn, shared: shared.operators },
      {
        level: 'net',
        value: v.net,
        fixedShare: Q_NET_IN_ASN,
        floor: NET_FLOOR,
        within: netsWithin(b, v.asn, now),
        shared: shared.networks,
      },
      {
        level: 'ip',
        value: v.ip,
        fixedShare: Q_IP_IN_NET,
        floor: IP_FLOOR,
        within: addressesWithin(b, v.net, now),
        shared: shared.addresses,
      },
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
    softwareOperator: conditionalRatio(b, 'operator', f, now),
    place: placeRatio(b, v.asn, v[LEVEL.placeInOperator], now),
    softwareNetwork: conditionalRatio(b, 'network', f, now),
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
  const nAsn = userCount(b, LEVEL.operator, asn, now);
  const joint = b.tables[LEVEL.placeInOperator];
  if (nAsn < PLACE_MIN_LOGINS || !joint) return 0;
  const prefix = `${asn}|`;
  let distinct = 0;
  let inAsn = 0;
  for (const k in joint) {
    if (!own(joint, k) || !k.startsWith(prefix)) continue;
    distinct++;
    inAsn += countAt(joint[k] as TableEntry, now);
  }
  // A profile from before places were kept, or addresses without one: nothing to compare.
  if (inAsn < PLACE_MIN_LOGINS) return 0;
  const novelty = Math.max(1, distinct);
  const pUser =
    (userCount(b, LEVEL.placeInOperator, place, now) + novelty * Q_PLACE_IN_ASN) / (inAsn + novelty);
  return Math.log(Q_PLACE_IN_ASN / pUser);
}

/** ln(p_uniform / p_user) of the hour of day, smoothed over the neighbouring hours. */
function hourRatio(b: Behaviour, hour: string | null, now: number): number {
  const n = atTime(b.n, now);
  if (hour === null || n < HOUR_MIN_HISTORY) return 0;
  const t = b.tables[LEVEL.hour] ?? {};
  const h = Number(hour);
  const at = (k: number) => {
    const e = t[String((k + 24) % 24)];
    return e ? countAt(e, now) : 0;
  };
  const near = at(h) + HOUR_NEIGHBOUR_SHARE * (at(h - 1) + at(h + 1));
  // What one event adds to `near` over the three hours (2 with HOUR_NEIGHBOUR_SHARE 0.5).
  const span = 1 + 2 * HOUR_NEIGHBOUR_SHARE;
  const pUser = (near + HOUR_PRIOR_EVENTS * (1 / 24) * span) / (span * n + HOUR_PRIOR_EVENTS);
  return Math.log(1 / 24 / pUser);
}

/** Values of this event found in the user's hostile record, with the record's decayed weight. */
export function hostileMatch(
  b: Behaviour,
  f: Features,
  now: number,
): { levels: HostileLevel[]; weight: number } {
  const levels: HostileLevel[] = [];
  let weight = 0;
  for (const level of HOSTILE_LEVELS) {
    const value = f.values[level];
    if (value === null) continue;
    const e = b.hostile[level]?.[value];
    if (!e) continue;
    const w = countAt(e, now);
    if (w < HOSTILE_ENTRY_MIN) continue;
    levels.push(level);
    weight = Math.max(weight, w);
  }
  return { levels, weight };
}

/** Whether the event's network is one the user has logged in from (the address, or its /24 or /48). */
export function ownNetwork(b: Behaviour, f: Features, now: number): boolean {
  const address = f.values[LEVEL.address];
  const network = f.values[LEVEL.network];
  return (
    (address !== null && userCount(b, LEVEL.address, address, now) >= OWN_IP_MIN) ||
    (network !== null && userCount(b, LEVEL.network, network, now) >= OWN_NET_MIN)
  );
}
