/**
 * The signals the risk engine can raise (policies match on these names; Castle's SDKs read the
 * keys of `signals`), and the risk levels of docs/decisions.md. The engine itself is model.ts.
 */
import type { RiskLevel } from '../model';
import { RISK_HIGH, RISK_MEDIUM } from './weights';

/** Every signal name, with what it means. Each fired signal's detail object says why, and `score` its weight in log-odds. */
export const SIGNAL_DESCRIPTIONS: Readonly<Record<string, string>> = {
  bot_behavior: 'an automation client (HTTP library, command-line tool) rather than a browser',
  headless_browser: 'a headless or remote-controlled browser',
  web_crawler: 'a search engine or preview crawler',
  spoofed_device: 'client hints or the device contradict the user agent',
  missing_headers: 'headers this browser sends (and this application forwards) are missing',
  proxy_ip: 'a data centre, VPN or Tor address (kind in the detail)',
  disposable_email: 'a throw-away e-mail domain',
  new_email_domain: 'an e-mail domain no legitimate user of the environment has',
  multiple_accounts_per_device: 'one fingerprinted device used for several accounts within the hour',
  credential_stuffing: 'failed logins across accounts from one address, network or request shape',
  high_activity_ip: 'many accounts tried from one address within the hour',
  request_shape_burst: 'the same client and header set across many accounts, far above its usual share',
  high_activity_network:
    'many accounts tried through one network operator within the hour, far above its usual share of the traffic, most of them unsuccessful',
  attack_wave: 'attempts on unknown accounts or failures across the environment far above their usual rate',
  unknown_account:
    'a login or pre-auth check for an account Rampart does not know, where nearly every attempt names one it knows',
  registration_velocity:
    'several registrations from one address, device, machine or e-mail domain, or across the environment far above their usual rate (weighed by how much the sign-up resembles the wave)',
  hostile_context: 'an address, network or device already used in failed attempts on this account',
  impossible_travel: 'too far from where the user last really was, too soon',
  new_country: 'a country the user has not logged in from',
  new_isp: 'a network operator the user has not logged in from',
  new_device: 'a device or software the user has not used',
  unusual_network_for_device:
    'this device (OS and browser) on an operator or network it has not used, though the user has',
  missing_fingerprint:
    'no device fingerprint where the user always had one, or where nearly every legitimate login of the environment has one',
  unusual_place:
    'an address its operator places in a city (else region) where it has not placed the user, on an operator the user uses',
  unusual_language: 'a browser language the user does not use',
  language_country_mismatch:
    "for an account without history, a browser language rare among the environment's legitimate logins from the address's country",
  unusual_hour: 'an hour of the day the user is not usually active',
  emulator: "a mobile token whose device's own checks found an emulator",
  compromised_device: 'a mobile token whose device is rooted, jailbroken, debugged or allows mock locations',
  no_app_activity:
    "a mobile token from an install that never announced itself or showed a screen, where the environment's legitimate installs nearly always do",
  unproven_client:
    "a browser token without the page's proof of work, or asked for by a page no person touched, where nearly every legitimate login of the environment has them (reason in the detail)",
  replayed_token:
    'a client token already used: more than three calls, past a minute, or from another address',
  invalid_token:
    'a client token that does not verify: forged, altered, expired or issued for another environment',
  stale_timestamp:
    'a verdict asked about an event older than the bound for verdicts (default 365 days): scored as happening now, teaching the profile nothing',
  in_list:
    "a value of the event (address or network, e-mail, domain, user, ASN, country, device, machine, request shape) is in one of the environment's lists: the detail names the list and the item (the first of several; `list_ids` names them all); raises nothing by itself, policies decide",
  missing_fields:
    'fields the event should carry were not sent (named in `missing`): it was scored on less evidence; raises nothing by itself',
};
export const SIGNAL_NAMES = Object.keys(SIGNAL_DESCRIPTIONS);

/** Levels: low < 0.6 ≤ medium < 0.9 ≤ high. */
export function riskLevel(risk: number): RiskLevel {
  if (risk >= RISK_HIGH) return 'high';
  if (risk >= RISK_MEDIUM) return 'medium';
  return 'low';
}
