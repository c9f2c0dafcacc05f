/**
 * The mobile wire protocol (docs/mobile.md) as @rampart/react-native speaks it: the session
 * registration at `POST /v1/client/token`, the request token minted on the device, and the app
 * events at `POST /v1/client/events`. Self-contained (no imports, and none from src/core) so that
 * the package ships alone; the server validates the same shapes on its side.
 */

export type MobilePlatform = 'android' | 'ios';

/** What the device's own checks can report (docs/mobile.md, `integrity`). */
export const INTEGRITY_CHECKS = [
  'emulator',
  'rooted',
  'jailbroken',
  'debugger',
  'hooking_framework',
  'app_tampered',
  'mock_location',
] as const;
export type IntegrityCheck = (typeof INTEGRITY_CHECKS)[number];

export type AttestationKind = 'play_integrity' | 'app_attest';
export interface Attestation {
  kind: AttestationKind;
  /** At most 16,384 characters; carried as evidence, not verified by Rampart. */
  token: string;
}

/** The `mobile` object of the registration. Every member is documented; the server refuses any other. */
export interface MobileComponents {
  platform: MobilePlatform;
  osVersion: string;
  model: string;
  manufacturer?: string;
  app: { id: string; version: string; build?: string };
  sdk?: string;
  locale?: string;
  timezone?: string;
  /** Minutes, as `Date.prototype.getTimezoneOffset()` (UTC minus local), −900…900. */
  timezoneOffset?: number;
  screen?: { width: number; height: number; scale: number };
  /** Random, 16–64 of `A-Z a-z 0-9 _ -`, generated once and kept in secure storage. */
  installId: string;
  /** SHA-256 hex of `<app.id>:<vendor id>`: the raw vendor id never leaves the device unless forwarding is on. */
  vendorId?: string;
  /** The raw vendor id, sent only with device-ID forwarding on. */
  deviceId?: string | null;
  userAgent?: string;
  integrity?: IntegrityCheck[];
  attestation?: Attestation;
}

export interface RegisterRequest {
  publishable_key: string;
  mobile: MobileComponents;
}

/** The collector's answer (201). */
export interface RegisterResponse {
  /** A browser-style request token (`rpt1.…`), usable at once; this library mints its own instead. */
  token: string;
  expires_in: number;
  /** `rps1.<claims>.<mac>`: opaque to the app. */
  session: string;
  /** The HMAC key for the tokens minted from this session (43 base64url characters). */
  session_key: string;
  /** Seconds from `server_time`. */
  session_expires_in: number;
  /** Rampart's clock, milliseconds since the epoch. */
  server_time: number;
}

export const SESSION_PREFIX = 'rps1.';
export const MOBILE_TOKEN_PREFIX = 'rpm1.';

export type AppEventType =
  'app_installed' | 'app_updated' | 'app_opened' | 'app_closed' | 'screen' | 'identify' | 'custom';

/** At most 20 members; strings of at most 256 characters, numbers or booleans. */
export type EventProperties = Record<string, string | number | boolean>;

export interface AppEvent {
  type: AppEventType;
  /** ISO 8601 in Rampart's clock (device time plus the offset). */
  timestamp: string;
  /** `screen` and `custom`: the screen's or the event's name, at most 128 characters. */
  name?: string;
  /** `identify`, and every later event of the install: at most 128 characters. */
  user_id?: string;
  /** Hex HMAC-SHA256 of `user_id` with the environment's API secret, from the app's backend. */
  user_signature?: string;
  /** `identify`: the signed-user form, a JWT the app's backend signed with the API secret (HS256), naming `user_id`. */
  user_jwt?: string;
  properties?: EventProperties;
}

export interface EventsRequest {
  publishable_key: string;
  session: string;
  /** At most 100 a request. */
  events: AppEvent[];
}

/** The events endpoint's answer (202). */
export interface EventsResponse {
  accepted: number;
}

/** Rampart's error body (`{"type": "invalid_request_token", "message": …}`). */
export interface ErrorResponse {
  type?: string;
  message?: string;
  fields?: { field: string; message: string }[];
}

/** The protocol's bounds, which the client keeps to so that a batch is never refused for its shape. */
export const LIMITS = {
  eventsPerRequest: 100,
  propertiesPerEvent: 20,
  propertyStringLength: 256,
  nameLength: 128,
  userIdLength: 128,
  userJwtLength: 4096,
  osVersionLength: 32,
  modelLength: 64,
  manufacturerLength: 64,
  appVersionLength: 32,
  sdkLength: 64,
  localeLength: 35,
  timezoneLength: 64,
  deviceIdLength: 64,
  userAgentLength: 512,
  attestationTokenLength: 16_384,
  integrityChecks: 16,
} as const;
