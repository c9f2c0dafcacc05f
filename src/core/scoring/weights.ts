/**
 * The risk model's numbers, in one table: every weight (log-odds a signal adds) and threshold
 * (where a signal starts, where it reaches its full weight) that model.ts, user-evidence.ts,
 * request-evidence.ts, velocity-evidence.ts, behaviour.ts and the rest of src/core/scoring and src/core/verdicts use, with the half-lives and caps of what it remembers and the priors of its smoothing. Each says where it comes from:
 *  - a likelihood ratio: the value is an assumed or learned probability of the event among
 *    attackers or users, and the weight follows from it;
 *  - a measurement: the evaluation (`npm run eval`, docs/detection.md) or a bench, and what it showed;
 *  - a ruling: a decision of principle written in docs/detection.md or docs/client.md;
 *  - "chosen by hand; checked by `npm run eval`": nothing more is written down.
 * The reasoning behind each signal is beside the code that uses it; the signals table of
 * docs/detection.md says what each one weighs in words.
 *
 * A ramp `{ from, to, max }` weighs 0 up to `from`, `max` from `to`, linearly between (evidence.ts `ramp`).
 *
 * Pure data: no I/O, no imports.
 */

/** A linear step: 0 up to `from`, `max` from `to` on. */
export interface Ramp {
  readonly from: number;
  readonly to: number;
  readonly max: number;
}

/** Least and most of a log-likelihood ratio. */
export interface Bounds {
  readonly lo: number;
  readonly hi: number;
}

// ---------------------------------------------------------------------------------------------
// Network and proxies
// ---------------------------------------------------------------------------------------------

/** `proxy_ip` for a Tor exit. Chosen by hand; checked by `npm run eval`. */
export const TOR = 4;
/** `proxy_ip` for a data centre (hosting) address. Chosen by hand; checked by `npm run eval`. */
export const HOSTING = 2.4;
/** `proxy_ip` for a commercial VPN exit. Chosen by hand; checked by `npm run eval`. */
export const VPN = 1.6;
/** Share of `proxy_ip` left on an operator the user already came through (a habitual VPN): docs "counts for a third"; chosen by hand. */
export const FAMILIAR_PROXY_SHARE = 0.3;
/** Least network log-likelihood on a VPN, hosting or Tor network: ruling (docs/detection.md, the model: shared with strangers, a habit of it vouches for little). */
export const SHARED_NETWORK_FLOOR = -1;
/** Least network log-likelihood in a country the user never showed: ruling (docs: a familiar operator placed abroad by the address data came out as the strongest familiarity). */
export const NEW_COUNTRY_FLOOR = -1;
/** Least network log-likelihood elsewhere (docs: "−4 elsewhere"). Chosen by hand; checked by `npm run eval`. */
export const NETWORK_LLR_FLOOR = -4;
/** Population's share of a network within its operator, where no counts are kept: an assumed likelihood (likelihood ratio numerator); chosen by hand. */
export const Q_NET_IN_ASN = 1 / 64;
/** Population's share of an address within its network, where no counts are kept: an assumed likelihood (likelihood ratio numerator); chosen by hand. */
export const Q_IP_IN_NET = 1 / 32;
/** Share of an operator's logins an attacker on that operator shows from any one place: the `unusual_place` likelihood ratio's numerator; chosen by hand. */
export const Q_PLACE_IN_ASN = 1 / 8;
/** Weight of the place within a familiar operator (`unusual_place`). Chosen by hand; checked by `npm run eval`. */
export const PLACE_WEIGHT = 0.4;
/** Least novelty of a network within a known operator, as a share of the user's events there (home addresses get reassigned). Chosen by hand; checked by `npm run eval`. */
export const NET_FLOOR = 1 / 12;
/** Least novelty of an address within a known network, as a share of the user's events there. Chosen by hand; checked by `npm run eval`. */
export const IP_FLOOR = 1 / 3;
/** `impossible_travel`: at least this far from where the user last really was (docs: "> 500 km"). Chosen by hand; checked by `npm run eval`. */
export const TRAVEL_MIN_KM = 500;
/** `impossible_travel`: faster than this (docs: "> 900 km/h"). Chosen by hand; checked by `npm run eval`. */
export const TRAVEL_MAX_KMH = 900;
/** `impossible_travel`'s weight. Chosen by hand; checked by `npm run eval`. */
export const IMPOSSIBLE_TRAVEL = 1.5;

// ---------------------------------------------------------------------------------------------
// Headers and clients
// ---------------------------------------------------------------------------------------------

/** `bot_behavior` for an automation client (docs: 6). Chosen by hand; checked by `npm run eval`. */
export const BOT_BEHAVIOR = 6;
/** `headless_browser`. Chosen by hand; checked by `npm run eval`. */
export const HEADLESS_BROWSER = 5;
/** `web_crawler`. Chosen by hand; checked by `npm run eval`. */
export const WEB_CRAWLER = 4;
/** `spoofed_device` for a contradiction (client hints, a tampered browser, a token's user agent or platform swapped; docs: 3). Chosen by hand; checked by `npm run eval`. */
export const SPOOFED_DEVICE = 3;
/** `spoofed_device` when the token's browser language is not the request's. Chosen by hand; checked by `npm run eval`. */
export const TOKEN_LANGUAGE_MISMATCH = 2;
/** `spoofed_device` when the browser's timezone is more than TIMEZONE_GAP_HOURS from its address's. Chosen by hand; checked by `npm run eval`. */
export const TIMEZONE_FAR = 1;
export const TIMEZONE_GAP_HOURS = 4;
/** `missing_headers` when there is no User-Agent at all. Chosen by hand; checked by `npm run eval`. */
export const MISSING_USER_AGENT = 2;
/** `missing_headers`: a group counts where at least this share of the browser's logins carry it. Chosen by hand; checked by `npm run eval`. */
export const MISSING_HEADERS_FROM = 0.9;
/** `missing_headers`: the browser's logins counted before its habits count. Chosen by hand; checked by `npm run eval`. */
export const MISSING_HEADERS_MIN_EVENTS = 30;
/** `missing_headers`: a tool claiming this browser lacks the group about half the time (likelihood ratio numerator, ln(0.5 / (1 − share))). */
export const MISSING_IN_ATTACKS = 0.5;
/** `missing_headers` bounds per group, and in all: measured, the eval (2026-11-23: graded 1.6–3 instead of 1.6 flat, stealth bots 98.8% → 100%). */
export const MISSING_HEADER_MIN = 1.6;
export const MISSING_HEADER_MAX = 3;
/** `missing_fingerprint` from the environment's habit: legitimate logins counted before it counts. Chosen by hand; checked by `npm run eval`. */
export const FINGERPRINT_HABIT_MIN_EVENTS = 50;
/** `missing_fingerprint` from the environment's habit: from this share of legitimate logins with a token, full at FINGERPRINT_HABIT_FULL (docs: 90%, 99%). Chosen by hand; checked by `npm run eval`. */
export const FINGERPRINT_HABIT_FROM = 0.9;
export const FINGERPRINT_HABIT_FULL = 0.99;
/**
 * For a native app's event, the habit is its release's (population-habits.ts, appFingerprintShare):
 * the release's legitimate events with and without a token, plus this many events at the apps'
 * share. A release never seen is judged as the apps are; one legitimate login without a token
 * takes a 97% habit to 94% (`missing_fingerprint` 1.2 instead of 2.1), three to below 90% (none),
 * as three of a user's own logins make their tokenless habit (TOKENLESS_HABIT_LOGINS). A release
 * whose thousands of logins carry tokens keeps its share whatever a few without one do. Chosen by
 * hand from those counts; checked by `npm run eval -- --client` (the old releases 3.0.4 and 3.1.0).
 */
export const RELEASE_TOKEN_PRIOR = 30;
/** `missing_fingerprint`'s most (docs: 2.8 at 99%). Chosen by hand; checked by `npm run eval`. */
export const MISSING_FINGERPRINT_MAX = 2.8;
/** `replayed_token` (risk at least 0.95 through CERTAIN_LOGIT in any case). Chosen by hand; checked by `npm run eval`. */
export const REPLAYED_TOKEN = 3.5;
/** `invalid_token` other than expired (forged, altered, another environment's). Chosen by hand; checked by `npm run eval`. */
export const INVALID_TOKEN = 3.5;
/** `invalid_token` for an expired token (as likely a page left open as a stolen token). Chosen by hand; checked by `npm run eval`. */
export const EXPIRED_TOKEN = 2;
/** A native app's stack counts as the application's after this many logins with the right password. Chosen by hand; checked by `npm run eval`. */
export const APP_CLIENT_LEARNED = 10;
/** …which are at least this share of its logins and failed logins. Chosen by hand; checked by `npm run eval`. */
export const APP_CLIENT_SUCCESS_SHARE = 0.25;
/** `bot_behavior` (`unfamiliar_app_client`) where app users are expected: no challenge alone (docs: 1). Chosen by hand; checked by `npm run eval`. */
export const APP_CLIENT_COLD = 1;
/** `bot_behavior` (`unfamiliar_app_client`) in a settled environment: a challenge alone (docs: 3). Chosen by hand; checked by `npm run eval`. */
export const APP_CLIENT_UNSEEN = 3;
/** `no_app_activity`: from this share of legitimate mobile logins whose install announced itself (or showed a screen), full at ACTIVITY_HABIT_FULL. Chosen by hand; checked by `npm run eval`. */
export const ACTIVITY_HABIT_FROM = 0.9;
export const ACTIVITY_HABIT_FULL = 0.99;
/** `no_app_activity`: legitimate mobile logins counted before the habit counts. Chosen by hand; checked by `npm run eval`. */
export const ACTIVITY_MIN_EVENTS = 30;
/** `no_app_activity`'s most without an install or open event, and without a screen. Chosen by hand; checked by `npm run eval`. */
export const NO_ACTIVITY_MAX = 2.8;
export const NO_SCREENS_MAX = 1.5;
/**
 * `no_app_activity` (no screen): the install's opens within the week from which its screens must
 * have arrived. A fresh install's first screens are still queued when its first request is judged
 * (docs/mobile.md: screens wait for 20 events, a lifecycle event or an allow-listed request), so
 * only an install that opened before, whose earlier session flushed at its close, is expected to
 * have shown one: ruling.
 */
export const SCREENS_EXPECTED_FROM_OPENS = 2;
/** `emulator` (hard evidence). Chosen by hand; checked by `npm run eval`. */
export const EMULATOR = 3.5;
/** `spoofed_device` (`tampered_app`). Chosen by hand; checked by `npm run eval`. */
export const TAMPERED_APP = 3;
/** `compromised_device` per finding, at most COMPROMISED_MAX_FINDINGS of them (docs: 1 each, at most 2). Chosen by hand; checked by `npm run eval`. */
export const COMPROMISED = 1;
export const COMPROMISED_MAX_FINDINGS = 2;
/**
 * A platform attestation (attestation-evidence.ts): `spoofed_device` for one that fails to verify
 * (`attestation_failed`: a forged, replayed or another app's attestation is tampering, as a
 * contradiction is; docs: 3), and for a session without one where the environment requires it
 * for the app (`attestation_missing`; docs: 3). A verified one lowers the logit by
 * ATTESTED_DEVICE_CREDIT (`attested_device`: a real device running the store's app; Google's
 * verdicts on Play Integrity are weighed with EMULATOR, COMPROMISED and TAMPERED_APP). Chosen by
 * hand; checked by `npm run eval`.
 */
export const ATTESTATION_FAILED = 3;
export const ATTESTATION_MISSING = 3;
export const ATTESTED_DEVICE_CREDIT = 0.5;
/** `unproven_client`: from this share of legitimate browser-token logins showing a proof (or a person), full at PROOF_HABIT_FULL. Chosen by hand; checked by `npm run eval`. */
export const PROOF_HABIT_FROM = 0.9;
export const PROOF_HABIT_FULL = 0.99;
/** `unproven_client`: legitimate browser-token logins counted before the habit counts. Chosen by hand; checked by `npm run eval`. */
export const PROOF_MIN_EVENTS = 50;
/** `unproven_client`'s most without a proof of work, and without a person on the page. Chosen by hand; checked by `npm run eval`. */
export const NO_PROOF_MAX = 2.5;
export const NO_INPUT_MAX = 1.5;
/** `language_country_mismatch`: a tool's language is as common as overall, at least this (likelihood ratio numerator). */
export const LANGUAGE_IN_ATTACKS_MIN = 0.05;
/** `language_country_mismatch`: pseudo-events smoothing a country's share toward the overall one. Chosen by hand; checked by `npm run eval`. */
export const LANGUAGE_PRIOR = 20;
/** `language_country_mismatch`'s least (below it, nothing) and most. Chosen by hand; checked by `npm run eval`. */
export const LANGUAGE_MISMATCH_FROM = 0.5;
export const LANGUAGE_MISMATCH_MAX = 1.5;
/** `language_country_mismatch`: legitimate events of the country counted before it counts. Chosen by hand; checked by `npm run eval`. */
export const LANGUAGE_COUNTRY_MIN_EVENTS = 200;

// ---------------------------------------------------------------------------------------------
// Velocity and waves
// ---------------------------------------------------------------------------------------------

/** Legitimate events before the population's shares mean anything (bursts, `new_email_domain`, `unfamiliar_app_client`). Chosen by hand; checked by `npm run eval`. */
export const POPULATION_KNOWN = 200;
/** `credential_stuffing` by accounts failed from one address. Chosen by hand; checked by `npm run eval`. */
export const STUFFING_IP: Ramp = { from: 2, to: 6, max: 4 };
/** `credential_stuffing` by accounts failed from one /24 (/48). Chosen by hand; checked by `npm run eval`. */
export const STUFFING_NETWORK: Ramp = { from: 4, to: 12, max: 3.5 };
/** `credential_stuffing` by accounts failed through one operator. Chosen by hand; checked by `npm run eval`. */
export const STUFFING_OPERATOR: Ramp = { from: 10, to: 40, max: 3 };
/** `credential_stuffing` by accounts failed with one request shape. Chosen by hand; checked by `npm run eval`. */
export const STUFFING_SHAPE: Ramp = { from: 5, to: 15, max: 4 };
/** Beyond one address, failures per success (+1) counted from this ratio, fully this span above it. Chosen by hand; checked by `npm run eval`. */
export const FAILURE_RATIO_FROM = 1;
export const FAILURE_RATIO_SPAN = 3;
/** `credential_stuffing` and `high_activity_network` weighing this or less are left out. Chosen by hand; checked by `npm run eval`. */
export const VELOCITY_MIN_WEIGHT = 0.05;
/** `high_activity_ip` by accounts tried from one address. Chosen by hand; checked by `npm run eval`. */
export const HIGH_ACTIVITY_IP: Ramp = { from: 4, to: 15, max: 2.5 };
/** `multiple_accounts_per_device` by accounts per fingerprinted device in the hour, or per app install in the week. Chosen by hand; checked by `npm run eval`. */
export const DEVICE_ACCOUNTS: Ramp = { from: 2, to: 6, max: 3.5 };
/** A window is real users' from this share of successful logins among its attempts, fully at HONEST_FULL (docs: 15%, 40%). Chosen by hand; checked by `npm run eval`. */
export const HONEST_FROM = 0.15;
export const HONEST_FULL = 0.4;
/** A burst: from this many accounts, full weight at BURST_ACCOUNTS_FULL (docs: 8, 30). Chosen by hand; checked by `npm run eval`. */
export const BURST_ACCOUNTS_FROM = 8;
export const BURST_ACCOUNTS_FULL = 30;
/** A burst: the value's share of the hour's attempts at least this many times its usual share (docs: 4×). Chosen by hand; checked by `npm run eval`. */
export const BURST_LIFT = 4;
/** A burst: the usual share of a value the environment has nearly never seen counts as this. Chosen by hand; checked by `npm run eval`. */
export const BURST_USUAL_SHARE_MIN = 0.002;
/** `request_shape_burst`'s most. Chosen by hand; checked by `npm run eval`. */
export const SHAPE_BURST_MAX = 3.5;
/** `high_activity_network`'s most (docs: 3). Chosen by hand; checked by `npm run eval`. */
export const OPERATOR_BURST_MAX = 3;
/** `attack_wave` over the hour: at least this many attempts on unknown accounts, or failures (docs: 15, 20). Chosen by hand; checked by `npm run eval`. */
export const WAVE_HOUR_UNKNOWN_MIN = 15;
export const WAVE_HOUR_FAILURES_MIN = 20;
/** `attack_wave`: the usual hourly unknown accounts and failures count as at least these. Chosen by hand; checked by `npm run eval`. */
export const WAVE_USUAL_UNKNOWN_MIN = 2;
export const WAVE_USUAL_FAILURES_MIN = 3;
/** `attack_wave` over the last minutes: the usual share of attempts counts as at least this. Chosen by hand; checked by `npm run eval`. */
export const WAVE_USUAL_SHARE_MIN = 0.01;
/** A wave (or recent sign-ups) counts from this many in the last 5–10 minutes: measured, the eval (2026-11-23: instead of 15 in the hour, residential stuffing 99.00% → 99.33%). */
export const WAVE_RECENT_MIN = 4;
/** `attack_wave`: a lift from this, full weight at WAVE_LIFT_FULL (docs: 3× usual). Chosen by hand; checked by `npm run eval`. */
export const WAVE_LIFT_FROM = 3;
export const WAVE_LIFT_FULL = 8;
/** `attack_wave`'s most on an unknown account (docs: up to 4.5). Chosen by hand; checked by `npm run eval`. */
export const WAVE_MAX = 4.5;
/** `attack_wave` on a known account: only when its evidence is already at least this. Chosen by hand; checked by `npm run eval`. */
export const WAVE_UNFAMILIAR = 1;
/** `attack_wave`'s most on a known account: measured, the eval (2026-11-23: residential stuffing 99.33% → 99.47%, VPN 98.88% → 99.00%, friction 2.45% → 2.46%). */
export const WAVE_KNOWN_MAX = 1.5;
/** Low and slow: at least this many attempts on unknown accounts in the day (twice as many failures). Chosen by hand; checked by `npm run eval`. */
export const SLOW_WAVE_MIN = 10;
/** Low and slow: from this lift, full weight SLOW_WAVE_MAX at SLOW_WAVE_FULL (docs: 2× to 4×, 2.5). Chosen by hand; checked by `npm run eval`. */
export const SLOW_WAVE_FROM = 2;
export const SLOW_WAVE_FULL = 4;
export const SLOW_WAVE_MAX = 2.5;
/** Low and slow: the usual share of attempts on unknown accounts, and of failures, count as at least these (docs: 1%, 2%). Chosen by hand; checked by `npm run eval`. */
export const SLOW_WAVE_UNKNOWN_SHARE_FLOOR = 0.01;
export const SLOW_WAVE_FAILURE_SHARE_FLOOR = 0.02;
/** `unknown_account`: a login list names an account that is not here about half the time (likelihood ratio numerator). */
export const UNKNOWN_IN_ATTACKS = 0.5;
/** `unknown_account`'s most: measured, the eval (2026-11-23: VPN stuffing 97.3% → 98.9%, 2 more first logins challenged). */
export const UNKNOWN_ACCOUNT_MAX = 1;
/** `unknown_account` and the day-level signals wait for an environment this old (a week). Chosen by hand; checked by `npm run eval`. */
export const UNKNOWN_ACCOUNT_AGE_HOURS = 7 * 24;
/** `unknown_account` waits for this many attempts in the environment. Chosen by hand; checked by `npm run eval`. */
export const UNKNOWN_ACCOUNT_MIN_ATTEMPTS = 500;

// ---------------------------------------------------------------------------------------------
// Sign-ups
// ---------------------------------------------------------------------------------------------

/** `registration_velocity`'s most, by one source or across the environment. Chosen by hand; checked by `npm run eval`. */
export const REGISTRATION_MAX = 3;
/** Sign-ups in the hour from one address, fingerprinted device, uncommon e-mail domain (ramps to REGISTRATION_MAX). Chosen by hand; checked by `npm run eval`. */
export const SIGNUPS_IP = { from: 2, to: 8 } as const;
export const SIGNUPS_DEVICE = { from: 1, to: 4 } as const;
export const SIGNUPS_DOMAIN = { from: 3, to: 12 } as const;
/** Sign-ups from one machine: from 1 + 3× and full at 2 + 6× what its share of the environment's sign-ups brings an hour. Chosen by hand; checked by `npm run eval`. */
export const SIGNUPS_MACHINE = { from: 1, fromPerExpected: 3, to: 2, toPerExpected: 6 } as const;
/** An e-mail domain with fewer legitimate users than this is uncommon (its sign-ups can be a wave's). Chosen by hand; checked by `npm run eval`. */
export const UNCOMMON_DOMAIN_BELOW = 20;
/** Across the environment: at least this many sign-ups in the hour, the usual hourly rate at least REGISTRATIONS_USUAL_MIN. Chosen by hand; checked by `npm run eval`. */
export const REGISTRATIONS_HOUR_MIN = 10;
export const REGISTRATIONS_USUAL_MIN = 2;
/** Across the environment: the lift from 4× usual (docs), full at 10×. Chosen by hand; checked by `npm run eval`. */
export const REGISTRATION_LIFT_FROM = 4;
export const REGISTRATION_LIFT_FULL = 10;
/** Hours before an environment's sign-ups have a usual rate: ruling (docs: "a day-old environment has no usual sign-up rate yet"). */
export const ENV_USUAL_AFTER_HOURS = 24;
/** Share of the environment-wide weight a sign-up resembling nothing of the hour keeps (docs: a fifth). Chosen by hand; checked by `npm run eval`. */
export const WAVE_UNLIKE = 0.2;
/** Resemblance from which a sign-up takes the whole weight (docs: 15%). Chosen by hand; checked by `npm run eval`. */
export const WAVE_LIKE_FULL = 0.15;
/** A machine's, operator's or shape's share of the hour's sign-ups counts from this many times its usual share, fully from that plus the span (docs: 3 to 8). Chosen by hand; checked by `npm run eval`. */
export const RESEMBLANCE_LIFT_FROM = 3;
export const RESEMBLANCE_LIFT_SPAN = 5;
/** Sign-ups' usual share of attempts counts as at least this (docs: 0.1%). Chosen by hand; checked by `npm run eval`. */
export const SIGNUP_SHARE_FLOOR = 0.001;
/** `new_email_domain`: a wave on invented domains names one no legitimate user has about half the time (likelihood ratio numerator). */
export const NEW_DOMAIN_IN_ATTACKS = 0.5;
/** `new_email_domain` learns the environment's rate from this many legitimate sign-ups. Chosen by hand; checked by `npm run eval`. */
export const NEW_DOMAIN_MIN_SIGNUPS = 30;
/** `new_email_domain`'s least and most (docs: 0.6 to 2). Chosen by hand; checked by `npm run eval`. */
export const NEW_DOMAIN_MIN = 0.6;
export const NEW_DOMAIN_MAX = 2;
/** A domain whose decayed count of legitimate users is below this is one no legitimate user has. Chosen by hand; checked by `npm run eval`. */
export const NEW_DOMAIN_BELOW = 0.5;
/** `disposable_email` at sign-up, and elsewhere (docs: stronger at sign-up). Chosen by hand; checked by `npm run eval`. */
export const DISPOSABLE_SIGNUP = 3.5;
export const DISPOSABLE = 1.5;

// ---------------------------------------------------------------------------------------------
// Behaviour (the user's likelihood ratios, behaviour.ts and user-evidence.ts)
// ---------------------------------------------------------------------------------------------

/** Behavioural terms count from this (decayed) number of legitimate events. Chosen by hand; checked by `npm run eval`. */
export const BEHAVIOUR_MIN_HISTORY = 0.5;
/** Legitimate events before a fingerprint never shown (or none, against the habit) stops the copyable features vouching. Chosen by hand; checked by `npm run eval`. */
export const UNPROVEN_MIN_HISTORY = 3;
/**
 * The history gain: ×1 up to HISTORY_GAIN_FROM legitimate events, ×HISTORY_GAIN from
 * HISTORY_GAIN_FULL: measured, the eval (2026-11-23, headers only: targeted takeover 37% → 57%,
 * very targeted 17% → 31%, friction of users with 10+ logins 1.5% → 2.1%).
 */
export const HISTORY_GAIN = 2;
export const HISTORY_GAIN_FROM = 5;
export const HISTORY_GAIN_FULL = 15;
/**
 * The weight of each behavioural term in model.ts (behaviourEvidence), before the history gain:
 * each shrinks its hierarchy's likelihood ratio (to about half, docs/detection.md, the model),
 * since a short history makes them noisy and the hierarchies are correlated. Chosen by hand;
 * checked by `npm run eval`.
 */
export const NETWORK_TERM = 0.8;
export const OPERATOR_FOR_SOFTWARE_TERM = 0.5;
export const NETWORK_FOR_SOFTWARE_TERM = 0.4;
export const SOFTWARE_TERM = 0.5;
/** The device term's weight, but for a fingerprint the user never showed (with UNPROVEN_MIN_HISTORY), which counts in full. Chosen by hand; checked by `npm run eval`. */
export const DEVICE_TERM = 0.7;
export const FINGERPRINT_TERM = 0.6;
export const LANGUAGE_TERM = 0.4;
export const HOUR_TERM = 0.25;
/**
 * Bounds of each behavioural log-likelihood ratio before its weight (the network's least is
 * SHARED_NETWORK_FLOOR, NEW_COUNTRY_FLOOR or NETWORK_LLR_FLOOR; a fingerprint or no fingerprint
 * the user cannot vouch for takes 0 as the least of several, see model.ts). Chosen by hand;
 * checked by `npm run eval`.
 */
export const NETWORK_LLR_MAX = 7;
export const SOFTWARE_OPERATOR_LLR: Bounds = { lo: -1, hi: 4 };
export const SOFTWARE_NETWORK_LLR: Bounds = { lo: -1, hi: 4 };
export const PLACE_LLR: Bounds = { lo: -1, hi: 3 };
/** The software's least with a client fingerprint, and without (a copyable user agent vouches for less), and its most. */
export const SOFTWARE_LLR_MIN_FINGERPRINTED = -1.6;
export const SOFTWARE_LLR_MIN = -0.6;
export const SOFTWARE_LLR_MAX = 6;
export const DEVICE_LLR: Bounds = { lo: -3, hi: 3.5 };
export const FINGERPRINT_LLR: Bounds = { lo: -1, hi: 3 };
export const LANGUAGE_LLR: Bounds = { lo: -1.5, hi: 3 };
export const HOUR_LLR: Bounds = { lo: -1, hi: 2 };
/** A behavioural term is named `missing_fingerprint`, `unusual_language`, `unusual_hour` above these (the others above SIGNAL_MIN_SCORE). Chosen by hand; checked by `npm run eval`. */
export const MISSING_FINGERPRINT_NAMED_FROM = 0.3;
export const UNUSUAL_LANGUAGE_NAMED_FROM = 0.4;
export const UNUSUAL_HOUR_NAMED_FROM = 0.3;
/** Least novelty of a browser version, and of a user agent, as a share of the user's events (they change by themselves). Chosen by hand; checked by `npm run eval`. */
export const BROWSER_VERSION_FLOOR = 1 / 6;
export const USER_AGENT_FLOOR = 1 / 4;
/** Pseudo-counts of distinct values per level for the population's smoothing, and for other levels. Chosen by hand; checked by `npm run eval`. */
export const POP_PSEUDO: Readonly<Partial<Record<string, number>>> = {
  cc: 40,
  asn: 200,
  dt: 4,
  os: 12,
  bf: 12,
  br: 60,
  ua: 400,
  lang: 40,
  fp: 2,
};
export const POP_PSEUDO_DEFAULT = 20;
/** The operator-for-software term: the software needs this many legitimate events first. Chosen by hand; checked by `npm run eval`. */
export const SOFTWARE_MIN_EVENTS = 2;
/** `unusual_place`: the operator needs this many of the user's logins first (and its places as many). Chosen by hand; checked by `npm run eval`. */
export const PLACE_MIN_LOGINS = 3;
/** `unusual_hour`: the user needs this many legitimate events first. Chosen by hand; checked by `npm run eval`. */
export const HOUR_MIN_HISTORY = 5;
/** Legitimate logins (decayed) with one user agent that make it the user's own client. Chosen by hand; checked by `npm run eval`. */
export const HABITUAL_AGENT = 3;
/** Legitimate logins (decayed) through an operator that make it the user's usual one. Chosen by hand; checked by `npm run eval`. */
export const USUAL_OPERATOR_LOGINS = 3;
/** The user's own network: an address with this many legitimate logins (decayed), or its /24 (/48) with OWN_NET_MIN. Chosen by hand; checked by `npm run eval`. */
export const OWN_IP_MIN = 0.5;
export const OWN_NET_MIN = 1;
/** `hostile_context`: the hostile record's weight needed (one failed attempt is a typo as often as not). Chosen by hand; checked by `npm run eval`. */
export const HOSTILE_MIN = 1.8;
/** `hostile_context`: weight per value found, and its most. Chosen by hand; checked by `npm run eval`. */
export const HOSTILE_PER_VALUE = 1.2;
export const HOSTILE_MAX = 3;
/** A hostile record's entry below this (decayed) weight is not matched. Chosen by hand; checked by `npm run eval`. */
export const HOSTILE_ENTRY_MIN = 0.2;
/** Tentative weight of an unanswered challenge where answers are not reported (docs: 0.3). Chosen by hand; checked by `npm run eval` (`--no-feedback`). */
export const TENTATIVE_WEIGHT = 0.3;
/** An unanswered challenge from the same operator this long before teaches the operator, up to RECURRING_WITHIN_MS: ruling (docs: 6 hours to 30 days); measured, the eval (2026-11-24, `--no-feedback`: friction 4.90% → 3.75%). */
export const RECURRING_AFTER_MS = 6 * 3_600_000;
export const RECURRING_WITHIN_MS = 30 * 86_400_000;

// ---------------------------------------------------------------------------------------------
// Combination and caps
// ---------------------------------------------------------------------------------------------

/** The logit of an event with nothing for or against it: risk 0.1. Chosen by hand; checked by `npm run eval`. */
export const BASE_LOGIT = -2.2;
/** Highest logit without evidence of an attack (risk 0.88: challenge, never deny): ruling (unfamiliarity alone never denies). */
export const UNFAMILIARITY_CAP = 2.0;
/** Where unfamiliarity starts to bend towards the cap (risk 0.82). Chosen by hand; checked by `npm run eval`. */
export const CAP_KNEE = 1.5;
/** Hard, or soft, evidence of an attack from which the cap no longer applies. Chosen by hand; checked by `npm run eval`. */
export const HARD_EVIDENCE_MIN = 1.5;
export const SOFT_EVIDENCE_MIN = 3.5;
/** The least logit of a replayed or forged client token (risk at least 0.95): ruling (docs/client.md). */
export const CERTAIN_LOGIT = 3;
/** A contribution below this weight is not named a signal (unless a fact). Chosen by hand; checked by `npm run eval`. */
export const SIGNAL_MIN_SCORE = 0.35;

// ---------------------------------------------------------------------------------------------
// Devices and tokens
// ---------------------------------------------------------------------------------------------

/** How much an approved device lowers the risk, in log-odds (docs: 2.5). Chosen by hand; checked by `npm run eval`. */
export const APPROVED_CREDIT = 2.5;
/** An approval known only by headers loses the request's attack evidence divided by this: ruling (docs: "2.5 less half the evidence of an attack"). */
export const HEADER_APPROVAL_EVIDENCE_DIVISOR = 2;
/** Population's share of one device, where no counts are kept: an assumed likelihood (likelihood ratio numerator); chosen by hand. */
export const Q_DEVICE = 1 / 1000;
/** Legitimate logins (decayed), and time of use, that make a client-token device trusted where it travels (docs: a week and 3 logins). Chosen by hand; checked by `npm run eval`. */
export const TRUSTED_LOGINS = 3;
export const TRUSTED_AFTER_MS = 7 * 86_400_000;
/** The most a trusted device's travel (network, operator, place, hour) counts (docs: 0.5 each). Chosen by hand; checked by `npm run eval`. */
export const TRUSTED_TRAVEL_MAX = 0.5;
/** Share of a new device's weight on the user's own network (docs: half). Chosen by hand; checked by `npm run eval`. */
export const HOME_NEW_DEVICE = 0.5;
/** Share of a new device's weight on the usual operator in the usual place (docs: a stranger's phone on the victim's carrier must stay challenged). Chosen by hand; checked by `npm run eval`. */
export const CARRIER_NEW_DEVICE = 0.9;
/** Share of a new device's weight (no fingerprint) on an operator new to the user: ruling (docs: one change both hierarchies see counts half). */
export const JOINT_NOVELTY = 0.5;
/** Share of the user's legitimate events with a client fingerprint beyond which its absence is not their habit (docs: 90%). Chosen by hand; checked by `npm run eval`. */
export const TOKEN_HABIT = 0.9;
/**
 * A user whose own legitimate logins from the app came this often (decayed) and at least this
 * share of the time without a client token is on an app release without the client: a login
 * without one is their habit, judged on headers as that release's traffic, not as
 * `missing_fingerprint` against the environment's token users. Chosen by hand; checked by `npm run eval`.
 */
export const TOKENLESS_HABIT_LOGINS = 3;
export const TOKENLESS_HABIT_SHARE = 0.3;
/** Calls one client token may serve within one login flow, and for how long (docs/client.md: three calls, a minute): ruling. */
export const TOKEN_MAX_USES = 3;
export const TOKEN_FLOW_MS = 60_000;

// ---------------------------------------------------------------------------------------------
// Memory: half-lives and caps of what the model remembers (behaviour-tables.ts, counters.ts)
// ---------------------------------------------------------------------------------------------

/** Half-life of a user's tables, in event time (docs/detection.md: 120 days). Chosen by hand; checked by `npm run eval`. */
export const USER_HALF_LIFE_MS = 120 * 86_400_000;
/** Half-life of a first sighting's weight in a level's novelty (FIRST_SEEN_LEVELS; docs: 30 days). Chosen by hand; checked by `npm run eval`. */
export const NOVELTY_HALF_LIFE_MS = 30 * 86_400_000;
/**
 * Most values kept per level of a user's table; beyond it the least used is forgotten
 * (behaviour-eviction.ts; docs: 24 addresses, 10 ASNs, 8 countries, 12 devices, …). Keyed by the
 * stored level codes (features.ts LEVEL). Chosen by hand; checked by `npm run eval`.
 */
export const TABLE_CAPS = {
  ip: 24,
  net: 16,
  asn: 10,
  cc: 8,
  ua: 10,
  br: 8,
  bf: 6,
  os: 6,
  dt: 4,
  dev: 12,
  fp: 2,
  lang: 6,
  hr: 24,
  mk: 8,
  sw: 8,
  sa: 16,
  sn: 24,
  an: 16,
  ap: 16,
  ao: 10,
} as const;
/** Most values kept per level of the hostile record. Chosen by hand; checked by `npm run eval`. */
export const HOSTILE_CAP = 16;
/** Pending challenges beyond this many are forgotten, oldest first. Chosen by hand. */
export const PENDING_CAP = 5;
/** A challenge answer names the latest challenge from this long before it… */
export const ANSWER_WITHIN_MS = 86_400_000;
/** …or up to this long after it (clocks of the caller and Rampart differ). Chosen by hand. */
export const ANSWER_EARLY_MS = 5 * 60_000;
/** Half-life of the population's counts (docs/detection.md: 30 days). Chosen by hand; checked by `npm run eval`. */
export const POPULATION_HALF_LIFE_MS = 30 * 86_400_000;
/** Half-life of the usual shares of attempts on unknown accounts and of sign-ups (docs: 7 days). Chosen by hand; checked by `npm run eval`. */
export const USUAL_SHARE_HALF_LIFE_MS = 7 * 86_400_000;
/** Members kept per distinct set of a window (enough to tell three from thirty; the ramps above end by 40). Chosen by hand. */
export const SET_CAP = 40;
/** A window's previous hour adds its distinct sets while more than this share of it still slides in. Chosen by hand; checked by `npm run eval`. */
export const PREVIOUS_HOUR_SETS_FROM = 0.25;

// ---------------------------------------------------------------------------------------------
// Priors (behaviour.ts)
// ---------------------------------------------------------------------------------------------

/** Pseudo-count added to a value's population count, against half the level's POP_PSEUDO in its parent's (a Jeffreys-like prior). Chosen by hand; checked by `npm run eval`. */
export const POP_VALUE_PRIOR = 0.5;
/** Pseudo-count per distinct value the user showed, added to a parent value's count for the operator-for-software term. Chosen by hand; checked by `npm run eval`. */
export const SOFTWARE_PARENT_PRIOR = 0.01;
/** `unusual_hour`: the neighbouring hours count this much of the hour itself… */
export const HOUR_NEIGHBOUR_SHARE = 0.5;
/** …and the user's hours are smoothed with this many pseudo-events spread evenly over the day. Chosen by hand; checked by `npm run eval`. */
export const HOUR_PRIOR_EVENTS = 2;
/** `impossible_travel`: a move takes at least this long (a minute), so two logins at once are not infinitely fast. Chosen by hand. */
export const TRAVEL_MIN_HOURS = 1 / 60;

// ---------------------------------------------------------------------------------------------
// Verdicts (core/verdicts)
// ---------------------------------------------------------------------------------------------

/** Challenge answers (decayed) from which an environment counts as reporting them, so an unanswered challenge teaches nothing at once (TENTATIVE_WEIGHT). Chosen by hand; checked by `npm run eval` (`--no-feedback`). */
export const FEEDBACK_REPORTED_MIN = 3;
/** Risk levels: medium from RISK_MEDIUM, high from RISK_HIGH: ruling (docs/decisions.md). */
export const RISK_MEDIUM = 0.6;
export const RISK_HIGH = 0.9;
