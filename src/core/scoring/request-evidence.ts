/**
 * Evidence from the request itself: where it comes from (hosting, VPN, Tor), what sends it
 * (automation, headless browsers, crawlers, headers an honest browser would not omit or
 * contradict), the client token it carries and what it proves, the e-mail it names. Pure: no I/O.
 */
import { AUTOMATION } from '../client/components';
import { INTEGRITY } from '../client/mobile';
import { interacted } from '../client/proof';
import type { ParsedUserAgent } from '../intel/types';
import type { EventInput, SignalDetail } from '../model';
import {
  ACTIVITY_HABIT_FROM,
  ACTIVITY_HABIT_FULL,
  ACTIVITY_MIN_EVENTS,
  APP_CLIENT_COLD,
  APP_CLIENT_LEARNED,
  APP_CLIENT_SUCCESS_SHARE,
  APP_CLIENT_UNSEEN,
  BOT_BEHAVIOR,
  COMPROMISED,
  COMPROMISED_MAX_FINDINGS,
  DEVICE_ACCOUNTS,
  DISPOSABLE,
  DISPOSABLE_SIGNUP,
  EMULATOR,
  EXPIRED_TOKEN,
  FAMILIAR_PROXY_SHARE,
  FINGERPRINT_HABIT_FROM,
  FINGERPRINT_HABIT_FULL,
  FINGERPRINT_HABIT_MIN_EVENTS,
  HEADLESS_BROWSER,
  HOSTING,
  INVALID_TOKEN,
  LANGUAGE_COUNTRY_MIN_EVENTS,
  LANGUAGE_IN_ATTACKS_MIN,
  LANGUAGE_MISMATCH_FROM,
  LANGUAGE_MISMATCH_MAX,
  LANGUAGE_PRIOR,
  MISSING_FINGERPRINT_MAX,
  MISSING_HEADER_MAX,
  MISSING_HEADER_MIN,
  MISSING_HEADERS_FROM,
  MISSING_HEADERS_MIN_EVENTS,
  WEB_CRAWLER,
  MISSING_IN_ATTACKS,
  MISSING_USER_AGENT,
  NO_ACTIVITY_MAX,
  NO_INPUT_MAX,
  NO_PROOF_MAX,
  NO_SCREENS_MAX,
  POPULATION_KNOWN,
  SCREENS_EXPECTED_FROM_OPENS,
  PROOF_HABIT_FROM,
  PROOF_HABIT_FULL,
  PROOF_MIN_EVENTS,
  REPLAYED_TOKEN,
  SPOOFED_DEVICE,
  TAMPERED_APP,
  TIMEZONE_FAR,
  TIMEZONE_GAP_HOURS,
  TOKEN_LANGUAGE_MISMATCH,
  TOR,
  VPN,
} from './weights';
import { clamp, ramp, count, round3, type Contribution, type EvidenceInput } from './evidence';
import { attestationEvidence } from './attestation-evidence';

/**
 * Browsers that send `Sec-Fetch-*` on every navigation and form post, by family (as the user-agent
 * parser names it: Chrome on Android is `Chrome`, Samsung's is `Samsung Internet`) and first version.
 */
const SEC_FETCH_SINCE: Readonly<Record<string, number>> = {
  Chrome: 80,
  Edge: 80,
  Opera: 67,
  Firefox: 90,
  Safari: 17,
  'Mobile Safari': 17,
  'Samsung Internet': 13,
  'Chrome WebView': 80,
};
/**
 * Chromium browsers send `Sec-CH-UA` (on secure origins) since version 89; Samsung Internet only
 * since 23 (earlier releases, though Chromium, sent none).
 */
const CLIENT_HINTS_SINCE: Readonly<Record<string, number>> = {
  Chrome: 90,
  Edge: 90,
  Opera: 76,
  'Samsung Internet': 23,
};

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
  if (ip?.tor)
    out.push({ signal: 'proxy_ip', weight: TOR, detail: { kind: 'tor', asn: ip.asn?.number ?? null } });
  else if (ip?.hosting || ip?.vpn) {
    const vpn = Boolean(ip.vpn) && !ip.hosting;
    // A network the user habitually comes from (their own VPN) says little about this login.
    const weight = (vpn ? VPN : HOSTING) * (x.familiarAsn ? FAMILIAR_PROXY_SHARE : 1);
    out.push({
      signal: 'proxy_ip',
      weight,
      detail: {
        kind: vpn ? 'vpn' : 'hosting',
        asn: ip.asn?.number ?? null,
        organization: ip.asn?.organization ?? null,
        familiar: x.familiarAsn,
      },
    });
  }

  // A native app's verified token says what the client is: no user-agent rule calls it automated
  // (an app's HTTP stack names no browser, and its version is the app's business).
  const mobileToken = Boolean(x.client?.mobile && x.client.problem === null);
  if (!mobileToken) {
    if (x.ua.headless)
      out.push({ signal: 'headless_browser', weight: HEADLESS_BROWSER, detail: { browser: x.ua.browser } });
    else if (x.ua.bot && !x.ua.crawler)
      out.push({
        signal: 'bot_behavior',
        weight: BOT_BEHAVIOR,
        detail: { reason: 'automation_user_agent', client: x.ua.browser || x.ua.family },
      });
    else if (x.ua.app) out.push(...appClientEvidence(x));
    if (x.ua.crawler)
      out.push({ signal: 'web_crawler', weight: WEB_CRAWLER, detail: { user_agent: x.ua.family } });
  }
  if (x.event.context.userAgent === '')
    out.push({ signal: 'missing_headers', weight: MISSING_USER_AGENT, detail: { missing: 'user-agent' } });

  const claimsBrowser = !x.ua.bot && !x.ua.crawler && x.ua.browser !== '' && x.ua.browser !== 'Other';
  if (claimsBrowser) {
    // What this application forwards for this browser most of the time, and this request lacks.
    const habits = x.headers;
    const missing: string[] = [];
    let weight = 0;
    // Each missing group counts by how reliably this browser's logins carry it here (a browser the
    // application nearly always forwards it for, arriving without it, is rarely that browser).
    const lacks = (name: string, share: number | undefined) => {
      if (
        habits === null ||
        habits.events < MISSING_HEADERS_MIN_EVENTS ||
        share === undefined ||
        share < MISSING_HEADERS_FROM
      )
        return;
      missing.push(name);
      weight += clamp(
        Math.log(MISSING_IN_ATTACKS / Math.max(1e-9, 1 - share)),
        MISSING_HEADER_MIN,
        MISSING_HEADER_MAX,
      );
    };
    if (h['accept-language'] === undefined) lacks('accept-language', habits?.acceptLanguage);
    // Apps' HTTP stacks add Accept-Encoding on their own: one claiming to be the app's without it is another client.
    if (x.ua.app && h['accept-encoding'] === undefined) lacks('accept-encoding', habits?.acceptEncoding);
    if (sendsSecFetch(x.ua) && h['sec-fetch-mode'] === undefined) lacks('sec-fetch-*', habits?.secFetch);
    if (sendsClientHints(x.ua) && h['sec-ch-ua'] === undefined) lacks('sec-ch-ua', habits?.clientHints);
    if (missing.length)
      out.push({
        signal: 'missing_headers',
        weight: Math.min(MISSING_HEADER_MAX, weight),
        detail: { missing: missing.join(', ') },
      });

    const spoof = spoofReason(x);
    if (spoof) out.push({ signal: 'spoofed_device', weight: SPOOFED_DEVICE, detail: { reason: spoof } });
  }

  // Where the application's legitimate logins nearly all carry a client token, one without it did
  // not come through the application's page (or app): a script, or a client whose SDK did not load.
  // For an app, the habit is its release's: an old release from before the client never carries
  // one, and its users' logins are judged on their headers and history as that release's traffic.
  const fp = x.fingerprints;
  if (
    !x.features.fingerprinted &&
    !x.tokenlessHabit &&
    x.kind !== 'other' &&
    fp.events >= FINGERPRINT_HABIT_MIN_EVENTS &&
    fp.share >= FINGERPRINT_HABIT_FROM
  ) {
    out.push({
      signal: 'missing_fingerprint',
      weight: ramp(fp.share, FINGERPRINT_HABIT_FROM, FINGERPRINT_HABIT_FULL, MISSING_FINGERPRINT_MAX),
      detail: {
        expected_by: 'environment',
        share_with_fingerprint: Math.round(fp.share * 1000) / 1000,
        ...(fp.release
          ? { release: fp.release.name, release_events: Math.round(fp.release.events * 10) / 10 }
          : {}),
      },
    });
  }

  out.push(...clientEvidence(x));
  out.push(...mobileEvidence(x));
  out.push(...attestationEvidence(x));
  out.push(...proofEvidence(x));

  const missing = missingFields(x.event);
  if (missing) out.push({ signal: 'missing_fields', weight: 0, detail: missing });

  const mismatch = languageMismatch(x);
  if (mismatch) out.push(mismatch);

  if (x.disposableEmail) {
    out.push({
      signal: 'disposable_email',
      weight: x.kind === 'registration' ? DISPOSABLE_SIGNUP : DISPOSABLE,
      detail: { domain: x.features.emailDomain },
    });
  }
  return out;
}

/** A browser language rare among the legitimate events of the address's country, for an account without history. */
export function languageMismatch(x: EvidenceInput): Contribution | null {
  const l = x.language;
  if (!l || l.country < LANGUAGE_COUNTRY_MIN_EVENTS || !(x.unknownAccount || x.kind === 'registration'))
    return null;
  const inCountry =
    (Math.min(l.inCountry, l.country) + LANGUAGE_PRIOR * l.overall) / (l.country + LANGUAGE_PRIOR);
  const weight = Math.min(
    LANGUAGE_MISMATCH_MAX,
    Math.log(Math.max(l.overall, LANGUAGE_IN_ATTACKS_MIN) / Math.max(inCountry, 1e-6)),
  );
  if (weight < LANGUAGE_MISMATCH_FROM) return null;
  return {
    signal: 'language_country_mismatch',
    weight,
    detail: {
      language: x.features.values.lang,
      country: x.features.values.cc,
      share_in_country: Math.round(inCountry * 1000) / 1000,
    },
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
  if (c.problem === 'replayed')
    return [{ signal: 'replayed_token', weight: REPLAYED_TOKEN, detail: { reason: 'used_before' } }];
  // An expired token is as likely a page left open as a stolen one, and one from the future a
  // clock that is off (the phone's offset, a server's clock): weighed alike; a forged one is never honest.
  if (c.problem !== null)
    return [
      {
        signal: 'invalid_token',
        weight: c.problem === 'expired' || c.problem === 'not_yet_valid' ? EXPIRED_TOKEN : INVALID_TOKEN,
        detail: { reason: c.problem },
      },
    ];
  const out: Contribution[] = [];
  const kinds = new Set(c.automation.map((a) => AUTOMATION[a]));
  if (kinds.has('bot'))
    out.push({
      signal: 'bot_behavior',
      weight: BOT_BEHAVIOR,
      detail: {
        reason: 'browser_automation',
        evidence: c.automation.filter((a) => AUTOMATION[a] === 'bot').join(', '),
      },
    });
  if (kinds.has('headless'))
    out.push({
      signal: 'headless_browser',
      weight: HEADLESS_BROWSER,
      detail: {
        browser: x.ua.browser,
        evidence: c.automation.filter((a) => AUTOMATION[a] === 'headless').join(', '),
      },
    });
  if (kinds.has('tampered'))
    out.push({
      signal: 'spoofed_device',
      weight: SPOOFED_DEVICE,
      detail: {
        reason: 'tampered_browser',
        evidence: c.automation.filter((a) => AUTOMATION[a] === 'tampered').join(', '),
      },
    });
  if (c.userAgentMismatch)
    out.push({
      signal: 'spoofed_device',
      weight: SPOOFED_DEVICE,
      detail: { reason: 'token_user_agent_mismatch' },
    });
  // The same browser setting gives both: different means the headers or the token were swapped.
  if (c.languageMismatch)
    out.push({
      signal: 'spoofed_device',
      weight: TOKEN_LANGUAGE_MISMATCH,
      detail: { reason: 'token_language_mismatch' },
    });
  // A browser whose clock is set half a world away from its address: a proxy or a remote
  // machine, or a traveller whose laptop kept home time; evidence, never alone a deny.
  if (c.timezoneGapHours !== null && c.timezoneGapHours > TIMEZONE_GAP_HOURS)
    out.push({
      signal: 'spoofed_device',
      weight: TIMEZONE_FAR,
      detail: { reason: 'token_timezone_far_from_ip', hours: Math.round(c.timezoneGapHours) },
    });
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
      detail: {
        reason: 'unfamiliar_app_client',
        client: app.library,
        app: app.name,
        logins_with_password: count(ok),
        failed_logins: count(failed),
        expected,
      },
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
 * learns that habit): only from its second open within the week, since a fresh install's first
 * screens are still queued when its first request is judged (SCREENS_EXPECTED_FROM_OPENS).
 */
/** What each integrity finding weighs (emulator: hard; tampering: hard; a rooted or debugged phone: soft): EMULATOR, TAMPERED_APP, COMPROMISED. */

/** What a native app's token and its install say: the device's integrity, its activity, a platform swapped. */
function mobileEvidence(x: EvidenceInput): Contribution[] {
  const m = x.client?.mobile;
  if (!m || x.client?.problem !== null) return [];
  const out: Contribution[] = [];
  const of = (kind: string) => m.integrity.filter((i) => INTEGRITY[i] === kind);
  if (of('emulator').length)
    out.push({ signal: 'emulator', weight: EMULATOR, detail: { evidence: of('emulator').join(', ') } });
  if (of('tampered').length)
    out.push({
      signal: 'spoofed_device',
      weight: TAMPERED_APP,
      detail: { reason: 'tampered_app', evidence: of('tampered').join(', ') },
    });
  if (of('compromised').length)
    out.push({
      signal: 'compromised_device',
      weight: COMPROMISED * Math.min(COMPROMISED_MAX_FINDINGS, of('compromised').length),
      detail: { evidence: of('compromised').join(', ') },
    });
  if (m.platformMismatch)
    out.push({
      signal: 'spoofed_device',
      weight: SPOOFED_DEVICE,
      detail: { reason: 'token_platform_mismatch' },
    });
  const h = m.habit;
  const a = m.activity;
  if (h.events >= ACTIVITY_MIN_EVENTS && x.kind !== 'other') {
    if ((a === null || a.installs + a.opens === 0) && h.announced >= ACTIVITY_HABIT_FROM) {
      out.push({
        signal: 'no_app_activity',
        weight: ramp(h.announced, ACTIVITY_HABIT_FROM, ACTIVITY_HABIT_FULL, NO_ACTIVITY_MAX),
        detail: { opened: false, screens: 0, usual_share_opened: Math.round(h.announced * 1000) / 1000 },
      });
    } else if (
      a !== null &&
      a.opens >= SCREENS_EXPECTED_FROM_OPENS &&
      a.screens === 0 &&
      h.screens >= ACTIVITY_HABIT_FROM
    ) {
      out.push({
        signal: 'no_app_activity',
        weight: ramp(h.screens, ACTIVITY_HABIT_FROM, ACTIVITY_HABIT_FULL, NO_SCREENS_MAX),
        detail: { opened: true, screens: 0, usual_share_with_screens: Math.round(h.screens * 1000) / 1000 },
      });
    }
  }
  // One install, many accounts over the week (identified in the app or named by verdicts): a farm,
  // or one phone opening account after account whatever it wipes in between.
  const accounts = ramp(m.accounts, DEVICE_ACCOUNTS.from, DEVICE_ACCOUNTS.to, DEVICE_ACCOUNTS.max);
  if (accounts > 0)
    out.push({
      signal: 'multiple_accounts_per_device',
      weight: accounts,
      detail: { by: 'install', accounts: m.accounts, window_days: 7 },
    });
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
  if (
    /^(?:linux|[kxl]?ubuntu|debian|fedora|mint|arch|gentoo|suse|opensuse|centos|red ?hat|manjaro|raspbian|elementary os|deepin)$/.test(
      p,
    )
  )
    return 'linux';
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
  if (!c || !p || c.problem !== null || c.mobile) return [];
  // One browser profile whose pages named many accounts over the week (castle-js's page, form and
  // custom events, for the user the page names): weighed as an install's accounts are.
  const accounts = ramp(p.accounts ?? 0, DEVICE_ACCOUNTS.from, DEVICE_ACCOUNTS.to, DEVICE_ACCOUNTS.max);
  const byPage: Contribution[] =
    accounts > 0
      ? [
          {
            signal: 'multiple_accounts_per_device',
            weight: accounts,
            detail: { by: 'browser_events', accounts: p.accounts ?? 0, window_days: 7 },
          },
        ]
      : [];
  return [...byPage, ...proofHabitEvidence(x, c, p)];
}

/** `unproven_client` (above). */
function proofHabitEvidence(
  x: EvidenceInput,
  c: NonNullable<EvidenceInput['client']>,
  p: NonNullable<NonNullable<EvidenceInput['client']>['proof']>,
): Contribution[] {
  if (x.kind === 'other') return [];
  const h = p.habit;
  const b = p.behaviour;
  if (p.bits === null && h.events >= PROOF_MIN_EVENTS && h.proved >= PROOF_HABIT_FROM) {
    return [
      {
        signal: 'unproven_client',
        weight: ramp(h.proved, PROOF_HABIT_FROM, PROOF_HABIT_FULL, NO_PROOF_MAX),
        detail: {
          reason: 'no_proof_of_work',
          expected_by: 'environment',
          share_with_proof: round3(h.proved),
          behaviour: b ? 'reported' : 'absent',
        },
      },
    ];
  }
  if (b && !b.ahead && !interacted(b) && h.reported >= PROOF_MIN_EVENTS && h.interacted >= PROOF_HABIT_FROM) {
    return [
      {
        signal: 'unproven_client',
        weight: ramp(h.interacted, PROOF_HABIT_FROM, PROOF_HABIT_FULL, NO_INPUT_MAX),
        detail: {
          reason: 'no_user_input',
          expected_by: 'environment',
          share_with_input: round3(h.interacted),
          time_on_page_ms: b.elapsedMs,
          keys: b.keys,
          pointer: b.pointer,
          pastes: b.pastes,
          inputs: b.inputs,
          password: b.password,
        },
      },
    ];
  }
  return [];
}

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
    if (claimed && os && claimed !== os && !(claimed === 'linux' && os === 'android'))
      return 'client_hints_platform_mismatch';
  }
  // Only Chromium sends client hints: not Firefox, not Safari, and no browser on iOS (all WebKit).
  const chUa = h['sec-ch-ua'];
  if (
    typeof chUa === 'string' &&
    (onIos(x.ua) || (/firefox|safari/i.test(x.ua.browser) && !/chrom/i.test(x.ua.browser)))
  )
    return 'client_hints_from_non_chromium';
  const device = x.event.testToken?.device;
  if (device && x.ua.browser) {
    const [browser] = device.split('_on_');
    if (browser && x.ua.browser !== 'Other' && !x.ua.browser.toLowerCase().includes(browser))
      return 'fingerprint_user_agent_mismatch';
  }
  return null;
}
