/**
 * The evidence a user's own record gives about an event: how unlike the user it is (the
 * likelihood ratios of behaviour.ts, weighed and bounded), values an attacker already used
 * against the account, and travel too fast from where the user last really was. Beside the
 * attack-population evidence (request-evidence.ts) and velocity across accounts
 * (velocity-evidence.ts), it is what the model (model.ts) sums.
 *
 * Pure: no I/O.
 */
import type { IpIntel } from '../intel/types';
import { distanceKm } from '../intel/distance';
import type { Device, SignalDetail } from '../model';
import { familiarity, hostileMatch, ownNetwork, type PopulationCounts } from './behaviour';
import { countAt, firstSeen, userCount, type Behaviour } from './behaviour-tables';
import { clamp, type Contribution } from './evidence';
import { LEVEL, placeless, placeName, type Features } from './features';
import {
  BEHAVIOUR_MIN_HISTORY,
  CARRIER_NEW_DEVICE,
  HISTORY_GAIN,
  HISTORY_GAIN_FROM,
  HISTORY_GAIN_FULL,
  HOME_NEW_DEVICE,
  HOSTILE_MAX,
  HOSTILE_MIN,
  HOSTILE_PER_VALUE,
  IMPOSSIBLE_TRAVEL,
  JOINT_NOVELTY,
  NETWORK_LLR_FLOOR,
  NEW_COUNTRY_FLOOR,
  PLACE_WEIGHT,
  SHARED_NETWORK_FLOOR,
  SIGNAL_MIN_SCORE,
  TOKEN_HABIT,
  TOKENLESS_HABIT_LOGINS,
  TOKENLESS_HABIT_SHARE,
  TRAVEL_MAX_KMH,
  TRAVEL_MIN_HOURS,
  TRAVEL_MIN_KM,
  TRUSTED_AFTER_MS,
  TRUSTED_LOGINS,
  TRUSTED_TRAVEL_MAX,
  UNPROVEN_MIN_HISTORY,
  USUAL_OPERATOR_LOGINS,
  DEVICE_LLR,
  DEVICE_TERM,
  FINGERPRINT_LLR,
  FINGERPRINT_TERM,
  HOUR_LLR,
  HOUR_TERM,
  LANGUAGE_LLR,
  LANGUAGE_TERM,
  MISSING_FINGERPRINT_NAMED_FROM,
  NETWORK_FOR_SOFTWARE_TERM,
  NETWORK_LLR_MAX,
  NETWORK_TERM,
  OPERATOR_FOR_SOFTWARE_TERM,
  PLACE_LLR,
  SOFTWARE_LLR_MAX,
  SOFTWARE_LLR_MIN,
  SOFTWARE_LLR_MIN_FINGERPRINTED,
  SOFTWARE_NETWORK_LLR,
  SOFTWARE_OPERATOR_LLR,
  SOFTWARE_TERM,
  UNUSUAL_HOUR_NAMED_FROM,
  UNUSUAL_LANGUAGE_NAMED_FROM,
} from './weights';

/** What the user's evidence reads of an event (AssessInput gives it). */
export interface UserEvidenceInput {
  behaviour: Behaviour | null;
  population: PopulationCounts;
  device: Device | null;
  features: Features;
  ip: IpIntel | null;
}

/*
 * SHARED_NETWORK_FLOOR: least network log-likelihood ratio on an anonymising network (VPN,
 * hosting, Tor): however often the user came through it, it counts at most as much as this (−4
 * elsewhere).
 *
 * NEW_COUNTRY_FLOOR: least network log-likelihood ratio in a country the user never showed. The
 * user's share of an operator counts every country it was seen in, the population's only this
 * one, so a familiar operator placed abroad by the address data (a carrier's range, a reassigned
 * block) came out as the strongest familiarity there is (−4, the rarer the country the more): a
 * new country vouches for little, whatever the operator.
 *
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
function trustedDevice(x: UserEvidenceInput, b: Behaviour, now: number): boolean {
  const key = x.features.values[LEVEL.device];
  if (!x.features.fingerprinted || !key) return false;
  if (x.device?.feedback === 'approved' && x.device.fingerprintKey === key) return true;
  const e = b.tables[LEVEL.device]?.[key];
  const first = e ? firstSeen(e) : undefined;
  return Boolean(
    e && countAt(e, now) >= TRUSTED_LOGINS && first !== undefined && now - first >= TRUSTED_AFTER_MS,
  );
}

/** The user's usual operator (at least USUAL_OPERATOR_LOGINS legitimate logins), placing the address where it places the user. */
function usualOperatorAndPlace(b: Behaviour, asn: string | null, place: number, now: number): boolean {
  return asn !== null && userCount(b, LEVEL.operator, asn, now) >= USUAL_OPERATOR_LOGINS && place <= 0;
}

const round2 = (v: number) => Math.round(v * 100) / 100;

/** Whether nearly all of the user's legitimate events carried a client fingerprint. */
function tokenHabit(b: Behaviour, now: number): boolean {
  const carried = userCount(b, LEVEL.fingerprint, 'y', now);
  const without = userCount(b, LEVEL.fingerprint, 'n', now);
  return carried > 0 && carried >= TOKEN_HABIT * (carried + without);
}

/** Whether the user's own legitimate logins often came without a client token (an app release without the client). */
export function tokenlessHabit(b: Behaviour, now: number): boolean {
  const carried = userCount(b, LEVEL.fingerprint, 'y', now);
  const without = userCount(b, LEVEL.fingerprint, 'n', now);
  return without >= TOKENLESS_HABIT_LOGINS && without >= TOKENLESS_HABIT_SHARE * (carried + without);
}

/** The behavioural contributions: how unlike the user this event is. */
export function behaviourEvidence(x: UserEvidenceInput, now: number): Contribution[] {
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
  const strangeDevice =
    x.features.fingerprinted && f.device.firstUnseen !== null && f.history >= UNPROVEN_MIN_HISTORY;
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
  const floor =
    unproven && !home
      ? 0
      : shared
        ? SHARED_NETWORK_FLOOR
        : f.network.firstUnseen === 'cc'
          ? NEW_COUNTRY_FLOOR
          : NETWORK_LLR_FLOOR;
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
  const where = travel(
    gain *
      (OPERATOR_FOR_SOFTWARE_TERM *
        clamp(f.softwareOperator, SOFTWARE_OPERATOR_LLR.lo, SOFTWARE_OPERATOR_LLR.hi) +
        NETWORK_FOR_SOFTWARE_TERM *
          clamp(f.softwareNetwork, SOFTWARE_NETWORK_LLR.lo, SOFTWARE_NETWORK_LLR.hi)),
  );
  if (where > SIGNAL_MIN_SCORE)
    out.push({
      signal: 'unusual_network_for_device',
      weight: where,
      detail: { browser: v.bf, os: v.os, asn: v.asn },
    });
  else out.push({ signal: 'network_for_device', weight: where, detail: {} });
  // Somewhere else on a familiar operator (another city): what a targeted attacker on the
  // victim's own ISP looks like, and a reassigned home address does not. A familiar place is no
  // credit to a device the user never showed (like the operator above).
  const place = travel(
    gain * PLACE_WEIGHT * clamp(f.place, unproven && !home ? 0 : PLACE_LLR.lo, PLACE_LLR.hi),
  );
  if (place > SIGNAL_MIN_SCORE)
    out.push({ signal: 'unusual_place', weight: place, detail: { asn: v.asn, place: placeName(v) } });
  else out.push({ signal: 'place', weight: place, detail: {} });
  // Headers are easy to copy: a familiar user agent, without a fingerprint, vouches for little.
  // A new device on the user's own network (a new phone at home) counts HOME_NEW_DEVICE of what
  // it would on a stranger's; on the user's usual operator in the user's usual place (a phone on
  // its carrier), CARRIER_NEW_DEVICE.
  const newHere = strangeDevice
    ? home
      ? HOME_NEW_DEVICE
      : !shared && usualOperatorAndPlace(b, v.asn, f.place, now)
        ? CARRIER_NEW_DEVICE
        : 1
    : 1;
  const sw =
    newHere *
    gain *
    SOFTWARE_TERM *
    clamp(
      f.software.llr,
      unproven ? 0 : x.features.fingerprinted ? SOFTWARE_LLR_MIN_FINGERPRINTED : SOFTWARE_LLR_MIN,
      SOFTWARE_LLR_MAX,
    );
  const dev = newHere * (strangeDevice ? 1 : DEVICE_TERM) * clamp(f.device.llr, DEVICE_LLR.lo, DEVICE_LLR.hi);
  const fp = FINGERPRINT_TERM * clamp(f.fingerprint.llr, FINGERPRINT_LLR.lo, FINGERPRINT_LLR.hi);
  const deviceDetail: SignalDetail = {
    history: round2(f.history),
    browser: v.br,
    os: v.os,
    fingerprinted: x.features.fingerprinted,
  };
  const newDevice =
    f.device.firstUnseen !== null ||
    (f.software.firstUnseen !== null && f.software.firstUnseen !== 'ua' && f.software.firstUnseen !== 'br');
  // A new kind of device usually arrives on a network of its own (a phone on its carrier, a work
  // laptop on the office's): the two hierarchies see one change, which their sum would count
  // twice. Without a fingerprint, on an operator new to the user in a country the user has shown,
  // the device's novelty counts JOINT_NOVELTY of its weight. (A fingerprint is the device itself,
  // and a new country stays the stronger evidence it is.)
  const joint =
    newDevice && !x.features.fingerprinted && f.network.firstUnseen === 'asn' && sw + dev > 0
      ? JOINT_NOVELTY
      : 1;
  out.push({
    signal: newDevice ? 'new_device' : 'device',
    weight: (sw + dev) * joint,
    detail: { ...deviceDetail, new_fingerprint: f.device.firstUnseen !== null },
  });
  if (fp > MISSING_FINGERPRINT_NAMED_FROM)
    out.push({ signal: 'missing_fingerprint', weight: fp, detail: { history: round2(f.history) } });
  else out.push({ signal: 'fingerprint', weight: fp, detail: {} });
  const lang = gain * LANGUAGE_TERM * clamp(f.language.llr, unproven ? 0 : LANGUAGE_LLR.lo, LANGUAGE_LLR.hi);
  out.push({
    signal: lang > UNUSUAL_LANGUAGE_NAMED_FROM ? 'unusual_language' : 'language',
    weight: lang,
    detail: { language: v.lang },
  });
  const hour = travel(gain * HOUR_TERM * clamp(f.hour, unproven ? 0 : HOUR_LLR.lo, HOUR_LLR.hi));
  out.push({
    signal: hour > UNUSUAL_HOUR_NAMED_FROM ? 'unusual_hour' : 'hour',
    weight: hour,
    detail: { hour_utc: v.hr },
  });
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
  1 +
  (HISTORY_GAIN - 1) * clamp((history - HISTORY_GAIN_FROM) / (HISTORY_GAIN_FULL - HISTORY_GAIN_FROM), 0, 1);

/** Values of the event an attacker already used against this account, and not the user. */
export function hostileEvidence(x: UserEvidenceInput, now: number): Contribution[] {
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
  return [
    {
      signal: 'hostile_context',
      weight: Math.min(HOSTILE_MAX, HOSTILE_PER_VALUE * foreign.length),
      detail: { seen_in: foreign.join(', '), attempts: round2(m.weight) },
    },
  ];
}

/** Too fast from where the user last really was. */
export function travelEvidence(b: Behaviour | null, ip: IpIntel | null, at: number): Contribution[] {
  const last = b?.lastLegit;
  const loc = ip?.location;
  if (!last || !loc || loc.lat === null || loc.lon === null || placeless(ip)) return [];
  const km = distanceKm(last, { lat: loc.lat, lon: loc.lon });
  const hours = Math.max((at - last.at) / 3_600_000, TRAVEL_MIN_HOURS);
  if (km < TRAVEL_MIN_KM || km / hours <= TRAVEL_MAX_KMH) return [];
  return [
    {
      signal: 'impossible_travel',
      weight: IMPOSSIBLE_TRAVEL,
      detail: { km: Math.round(km), hours: round2(hours) },
    },
  ];
}
