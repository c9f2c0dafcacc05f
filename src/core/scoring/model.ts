/**
 * Risk engine v2: one calibrated risk in [0, 1] for an event, as the logistic of a sum of
 * log-odds contributions, each of which is a named signal whose detail says why it fired:
 *  - the user's behaviour (behaviour.ts): likelihood ratios of the network, software, device,
 *    fingerprint, language and hour, population over user;
 *  - the user's hostile record (values an attacker already used against this account);
 *  - attack-population evidence (request-evidence.ts) and velocity across accounts (velocity-evidence.ts);
 *  - where the user last really was (impossible travel), and feedback on the device.
 * Unfamiliarity alone never reaches the deny level: denying needs evidence of an attack.
 *
 * Also decides what an event teaches: the legitimate profile only learns from evidence that the
 * user was really there (an allowed successful login or registration, a passed challenge);
 * failures, failed challenges and denied logins go to the hostile record.
 *
 * Pure: no I/O.
 */
import type { IpIntel } from '../intel/types';
import { distanceKm } from '../intel/distance';
import type { Action, Device, EventInput, SignalDetail, Signals } from '../model';
import { answeredChallenge, atTime, familiarity, ownNetwork, recurringOperator, withoutOperator, hostileMatch, learnedValues, type Behaviour, type BehaviourChange, type PopulationCounts } from './behaviour';
import { clamp, ramp, type Contribution, type EvidenceInput, type EventKind } from './evidence';
import { requestEvidence } from './request-evidence';
import { attackWave, velocityEvidence } from './velocity-evidence';
import { placeless, type Features } from './features';
import { REGISTRATION_EVENTS } from '../events/catalog';
import { emailAccount, type Outcome } from './population';
import {
  APPROVED_CREDIT, BASE_LOGIT, HEADER_APPROVAL_EVIDENCE_DIVISOR, BEHAVIOUR_MIN_HISTORY, CAP_KNEE, CARRIER_NEW_DEVICE, CERTAIN_LOGIT, HABITUAL_AGENT, HARD_EVIDENCE_MIN, HISTORY_GAIN, HISTORY_GAIN_FROM, HISTORY_GAIN_FULL, HOME_NEW_DEVICE, HOSTILE_MAX, HOSTILE_MIN, HOSTILE_PER_VALUE,
  IMPOSSIBLE_TRAVEL, JOINT_NOVELTY, NETWORK_LLR_FLOOR, NEW_COUNTRY_FLOOR, PLACE_WEIGHT, SHARED_NETWORK_FLOOR, SIGNAL_MIN_SCORE, SOFT_EVIDENCE_MIN, TENTATIVE_WEIGHT, TOKEN_HABIT, TRAVEL_MAX_KMH, TRAVEL_MIN_KM, TRUSTED_AFTER_MS, TRUSTED_LOGINS,
  TRUSTED_TRAVEL_MAX, UNFAMILIARITY_CAP, UNPROVEN_MIN_HISTORY, USUAL_OPERATOR_LOGINS, WAVE_KNOWN_MAX, WAVE_LIFT_FROM, WAVE_LIFT_FULL, WAVE_UNFAMILIAR,
  DEVICE_LLR, DEVICE_TERM, FINGERPRINT_LLR, FINGERPRINT_TERM, HOUR_LLR, HOUR_TERM, LANGUAGE_LLR, LANGUAGE_TERM, MISSING_FINGERPRINT_NAMED_FROM, NETWORK_FOR_SOFTWARE_TERM, NETWORK_LLR_MAX, NETWORK_TERM, OPERATOR_FOR_SOFTWARE_TERM,
  PLACE_LLR, SOFTWARE_LLR_MAX, SOFTWARE_LLR_MIN, SOFTWARE_LLR_MIN_FINGERPRINTED, SOFTWARE_NETWORK_LLR, SOFTWARE_OPERATOR_LLR, SOFTWARE_TERM, UNUSUAL_HOUR_NAMED_FROM, UNUSUAL_LANGUAGE_NAMED_FROM,
} from './weights';

/** The model's numbers live in weights.ts; these are imported from here by tests and callers. */
export { APPROVED_CREDIT, BASE_LOGIT, CAP_KNEE, CARRIER_NEW_DEVICE, HISTORY_GAIN, HISTORY_GAIN_FROM, HISTORY_GAIN_FULL, HOME_NEW_DEVICE, JOINT_NOVELTY, PLACE_WEIGHT, TENTATIVE_WEIGHT, TRUSTED_TRAVEL_MAX, UNFAMILIARITY_CAP };

/**
 * Unfamiliarity without evidence of an attack, kept below UNFAMILIARITY_CAP and still in order:
 * the sum up to CAP_KNEE, then bending towards the cap without reaching it (smoothly: at the knee
 * it still rises one for one). With a hard min(), every strongly unfamiliar event had the same
 * risk (0.8808): a new browser in a new city, and a new country, a new operator and an odd hour
 * together, could not be told apart by a policy's threshold, an analyst's sort, or a ranking. No
 * default policy's action changes: everything above the knee is a challenge either way.
 */
export function belowCap(z: number): number {
  if (z <= CAP_KNEE) return z;
  // A hyperbola, not an exponential: sums of 10 and 20 still differ in the risk's fourth decimal.
  const room = UNFAMILIARITY_CAP - CAP_KNEE;
  return UNFAMILIARITY_CAP - (room * room) / (room + z - CAP_KNEE);
}
/**
 * During an attack wave, an unfamiliar login to an account that is here (evidence already at
 * least WAVE_UNFAMILIAR against it) weighs up to WAVE_KNOWN_MAX more: the share of attackers
 * among such logins is what rises during a wave. Familiar logins stay as they are, and this never
 * lifts the unfamiliarity cap (it is not evidence of an attack by itself). A device of the user's
 * that a client token identifies is left alone.
 */
/**
 * Least network log-likelihood ratio on an anonymising network (VPN, hosting, Tor): however often
 * the user came through it, it counts at most as much as this (−4 elsewhere).
 */
/**
 * Least network log-likelihood ratio in a country the user never showed. The user's share of an
 * operator counts every country it was seen in, the population's only this one, so a familiar
 * operator placed abroad by the address data (a carrier's range, a reassigned block) came out as
 * the strongest familiarity there is (−4, the rarer the country the more): a new country vouches
 * for little, whatever the operator.
 */
/*
 * PLACE_WEIGHT: the place within a familiar operator (see placeRatio). JOINT_NOVELTY: a new
 * device's share on a new operator; TRUSTED_TRAVEL_MAX: the most a trusted device's travel counts;
 * HOME_NEW_DEVICE, CARRIER_NEW_DEVICE: a new device's share on the user's own network, and on the
 * usual operator in the usual place (see behaviourEvidence). TRUSTED_LOGINS, TRUSTED_AFTER_MS:
 * what makes a client-token device trusted where it travels. USUAL_OPERATOR_LOGINS: legitimate
 * logins (decayed) through an operator that make it the user's usual one. All in weights.ts.
 */

/**
 * A device of the user's that a client token identifies, approved, or used in at least
 * TRUSTED_LOGINS legitimate logins over at least TRUSTED_AFTER_MS: what a stolen password does
 * not bring along, wherever it logs in from.
 */
function trustedDevice(x: AssessInput, b: Behaviour, now: number): boolean {
  const key = x.features.values.dev;
  if (!x.features.fingerprinted || !key) return false;
  if (x.device?.feedback === 'approved' && x.device.fingerprintKey === key) return true;
  const e = b.tables.dev?.[key];
  return Boolean(e && atTime(e.c, now) >= TRUSTED_LOGINS && e.f !== undefined && now - e.f >= TRUSTED_AFTER_MS);
}

/** The user's usual operator (at least USUAL_OPERATOR_LOGINS legitimate logins), placing the address where it places the user. */
function usualOperatorAndPlace(b: Behaviour, asn: string | null, place: number, now: number): boolean {
  return asn !== null && atTime(b.tables.asn?.[asn]?.c ?? 0, now) >= USUAL_OPERATOR_LOGINS && place <= 0;
}

const LOGIN_SUCCESS = new Set(['$login', '$login.succeeded']);
const REGISTRATION = new Set(REGISTRATION_EVENTS);
const RESET = new Set(['$password_reset_request', '$password_reset_request.attempted', '$password_reset_request.succeeded']);
const FAILURE = new Set(['$login.failed', '$password_reset_request.failed', '$registration.failed']);

/** What the model makes of an event's name. */
export function eventKind(name: string): EventKind {
  if (LOGIN_SUCCESS.has(name)) return 'login';
  if (name === '$login.attempted') return 'preauth';
  if (FAILURE.has(name)) return 'failure';
  if (REGISTRATION.has(name)) return 'registration';
  if (RESET.has(name)) return 'reset';
  return 'other';
}

export interface AssessInput extends Omit<EvidenceInput, 'kind' | 'familiarAsn' | 'ownDevice' | 'habitualAgent'> {
  behaviour: Behaviour | null;
  population: PopulationCounts;
  device: Device | null;
}

export interface Assessment {
  risk: number;
  signals: Signals;
  contributions: Contribution[];
}

const round2 = (v: number) => Math.round(v * 100) / 100;

/** Whether nearly all of the user's legitimate events carried a client fingerprint. */
function tokenHabit(b: Behaviour, now: number): boolean {
  const fp = b.tables.fp;
  const carried = atTime(fp?.y?.c ?? 0, now);
  const without = atTime(fp?.n?.c ?? 0, now);
  return carried > 0 && carried >= TOKEN_HABIT * (carried + without);
}

/** The behavioural contributions: how unlike the user this event is. */
function behaviourEvidence(x: AssessInput, now: number): Contribution[] {
  const b = x.behaviour;
  if (!b) return [];
  const f = familiarity(b, x.population, x.features, now);
  if (f.history < BEHAVIOUR_MIN_HISTORY) return [];
  const out: Contribution[] = [];
  const v = x.features.values;
  // Without a client fingerprint the copyable features are all there is, and a long history makes
  // them reliable; with one, the device term tells the user's browser from a copy, and the rest
  // only corroborates (amplified, it would challenge users travelling with their own device).
  const gain = x.features.fingerprinted ? 1 : historyGain(f.history);
  // A fingerprint the user has never shown, where the user has shown theirs several times, is a
  // device someone else holds or a new one of theirs: what can be copied (user agent, language,
  // the hour) or shared (the home network's operator) no longer vouches for it. Only an address
  // the user really logged in from still does.
  const strangeDevice = x.features.fingerprinted && f.device.firstUnseen !== null && f.history >= UNPROVEN_MIN_HISTORY;
  // So is no fingerprint at all from a user whose logins nearly always carried one: a script
  // posting to the login form, or a browser whose page never ran the application's script.
  const noDevice = !x.features.fingerprinted && f.history >= UNPROVEN_MIN_HISTORY && tokenHabit(b, now);
  const unproven = strangeDevice || noDevice;
  // A VPN, hosting or Tor network is shared with strangers, attackers first among them: the user's
  // habit of it vouches for little (an attacker choosing a VPN in the victim's country often
  // lands on the user's own provider), so the software and device must do the vouching there.
  const shared = Boolean(x.ip && (x.ip.vpn || x.ip.hosting || x.ip.tor));
  // The user's own network: an address, or the /24 (/48) of addresses, of their legitimate logins.
  const home = !shared && ownNetwork(b, x.features, now);
  const floor = unproven && !home ? 0 : shared ? SHARED_NETWORK_FLOOR : f.network.firstUnseen === 'cc' ? NEW_COUNTRY_FLOOR : NETWORK_LLR_FLOOR;
  // A device of the user's that a client token identifies and that the user has long used (or
  // approved) is the strongest evidence there is: where it travels (a new country, a hotel's
  // network, an odd hour), what the network says counts TRUSTED_TRAVEL_MAX at most.
  const trusted = trustedDevice(x, b, now);
  const travel = (w: number) => (trusted ? Math.min(w, TRUSTED_TRAVEL_MAX) : w);
  const net = travel(gain * NETWORK_TERM * clamp(f.network.llr, floor, NETWORK_LLR_MAX));
  const netDetail: SignalDetail = { history: round2(f.history), country: v.cc, asn: v.asn };
  if (f.network.firstUnseen === 'cc') out.push({ signal: 'new_country', weight: net, detail: netDetail });
  else if (f.network.firstUnseen === 'asn') out.push({ signal: 'new_isp', weight: net, detail: netDetail });
  else out.push({ signal: 'network', weight: net, detail: netDetail });
  // This software somewhere it has not been (a laptop on a network only the phone used).
  const where = travel(gain * (OPERATOR_FOR_SOFTWARE_TERM * clamp(f.softwareOperator, SOFTWARE_OPERATOR_LLR.lo, SOFTWARE_OPERATOR_LLR.hi) + NETWORK_FOR_SOFTWARE_TERM * clamp(f.softwareNetwork, SOFTWARE_NETWORK_LLR.lo, SOFTWARE_NETWORK_LLR.hi)));
  if (where > SIGNAL_MIN_SCORE) out.push({ signal: 'unusual_network_for_device', weight: where, detail: { browser: v.bf, os: v.os, asn: v.asn } });
  else out.push({ signal: 'network_for_device', weight: where, detail: {} });
  // Somewhere else on a familiar operator (another city): what a targeted attacker on the
  // victim's own ISP looks like, and a reassigned home address does not. A familiar place is no
  // credit to a device the user never showed (like the operator above).
  const place = travel(gain * PLACE_WEIGHT * clamp(f.place, unproven && !home ? 0 : PLACE_LLR.lo, PLACE_LLR.hi));
  if (place > SIGNAL_MIN_SCORE) out.push({ signal: 'unusual_place', weight: place, detail: { asn: v.asn, place: v.ap?.split('|').slice(1).join(', ') ?? null } });
  else out.push({ signal: 'place', weight: place, detail: {} });
  // Headers are easy to copy: a familiar user agent, without a fingerprint, vouches for little.
  // A new device on the user's own network (a new phone at home) counts HOME_NEW_DEVICE of what
  // it would on a stranger's; on the user's usual operator in the user's usual place (a phone on
  // its carrier), CARRIER_NEW_DEVICE.
  const newHere = strangeDevice ? (home ? HOME_NEW_DEVICE : !shared && usualOperatorAndPlace(b, v.asn, f.place, now) ? CARRIER_NEW_DEVICE : 1) : 1;
  const sw = newHere * gain * SOFTWARE_TERM * clamp(f.software.llr, unproven ? 0 : x.features.fingerprinted ? SOFTWARE_LLR_MIN_FINGERPRINTED : SOFTWARE_LLR_MIN, SOFTWARE_LLR_MAX);
  const dev = newHere * (strangeDevice ? 1 : DEVICE_TERM) * clamp(f.device.llr, DEVICE_LLR.lo, DEVICE_LLR.hi);
  const fp = FINGERPRINT_TERM * clamp(f.fingerprint.llr, FINGERPRINT_LLR.lo, FINGERPRINT_LLR.hi);
  const deviceDetail: SignalDetail = { history: round2(f.history), browser: v.br, os: v.os, fingerprinted: x.features.fingerprinted };
  const newDevice = f.device.firstUnseen !== null || (f.software.firstUnseen !== null && f.software.firstUnseen !== 'ua' && f.software.firstUnseen !== 'br');
  // A new kind of device usually arrives on a network of its own (a phone on its carrier, a work
  // laptop on the office's): the two hierarchies see one change, which their sum would count
  // twice. Without a fingerprint, on an operator new to the user in a country the user has shown,
  // the device's novelty counts JOINT_NOVELTY of its weight. (A fingerprint is the device itself,
  // and a new country stays the stronger evidence it is.)
  const joint = newDevice && !x.features.fingerprinted && f.network.firstUnseen === 'asn' && sw + dev > 0 ? JOINT_NOVELTY : 1;
  out.push({ signal: newDevice ? 'new_device' : 'device', weight: (sw + dev) * joint, detail: { ...deviceDetail, new_fingerprint: f.device.firstUnseen !== null } });
  if (fp > MISSING_FINGERPRINT_NAMED_FROM) out.push({ signal: 'missing_fingerprint', weight: fp, detail: { history: round2(f.history) } });
  else out.push({ signal: 'fingerprint', weight: fp, detail: {} });
  const lang = gain * LANGUAGE_TERM * clamp(f.language.llr, unproven ? 0 : LANGUAGE_LLR.lo, LANGUAGE_LLR.hi);
  out.push({ signal: lang > UNUSUAL_LANGUAGE_NAMED_FROM ? 'unusual_language' : 'language', weight: lang, detail: { language: v.lang } });
  const hour = travel(gain * HOUR_TERM * clamp(f.hour, unproven ? 0 : HOUR_LLR.lo, HOUR_LLR.hi));
  out.push({ signal: hour > UNUSUAL_HOUR_NAMED_FROM ? 'unusual_hour' : 'hour', weight: hour, detail: { hour_utc: v.hr } });
  return out;
}

/**
 * How much the behavioural evidence counts, by the user's (decayed) number of legitimate events.
 * The per-hierarchy weights above shrink each likelihood ratio to about half, because a short
 * history makes them noisy and the hierarchies are correlated. Without a client fingerprint, a
 * longer history earns them full weight, as in Freeman et al.: from 1× at HISTORY_GAIN_FROM
 * events to HISTORY_GAIN× at HISTORY_GAIN_FULL. The device and fingerprint terms keep their
 * weight: a client fingerprint is strong evidence from the first login, and a new one is what
 * every new phone shows. The gain moves familiar events further down as much as strange ones up:
 * measured with `npm run eval` (headers only), targeted takeover 37% → 57% stopped and very
 * targeted 17% → 31%, for 1.5% → 2.1% of the logins of users with 10+ logins challenged.
 */
export const historyGain = (history: number): number =>
  1 + (HISTORY_GAIN - 1) * clamp((history - HISTORY_GAIN_FROM) / (HISTORY_GAIN_FULL - HISTORY_GAIN_FROM), 0, 1);

/** Values of the event an attacker already used against this account, and not the user. */
function hostileEvidence(x: AssessInput, now: number): Contribution[] {
  const b = x.behaviour;
  if (!b) return [];
  const m = hostileMatch(b, x.features, now);
  // One failed attempt is a typo as often as not.
  if (m.weight < HOSTILE_MIN) return [];
  const foreign = m.levels.filter((level) => {
    const value = x.features.values[level];
    return value !== null && !b.tables[level]?.[value];
  });
  if (foreign.length === 0) return [];
  return [{ signal: 'hostile_context', weight: Math.min(HOSTILE_MAX, HOSTILE_PER_VALUE * foreign.length), detail: { seen_in: foreign.join(', '), attempts: round2(m.weight) } }];
}

/** Too fast from where the user last really was. */
function travelEvidence(b: Behaviour | null, ip: IpIntel | null, at: number): Contribution[] {
  const last = b?.lastLegit;
  const loc = ip?.location;
  if (!last || !loc || loc.lat === null || loc.lon === null || placeless(ip)) return [];
  const km = distanceKm(last, { lat: loc.lat, lon: loc.lon });
  const hours = Math.max((at - last.at) / 3_600_000, 1 / 60);
  if (km < TRAVEL_MIN_KM || km / hours <= TRAVEL_MAX_KMH) return [];
  return [{ signal: 'impossible_travel', weight: IMPOSSIBLE_TRAVEL, detail: { km: Math.round(km), hours: round2(hours) } }];
}

/**
 * Evidence of an attack, as opposed to mere unfamiliarity: hard evidence (automation, velocity
 * across accounts, contradicting headers) can take the risk to deny; soft evidence (an
 * anonymising network, a throw-away address, missing headers, a past failure) only together.
 */
const HARD_SIGNALS = new Set([
  'headless_browser', 'bot_behavior', 'web_crawler', 'spoofed_device', 'credential_stuffing', 'high_activity_ip',
  'multiple_accounts_per_device', 'request_shape_burst', 'high_activity_network', 'attack_wave', 'registration_velocity', 'replayed_token', 'invalid_token',
  'emulator',
]);
const SOFT_SIGNALS = new Set(['proxy_ip', 'missing_headers', 'disposable_email', 'new_email_domain', 'impossible_travel', 'hostile_context', 'language_country_mismatch', 'compromised_device']);

/** Evidence that alone settles it: a replayed or forged client token (risk at least 0.95). */
const certain = (c: Contribution) => c.signal === 'replayed_token' || (c.signal === 'invalid_token' && c.detail.reason === 'forged');

/** Signals named whenever they hold, whatever their weight (`missing_fields` weighs nothing). */
const FACT_SIGNALS = new Set(['new_device', 'new_country', 'new_isp', 'impossible_travel', 'missing_fields']);

/**
 * Signals that two parts of the model can raise for one fact (a missing fingerprint, against the
 * user's habit and against the environment's): only the strongest counts.
 */
const COUNTED_ONCE = new Set(['missing_fingerprint', 'multiple_accounts_per_device']);

function onceEach(contributions: Contribution[], names: ReadonlySet<string>): Contribution[] {
  const strongest = new Map<string, Contribution>();
  for (const c of contributions) {
    if (!names.has(c.signal)) continue;
    const best = strongest.get(c.signal);
    if (!best || c.weight > best.weight) strongest.set(c.signal, c);
  }
  return contributions.filter((c) => !names.has(c.signal) || strongest.get(c.signal) === c);
}

/**
 * How much an approved device lowers the logit. A device a client token identifies: in full. One
 * identified only by copyable headers: less half the request's evidence of an attack, since an
 * attacker sending the victim's browser's headers is that same "device" by its identity.
 */
function approvalCredit(fingerprinted: boolean, attackEvidence: number): number {
  return fingerprinted ? APPROVED_CREDIT : Math.max(0, APPROVED_CREDIT - attackEvidence / HEADER_APPROVAL_EVIDENCE_DIVISOR);
}

/** Score one event. `kind` says what it is; `now` is its event time. */
export function assess(x: AssessInput, kind: EventKind, now: number): Assessment {
  const b = x.behaviour;
  const familiarAsn = Boolean(b && x.features.values.asn && b.tables.asn?.[x.features.values.asn]);
  // A device of the user's that a client token identifies (a stolen password does not bring it).
  const ownDevice = x.features.fingerprinted && Boolean(b && x.features.values.dev && b.tables.dev?.[x.features.values.dev]);
  // The user's own client: the exact user agent, seen in at least HABITUAL_AGENT of their legitimate logins.
  const agent = x.features.values.ua;
  const habitualAgent = !x.unknownAccount && Boolean(b && agent && atTime(b.tables.ua?.[agent]?.c ?? 0, now) >= HABITUAL_AGENT);
  const evidence: EvidenceInput = { ...x, kind, familiarAsn, ownDevice, habitualAgent };
  const contributions = onceEach([...behaviourEvidence(x, now), ...hostileEvidence(x, now), ...travelEvidence(b, x.ip, now), ...requestEvidence(evidence), ...velocityEvidence(evidence)], COUNTED_ONCE);
  let z = BASE_LOGIT;
  let hard = 0;
  let soft = 0;
  // Attack evidence that does not lift the cap (capped): it still says the headers were copied.
  let capped = 0;
  // What the day says (a campaign spread over days), apart: see below.
  let day = 0;
  for (const c of contributions) {
    if (c.dayLevel) {
      day += c.weight;
      continue;
    }
    z += c.weight;
    if (c.capped) {
      capped += c.weight;
      continue;
    }
    if (HARD_SIGNALS.has(c.signal)) hard += c.weight;
    else if (SOFT_SIGNALS.has(c.signal)) soft += c.weight;
  }
  // (Not on a device of the user's that a client token identifies.)
  const wave = !x.unknownAccount && !ownDevice && z - BASE_LOGIT >= WAVE_UNFAMILIAR ? attackWave(evidence) : null;
  const waveWeight = wave ? ramp(wave.lift, WAVE_LIFT_FROM, WAVE_LIFT_FULL, WAVE_KNOWN_MAX) : 0;
  if (wave) {
    contributions.push({ signal: 'attack_wave', weight: waveWeight, detail: { ...wave.detail, known_account: true } });
    z += waveWeight;
  }
  // Unfamiliar is not hostile: without evidence of an attack the answer stays below deny.
  const summed = z;
  if (hard < HARD_EVIDENCE_MIN && soft < SOFT_EVIDENCE_MIN) z = belowCap(z);
  // A day that stands out is not evidence about this request: it raises the risk as far as the
  // unfamiliarity cap (a challenge), never to a deny. A VPN user signing up on a farm's day is
  // challenged, not refused; what the request itself shows decides beyond that.
  if (day > 0) z = Math.max(z, belowCap(summed + day));
  // A copied or forged client token is not the user's browser, whatever device it names (a
  // stolen token names the victim's): deny, as for a reported device.
  if (contributions.some(certain)) z = Math.max(z, CERTAIN_LOGIT);
  if (x.device?.feedback === 'approved') z -= approvalCredit(x.features.fingerprinted, Math.max(0, hard) + Math.max(0, soft) + waveWeight + capped);
  let risk = 1 / (1 + Math.exp(-z));
  if (x.device?.feedback === 'reported') risk = 1;
  risk = Math.round(Math.min(1, Math.max(0, risk)) * 10000) / 10000;

  const signals: Signals = {};
  for (const c of contributions) {
    // Only what raised the risk is a signal, and the facts policies match on (a new device or
    // country is named even where the user's habits make it count for little).
    if (c.weight < SIGNAL_MIN_SCORE && !FACT_SIGNALS.has(c.signal)) continue;
    const previous = signals[c.signal];
    if (previous && typeof previous.score === 'number' && previous.score >= c.weight) continue;
    signals[c.signal] = { ...c.detail, score: round2(c.weight) };
  }
  return { risk, signals, contributions };
}

/** What an event teaches: its behaviour change for the user and its outcome for the counters. */
export interface Lesson {
  behaviour: BehaviourChange | null;
  outcome: Outcome;
}

export interface LessonInput {
  event: EventInput;
  /** The account the event is about (its user id, or the one its e-mail belongs to). */
  userId: string | null;
  kind: EventKind;
  features: Features;
  behaviour: Behaviour | null;
  /** The verdict's action, or null for a tracked event. */
  action: Action | null;
  unknownAccount: boolean;
  /** The application reports challenge outcomes (so an unanswered challenge teaches nothing). */
  feedbackReported: boolean;
  ip: IpIntel | null;
  eventId: string;
}

export function lesson(x: LessonInput): Lesson {
  const at = x.event.occurredAt.getTime();
  const email = x.event.email ?? (typeof x.event.properties.email === 'string' ? x.event.properties.email : null);
  const account = x.userId ?? (email ? emailAccount(email) : null);
  const outcome: Outcome = {
    attempt: x.kind === 'login' || x.kind === 'preauth' || x.kind === 'registration' || x.kind === 'reset' || x.kind === 'failure',
    failure: x.kind === 'failure' || x.event.name === '$challenge.failed' || (x.action === 'deny' && x.kind === 'login'),
    success: false,
    registration: x.kind === 'registration',
    unknownAccount: x.unknownAccount && (x.kind === 'login' || x.kind === 'preauth' || x.kind === 'failure'),
    credentialed: x.kind === 'login' && x.event.endpoint !== 'track',
    stopped: x.action === 'challenge' || x.action === 'deny',
    challengeFeedback: x.event.name === '$challenge.succeeded' || x.event.name === '$challenge.failed',
    account,
  };
  const values = learnedValues(x.features);
  const loc = x.ip?.location;
  const location = loc && loc.lat !== null && loc.lon !== null && !placeless(x.ip) ? { at, lat: loc.lat, lon: loc.lon, cc: loc.country_code } : null;
  let behaviour: BehaviourChange | null = null;
  if (!x.userId) return { behaviour, outcome };

  const learnable = x.kind === 'login' || (x.kind === 'registration' && x.event.name !== '$registration.attempted');
  if (learnable && (x.action === 'allow' || x.action === null)) {
    // An allowed login (or one the application reports as succeeded) is the user being there.
    behaviour = { legit: { values, weight: 1, at, location } };
    outcome.success = true;
  } else if (learnable && x.action === 'challenge') {
    const tentative = x.feedbackReported ? 0 : TENTATIVE_WEIGHT;
    // Tentatively, the device and the address; the operator only when the user was already
    // challenged from it hours or days before: an attacker trying again from another address of
    // the same network must still look new, and a user's new office or carrier must not be
    // challenged for ever where the application does not say that the challenges were passed.
    const operator = tentative > 0 && x.behaviour !== null && recurringOperator(x.behaviour, values.asn, at);
    const taught = operator ? values : withoutOperator(values);
    behaviour = { pend: { id: x.eventId, challenge: { at, values, tentative, operator } }, ...(tentative > 0 ? { legit: { values: taught, weight: tentative, at, location: null } } : {}) };
  } else if (learnable && x.action === 'deny') {
    behaviour = { hostile: { values, weight: 1, at } };
  } else if (x.kind === 'failure' && x.event.name === '$login.failed') {
    behaviour = { hostile: { values, weight: 1, at } };
  } else if ((x.event.name === '$challenge.succeeded' || x.event.name === '$challenge.failed') && x.behaviour) {
    const answered = answeredChallenge(x.behaviour, at);
    if (answered) {
      const [id, p] = answered;
      behaviour =
        x.event.name === '$challenge.succeeded'
          ? { resolve: id, legit: { values: p.values, weight: 1 - p.tentative, at: p.at, location: null } }
          : { resolve: id, hostile: { values: p.values, weight: 1, at: p.at }, ...(p.tentative > 0 ? { legit: { values: p.operator === true ? p.values : withoutOperator(p.values), weight: -p.tentative, at: p.at, location: null } } : {}) };
    } else if (x.event.name === '$challenge.failed') {
      behaviour = { hostile: { values, weight: 1, at } };
    }
  }
  return { behaviour, outcome };
}
