/**
 * What a native app (or @rampart/react-native) sends the collector when it registers a session:
 * the device, the app, and what the device's own integrity checks found (docs/mobile.md). Strict:
 * an unknown member, a wrong type or an oversized value is named in a 422, since a native client
 * is written against the documented protocol and should hear at once when it strays from it.
 *
 * The device key: on Android the hashed vendor id (`ANDROID_ID`, which survives a reinstall and
 * a wipe of the app's data), on iOS the install id (kept in the Keychain, which survives a
 * reinstall, while `identifierForVendor` changes when the vendor's last app is removed). So a
 * reinstall, or a phone whose app data is wiped before every sign-up, stays one device. The
 * machine key hashes the hardware and OS description: identical phones share it, as emulator
 * images of one farm do.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { invalidParameters } from './problems';
import { timezoneOffsetSchema } from './components';
import type { ParsedUserAgent } from '../intel/types';
import type { MobileClient } from '../model';
import type { AttestationClaim } from './attestation/verifier';

/** What each integrity finding means to the engine. */
export const INTEGRITY: Readonly<Record<string, 'emulator' | 'compromised' | 'tampered'>> = {
  emulator: 'emulator', // an emulator or simulator, not a phone
  rooted: 'compromised', // Android: su, Magisk, test-keys build
  jailbroken: 'compromised', // iOS: Cydia, writable system paths, sandbox escapes
  debugger: 'compromised', // a debugger attached to the app
  mock_location: 'compromised', // Android: mock locations allowed
  hooking_framework: 'tampered', // Frida, Xposed, Substrate loaded in the process
  app_tampered: 'tampered', // the app's signature or bundle is not the one the store shipped
};

export const ATTESTATION_KINDS = ['play_integrity', 'app_attest'] as const;
export type MobilePlatform = 'android' | 'ios';

/** The collector's `mobile` object, validated. */
export interface MobileComponents {
  platform: MobilePlatform;
  osVersion: string;
  model: string;
  manufacturer: string | null;
  app: { id: string; version: string; build: string | null };
  sdk: string | null;
  locale: string | null;
  timezone: string | null;
  timezoneOffset: number | null;
  screen: { width: number; height: number; scale: number } | null;
  installId: string;
  vendorId: string | null;
  deviceId: string | null;
  userAgent: string | null;
  integrity: string[];
  attestation: AttestationClaim | null;
}

const text = (max: number) =>
  z
    .string({
      required_error: 'is required',
      invalid_type_error: `must be a string of at most ${max} characters`,
    })
    .max(max, `must be a string of at most ${max} characters`);
const dimension = (max: number) =>
  z
    .number({ invalid_type_error: `must be a number between 0 and ${max}` })
    .finite()
    .min(0, `must be a number between 0 and ${max}`)
    .max(max, `must be a number between 0 and ${max}`);
const integrityNames = Object.keys(INTEGRITY) as [string, ...string[]];
/** A package name or bundle identifier. */
export const APP_ID = /^[A-Za-z0-9._-]{1,150}$/;

const base64 = (max: number) =>
  z
    .string({ invalid_type_error: 'must be a base64 string' })
    .min(1, 'must not be empty')
    .max(max, `must be at most ${max} characters`)
    .regex(/^[A-Za-z0-9+/_-]+={0,2}$/, 'must be base64');

/**
 * A platform attestation (docs/mobile.md, "Attestation"): with the challenge it was made over,
 * App Attest's key id and its attestation object (the key's first registration) or an assertion
 * (later ones), or Play Integrity's verdict token. Without a challenge, a token is kept as
 * carried, and verified by nothing.
 */
export const attestationSchema = z
  .object(
    {
      kind: z.enum(ATTESTATION_KINDS, {
        errorMap: () => ({ message: `must be one of ${ATTESTATION_KINDS.join(', ')}` }),
      }),
      challenge: z
        .string({ invalid_type_error: 'must be a string' })
        .min(1, 'must not be empty')
        .max(512, 'must be at most 512 characters')
        .optional(),
      token: z
        .string({ invalid_type_error: 'must be a string' })
        .min(1, 'must not be empty')
        .max(16_384, 'must be at most 16384 characters')
        .optional(),
      keyId: base64(64).optional(),
      object: base64(16_384).optional(),
      assertion: base64(2_048).optional(),
    },
    { invalid_type_error: 'must be {kind, challenge, …}' },
  )
  .strict()
  .superRefine((a, ctx) => {
    const problem = (path: string, message: string) =>
      ctx.addIssue({ code: z.ZodIssueCode.custom, path: [path], message });
    if (a.challenge === undefined) {
      if (a.token === undefined) problem('token', 'is required (or a challenge and what was made over it)');
      for (const m of ['keyId', 'object', 'assertion'] as const)
        if (a[m] !== undefined) problem(m, 'comes with a challenge (POST /v1/client/challenge)');
      return;
    }
    if (a.kind === 'play_integrity') {
      if (a.token === undefined) problem('token', 'is required: the Play Integrity verdict token');
      for (const m of ['keyId', 'object', 'assertion'] as const)
        if (a[m] !== undefined) problem(m, "is App Attest's, not Play Integrity's");
      return;
    }
    if (a.keyId === undefined) problem('keyId', 'is required: the App Attest key id');
    if ((a.object === undefined) === (a.assertion === undefined))
      problem(
        a.object === undefined ? 'object' : 'assertion',
        'send the attestation object (a new key) or an assertion (an attested key), one of them',
      );
    if (a.token !== undefined) problem('token', "is Play Integrity's, not App Attest's");
  });

/** The `mobile` object of POST /v1/client/token (also the OpenAPI document's). */
export const mobileSchema = z
  .object(
    {
      platform: z.enum(['android', 'ios'], { errorMap: () => ({ message: 'must be "android" or "ios"' }) }),
      osVersion: text(32),
      model: text(64),
      manufacturer: text(64).nullish(),
      app: z
        .object(
          {
            id: z
              .string({
                required_error: 'is required',
                invalid_type_error: 'must be a package name or bundle id',
              })
              .regex(APP_ID, 'must be 1 to 150 letters, digits, ".", "_" or "-"'),
            version: text(32),
            build: text(32).nullish(),
          },
          { required_error: 'is required', invalid_type_error: 'must be an object' },
        )
        .strict(),
      sdk: text(64).nullish(),
      locale: text(35).nullish(),
      timezone: text(64).nullish(),
      timezoneOffset: timezoneOffsetSchema,
      screen: z
        .object(
          { width: dimension(100_000), height: dimension(100_000), scale: dimension(10) },
          { invalid_type_error: 'must be {width, height, scale}' },
        )
        .strict()
        .nullish(),
      installId: z
        .string({ required_error: 'is required', invalid_type_error: 'must be a string' })
        .regex(/^[A-Za-z0-9_-]{16,64}$/, 'must be 16 to 64 letters, digits, - or _'),
      vendorId: z
        .string({ invalid_type_error: 'must be a string' })
        .regex(/^[0-9a-f]{64}$/, 'must be 64 lower-case hex digits (SHA-256)')
        .nullish(),
      deviceId: text(64).nullish(),
      userAgent: text(512).nullish(),
      integrity: z
        .array(
          z.enum(integrityNames, {
            errorMap: () => ({ message: `unknown values (known: ${integrityNames.join(', ')})` }),
          }),
          { invalid_type_error: 'must be a list' },
        )
        .max(16, 'must be a list of at most 16 values')
        .nullish(),
      attestation: attestationSchema.nullish(),
    },
    { required_error: 'is required', invalid_type_error: 'must be an object' },
  )
  .strict();

/** Validate the collector's `mobile` object; throws InvalidParameters naming each problem. */
export function readMobileComponents(value: unknown): MobileComponents {
  const r = mobileSchema.safeParse(value);
  // Named by its member (`mobile.app.id`), a list's problem by the list (`mobile.integrity`).
  if (!r.success)
    throw invalidParameters(r.error.issues, { prefix: 'mobile', depth: () => 2, indexes: false });
  const m = r.data;
  return {
    platform: m.platform,
    osVersion: m.osVersion,
    model: m.model,
    manufacturer: m.manufacturer ?? null,
    app: { id: m.app.id, version: m.app.version, build: m.app.build ?? null },
    sdk: m.sdk ?? null,
    locale: m.locale ?? null,
    timezone: m.timezone ?? null,
    timezoneOffset: m.timezoneOffset ?? null,
    screen: m.screen ?? null,
    installId: m.installId,
    vendorId: m.vendorId ?? null,
    deviceId: m.deviceId ?? null,
    userAgent: m.userAgent ?? null,
    integrity: [...new Set(m.integrity ?? [])].sort(),
    attestation: m.attestation
      ? {
          kind: m.attestation.kind,
          challenge: m.attestation.challenge ?? null,
          token: m.attestation.token ?? null,
          keyId: m.attestation.keyId ?? null,
          object: m.attestation.object ?? null,
          assertion: m.attestation.assertion ?? null,
        }
      : null,
  };
}

const key = (text: string) => createHash('sha256').update(text).digest('base64url').slice(0, 22);

/**
 * The device key of a phone (see the module comment): Android's hashed vendor id, which a
 * reinstall or a wipe of the app's data keeps; else the install id (iOS's survives a reinstall in
 * the Keychain); for an emulator, its machine. Prefixed so that it never equals a browser's.
 */
export function mobileDeviceKey(
  m: Pick<
    MobileComponents,
    'platform' | 'vendorId' | 'installId' | 'osVersion' | 'model' | 'manufacturer' | 'screen' | 'integrity'
  >,
): string {
  // An emulator has no hardware of its own: its vendor and install ids are whatever the farm's
  // tool sets for each account. Every instance of one image is one device, its machine.
  if (m.integrity.includes('emulator')) return `m${key(`emulator:${mobileMachineKey(m)}`)}`;
  if (m.platform === 'android' && m.vendorId) return `m${key(`android:vendor:${m.vendorId}`)}`;
  return `m${key(`${m.platform}:install:${m.installId}`)}`;
}

/** A hash of the phone's hardware and OS as reported (identical phones, and one farm's emulator images, share it). */
export function mobileMachineKey(
  m: Pick<MobileComponents, 'platform' | 'osVersion' | 'model' | 'manufacturer' | 'screen'>,
): string {
  const s = m.screen;
  return `mm${key(JSON.stringify([m.platform, m.manufacturer ?? '', m.model, m.osVersion.split('.')[0] ?? '', s?.width ?? 0, s?.height ?? 0, s?.scale ?? 0]))}`;
}

/** A platform as user agents name it. */
const platformName = (platform: MobilePlatform): string => (platform === 'android' ? 'Android' : 'iOS');

/** The OS as the registry shows it: `Android 14`, `iOS 17.5`. */
export const mobileOs = (platform: MobilePlatform, version: string): string =>
  `${platformName(platform)} ${version}`.trim();

/** The primary language of a locale (`en-GB` → `en`), or null. */
export function localeLanguage(locale: string | null): string | null {
  const tag = locale ? locale.trim().toLowerCase().split(/[-_]/)[0] : '';
  return tag && /^[a-z]{2,8}$/.test(tag) ? tag : null;
}

/**
 * The user agent as a native app's token completes it: the OS, the device and its type from the
 * session where the forwarded user agent (often just `okhttp/4.12.0`) does not say, so that the
 * device registry shows the phone and the model's software levels see its OS. What the user agent
 * itself says is kept.
 */
export function withMobileDevice(ua: ParsedUserAgent, m: MobileClient): ParsedUserAgent {
  const os = ua.os === 'Other' || ua.os === '' ? m.os : ua.os;
  const platform = ua.platform === 'Other' || ua.platform === '' ? platformName(m.platform) : ua.platform;
  const device =
    ua.device === 'Unknown' || ua.device === '' ? `${m.manufacturer ?? ''} ${m.model}`.trim() : ua.device;
  const type = ua.type === 'other' ? (/ipad|tablet/i.test(m.model) ? 'tablet' : 'mobile') : ua.type;
  return { ...ua, os, platform, device, type, mobile: type === 'mobile' || type === 'tablet' };
}

/** What the device registry shows of a phone (the device's `context.properties`). */
export function mobileProperties(m: MobileClient): Record<string, string> {
  const p: Record<string, string> = {
    platform: m.platform,
    model: m.model,
    os: m.os,
    app_id: m.app.id,
    app_version: m.app.version,
  };
  if (m.manufacturer) p.manufacturer = m.manufacturer;
  if (m.app.build) p.app_build = m.app.build;
  if (m.deviceId) p.device_id = m.deviceId;
  if (m.attestation) p.attestation = m.attestation;
  if (m.attested)
    p.attestation_status =
      m.attested.status === 'failed' ? `failed: ${m.attested.reason}` : m.attested.status;
  if (m.integrity.length) p.integrity = m.integrity.join(', ');
  return p;
}
