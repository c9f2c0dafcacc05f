/**
 * The registration's `mobile` object, built from what the platform reports (docs/mobile.md §1),
 * and the user agent the library describes the app with. Every value is cut to the protocol's
 * bounds here, and anything out of range is left out, because the collector refuses the whole
 * registration (422) for one oversized member, and a phone with a long model name must not
 * lose its session for it.
 *
 * Privacy: the raw vendor id (ANDROID_ID / identifierForVendor) is hashed with the app's id
 * before it is sent; it is sent as it is only with device-ID forwarding on.
 */
import { sha256Hex } from './crypto';
import type { DeviceInfo } from './platform';
import {
  INTEGRITY_CHECKS,
  LIMITS,
  type Attestation,
  type IntegrityCheck,
  type MobileComponents,
} from './wire';

const cut = (s: string | undefined | null, max: number): string | undefined =>
  typeof s === 'string' && s.length > 0 ? s.slice(0, max) : undefined;
const inRange = (n: unknown, min: number, max: number): n is number =>
  typeof n === 'number' && Number.isFinite(n) && n >= min && n <= max;

export interface ComponentOptions {
  installId: string;
  /** `rampart-react-native/<version>`. */
  sdk: string;
  userAgent: string;
  forwardDeviceId: boolean;
  attestation: Attestation | null;
}

export function buildComponents(info: DeviceInfo, o: ComponentOptions): MobileComponents {
  const m: MobileComponents = {
    platform: info.platform,
    osVersion: cut(info.osVersion, LIMITS.osVersionLength) ?? 'unknown',
    model: cut(info.model, LIMITS.modelLength) ?? 'unknown',
    app: { id: info.app.id, version: cut(info.app.version, LIMITS.appVersionLength) ?? '0' },
    sdk: o.sdk.slice(0, LIMITS.sdkLength),
    installId: o.installId,
  };
  const manufacturer = cut(info.manufacturer, LIMITS.manufacturerLength);
  if (manufacturer) m.manufacturer = manufacturer;
  const build = cut(info.app.build, LIMITS.appVersionLength);
  if (build) m.app.build = build;
  const locale = cut(info.locale, LIMITS.localeLength);
  if (locale) m.locale = locale;
  const timezone = cut(info.timezone, LIMITS.timezoneLength);
  if (timezone) m.timezone = timezone;
  if (inRange(info.timezoneOffset, -900, 900)) m.timezoneOffset = Math.round(info.timezoneOffset);
  const s = info.screen;
  if (s && inRange(s.width, 0, 100_000) && inRange(s.height, 0, 100_000) && inRange(s.scale, 0, 10))
    m.screen = { width: s.width, height: s.height, scale: s.scale };
  if (typeof info.vendorId === 'string' && info.vendorId.length > 0) {
    m.vendorId = sha256Hex(`${info.app.id}:${info.vendorId}`);
    if (o.forwardDeviceId) m.deviceId = info.vendorId.slice(0, LIMITS.deviceIdLength);
  }
  m.userAgent = o.userAgent.slice(0, LIMITS.userAgentLength);
  const known: readonly string[] = INTEGRITY_CHECKS;
  const integrity = [...new Set(info.integrity)]
    .filter((c): c is IntegrityCheck => known.includes(c))
    .slice(0, LIMITS.integrityChecks);
  if (integrity.length > 0) m.integrity = integrity;
  const a = o.attestation;
  if (
    a &&
    (a.kind === 'play_integrity' || a.kind === 'app_attest') &&
    typeof a.token === 'string' &&
    a.token.length > 0 &&
    a.token.length <= LIMITS.attestationTokenLength
  ) {
    m.attestation = { kind: a.kind, token: a.token };
  }
  return m;
}

/** Printable ASCII only, without the characters that would split a product token. */
const token = (s: string): string => s.replace(/[^\x21-\x7e]|[/()";]/g, '');
const comment = (s: string): string => s.replace(/[^\x20-\x7e]|[()";]/g, '').trim();

/**
 * `<AppName>/<version> (<build>; <model>; <OS> <osVersion>) <sdk>`, the same for every request
 * of the app, safe as an HTTP header value (ASCII, no parentheses inside the comment).
 */
export function buildUserAgent(info: DeviceInfo, sdk: string): string {
  // Each part cut as its own field is in the registration.
  const name = (token(info.app.name) || token(info.app.id) || 'App').slice(0, 150);
  const version = (token(info.app.version) || '0').slice(0, LIMITS.appVersionLength);
  const build = (comment(info.app.build ?? '') || version).slice(0, LIMITS.appVersionLength);
  const model = (comment(info.model) || 'unknown').slice(0, LIMITS.modelLength);
  const os = info.platform === 'ios' ? 'iOS' : 'Android';
  return `${name}/${version} (${build}; ${model}; ${os} ${comment(info.osVersion).slice(0, LIMITS.osVersionLength)}) ${sdk}`.slice(
    0,
    LIMITS.userAgentLength,
  );
}
