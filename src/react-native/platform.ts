/**
 * The platform adapter: everything the client core needs from the device, as a plain interface.
 * The core (client.ts) holds the queue, the flush rules, the session and token logic and the
 * interceptor; it reaches storage, app state, device info, the network, the clock and randomness
 * only through a `Platform`. react-native.ts implements one over React Native and its native
 * modules; the unit tests implement one in memory, with a fake clock and a recording network, so
 * every rule is tested in milliseconds without a phone (the way PostHog's and Segment's mobile
 * libraries split theirs).
 *
 * Types only, structural, with no DOM or Node types: the package type-checks and runs on Hermes.
 */
import type { Attestation, IntegrityCheck, MobilePlatform } from './wire';

/** An async string store (AsyncStorage's shape). */
export interface KeyValueStorage {
  getItem(key: string): Promise<string | null>;
  setItem(key: string, value: string): Promise<void>;
  removeItem(key: string): Promise<void>;
}

/** Only the two states the rules act on: iOS's transient `inactive` is not a change. */
export type AppStateStatus = 'active' | 'background';

export interface AppStateSource {
  /** The state now (an app launched for a background task starts in `background`). */
  current(): AppStateStatus;
  /** Calls `listener` on every change; returns the unsubscribe function. */
  subscribe(listener: (state: AppStateStatus) => void): () => void;
}

/** Where automatic screen tracking learns the screen shown (e.g. React Navigation's container). */
export interface ScreenSource {
  /** Calls `listener` with each newly focused screen's name; returns the unsubscribe function. */
  subscribe(listener: (name: string) => void): () => void;
}

export interface DeviceInfo {
  platform: MobilePlatform;
  /** `Build.VERSION.RELEASE` / `UIDevice.systemVersion`. */
  osVersion: string;
  /** `Build.MODEL` / the hardware identifier (`iPhone15,3`). */
  model: string;
  manufacturer?: string;
  app: {
    /** Package name / bundle identifier. */
    id: string;
    /** The display name, for the user agent. */
    name: string;
    version: string;
    build?: string;
  };
  /** BCP 47 (`en-GB`). */
  locale?: string;
  /** IANA name (`Europe/London`). */
  timezone?: string;
  /** Minutes, as `getTimezoneOffset()` (UTC minus local). */
  timezoneOffset?: number;
  /** Physical pixels and density. */
  screen?: { width: number; height: number; scale: number };
  /** The raw vendor id (`ANDROID_ID` / `identifierForVendor`): hashed before it is sent, unless forwarding is on. */
  vendorId?: string | null;
  /** What the device's own checks found. */
  integrity: IntegrityCheck[];
}

/** The subset of the Fetch API's response the core reads. */
export interface HttpResponse {
  status: number;
  headers: { get(name: string): string | null };
  text(): Promise<string>;
}

export interface HttpRequest {
  method: 'POST';
  headers: Record<string, string>;
  body: string;
}

/** `fetch`, as far as the core calls it. */
export type HttpClient = (url: string, init: HttpRequest) => Promise<HttpResponse>;

export type TimerHandle = unknown;

export interface Clock {
  /** Device time, milliseconds since the epoch. */
  now(): number;
  setTimeout(callback: () => void, ms: number): TimerHandle;
  clearTimeout(handle: TimerHandle): void;
}

export interface Logger {
  /** Debug logging (only with `debugLoggingEnabled`). */
  debug(message: string): void;
  /** A configuration mistake the developer must see (an option that does nothing here), whatever the debug setting; console.warn when absent. */
  warn?(message: string): void;
}

export interface Platform {
  /** The app's private storage: the event queue, the last app version, the identified user. */
  storage: KeyValueStorage;
  /** Keychain (iOS) / Keystore-backed (Android) storage: the install id and the session key. */
  secureStorage: KeyValueStorage;
  appState: AppStateSource;
  /** The source of screen names for automatic screen tracking, when the app gave one. */
  screens?: ScreenSource;
  /** Read once per client; may be slow (native calls, integrity checks). */
  deviceInfo(): Promise<DeviceInfo>;
  /** A platform attestation (Play Integrity, App Attest) to carry with a registration, if the app provides one. */
  attestation?(): Promise<Attestation | null>;
  fetch: HttpClient;
  clock: Clock;
  /** Cryptographically secure random bytes. */
  randomBytes(length: number): Uint8Array;
  /** `debug` only with debug logging on; `warn` for configuration warnings. */
  logger: Logger;
}
