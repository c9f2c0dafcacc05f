/**
 * First-cut signals and their combination into a risk in [0, 1]. Each rule is deliberately
 * simple and explainable: its detail object says why it fired. Later work deepens the rules; the
 * inputs are gathered by the verdict use case so that this module stays pure.
 */
import type { IpIntel, ParsedUserAgent } from '../../intel';
import { distanceKm, isDisposableEmail } from '../../intel';
import type { Device, EventInput, RiskLevel, Signals, UserProfile } from '../model';

export const SIGNAL_WEIGHTS: Readonly<Record<string, number>> = {
  bot_behavior: 0.8,
  headless_browser: 0.7,
  web_crawler: 0.6,
  spoofed_device: 0.6,
  credential_stuffing: 0.75,
  impossible_travel: 0.6,
  proxy_ip: 0.4,
  multiple_accounts_per_device: 0.45,
  disposable_email: 0.55,
  high_activity_ip: 0.4,
  new_country: 0.35,
  new_device: 0.25,
  missing_headers: 0.3,
  failed_challenge: 0.35,
};
export const SIGNAL_NAMES = Object.keys(SIGNAL_WEIGHTS);

/** Thresholds of the velocity rules. */
export const THRESHOLDS = {
  multipleAccounts: 3,
  highActivityPerHour: 60,
  credentialStuffingUsersPerHour: 5,
  impossibleTravelKmh: 900,
  impossibleTravelMinKm: 500,
  baseRisk: 0.05,
  approvedDeviceFactor: 0.3,
};

export interface SignalInput {
  event: EventInput;
  ip: IpIntel | null;
  ua: ParsedUserAgent;
  user: UserProfile | null;
  /** The device this event comes from, if the user already has it. */
  device: Device | null;
  /** How many devices the user has (0 for an unknown user). */
  userDeviceCount: number;
  /** Distinct accounts seen with this fingerprint, including this event's user. */
  accountsOnFingerprint: number;
  eventsFromIpLastHour: number;
  failedLoginUsersFromIpLastHour: number;
  failedChallenges: number;
}

/** Compute the signals that fire for one event. */
export function computeSignals(x: SignalInput): Signals {
  const s: Signals = {};
  const h = x.event.context.headers;
  const hasHeaders = Object.keys(h).length > 0;

  if (x.ua.bot) s.bot_behavior = { reason: 'automation_user_agent' };
  else if (x.eventsFromIpLastHour >= THRESHOLDS.highActivityPerHour * 5) s.bot_behavior = { reason: 'request_rate', events_last_hour: x.eventsFromIpLastHour };
  if (x.ua.headless) s.headless_browser = { browser: x.ua.browser };
  if (x.ua.crawler) s.web_crawler = { user_agent: x.ua.family };

  const claimsBrowser = !x.ua.bot && !x.ua.crawler && x.ua.browser !== '' && x.ua.browser !== 'Other';
  if (x.event.context.userAgent === '') s.missing_headers = { missing: 'user-agent' };
  else if (hasHeaders && claimsBrowser && h['accept-language'] === undefined && h.accept === undefined) {
    s.missing_headers = { missing: 'accept, accept-language' };
  }

  const spoof = spoofReason(x);
  if (spoof) s.spoofed_device = { reason: spoof };

  if (x.ip && (x.ip.hosting || x.ip.tor)) {
    s.proxy_ip = { kind: x.ip.tor ? 'tor' : 'hosting', asn: x.ip.asn?.number ?? null, organization: x.ip.asn?.organization ?? null };
  }
  if (x.event.email && isDisposableEmail(x.event.email)) s.disposable_email = { domain: x.event.email.split('@').pop() ?? '' };
  if (x.accountsOnFingerprint >= THRESHOLDS.multipleAccounts) s.multiple_accounts_per_device = { accounts: x.accountsOnFingerprint };
  if (x.eventsFromIpLastHour >= THRESHOLDS.highActivityPerHour) s.high_activity_ip = { events_last_hour: x.eventsFromIpLastHour };
  if (x.failedLoginUsersFromIpLastHour >= THRESHOLDS.credentialStuffingUsersPerHour) {
    s.credential_stuffing = { accounts_failed_last_hour: x.failedLoginUsersFromIpLastHour };
  }
  if (x.failedChallenges > 0) s.failed_challenge = { count: x.failedChallenges };

  if (x.event.userId && x.user) {
    if (!x.device && x.userDeviceCount > 0) s.new_device = { known_devices: x.userDeviceCount };
    const country = x.ip?.location?.country_code ?? null;
    if (country && x.user.countries.length > 0 && !x.user.countries.includes(country)) s.new_country = { country };
    const loc = x.ip?.location;
    const last = x.user.lastLocation;
    if (loc && loc.lat !== null && loc.lon !== null && last) {
      const km = distanceKm(last, { lat: loc.lat, lon: loc.lon });
      const hours = Math.max((x.event.occurredAt.getTime() - last.at.getTime()) / 3_600_000, 1 / 60);
      if (km >= THRESHOLDS.impossibleTravelMinKm && km / hours > THRESHOLDS.impossibleTravelKmh) {
        s.impossible_travel = { km: Math.round(km), hours: Math.round(hours * 100) / 100 };
      }
    }
  }
  return s;
}

function spoofReason(x: SignalInput): string | null {
  const h = x.event.context.headers;
  const chMobile = h['sec-ch-ua-mobile'];
  if (typeof chMobile === 'string' && x.event.context.userAgent) {
    if (chMobile.trim() === '?0' && x.ua.mobile) return 'client_hints_mobile_mismatch';
    if (chMobile.trim() === '?1' && x.ua.type === 'desktop') return 'client_hints_mobile_mismatch';
  }
  const chPlatform = h['sec-ch-ua-platform'];
  if (typeof chPlatform === 'string' && x.ua.platform) {
    const claimed = chPlatform.replace(/"/g, '').toLowerCase();
    const os = x.ua.platform.toLowerCase();
    const family = (p: string) => (p.includes('mac') ? 'mac' : p.includes('win') ? 'windows' : p.includes('android') ? 'android' : p.includes('ios') ? 'ios' : p.includes('linux') || p.includes('ubuntu') ? 'linux' : p);
    if (claimed && family(claimed) !== family(os) && !(family(claimed) === 'linux' && family(os) === 'android')) return 'client_hints_platform_mismatch';
  }
  const device = x.event.testToken?.device;
  if (device && x.ua.browser) {
    const [browser] = device.split('_on_');
    if (browser && x.ua.browser !== 'Other' && !x.ua.browser.toLowerCase().includes(browser)) return 'fingerprint_user_agent_mismatch';
  }
  return null;
}

/** Combine fired signals into a risk in [0, 1]; feedback on the device dominates. */
export function combineRisk(signals: Signals, device: Device | null): number {
  if (device?.feedback === 'reported') return 1;
  let keep = 1 - THRESHOLDS.baseRisk;
  for (const name of Object.keys(signals)) keep *= 1 - (SIGNAL_WEIGHTS[name] ?? 0.2);
  let risk = 1 - keep;
  if (device?.feedback === 'approved') risk *= THRESHOLDS.approvedDeviceFactor;
  return Math.round(Math.min(1, Math.max(0, risk)) * 10000) / 10000;
}

/** Levels: low < 0.6 ≤ medium < 0.9 ≤ high. */
export function riskLevel(risk: number): RiskLevel {
  if (risk >= 0.9) return 'high';
  if (risk >= 0.6) return 'medium';
  return 'low';
}
