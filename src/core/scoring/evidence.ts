/**
 * Evidence about the attacker population, independent of the user's own history: where the
 * request comes from (data centres, anonymising VPNs, Tor), what sends it (automation, headless
 * browsers, crawlers, headers an honest browser would not omit or contradict), what it claims
 * (throw-away e-mail domains), and how fast things happen across accounts (velocity per address,
 * network, device, request shape, e-mail domain and over the whole environment).
 *
 * Each piece is a named signal with a weight in log-odds and a detail object that explains it.
 * Pure: no I/O.
 */
import type { IpIntel, ParsedUserAgent } from '../intel/types';
import type { EventInput, SignalDetail } from '../model';
import type { Features } from './features';
import type { AppActivity, DayCounts, EnvironmentStats, HeaderHabits, LanguageCounts, RecentCounts, Window } from './population';
import {
  ACTIVITY_HABIT_FROM, ACTIVITY_HABIT_FULL, ACTIVITY_MIN_EVENTS, APP_CLIENT_COLD, APP_CLIENT_LEARNED, APP_CLIENT_SUCCESS_SHARE, APP_CLIENT_UNSEEN, BOT_BEHAVIOR, BURST_ACCOUNTS_FROM, BURST_ACCOUNTS_FULL, BURST_LIFT, BURST_USUAL_SHARE_MIN,
  COMPROMISED, COMPROMISED_MAX_FINDINGS, DEVICE_ACCOUNTS, DISPOSABLE, DISPOSABLE_SIGNUP, EMULATOR, ENV_USUAL_AFTER_HOURS, EXPIRED_TOKEN, FAILURE_RATIO_FROM, FAILURE_RATIO_SPAN, FAMILIAR_PROXY_SHARE, FINGERPRINT_HABIT_FROM, FINGERPRINT_HABIT_FULL, FINGERPRINT_HABIT_MIN_EVENTS,
  HEADLESS_BROWSER, HIGH_ACTIVITY_IP, HONEST_FROM, HONEST_FULL, HOSTING, INVALID_TOKEN, LANGUAGE_COUNTRY_MIN_EVENTS, LANGUAGE_IN_ATTACKS_MIN, LANGUAGE_MISMATCH_FROM, LANGUAGE_MISMATCH_MAX, LANGUAGE_PRIOR, MISSING_FINGERPRINT_MAX, MISSING_HEADER_MAX, MISSING_HEADER_MIN,
  MISSING_HEADERS_FROM, MISSING_HEADERS_MIN_EVENTS, NEW_DOMAIN_BELOW, WEB_CRAWLER, MISSING_IN_ATTACKS, MISSING_USER_AGENT, NEW_DOMAIN_IN_ATTACKS, NEW_DOMAIN_MAX, NEW_DOMAIN_MIN, NEW_DOMAIN_MIN_SIGNUPS, NO_ACTIVITY_MAX, NO_INPUT_MAX, NO_PROOF_MAX, NO_SCREENS_MAX, OPERATOR_BURST_MAX, POPULATION_KNOWN,
  PROOF_HABIT_FROM, PROOF_HABIT_FULL, PROOF_MIN_EVENTS, REGISTRATION_LIFT_FROM, REGISTRATION_LIFT_FULL, REGISTRATION_MAX, REGISTRATIONS_HOUR_MIN, REGISTRATIONS_USUAL_MIN, REPLAYED_TOKEN, RESEMBLANCE_LIFT_FROM, RESEMBLANCE_LIFT_SPAN, SHAPE_BURST_MAX, SIGNUP_SHARE_FLOOR,
  SIGNUPS_DEVICE, SIGNUPS_DOMAIN, SIGNUPS_IP, SIGNUPS_MACHINE, SLOW_WAVE_FAILURE_SHARE_FLOOR, SLOW_WAVE_FROM, SLOW_WAVE_FULL, SLOW_WAVE_MAX, SLOW_WAVE_MIN, SLOW_WAVE_UNKNOWN_SHARE_FLOOR, SPOOFED_DEVICE, STUFFING_IP, STUFFING_NETWORK, STUFFING_OPERATOR, STUFFING_SHAPE,
  TAMPERED_APP, TIMEZONE_FAR, VELOCITY_MIN_WEIGHT, TIMEZONE_GAP_HOURS, TOKEN_LANGUAGE_MISMATCH, TOR, UNCOMMON_DOMAIN_BELOW, UNKNOWN_ACCOUNT_AGE_HOURS, UNKNOWN_ACCOUNT_MAX, UNKNOWN_ACCOUNT_MIN_ATTEMPTS, UNKNOWN_IN_ATTACKS, VPN, WAVE_HOUR_FAILURES_MIN, WAVE_HOUR_UNKNOWN_MIN, WAVE_LIFT_FROM,
  WAVE_LIFT_FULL, WAVE_LIKE_FULL, WAVE_MAX, WAVE_RECENT_MIN, WAVE_UNLIKE, WAVE_USUAL_FAILURES_MIN, WAVE_USUAL_SHARE_MIN, WAVE_USUAL_UNKNOWN_MIN, type Ramp,
} from './weights';
import { AUTOMATION } from '../client/components';
import { INTEGRITY } from '../client/mobile';
import { interacted, type Behaviour } from '../client/proof';

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
  fingerprints: { events: number; share: number };
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
  problem: 'malformed' | 'forged' | 'expired' | 'other_environment' | 'replayed' | null;
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
/**
 * `new_email_domain`: a sign-up wave on invented domains names a domain no legitimate user has
 * about NEW_DOMAIN_IN_ATTACKS of the time; legitimate sign-ups do as often as the environment has
 * seen (its own rate, learned once it has NEW_DOMAIN_MIN_SIGNUPS legitimate sign-ups). Weighed by
 * that likelihood ratio, from NEW_DOMAIN_MIN to NEW_DOMAIN_MAX: alone it challenges no one.
 */
/** Login attempts: a login, a pre-auth check, a failed login (what an attack on accounts sends). */
const ATTEMPT_KINDS: ReadonlySet<EventKind> = new Set(['login', 'preauth', 'failure']);

/**
 * Browsers that send `Sec-Fetch-*` on every navigation and form post, by family (as the user-agent
 * parser names it: Chrome on Android is `Chrome`, Samsung's is `Samsung Internet`) and first version.
 */
const SEC_FETCH_SINCE: Readonly<Record<string, number>> = { Chrome: 80, Edge: 80, Opera: 67, Firefox: 90, Safari: 17, 'Mobile Safari': 17, 'Samsung Internet': 13, 'Chrome WebView': 80 };
/**
 * Chromium browsers send `Sec-CH-UA` (on secure origins) since version 89; Samsung Internet only
 * since 23 (earlier releases, though Chromium, sent none).
 */
const CLIENT_HINTS_SINCE: Readonly<Record<string, number>> = { Chrome: 90, Edge: 90, Opera: 76, 'Samsung Internet': 23 };

const major = (ua: ParsedUserAgent) => Number(ua.version.split('.')[0]) || 0;
/**
 * On iOS and iPadOS every browser is Safari's WebKit under another name (Chrome's CriOS, Firefox's
 * FxiOS, Edge's EdgiOS, Opera, Brave, DuckDuckGo): it sends the headers Safari of that iOS sends,
 * and never client hints, whatever version of its own it names.
 */
const onIos = (ua: ParsedUserAgent) => ua.platform === 'iOS';
const osMajor = (ua: ParsedUserAgent) => Number(/\d+/.exec(ua.os)?.[0] ?? 0);

/** Whether this browser sends `Sec-Fetch-*` on a form post. */
function sendsSecFetch(ua: ParsedUserAgent): boolean {
  const since = SEC_FETCH_SINCE[ua.browser];
  if (since === undefined) return false;
  return onIos(ua) ? osMajor(ua) >= SEC_FETCH_SINCE['Mobile Safari'] : major(ua) >= since;
}

/** Whether this browser sends `Sec-CH-UA` (on a secure origin). */
function sendsClientHints(ua: ParsedUserAgent): boolean {
  const since = CLIENT_HINTS_SINCE[ua.browser];
  return since !== undefined && !onIos(ua) && major(ua) >= since;
}

/** Evidence from the request itself (network, client, headers, e-mail). */
export function requestEvidence(x: EvidenceInput): Contribution[] {
  const out: Contribution[] = [];
  const h = x.event.context.headers;
  const ip = x.ip;
  if (ip?.tor) out.push({ signal: 'proxy_ip', weight: TOR, detail: { kind: 'tor', asn: ip.asn?.number ?? null } });
  else if (ip?.hosting || ip?.vpn) {
    const vpn = Boolean(ip.vpn) && !ip.hosting;
    // A network the user habitually comes from (their own VPN) says little about this login.
    const weight = (vpn ? VPN : HOSTING) * (x.familiarAsn ? FAMILIAR_PROXY_SHARE : 1);
    out.push({ signal: 'proxy_ip', weight, detail: { kind: vpn ? 'vpn' : 'hosting', asn: ip.asn?.number ?? null, organization: ip.asn?.organization ?? null, familiar: x.familiarAsn } });
  }

  // A native app's verified token says what the client is: no user-agent rule calls it automated
  // (an app's HTTP stack names no browser, and its version is the app's business).
  const mobileToken = Boolean(x.client?.mobile && x.client.problem === null);
  if (!mobileToken) {
    if (x.ua.headless) out.push({ signal: 'headless_browser', weight: HEADLESS_BROWSER, detail: { browser: x.ua.browser } });
    else if (x.ua.bot && !x.ua.crawler) out.push({ signal: 'bot_behavior', weight: BOT_BEHAVIOR, detail: { reason: 'automation_user_agent', client: x.ua.browser || x.ua.family } });
    else if (x.ua.app) out.push(...appClientEvidence(x));
    if (x.ua.crawler) out.push({ signal: 'web_crawler', weight: WEB_CRAWLER, detail: { user_agent: x.ua.family } });
  }
  if (x.event.context.userAgent === '') out.push({ signal: 'missing_headers', weight: MISSING_USER_AGENT, detail: { missing: 'user-agent' } });

  const claimsBrowser = !x.ua.bot && !x.ua.crawler && x.ua.browser !== '' && x.ua.browser !== 'Other';
  if (claimsBrowser) {
    // What this application forwards for this browser most of the time, and this request lacks.
    const habits = x.headers;
    const missing: string[] = [];
    let weight = 0;
    // Each missing group counts by how reliably this browser's logins carry it here (a browser the
    // application nearly always forwards it for, arriving without it, is rarely that browser).
    const lacks = (name: string, share: number | undefined) => {
      if (habits === null || habits.events < MISSING_HEADERS_MIN_EVENTS || share === undefined || share < MISSING_HEADERS_FROM) return;
      missing.push(name);
      weight += clamp(Math.log(MISSING_IN_ATTACKS / Math.max(1e-9, 1 - share)), MISSING_HEADER_MIN, MISSING_HEADER_MAX);
    };
    if (h['accept-language'] === undefined) lacks('accept-language', habits?.acceptLanguage);
    // Apps' HTTP stacks add Accept-Encoding on their own: one claiming to be the app's without it is another client.
    if (x.ua.app && h['accept-encoding'] === undefined) lacks('accept-encoding', habits?.acceptEncoding);
    if (sendsSecFetch(x.ua) && h['sec-fetch-mode'] === undefined) lacks('sec-fetch-*', habits?.secFetch);
    if (sendsClientHints(x.ua) && h['sec-ch-ua'] === undefined) lacks('sec-ch-ua', habits?.clientHints);
    if (missing.length) out.push({ signal: 'missing_headers', weight: Math.min(MISSING_HEADER_MAX, weight), detail: { missing: missing.join(', ') } });

    const spoof = spoofReason(x);
    if (spoof) out.push({ signal: 'spoofed_device', weight: SPOOFED_DEVICE, detail: { reason: spoof } });
  }

  // Where the application's legitimate logins nearly all carry a client token, one without it did
  // not come through the application's page (or app): a script, or a client whose SDK did not load.
  const fp = x.fingerprints;
  if (!x.features.fingerprinted && x.kind !== 'other' && fp.events >= FINGERPRINT_HABIT_MIN_EVENTS && fp.share >= FINGERPRINT_HABIT_FROM) {
    out.push({ signal: 'missing_fingerprint', weight: ramp(fp.share, FINGERPRINT_HABIT_FROM, FINGERPRINT_HABIT_FULL, MISSING_FINGERPRINT_MAX), detail: { expected_by: 'environment', share_with_fingerprint: Math.round(fp.share * 1000) / 1000 } });
  }

  out.push(...clientEvidence(x));
  out.push(...mobileEvidence(x));
  out.push(...proofEvidence(x));

  const missing = missingFields(x.event);
  if (missing) out.push({ signal: 'missing_fields', weight: 0, detail: missing });

  const mismatch = languageMismatch(x);
  if (mismatch) out.push(mismatch);

  if (x.disposableEmail) {
    out.push({ signal: 'disposable_email', weight: x.kind === 'registration' ? DISPOSABLE_SIGNUP : DISPOSABLE, detail: { domain: x.features.emailDomain } });
  }
  return out;
}

/** A browser language rare among the legitimate events of the address's country, for an account without history. */
function languageMismatch(x: EvidenceInput): Contribution | null {
  const l = x.language;
  if (!l || l.country < LANGUAGE_COUNTRY_MIN_EVENTS || !(x.unknownAccount || x.kind === 'registration')) return null;
  const inCountry = (Math.min(l.inCountry, l.country) + LANGUAGE_PRIOR * l.overall) / (l.country + LANGUAGE_PRIOR);
  const weight = Math.min(LANGUAGE_MISMATCH_MAX, Math.log(Math.max(l.overall, LANGUAGE_IN_ATTACKS_MIN) / Math.max(inCountry, 1e-6)));
  if (weight < LANGUAGE_MISMATCH_FROM) return null;
  return {
    signal: 'language_country_mismatch',
    weight,
    detail: { language: x.features.values.lang, country: x.features.values.cc, share_in_country: Math.round(inCountry * 1000) / 1000 },
  };
}

/**
 * The recommended fields an event did not carry (docs/decisions.md: they are what to send, not a
 * gate), as the detail of its `missing_fields` signal; null when it carried them all. Evidence
 * for nothing: an application that does not send an e-mail does so for every user.
 */
export function missingFields(event: EventInput): SignalDetail | null {
  return event.missing.length > 0 ? { missing: event.missing.join(', ') } : null;
}

/** What a Rampart client token says: replayed or invalid, automation the browser showed, a user agent swapped. */
function clientEvidence(x: EvidenceInput): Contribution[] {
  const c = x.client;
  if (!c) return [];
  if (c.problem === 'replayed') return [{ signal: 'replayed_token', weight: REPLAYED_TOKEN, detail: { reason: 'used_before' } }];
  // An expired token is as likely a page left open as a stolen one; a forged one is never honest.
  if (c.problem !== null) return [{ signal: 'invalid_token', weight: c.problem === 'expired' ? EXPIRED_TOKEN : INVALID_TOKEN, detail: { reason: c.problem } }];
  const out: Contribution[] = [];
  const kinds = new Set(c.automation.map((a) => AUTOMATION[a]));
  if (kinds.has('bot')) out.push({ signal: 'bot_behavior', weight: BOT_BEHAVIOR, detail: { reason: 'browser_automation', evidence: c.automation.filter((a) => AUTOMATION[a] === 'bot').join(', ') } });
  if (kinds.has('headless')) out.push({ signal: 'headless_browser', weight: HEADLESS_BROWSER, detail: { browser: x.ua.browser, evidence: c.automation.filter((a) => AUTOMATION[a] === 'headless').join(', ') } });
  if (kinds.has('tampered')) out.push({ signal: 'spoofed_device', weight: SPOOFED_DEVICE, detail: { reason: 'tampered_browser', evidence: c.automation.filter((a) => AUTOMATION[a] === 'tampered').join(', ') } });
  if (c.userAgentMismatch) out.push({ signal: 'spoofed_device', weight: SPOOFED_DEVICE, detail: { reason: 'token_user_agent_mismatch' } });
  // The same browser setting gives both: different means the headers or the token were swapped.
  if (c.languageMismatch) out.push({ signal: 'spoofed_device', weight: TOKEN_LANGUAGE_MISMATCH, detail: { reason: 'token_language_mismatch' } });
  // A browser whose clock is set half a world away from its address: a proxy or a remote
  // machine, or a traveller whose laptop kept home time; evidence, never alone a deny.
  if (c.timezoneGapHours !== null && c.timezoneGapHours > TIMEZONE_GAP_HOURS) out.push({ signal: 'spoofed_device', weight: TIMEZONE_FAR, detail: { reason: 'token_timezone_far_from_ip', hours: Math.round(c.timezoneGapHours) } });
  return out;
}

/**
 * A native app's HTTP stack (okhttp/…, CFNetwork/…, a Dart or Ktor client), without a mobile
 * token: the application's own app where its users log in with it, a script borrowing the library
 * where they do not. Learned per environment (as missing_headers learns which headers it
 * forwards): a stack counts as the application's once at least APP_CLIENT_LEARNED of its logins
 * had the right password, and they are at least APP_CLIENT_SUCCESS_SHARE of its logins and failed
 * logins (a stuffing tool borrowing it fails nearly every time). Until then it weighs
 * APP_CLIENT_COLD (no challenge alone) where app users are expected: a young environment (fewer
 * than POPULATION_KNOWN legitimate events), or one that lists its apps, so that the first app
 * users of a new environment or a new app are let in and teach it; APP_CLIENT_UNSEEN elsewhere (a
 * settled environment whose users never logged in with this library: a challenge alone).
 */

function appClientEvidence(x: EvidenceInput): Contribution[] {
  const app = x.ua.app;
  if (!app) return [];
  const ok = x.headers?.credentialed ?? 0;
  const failed = x.headers?.failed ?? 0;
  if (ok >= APP_CLIENT_LEARNED && ok >= APP_CLIENT_SUCCESS_SHARE * (ok + failed)) return [];
  const expected = x.env.legit < POPULATION_KNOWN || x.appsDeclared === true;
  return [
    {
      signal: 'bot_behavior',
      weight: expected ? APP_CLIENT_COLD : APP_CLIENT_UNSEEN,
      detail: { reason: 'unfamiliar_app_client', client: app.library, app: app.name, logins_with_password: count(ok), failed_logins: count(failed), expected },
    },
  ];
}

/**
 * `no_app_activity`: a login whose install never announced itself (no install or open event
 * within the week: a script minting tokens from the app's public key, not the app), where the
 * environment's legitimate logins with mobile tokens nearly always come from installs that did:
 * up to 2.8 as that share goes from 90% to 99% of at least 30 such logins (as missing_fingerprint,
 * learned: an app whose events never arrive, say through a proxy that drops them, is not
 * penalised). The same, up to 1.5, for an install that announced itself but never showed a
 * screen, where nearly all legitimate ones had (an application that does not track screens never
 * learns that habit).
 */
/** What each integrity finding weighs (emulator: hard; tampering: hard; a rooted or debugged phone: soft): EMULATOR, TAMPERED_APP, COMPROMISED. */

/** What a native app's token and its install say: the device's integrity, its activity, a platform swapped. */
function mobileEvidence(x: EvidenceInput): Contribution[] {
  const m = x.client?.mobile;
  if (!m || x.client?.problem !== null) return [];
  const out: Contribution[] = [];
  const of = (kind: string) => m.integrity.filter((i) => INTEGRITY[i] === kind);
  if (of('emulator').length) out.push({ signal: 'emulator', weight: EMULATOR, detail: { evidence: of('emulator').join(', ') } });
  if (of('tampered').length) out.push({ signal: 'spoofed_device', weight: TAMPERED_APP, detail: { reason: 'tampered_app', evidence: of('tampered').join(', ') } });
  if (of('compromised').length) out.push({ signal: 'compromised_device', weight: COMPROMISED * Math.min(COMPROMISED_MAX_FINDINGS, of('compromised').length), detail: { evidence: of('compromised').join(', ') } });
  if (m.platformMismatch) out.push({ signal: 'spoofed_device', weight: SPOOFED_DEVICE, detail: { reason: 'token_platform_mismatch' } });
  const h = m.habit;
  const a = m.activity;
  if (h.events >= ACTIVITY_MIN_EVENTS && x.kind !== 'other') {
    if ((a === null || a.installs + a.opens === 0) && h.announced >= ACTIVITY_HABIT_FROM) {
      out.push({ signal: 'no_app_activity', weight: ramp(h.announced, ACTIVITY_HABIT_FROM, ACTIVITY_HABIT_FULL, NO_ACTIVITY_MAX), detail: { opened: false, screens: 0, usual_share_opened: Math.round(h.announced * 1000) / 1000 } });
    } else if (a !== null && a.screens === 0 && h.screens >= ACTIVITY_HABIT_FROM) {
      out.push({ signal: 'no_app_activity', weight: ramp(h.screens, ACTIVITY_HABIT_FROM, ACTIVITY_HABIT_FULL, NO_SCREENS_MAX), detail: { opened: true, screens: 0, usual_share_with_screens: Math.round(h.screens * 1000) / 1000 } });
    }
  }
  // One install, many accounts over the week (identified in the app or named by verdicts): a farm,
  // or one phone opening account after account whatever it wipes in between.
  const accounts = ramp(m.accounts, DEVICE_ACCOUNTS.from, DEVICE_ACCOUNTS.to, DEVICE_ACCOUNTS.max);
  if (accounts > 0) out.push({ signal: 'multiple_accounts_per_device', weight: accounts, detail: { by: 'install', accounts: m.accounts, window_days: 7 } });
  return out;
}

/**
 * The operating system a `Sec-CH-UA-Platform` value or a parsed user agent names, as one family:
 * Chrome on a Chromebook says "Chrome OS" (a Chromium OS build "Chromium OS") where the user agent
 * says `CrOS`, which the parser names "Chromium OS"; Linux distributions are Linux. Null: a
 * platform Chromium does not name ("Unknown", a BSD), which nothing contradicts.
 */
function platformFamily(name: string): string | null {
  const p = name.replace(/"/g, '').trim().toLowerCase();
  if (/^(?:chrom(?:e|ium) ?os|cros)$/.test(p)) return 'chromeos';
  if (/^(?:mac ?os|macos|mac os x|macintosh)$/.test(p)) return 'mac';
  if (/^windows(?! (?:phone|mobile))/.test(p)) return 'windows';
  if (p === 'android') return 'android';
  if (p === 'ios' || p === 'ipados') return 'ios';
  if (/^(?:linux|[kxl]?ubuntu|debian|fedora|mint|arch|gentoo|suse|opensuse|centos|red ?hat|manjaro|raspbian|elementary os|deepin)$/.test(p)) return 'linux';
  return null;
}

/**
 * `unproven_client`: a browser token minted without the page's proof of work (`no_proof_of_work`:
 * its components were posted by something other than the script, or by a script of an older
 * version, a privacy tool's rewrite, another integration), or one asked for by a page on which no
 * person did anything (`no_user_input`: no key, pointer press or paste, no password typed or
 * pasted). Neither is proof of a script, so each counts only where the environment's legitimate
 * logins with browser tokens nearly all show the contrary (learned, as missing_fingerprint is):
 * from PROOF_HABIT_FROM of at least PROOF_MIN_EVENTS such logins, rising to NO_PROOF_MAX
 * (NO_INPUT_MAX: password managers that fill and submit are people too) at PROOF_HABIT_FULL. An
 * environment whose pages, apps or tools post components without a proof never learns the habit
 * and never raises it. Neither hard nor soft evidence: alone it challenges, never denies.
 */

function proofEvidence(x: EvidenceInput): Contribution[] {
  const c = x.client;
  const p = c?.proof;
  if (!c || !p || c.problem !== null || c.mobile || x.kind === 'other') return [];
  const h = p.habit;
  const b = p.behaviour;
  if (p.bits === null && h.events >= PROOF_MIN_EVENTS && h.proved >= PROOF_HABIT_FROM) {
    return [{ signal: 'unproven_client', weight: ramp(h.proved, PROOF_HABIT_FROM, PROOF_HABIT_FULL, NO_PROOF_MAX), detail: { reason: 'no_proof_of_work', expected_by: 'environment', share_with_proof: round3(h.proved), behaviour: b ? 'reported' : 'absent' } }];
  }
  if (b && !b.ahead && !interacted(b) && h.reported >= PROOF_MIN_EVENTS && h.interacted >= PROOF_HABIT_FROM) {
    return [
      {
        signal: 'unproven_client',
        weight: ramp(h.interacted, PROOF_HABIT_FROM, PROOF_HABIT_FULL, NO_INPUT_MAX),
        detail: { reason: 'no_user_input', expected_by: 'environment', share_with_input: round3(h.interacted), time_on_page_ms: b.elapsedMs, keys: b.keys, pointer: b.pointer, pastes: b.pastes, inputs: b.inputs, password: b.password },
      },
    ];
  }
  return [];
}

const round3 = (n: number) => Math.round(n * 1000) / 1000;

/** Client hints or the sandbox device that contradict the user agent. */
function spoofReason(x: EvidenceInput): string | null {
  const h = x.event.context.headers;
  const chMobile = h['sec-ch-ua-mobile'];
  if (typeof chMobile === 'string') {
    // A phone's browser asks for the mobile experience; a tablet's (no `Mobile` in its user agent) does not.
    if (chMobile.trim() === '?0' && x.ua.type === 'mobile') return 'client_hints_mobile_mismatch';
    if (chMobile.trim() === '?1' && x.ua.type === 'desktop') return 'client_hints_mobile_mismatch';
  }
  const chPlatform = h['sec-ch-ua-platform'];
  if (typeof chPlatform === 'string') {
    const claimed = platformFamily(chPlatform);
    const os = platformFamily(x.ua.platform);
    // Android is Linux: a Linux hint with an Android user agent is no contradiction.
    if (claimed && os && claimed !== os && !(claimed === 'linux' && os === 'android')) return 'client_hints_platform_mismatch';
  }
  // Only Chromium sends client hints: not Firefox, not Safari, and no browser on iOS (all WebKit).
  const chUa = h['sec-ch-ua'];
  if (typeof chUa === 'string' && (onIos(x.ua) || (/firefox|safari/i.test(x.ua.browser) && !/chrom/i.test(x.ua.browser)))) return 'client_hints_from_non_chromium';
  const device = x.event.testToken?.device;
  if (device && x.ua.browser) {
    const [browser] = device.split('_on_');
    if (browser && x.ua.browser !== 'Other' && !x.ua.browser.toLowerCase().includes(browser)) return 'fingerprint_user_agent_mismatch';
  }
  return null;
}

/** `v` within [lo, hi]. */
export const clamp = (v: number, lo: number, hi: number) => Math.min(hi, Math.max(lo, v));

/** A count as a signal's detail shows it (one decimal: windows weigh the previous hour in part). */
const count = (n: number) => Math.round(n * 10) / 10;

/** How many an hour `n` events over the last slots' minutes make. */
const perHour = (n: number, recent: RecentCounts) => (n * 60) / recent.minutes;

/** Hours of history before an environment's sign-ups have a usual rate to stand out from (weights.ts). */
export { ENV_USUAL_AFTER_HOURS };

/** A ramp of weights.ts: 0 up to its `from`, its `max` from its `to`. */
const byRamp = (value: number, r: Ramp) => ramp(value, r.from, r.to, r.max);

/** A smooth step: 0 below `from`, `weight` at `to` and above. */
export function ramp(value: number, from: number, to: number, weight: number): number {
  if (value <= from) return 0;
  if (value >= to) return weight;
  return (weight * (value - from)) / (to - from);
}

/**
 * The environment is under a wave: attempts on accounts that do not exist, or failures, far above
 * their usual rate. Seen over the last hour, and over the last 5–10 minutes so that a burst counts
 * from its first few attempts (at least WAVE_RECENT_MIN of them) rather than once an hour's worth
 * has gathered. Only for login attempts (ATTEMPT_KINDS: a sign-up's account is new by
 * definition; sign-up waves are registration_velocity). Null when there is none (a lift under 3).
 */
export function attackWave(x: EvidenceInput): { lift: number; detail: Record<string, number> } | null {
  const envWindow = x.windows.env;
  if (!envWindow || !ATTEMPT_KINDS.has(x.kind)) return null;
  const usualUnknown = Math.max(x.env.unknownPerHour, WAVE_USUAL_UNKNOWN_MIN);
  const usualFailures = Math.max(x.env.failuresPerHour, WAVE_USUAL_FAILURES_MIN);
  const hourly = Math.max(envWindow.unknown >= WAVE_HOUR_UNKNOWN_MIN ? envWindow.unknown / usualUnknown : 0, envWindow.failures >= WAVE_HOUR_FAILURES_MIN ? envWindow.failures / usualFailures : 0);
  // Recently: both the rate and the share of attempts must stand out. A young environment or a
  // busy hour brings more attempts on accounts Rampart has not seen yet, but not a larger share.
  const r = envWindow.recent;
  const lift = (n: number, usual: number, usualShare: number, min: number) => {
    if (!r || n < min) return 0;
    const rate = perHour(n, r) / usual;
    const share = n / Math.max(r.attempts, n) / Math.max(usualShare, WAVE_USUAL_SHARE_MIN);
    return Math.min(rate, share);
  };
  const attemptsPerHour = Math.max(x.env.attemptsPerHour, 1e-9);
  const recent = Math.max(
    lift(r?.unknown ?? 0, usualUnknown, x.env.unknownPerHour / attemptsPerHour, WAVE_RECENT_MIN),
    lift(r?.failures ?? 0, usualFailures, x.env.failuresPerHour / attemptsPerHour, WAVE_RECENT_MIN * 2),
  );
  const wave = Math.max(hourly, recent);
  if (wave < WAVE_LIFT_FROM) return null;
  return {
    lift: wave,
    detail: {
      unknown_accounts_last_hour: count(envWindow.unknown),
      failures_last_hour: count(envWindow.failures),
      attempts_recently: r ? count(r.attempts) : 0,
      unknown_accounts_recently: r ? count(r.unknown) : 0,
      failures_recently: r ? count(r.failures) : 0,
      recent_minutes: r ? Math.round(r.minutes) : 0,
      usual_per_hour: count(Math.max(x.env.unknownPerHour, x.env.failuresPerHour)),
    },
  };
}

/**
 * `attack_wave` over the last 24 hours: a campaign spread over days ("low and slow") keeps every
 * hour, and every five minutes, near their usual counts, but not the day's share of attempts on
 * accounts Rampart does not know (or of failures). At least SLOW_WAVE_MIN such attempts in the
 * day (twice as many failures), in an environment a week old (before that every account is new,
 * and the share falls day by day). The lift is the day's share over the usual one: for unknown
 * accounts, the share Rampart let through over the last week or so (usualUnknownShare), at least
 * 1%; for failures, the environment's long-run share, at least 2%. Weighed from SLOW_WAVE_FROM×
 * up to SLOW_WAVE_MAX at SLOW_WAVE_FULL×: with unknown_account a challenge from about 3.3×, when
 * seven in ten of the day's attempts on unknown accounts are beyond the usual; never alone a
 * deny, since a day's rise can also be real users returning after a mailing.
 */
/** Sign-ups are a few in a thousand attempts: their usual share counts as at least SIGNUP_SHARE_FLOOR. */

/**
 * How many times its usual share of attempts `n` of the day's are (0 under `min` of them, or in an
 * environment younger than a week). The usual share counts as at least `floor`.
 */
function dayLift(x: EvidenceInput, d: DayCounts, n: number, usualShare: number, floor: number, min: number): number {
  if (n < min || x.env.ageHours < UNKNOWN_ACCOUNT_AGE_HOURS) return 0;
  return n / Math.max(d.attempts, n) / Math.max(usualShare, floor);
}

export function slowWave(x: EvidenceInput): { lift: number; detail: Record<string, number> } | null {
  const d = x.windows.env?.day;
  if (!d || !ATTEMPT_KINDS.has(x.kind)) return null;
  const attemptsPerHour = Math.max(x.env.attemptsPerHour, 1e-9);
  const wave = Math.max(dayLift(x, d, d.unknown, x.env.usualUnknownShare, SLOW_WAVE_UNKNOWN_SHARE_FLOOR, SLOW_WAVE_MIN), dayLift(x, d, d.failures, x.env.failuresPerHour / attemptsPerHour, SLOW_WAVE_FAILURE_SHARE_FLOOR, SLOW_WAVE_MIN * 2));
  if (wave <= SLOW_WAVE_FROM) return null;
  return {
    lift: wave,
    detail: {
      window_hours: 24,
      attempts_last_day: count(d.attempts),
      unknown_accounts_last_day: count(d.unknown),
      failures_last_day: count(d.failures),
      usual_unknown_share: Math.round(x.env.usualUnknownShare * 1000) / 1000,
      usual_failure_share: Math.round((x.env.failuresPerHour / attemptsPerHour) * 1000) / 1000,
    },
  };
}

/**
 * One signal from the request's (or the hour's) evidence and from the day's, counted as the
 * stronger of the two: the first in full, as it is; the day's only for what it adds beyond it, and
 * marked dayLevel (it raises the risk no further than the unfamiliarity cap). Adding them would
 * count one campaign twice; keeping only the day's would lose what the request itself shows.
 */
function strongerOf(signal: string, now: { weight: number; detail: SignalDetail } | null, day: { weight: number; detail: SignalDetail } | null): Contribution[] {
  const out: Contribution[] = [];
  const first = now && now.weight > 0 ? now.weight : 0;
  if (now && first > 0) out.push({ signal, weight: first, detail: now.detail });
  if (day && day.weight > first) out.push({ signal, weight: day.weight - first, detail: day.detail, dayLevel: true });
  return out;
}

/**
 * How surely a window's traffic is real users' (0–1): a carrier's or an office's NAT sends many
 * accounts' logins, and a new browser version many accounts' requests of one new shape, most of
 * them successful, while a stuffing source's or an attack tool's nearly all fail. Counted when
 * successful logins are at least HONEST_FROM of the window's attempts, fully at HONEST_FULL (an
 * honest login is one or two attempts: the pre-auth check and the login). Not for sign-ups, which
 * count as successes when allowed: several alike are registration_velocity's and a farm's.
 */
function honest(window: Window | null | undefined, kind: EventKind): number {
  if (!window || kind === 'registration' || window.attempts <= 0) return 0;
  return clamp((window.successes / window.attempts - HONEST_FROM) / (HONEST_FULL - HONEST_FROM), 0, 1);
}

/**
 * Legitimate events an environment has counted before its population's shares mean anything: a
 * share of nothing is not a rare value. Until then the burst signals, which weigh a value's share
 * of the hour's attempts against its usual share, and `new_email_domain` stay silent. An
 * integration that never reports a successful login (filters only) stays there.
 */

/**
 * A burst (request_shape_burst, high_activity_network): one value (a request shape, an operator)
 * across at least BURST_ACCOUNTS_FROM accounts within the hour, its share of the hour's attempts
 * at least BURST_LIFT times its usual share of legitimate events (a value the environment has
 * nearly never seen counts as a small one, not as none). Weighed by the accounts, fully at
 * BURST_ACCOUNTS_FULL, less where most of its attempts succeed (honest). Null: no burst.
 */
function burst(x: EvidenceInput, w: Window | null | undefined, usualShare: number, max: number): { weight: number; share: number } | null {
  const envAttempts = x.windows.env?.attempts ?? 0;
  if (!w || w.accounts < BURST_ACCOUNTS_FROM || envAttempts <= 0 || x.env.legit < POPULATION_KNOWN) return null;
  const share = Math.min(1, w.attempts / envAttempts);
  if (share / Math.max(usualShare, BURST_USUAL_SHARE_MIN) < BURST_LIFT) return null;
  return { weight: ramp(w.accounts, BURST_ACCOUNTS_FROM, BURST_ACCOUNTS_FULL, max) * (1 - honest(w, x.kind)), share };
}


/**
 * How much a sign-up looks like the others of its hour: the largest share of the hour's sign-ups
 * (before it) that came from its address, its /24, or its e-mail domain (not one of the
 * environment's common ones); or from its machine, operator or request shape, counted as that
 * share only as far as it is many times their usual share (a popular browser's shape or a big
 * operator brings a large share of any hour's real sign-ups; a farm's machines, a proxy network
 * or a tool's rare configuration do not). A wave's members share these; real people signing up
 * in the same hour do not.
 */
function waveResemblance(x: EvidenceInput, envRegs: number): number {
  const w = x.windows;
  const share = (n: number | undefined) => (n ?? 0) / Math.max(envRegs, 1);
  const beyond = (n: number | undefined, usual: number) => share(n) * clamp((share(n) / Math.max(usual, 1e-4) - RESEMBLANCE_LIFT_FROM) / RESEMBLANCE_LIFT_SPAN, 0, 1);
  return Math.max(
    share(w.ip?.registrations),
    share(w.net?.registrations),
    x.domainCount < UNCOMMON_DOMAIN_BELOW ? share(w.dom?.registrations) : 0,
    beyond(w.mk?.registrations, x.machineShare ?? 0),
    beyond(w.shape?.registrations, x.shapeShare),
    beyond(w.asn?.registrations, x.operatorShare),
  );
}
/** Sign-ups within the hour from phones of one machine key, against what its share of the environment's sign-ups brings. */
function machineSignups(x: EvidenceInput, w: Window): { by: string; n: number; from: number; to: number } {
  const expected = x.env.registrationsPerHour * (x.machineShare ?? 0);
  // A sign-up is counted twice when the application asks before and after it (filter, then
  // risk): one is never a wave. Where the model brings next to none an hour, a second sign-up
  // from it within the hour is already as unlikely as the fourth from one device: full weight.
  return { by: 'machine', n: w.registrations, from: SIGNUPS_MACHINE.from + SIGNUPS_MACHINE.fromPerExpected * expected, to: SIGNUPS_MACHINE.to + SIGNUPS_MACHINE.toPerExpected * expected };
}

function operatorBurst(x: EvidenceInput): Contribution | null {
  const b = ATTEMPT_KINDS.has(x.kind) ? burst(x, x.windows.asn, x.operatorShare, OPERATOR_BURST_MAX) : null;
  if (!b || b.weight <= VELOCITY_MIN_WEIGHT) return null;
  return {
    signal: 'high_activity_network',
    weight: b.weight,
    detail: { by: 'operator', asn: x.features.values.asn ?? '', accounts_last_hour: x.windows.asn?.accounts ?? 0, share_of_attempts: Math.round(b.share * 1000) / 1000, usual_share: Math.round(x.operatorShare * 1000) / 1000 },
  };
}

/**
 * A sign-up's domain that no legitimate user of the environment has: by how rarely legitimate
 * sign-ups bring one (a consumer service's users share a few big providers; a business tool's
 * bring their companies' domains, and this weighs little there).
 */
function newEmailDomain(domain: string, env: EvidenceInput['env']): Contribution {
  const learned = env.signups >= NEW_DOMAIN_MIN_SIGNUPS;
  // Smoothed: one sign-up in two with a new domain, before the first.
  const share = (env.newDomainSignups + 1) / (env.signups + 2);
  const weight = learned ? clamp(Math.log(NEW_DOMAIN_IN_ATTACKS / share), NEW_DOMAIN_MIN, NEW_DOMAIN_MAX) : NEW_DOMAIN_MIN;
  const detail: SignalDetail = { domain };
  if (learned) detail.usual_share = Math.round(share * 1000) / 1000;
  return { signal: 'new_email_domain', weight, detail };
}

/** Evidence from velocity across accounts, in the last sixty minutes of event time. */
export function velocityEvidence(x: EvidenceInput): Contribution[] {
  const out: Contribution[] = [];
  const w = x.windows;

  // Failed logins across accounts from one address, network, operator or request shape. Beyond
  // a single address, only where failures far outnumber successes (a big network or a common
  // browser has its share of typos).
  const ratio = (window: Window | null | undefined) => (window ? Math.min(1, Math.max(0, (window.failures / (window.successes + 1) - FAILURE_RATIO_FROM) / FAILURE_RATIO_SPAN)) : 0);
  const shared = honest(w.ip, x.kind);
  const failed = [
    { window: w.ip, kind: 'ip', weight: byRamp(w.ip?.failedAccounts ?? 0, STUFFING_IP) * (1 - shared) },
    { window: w.net, kind: 'network', weight: byRamp(w.net?.failedAccounts ?? 0, STUFFING_NETWORK) * ratio(w.net) },
    { window: w.asn, kind: 'operator', weight: byRamp(w.asn?.failedAccounts ?? 0, STUFFING_OPERATOR) * ratio(w.asn) },
    { window: w.shape, kind: 'request_shape', weight: byRamp(w.shape?.failedAccounts ?? 0, STUFFING_SHAPE) * ratio(w.shape) },
  ].sort((a, b) => b.weight - a.weight)[0];
  if (failed && failed.weight > VELOCITY_MIN_WEIGHT) {
    out.push({ signal: 'credential_stuffing', weight: failed.weight, detail: { by: failed.kind, accounts_failed_last_hour: failed.window?.failedAccounts ?? 0, failures_last_hour: count(failed.window?.failures ?? 0), successes_last_hour: count(failed.window?.successes ?? 0) } });
  }

  // Many accounts tried from one address (beyond what a shared household or office shows).
  const ipAccounts = w.ip?.accounts ?? 0;
  const ipWeight = byRamp(ipAccounts, HIGH_ACTIVITY_IP) * (1 - shared);
  if (ipWeight > 0) out.push({ signal: 'high_activity_ip', weight: ipWeight, detail: { accounts_last_hour: ipAccounts, attempts_last_hour: count(w.ip?.attempts ?? 0) } });

  // One fingerprinted device, many accounts: a device farm, or one phone opening accounts.
  const devAccounts = x.features.fingerprinted ? (w.dev?.accounts ?? 0) : 0;
  const devWeight = byRamp(devAccounts, DEVICE_ACCOUNTS);
  if (devWeight > 0) out.push({ signal: 'multiple_accounts_per_device', weight: devWeight, detail: { accounts: devAccounts } });

  // The same request shape (client, header set, language) across many accounts at once, far
  // beyond its usual share of this environment's traffic.
  const shape = x.ownDevice ? null : burst(x, w.shape, x.shapeShare, SHAPE_BURST_MAX);
  if (shape && shape.weight > 0) {
    const detail = { accounts_last_hour: w.shape?.accounts ?? 0, share_of_attempts: Math.round(shape.share * 1000) / 1000, usual_share: Math.round(x.shapeShare * 1000) / 1000 };
    out.push({ signal: 'request_shape_burst', weight: shape.weight, detail: x.habitualAgent ? { ...detail, users_own_client: true } : detail, ...(x.habitualAgent ? { capped: true as const } : {}) });
  }

  // Many accounts through one operator at once, far beyond its usual share of the traffic: a VPN
  // provider or a hosting network that a login list is pushed through. Attempts Rampart stops
  // at the pre-auth check never reach the password, so failures alone miss it. Not where most of
  // the operator's attempts succeed (an office or a carrier in its busy hour), and not a
  // residential proxy network, whose addresses follow the users' own operators.
  const operator = x.ownDevice ? null : operatorBurst(x);
  if (operator) out.push(operator);

  // The environment is under a wave (see attackWave): what names an account that is not here is
  // more likely part of it. (Unfamiliar logins to accounts that are here: see the model.)
  if (x.unknownAccount) {
    const fast = attackWave(x);
    const slow = slowWave(x);
    const fastWeight = fast ? ramp(fast.lift, WAVE_LIFT_FROM, WAVE_LIFT_FULL, WAVE_MAX) : 0;
    const slowWeight = slow ? ramp(slow.lift, SLOW_WAVE_FROM, SLOW_WAVE_FULL, SLOW_WAVE_MAX) : 0;
    out.push(...strongerOf('attack_wave', fast ? { weight: fastWeight, detail: fast.detail } : null, slow ? { weight: slowWeight, detail: slow.detail } : null));
  }

  // An account Rampart does not know, where nearly every attempt is on one it knows: a login list
  // names mostly accounts that are not here, while a settled environment sees a new account in a
  // few attempts of a hundred. Weighed by that likelihood ratio, at most UNKNOWN_ACCOUNT_MAX: alone
  // it challenges nobody (a user's first login), it tips an anonymising address or missing headers.
  // A young environment, where every account is new to Rampart, gives it no weight.
  if (x.unknownAccount && ATTEMPT_KINDS.has(x.kind) && x.env.ageHours >= UNKNOWN_ACCOUNT_AGE_HOURS && x.env.attemptsPerHour * x.env.ageHours >= UNKNOWN_ACCOUNT_MIN_ATTEMPTS) {
    const share = Math.min(1, x.env.unknownPerHour / Math.max(x.env.attemptsPerHour, 1e-9));
    const weight = Math.min(UNKNOWN_ACCOUNT_MAX, Math.log(UNKNOWN_IN_ATTACKS / Math.max(share, 1e-3)));
    if (weight > 0) out.push({ signal: 'unknown_account', weight, detail: { usual_share: Math.round(share * 1000) / 1000 } });
  }

  // Registrations: several from one address, device or e-mail domain.
  if (x.kind === 'registration') {
    const regs = [
      { by: 'ip', n: w.ip?.registrations ?? 0, from: SIGNUPS_IP.from, to: SIGNUPS_IP.to },
      { by: 'device', n: x.features.fingerprinted ? (w.dev?.registrations ?? 0) : 0, from: SIGNUPS_DEVICE.from, to: SIGNUPS_DEVICE.to },
      { by: 'email_domain', n: x.domainCount < UNCOMMON_DOMAIN_BELOW ? (w.dom?.registrations ?? 0) : 0, from: SIGNUPS_DOMAIN.from, to: SIGNUPS_DOMAIN.to },
      // Phones of one model, OS and screen (a farm's emulator images, spoofed alike): as many
      // sign-ups as from one device, beyond what the model's share of the environment's sign-ups
      // brings in an hour (a popular phone in a busy environment signs up several an hour).
      ...(w.mk ? [machineSignups(x, w.mk)] : []),
    ]
      .map((r) => ({ by: r.by, n: r.n, weight: ramp(r.n, r.from, r.to, REGISTRATION_MAX), usual: null as number | null }));
    // Sign-ups across the environment far above their usual hourly rate: a wave from many
    // addresses and devices at once (a farm, a bought list), each of which looks new anyway.
    // Over the last hour, and over the last 5–10 minutes (at least WAVE_RECENT_MIN of them), so
    // that a wave counts from its first sign-ups.
    const envRegs = w.env?.registrations ?? 0;
    const usualRegs = Math.max(x.env.registrationsPerHour, REGISTRATIONS_USUAL_MIN);
    const recent = w.env?.recent;
    const recentLift = recent && recent.registrations >= WAVE_RECENT_MIN ? perHour(recent.registrations, recent) / usualRegs : 0;
    // An environment younger than a day has no usual rate yet: its first users signing up
    // minutes apart are how every deployment starts, not a wave.
    const regLift = x.env.ageHours < ENV_USUAL_AFTER_HOURS ? 0 : Math.max(envRegs >= REGISTRATIONS_HOUR_MIN ? envRegs / usualRegs : 0, recentLift);
    // The wave is challenged, not everybody who signs up during it: the weight goes with how much
    // this sign-up looks like the hour's others (see waveResemblance).
    const like = regLift > 0 ? waveResemblance(x, envRegs) : 0;
    if (regLift > 0) regs.push({ by: 'environment', n: envRegs, weight: ramp(regLift, REGISTRATION_LIFT_FROM, REGISTRATION_LIFT_FULL, REGISTRATION_MAX) * (WAVE_UNLIKE + (1 - WAVE_UNLIKE) * clamp(like / WAVE_LIKE_FULL, 0, 1)), usual: x.env.registrationsPerHour });
    const top = regs.sort((a, b) => b.weight - a.weight)[0];
    let hour: { weight: number; detail: SignalDetail } | null = null;
    if (top && top.weight > 0) {
      const detail: SignalDetail = { by: top.by, registrations_last_hour: count(top.n) };
      if (top.usual !== null) detail.usual_per_hour = count(top.usual);
      hour = { weight: top.weight, detail };
    }
    // And spread over days (a farm opening an account an hour): the day's share of attempts that
    // were sign-ups against their usual share (those Rampart let through, over the last week or
    // so), as for attempts on unknown accounts (slowWave). Alone it challenges no sign-up.
    const day = w.env?.day;
    const signups = day ? dayLift(x, day, day.registrations, x.env.usualSignupShare, SIGNUP_SHARE_FLOOR, SLOW_WAVE_MIN) : 0;
    const daily =
      day && signups > SLOW_WAVE_FROM
        ? {
            weight: ramp(signups, SLOW_WAVE_FROM, SLOW_WAVE_FULL, SLOW_WAVE_MAX),
            detail: { by: 'environment', window_hours: 24, registrations_last_day: count(day.registrations), usual_share: Math.round(x.env.usualSignupShare * 10000) / 10000 },
          }
        : null;
    out.push(...strongerOf('registration_velocity', hour, daily));
    // A domain no legitimate user of this environment has, while the environment has many.
    if (x.features.emailDomain && x.domainCount < NEW_DOMAIN_BELOW && x.env.legit >= POPULATION_KNOWN && !x.disposableEmail) {
      out.push(newEmailDomain(x.features.emailDomain, x.env));
    }
  }
  return out;
}
