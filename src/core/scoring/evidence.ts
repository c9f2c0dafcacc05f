/**
 * Evidence about the attacker population, independent of the user's own history: where the
 * request comes from (data centres, anonymising VPNs, Tor), what sends it (automation, headless
 * browsers, crawlers, headers an honest browser would not omit or contradict), what it claims
 * (throw-away e-mail domains), and how fast things happen across accounts (velocity per address,
 * network, device, request shape, e-mail domain and over the whole environment).
 *
 * Each piece is a named signal with a weight in log-odds and a detail object that explains it.
 * This module holds what the evidence shares (its input, its contributions, ramps); the request's
 * own evidence is request-evidence.ts, velocity across accounts velocity-evidence.ts.
 * Pure: no I/O.
 */
import type { Behaviour } from '../client/proof';
import type { IpIntel, ParsedUserAgent } from '../intel/types';
import type { AttestationOutcome, EventInput, SignalDetail } from '../model';
import type { Features } from './features';
import type {
  AppActivity,
  EnvironmentStats,
  HeaderHabits,
  LanguageCounts,
  RecentCounts,
  TokenHabit,
  Window,
} from './population';
import { ENV_USUAL_AFTER_HOURS, type Ramp } from './weights';

export interface Contribution {
  signal: string;
  /** Log-odds added to the risk. */
  weight: number;
  detail: SignalDetail;
  /**
   * Evidence about the day rather than the request (a campaign spread over days): it raises the
   * risk at most to the unfamiliarity cap, so by itself it brings a challenge and never a deny;
   * what the request itself shows decides beyond that (see model.ts).
   */
  dayLevel?: true;
  /** Weighed, but not evidence of an attack on this account: it never lifts the unfamiliarity cap (see model.ts). */
  capped?: true;
}

/** The kind of event, as the model distinguishes them. */
export type EventKind = 'login' | 'preauth' | 'failure' | 'registration' | 'reset' | 'other';

export interface EvidenceInput {
  event: EventInput;
  /** The e-mail the event names is at a throw-away domain (the intel port's list, read when the event was enriched). */
  disposableEmail: boolean;
  kind: EventKind;
  ip: IpIntel | null;
  ua: ParsedUserAgent;
  features: Features;
  env: EnvironmentStats;
  headers: HeaderHabits | null;
  windows: Partial<Record<'ip' | 'net' | 'asn' | 'dev' | 'shape' | 'dom' | 'env' | 'mk', Window | null>>;
  /** The share of the environment's legitimate events from phones of this event's machine key (mobile tokens only). */
  machineShare?: number;
  /**
   * The event comes from a device of the user's that a client token identifies: a flood of
   * requests shaped like it, or through its operator, is not this request's doing (a stolen
   * password does not bring the user's phone; a replayed token is caught on its own).
   */
  ownDevice?: boolean;
  /**
   * The account is known and its user habitually sends this very user agent: a flood of requests
   * shaped like it is also a flood of the user's own client (an app's, which every user of the app
   * shares). It still weighs (an attacker copies the shape), but it does not make the request an
   * attack: the user's own history decides between a challenge and letting them in.
   */
  habitualAgent?: boolean;
  /** How common the request's shape and e-mail domain are among legitimate events (shares). */
  shapeShare: number;
  /** The share of the environment's legitimate events that came through this operator (autonomous system). */
  operatorShare: number;
  /**
   * Legitimate events of the environment (decayed) and the share of them that carried a client
   * fingerprint, among events of the same class as this one: browsers', or native apps' HTTP
   * stacks' (an application's web pages and its app integrate the client separately).
   */
  /** Legitimate events of the event's class and the share with a client token; for an app, its release's (population-habits.ts, appFingerprintShare). */
  fingerprints: TokenHabit;
  /** The known user's own legitimate app logins mostly came without a client token (an app release without the client): see TOKENLESS_HABIT_LOGINS. */
  tokenlessHabit?: boolean;
  /** The environment lists its native apps (it expects them: their first users are arriving). */
  appsDeclared?: boolean;
  domainCount: number;
  /** The account is unknown to Rampart (no history at all). */
  unknownAccount: boolean;
  /** The user has used this network's autonomous system before (a habitual VPN, say). */
  familiarAsn: boolean;
  /** What a Rampart client token showed (null: the event carried none). */
  client: ClientEvidence | null;
  /**
   * The event's browser language among the environment's legitimate events (decayed counts):
   * those from the address's country, those of them with this language, and this language's
   * share of all events. Null where the event has no language or no country.
   */
  language: LanguageCounts | null;
}

/** A Rampart client token, as the engine weighs it. */
export interface ClientEvidence {
  /** Why it does not count (null: it verified and was not replayed). */
  problem: 'malformed' | 'forged' | 'expired' | 'not_yet_valid' | 'other_environment' | 'replayed' | null;
  /** Automation and tampering evidence the browser showed (see core/client/components.ts). */
  automation: string[];
  /** The user agent the browser reported is not the one the application forwarded. */
  userAgentMismatch: boolean;
  /** The browser's first language is not the one the request's Accept-Language puts first. */
  languageMismatch: boolean;
  /** Hours between the browser's timezone and the one the address's longitude suggests (null: unknown). */
  timezoneGapHours: number | null;
  /** A native app's token (minted from its session): what it says of the device and the install (absent: a browser's). */
  mobile?: MobileEvidence | null;
  /** A browser's token: the proof of work its collection carried, its page's behaviour, and the environment's habit (absent: not weighed). */
  proof?: ProofEvidence | null;
}

/** What a browser token proved (core/client/proof.ts), and what the environment's legitimate logins usually prove. */
export interface ProofEvidence {
  /** The difficulty proved, in bits (null: the token was minted without a proof: the one-step flow). */
  bits: number | null;
  /** What the page reported of itself before it asked (null: nothing). */
  behaviour: Behaviour | null;
  /**
   * Among the environment's legitimate logins with a browser token: how many (decayed) and the
   * share with a proof; among those whose page reported its behaviour for the request, how many
   * and the share where a person did something on the page first.
   */
  habit: { events: number; proved: number; reported: number; interacted: number };
  /** Accounts the browser's page named in its events within the week, with this event's (0: its page named none; absent: not counted). */
  accounts?: number;
}

/** What a native app's token and its install's events say (core/client). */
export interface MobileEvidence {
  /** The device's own integrity findings (core/client/mobile.ts INTEGRITY). */
  integrity: string[];
  /** What the install reported of itself (null: no app event within the week). */
  activity: AppActivity | null;
  /** Distinct accounts that used this install over the week, this event's included. */
  accounts: number;
  /**
   * Among the environment's legitimate logins with a mobile token: how many (decayed), the share
   * whose install had announced itself (an install or an open), and the share whose install had
   * shown a screen.
   */
  habit: { events: number; announced: number; screens: number };
  /** The user agent names another platform than the token (a desktop browser, or iOS for an Android token). */
  platformMismatch: boolean;
  /** What verifying the session's platform attestation found (absent or null: none carried, none required). */
  attestation?: AttestationOutcome | null;
}

/**
 * `language_country_mismatch`, for an account without history (a sign-up, an unknown account):
 * a tool picks its language whatever address it goes through, about as often as the environment
 * sees that language overall (at least LANGUAGE_IN_ATTACKS_MIN of the time), while people mostly
 * ask for their country's. Weighed by that likelihood ratio against the language's share among
 * the country's legitimate events (smoothed toward its overall share by LANGUAGE_PRIOR events),
 * from LANGUAGE_MISMATCH_FROM up to LANGUAGE_MISMATCH_MAX, once the country has
 * LANGUAGE_COUNTRY_MIN_EVENTS legitimate events. A known user's own language is the behavioural
 * model's (a traveller asks for theirs anywhere).
 */
/**
 * `missing_headers`: a group counts where at least MISSING_HEADERS_FROM of this browser's logins
 * here carry it, by its likelihood ratio: a tool claiming this browser lacks it about
 * MISSING_IN_ATTACKS of the time, the browser itself (1 − share) of the time; the weight stays
 * between MISSING_HEADER_MIN and MISSING_HEADER_MAX.
 */
/**
 * `unknown_account`: a login list names an account that is not here about UNKNOWN_IN_ATTACKS of
 * the time; counted once the environment has a week and UNKNOWN_ACCOUNT_MIN_ATTEMPTS attempts.
 */
/** Login attempts: a login, a pre-auth check, a failed login (what an attack on accounts sends). */
export const ATTEMPT_KINDS: ReadonlySet<EventKind> = new Set(['login', 'preauth', 'failure']);

/** `v` within [lo, hi]. */
export const clamp = (v: number, lo: number, hi: number) => Math.min(hi, Math.max(lo, v));

/** A count as a signal's detail shows it (one decimal: windows weigh the previous hour in part). */
export const count = (n: number) => Math.round(n * 10) / 10;

/** How many an hour `n` events over the last slots' minutes make. */
export const perHour = (n: number, recent: RecentCounts) => (n * 60) / recent.minutes;

/** Hours of history before an environment's sign-ups have a usual rate to stand out from (weights.ts). */
export { ENV_USUAL_AFTER_HOURS };

/** A ramp of weights.ts: 0 up to its `from`, its `max` from its `to`. */
export const byRamp = (value: number, r: Ramp) => ramp(value, r.from, r.to, r.max);

/** A smooth step: 0 below `from`, `weight` at `to` and above. */
export function ramp(value: number, from: number, to: number, weight: number): number {
  if (value <= from) return 0;
  if (value >= to) return weight;
  return (weight * (value - from)) / (to - from);
}

/** A share as a signal's detail shows it (three decimals). */
export const round3 = (n: number) => Math.round(n * 1000) / 1000;
