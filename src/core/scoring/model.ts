/**
 * Risk engine v2: one calibrated risk in [0, 1] for an event, as the logistic of a sum of
 * log-odds contributions, each of which is a named signal whose detail says why it fired:
 *  - the user's own record (user-evidence.ts): likelihood ratios of the network, software,
 *    device, fingerprint, language and hour, population over user (behaviour.ts); values an
 *    attacker already used against this account; where the user last really was (impossible
 *    travel);
 *  - attack-population evidence (request-evidence.ts) and velocity across accounts (velocity-evidence.ts);
 *  - feedback on the device.
 * Unfamiliarity alone never reaches the deny level: denying needs evidence of an attack.
 *
 * What an event teaches is lesson.ts (exported from here too, as before the split).
 *
 * Pure: no I/O.
 */
import type { Device, Signals } from '../model';
import { userCount, type Behaviour } from './behaviour-tables';
import { LEVEL } from './features';
import type { PopulationCounts } from './behaviour';
import { ramp, type Contribution, type EvidenceInput, type EventKind } from './evidence';
import { requestEvidence } from './request-evidence';
import { attackWave, velocityEvidence } from './velocity-evidence';
import { behaviourEvidence, hostileEvidence, travelEvidence } from './user-evidence';
import { REGISTRATION_EVENTS } from '../events/catalog';
import {
  APPROVED_CREDIT,
  BASE_LOGIT,
  HEADER_APPROVAL_EVIDENCE_DIVISOR,
  CAP_KNEE,
  CARRIER_NEW_DEVICE,
  CERTAIN_LOGIT,
  HABITUAL_AGENT,
  HARD_EVIDENCE_MIN,
  HISTORY_GAIN,
  HISTORY_GAIN_FROM,
  HISTORY_GAIN_FULL,
  HOME_NEW_DEVICE,
  JOINT_NOVELTY,
  PLACE_WEIGHT,
  SIGNAL_MIN_SCORE,
  SOFT_EVIDENCE_MIN,
  TENTATIVE_WEIGHT,
  TRUSTED_TRAVEL_MAX,
  UNFAMILIARITY_CAP,
  WAVE_KNOWN_MAX,
  WAVE_LIFT_FROM,
  WAVE_LIFT_FULL,
  WAVE_UNFAMILIAR,
} from './weights';

/** The model's numbers live in weights.ts; these are imported from here by tests and callers. */
export {
  APPROVED_CREDIT,
  BASE_LOGIT,
  CAP_KNEE,
  CARRIER_NEW_DEVICE,
  HISTORY_GAIN,
  HISTORY_GAIN_FROM,
  HISTORY_GAIN_FULL,
  HOME_NEW_DEVICE,
  JOINT_NOVELTY,
  PLACE_WEIGHT,
  TENTATIVE_WEIGHT,
  TRUSTED_TRAVEL_MAX,
  UNFAMILIARITY_CAP,
};
export { historyGain } from './user-evidence';
export { lesson, type Lesson, type LessonInput } from './lesson';

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

const round2 = (v: number) => Math.round(v * 100) / 100;

const LOGIN_SUCCESS = new Set(['$login', '$login.succeeded']);
const REGISTRATION = new Set(REGISTRATION_EVENTS);
const RESET = new Set([
  '$password_reset_request',
  '$password_reset_request.attempted',
  '$password_reset_request.succeeded',
]);
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

export interface AssessInput extends Omit<
  EvidenceInput,
  'kind' | 'familiarAsn' | 'ownDevice' | 'habitualAgent'
> {
  behaviour: Behaviour | null;
  population: PopulationCounts;
  device: Device | null;
}

export interface Assessment {
  risk: number;
  signals: Signals;
  contributions: Contribution[];
}

/**
 * Evidence of an attack, as opposed to mere unfamiliarity: hard evidence (automation, velocity
 * across accounts, contradicting headers) can take the risk to deny; soft evidence (an
 * anonymising network, a throw-away address, missing headers, a past failure) only together.
 */
const HARD_SIGNALS = new Set([
  'headless_browser',
  'bot_behavior',
  'web_crawler',
  'spoofed_device',
  'credential_stuffing',
  'high_activity_ip',
  'multiple_accounts_per_device',
  'request_shape_burst',
  'high_activity_network',
  'attack_wave',
  'registration_velocity',
  'replayed_token',
  'invalid_token',
  'emulator',
]);
const SOFT_SIGNALS = new Set([
  'proxy_ip',
  'missing_headers',
  'disposable_email',
  'new_email_domain',
  'impossible_travel',
  'hostile_context',
  'language_country_mismatch',
  'compromised_device',
]);

/** Evidence that alone settles it: a replayed or forged client token (risk at least 0.95). */
const certain = (c: Contribution) =>
  c.signal === 'replayed_token' || (c.signal === 'invalid_token' && c.detail.reason === 'forged');

/** Signals named whenever they hold, whatever their weight (`missing_fields` weighs nothing). */
const FACT_SIGNALS = new Set(['new_device', 'new_country', 'new_isp', 'impossible_travel', 'missing_fields']);

/**
 * Signals that two parts of the model can raise for one fact (a missing fingerprint, against the
 * user's habit and against the environment's): only the strongest counts.
 */
const COUNTED_ONCE = new Set(['missing_fingerprint', 'multiple_accounts_per_device']);

function onceEach(contributions: Contribution[], names: ReadonlySet<string>): Contribution[] {
  let strongest: Map<string, Contribution> | undefined;
  let repeated = false;
  for (const c of contributions) {
    if (!names.has(c.signal)) continue;
    strongest ??= new Map();
    const best = strongest.get(c.signal);
    if (best) repeated = true;
    if (!best || c.weight > best.weight) strongest.set(c.signal, c);
  }
  // Each raised once at most (the usual case): nothing to leave out.
  if (!repeated || strongest === undefined) return contributions;
  const kept = strongest;
  return contributions.filter((c) => !names.has(c.signal) || kept.get(c.signal) === c);
}

/**
 * How much an approved device lowers the logit. A device a client token identifies: in full. One
 * identified only by copyable headers: less half the request's evidence of an attack, since an
 * attacker sending the victim's browser's headers is that same "device" by its identity.
 */
function approvalCredit(fingerprinted: boolean, attackEvidence: number): number {
  return fingerprinted
    ? APPROVED_CREDIT
    : Math.max(0, APPROVED_CREDIT - attackEvidence / HEADER_APPROVAL_EVIDENCE_DIVISOR);
}

/*
 * During an attack wave, an unfamiliar login to an account that is here (evidence already at
 * least WAVE_UNFAMILIAR against it) weighs up to WAVE_KNOWN_MAX more: the share of attackers
 * among such logins is what rises during a wave. Familiar logins stay as they are, and this never
 * lifts the unfamiliarity cap (it is not evidence of an attack by itself). A device of the user's
 * that a client token identifies is left alone.
 */

/** Append `more` to `to` (no spread: no iterator, no intermediate array). */
function pushAll(to: Contribution[], more: readonly Contribution[]): void {
  for (let i = 0; i < more.length; i++) to.push(more[i] as Contribution);
}

/**
 * Score one event. `kind` says what it is; `now` is its event time. `x` is the caller's, made for
 * this call: it is given `kind` and the three facts below in place.
 */
export function assess(x: AssessInput, kind: EventKind, now: number): Assessment {
  const b = x.behaviour;
  const operator = x.features.values[LEVEL.operator];
  const familiarAsn = Boolean(b && operator && b.tables[LEVEL.operator]?.[operator]);
  // A device of the user's that a client token identifies (a stolen password does not bring it).
  const device = x.features.values[LEVEL.device];
  const ownDevice = x.features.fingerprinted && Boolean(b && device && b.tables[LEVEL.device]?.[device]);
  // The user's own client: the exact user agent, seen in at least HABITUAL_AGENT of their legitimate logins.
  const agent = x.features.values[LEVEL.userAgent];
  const habitualAgent =
    !x.unknownAccount && Boolean(b && agent && userCount(b, LEVEL.userAgent, agent, now) >= HABITUAL_AGENT);
  // The input is made for this one call (assessEvent's): it takes the four facts in place rather
  // than being copied whole with them (a copy of ~25 fields per verdict). Each call sets all four.
  const evidence = x as AssessInput & EvidenceInput;
  evidence.kind = kind;
  evidence.familiarAsn = familiarAsn;
  evidence.ownDevice = ownDevice;
  evidence.habitualAgent = habitualAgent;
  const all = behaviourEvidence(x, now);
  pushAll(all, hostileEvidence(x, now));
  pushAll(all, travelEvidence(b, x.ip, now));
  pushAll(all, requestEvidence(evidence));
  pushAll(all, velocityEvidence(evidence));
  const contributions = onceEach(all, COUNTED_ONCE);
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
  const wave =
    !x.unknownAccount && !ownDevice && z - BASE_LOGIT >= WAVE_UNFAMILIAR ? attackWave(evidence) : null;
  const waveWeight = wave ? ramp(wave.lift, WAVE_LIFT_FROM, WAVE_LIFT_FULL, WAVE_KNOWN_MAX) : 0;
  if (wave) {
    contributions.push({
      signal: 'attack_wave',
      weight: waveWeight,
      detail: { ...wave.detail, known_account: true },
    });
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
  if (x.device?.feedback === 'approved')
    z -= approvalCredit(
      x.features.fingerprinted,
      Math.max(0, hard) + Math.max(0, soft) + waveWeight + capped,
    );
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
