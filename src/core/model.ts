/**
 * The domain's data: environments, events, devices, users, policies, webhooks and privacy jobs.
 * Plain objects with Date fields; the store maps them to documents and the adapters to wire formats.
 */
import type { GeoLocation, ParsedUserAgent } from './intel/types';
import type { Behaviour } from './client/wire';

/** A tenant id. Branded so that a plain string cannot be passed where a tenant scope is due. */
export type EnvId = string & { readonly __brand: 'EnvId' };
export const asEnvId = (s: string): EnvId => s as EnvId;

export type Action = 'allow' | 'challenge' | 'deny';
export const ACTIONS: readonly Action[] = ['allow', 'challenge', 'deny'];
export type RiskLevel = 'low' | 'medium' | 'high';

export interface Environment {
  id: EnvId;
  name: string;
  enabled: boolean;
  sandbox: boolean;
  publishableKey: string;
  /**
   * Origins (`https://shop.example`) whose pages may collect client tokens with the publishable
   * key. Empty or absent: none in production, any in a sandbox.
   */
  clientOrigins?: string[];
  /**
   * Native apps (Android package names, iOS bundle ids) that may register mobile sessions with the
   * publishable key (docs/mobile.md). Empty or absent: none in production, any in a sandbox.
   */
  clientApps?: string[];
  /**
   * Platform attestation of the environment's apps, per app (docs/mobile.md, "Attestation"):
   * what verifies an App Attest attestation or a Play Integrity verdict, and whether a session
   * must carry one. Absent: none is verified.
   */
  attestation?: AppAttestationSettings[];
  webhookUrl: string | null;
  privacyEmail: string | null;
  /**
   * Days the raw records (events, rejected payloads, ended privacy requests) are kept
   * (core/retention.ts). Absent: the default, 90.
   */
  retentionDays?: number;
  createdAt: Date;
}

/** How one app's attestations are verified (Environment.attestation). */
export interface AppAttestationSettings {
  /** The app: its bundle id and package name (one of the environment's apps). */
  app: string;
  /** App Attest: the Apple developer team id; the App ID attested is `<team id>.<app>`. */
  appleTeamId: string | null;
  /** Play Integrity: the app's decryption and verification keys, each sealed with the master key (never in clear at rest). */
  play: { decryptionKey: string; verificationKey: string } | null;
  /** A session of this app without a verified attestation (on a platform configured above) is flagged. */
  required: boolean;
}

export type CredentialKind = 'secret' | 'analyst';

export interface Credential {
  /** SHA-256 of the secret, hex. The secret itself is never stored in clear. */
  hash: string;
  envId: EnvId;
  kind: CredentialKind;
  label: string;
  /** Last characters of the secret, to recognise it in listings. */
  hint: string;
  createdAt: Date;
  revokedAt: Date | null;
  /** The secret sealed with the master key, kept only for API secrets: webhooks are signed with it. */
  sealed: string | null;
}

/** Who is calling: resolved from a credential on every protocol. */
export interface Principal {
  env: Environment;
  kind: CredentialKind;
  credentialHash: string;
}

export type Endpoint = 'authenticate' | 'risk' | 'filter' | 'track';

/** Request context after normalisation. */
export interface EventContext {
  ip: string | null;
  /** Lower-cased header names; `true` means present but scrubbed by the SDK. */
  headers: Record<string, string | true>;
  userAgent: string;
  /** The client fingerprint token (client_id / request_token), when a real one was sent. */
  fingerprint: string | null;
  /** Extra keys older SDKs send (active, locale, library, ...), stored as given. */
  extra: Record<string, unknown>;
}

/** Forced outcomes from a sandbox test token. */
export interface TestToken {
  raw: string;
  device: string | null;
  ip: string | null;
  action: Action | null;
  risk: number | null;
}

/** A validated event, whatever endpoint and payload form it came through. */
export interface EventInput {
  endpoint: Endpoint;
  /** Canonical event name, e.g. `$login.succeeded` or `$login`. */
  name: string;
  /** For `$custom` events, the application's own name. */
  customName: string | null;
  userId: string | null;
  email: string | null;
  username: string | null;
  phone: string | null;
  registeredAt: Date | null;
  userTraits: Record<string, unknown>;
  properties: Record<string, unknown>;
  context: EventContext;
  deviceToken: string | null;
  requestToken: string | null;
  testToken: TestToken | null;
  /**
   * Fields the event should carry (the catalog's recommendations) that were not sent: the event is
   * scored without them, and the verdict names them in its `missing_fields` signal.
   */
  missing: string[];
  /** When the event happened (body `timestamp`/`created_at`), else the receive time. */
  occurredAt: Date;
  receivedAt: Date;
  /** Other top-level keys (sent_at, ...), stored as given. */
  extra: Record<string, unknown>;
  /** What a Rampart client token showed, when the fingerprint was one (see core/client). */
  client?: ClientTokenUse | null;
}

/** A Rampart client token as a verdict sees it. */
export interface ClientTokenUse {
  /** Why the token does not count (null: it verified). */
  problem: 'malformed' | 'forged' | 'expired' | 'not_yet_valid' | 'other_environment' | null;
  /**
   * The id single use is counted by (null when it did not verify): the token's own, or for a token
   * minted with a proof of work the challenge's, so that tokens minted from one proof share one
   * login flow's uses.
   */
  jti: string | null;
  /** Automation and tampering evidence the browser showed. */
  automation: string[];
  /** Short hash of the user agent the browser reported (null when it did not verify). */
  userAgentHash: string | null;
  /** The browser's first language (primary tag) and timezone offset (minutes to UTC), as it reported them. */
  language: string | null;
  timezoneOffset: number | null;
  /** The browser's machine vector (core/client/components.ts machineVectorOf; null: none). */
  machine?: string | null;
  /** A token a native app minted from its session: what the session says of the device and the app (absent: a browser's). */
  mobile?: MobileClient | null;
  /** A browser token minted with a proof of work: the difficulty proved, in bits (null or absent: none, the one-step flow). */
  proof?: number | null;
  /** What the page reported of itself before it asked for the token (null or absent: nothing). */
  behaviour?: Behaviour | null;
  /** A browser token's device key (absent: a native app's, or one that did not verify): its page's events are counted by it. */
  deviceKey?: string | null;
}

/** A native app's device, as its session describes it (core/client/session.ts). */
export interface MobileClient {
  platform: 'android' | 'ios';
  /** `Android 14`, `iOS 17.5`. */
  os: string;
  model: string;
  manufacturer: string | null;
  app: { id: string; version: string; build: string | null };
  /** What the device's own integrity checks found (core/client/mobile.ts INTEGRITY). */
  integrity: string[];
  /** The kind of platform attestation the app carried, if any. */
  attestation: string | null;
  /** What verifying it found (absent or null: nothing carried and none required). */
  attested?: AttestationOutcome | null;
  /** The vendor id itself, when the app forwards it. */
  deviceId: string | null;
  /** The session the token was minted from, and the device's key and machine key. */
  sessionId: string;
  deviceKey: string;
  machineKey: string;
}

/**
 * What the collector found of a session's platform attestation (core/client/attestation):
 * verified (Play Integrity: with Google's device and app verdicts), failed (why), unverified (no
 * challenge, or nothing configured to verify it with), or missing where the app requires one.
 */
export type AttestationOutcome =
  | {
      status: 'verified';
      kind: 'app_attest' | 'play_integrity';
      device?: 'strong' | 'device' | 'basic' | 'virtual' | 'none';
      app?: 'recognized' | 'unrecognized' | 'unevaluated';
    }
  | { status: 'failed'; kind: 'app_attest' | 'play_integrity'; reason: string }
  | { status: 'unverified'; kind: 'app_attest' | 'play_integrity'; reason: 'no_challenge' | 'not_configured' }
  | { status: 'missing' };

export interface SignalDetail {
  [key: string]: string | number | boolean | null;
}
export type Signals = Record<string, SignalDetail>;

export interface PolicyRef {
  id: string;
  revision: string;
  name: string;
  action: Action;
}

export interface DeviceContext {
  ip: string | null;
  location: GeoLocation | null;
  userAgent: ParsedUserAgent;
  type: 'desktop' | 'mobile' | 'tablet' | 'other';
  properties: Record<string, unknown>;
}

/** The context of a device nothing is known of (no sighting recorded one): a fresh object each call. */
export const unknownDeviceContext = (): DeviceContext => ({
  ip: null,
  location: null,
  userAgent: {
    raw: '',
    browser: '',
    version: '',
    os: '',
    mobile: false,
    platform: '',
    device: '',
    family: '',
    type: 'other',
    bot: false,
    headless: false,
    crawler: false,
  },
  type: 'other',
  properties: {},
});

export interface Device {
  token: string;
  envId: EnvId;
  userId: string;
  /** How this device was recognised: a client fingerprint, or derived from stable headers. */
  identity: 'fingerprint' | 'derived';
  fingerprintKey: string;
  createdAt: Date;
  lastSeenAt: Date;
  approvedAt: Date | null;
  escalatedAt: Date | null;
  mitigatedAt: Date | null;
  /** Removed from the user's account after an incident was mitigated. */
  removedAt: Date | null;
  /**
   * The device's own risk score, 0-100 (Castle's device `risk`): exactly 0 or 100 once feedback
   * was given. Not an event's `risk`, which is 0-1 everywhere in the core.
   */
  riskScore: number;
  feedback: 'approved' | 'reported' | null;
  context: DeviceContext;
  lastEventRisk: number | null;
  /** Events seen from this device. */
  sightings: number;
  /** A browser's machine vector, as last seen (core/devices/machine.ts; null: none known). */
  machine: string | null;
  /** Other browser profiles on this machine that name this device (a private window, cleared storage). */
  linkedKeys: string[];
}

export interface UserProfile {
  envId: EnvId;
  userId: string;
  email: string | null;
  username: string | null;
  phone: string | null;
  registeredAt: Date | null;
  traits: Record<string, unknown>;
  createdAt: Date;
  lastSeenAt: Date;
  lastLocation: { lat: number; lon: number; country: string | null; at: Date } | null;
  countries: string[];
  lastPasswordResetAt: Date | null;
  /** Devices recognised for this user (kept here so scoring needs no count query). */
  deviceCount: number;
  /** Events that named this user. */
  eventCount: number;
}

export interface StoredEvent {
  id: string;
  envId: EnvId;
  name: string;
  endpoint: Endpoint;
  userId: string | null;
  email: string | null;
  deviceToken: string | null;
  ip: string | null;
  country: string | null;
  asn: number | null;
  userAgent: string;
  action: Action | null;
  risk: number | null;
  signals: string[];
  signalDetails: Signals;
  policy: PolicyRef | null;
  context: EventContext;
  userTraits: Record<string, unknown>;
  properties: Record<string, unknown>;
  occurredAt: Date;
  receivedAt: Date;
  /** The verdict was computed without all of its state (not read within the verdict budget). */
  degraded: boolean;
  /**
   * Only on an event without a user id: the e-mails, user names and phones it names
   * (privacy/names.ts), which a purge of the user they name matches.
   */
  names?: string[];
}

export interface RejectedPayload {
  id: string;
  envId: EnvId;
  endpoint: Endpoint;
  reason: string;
  fields: { field: string; message: string }[];
  /** The payload as received, truncated to a safe size and scrubbed (events/scrub.ts). */
  payload: string;
  userId: string | null;
  receivedAt: Date;
  /** Only on a payload that names no user id: the e-mails, user names and phones it names, which a purge matches. */
  names?: string[];
}
