/**
 * The React Native platform adapter: the `Platform` (platform.ts) over React Native and the
 * native modules apps already use for this (peer dependencies, not bundled):
 *
 * - `react-native`: AppState (open and close), Platform, Dimensions (the screen);
 * - `@react-native-async-storage/async-storage`: the queue, the last app version, the user;
 * - `react-native-keychain`: the install id and the session (Keychain on iOS, Keystore-backed
 *   encryption on Android), so the install id survives a reinstall on iOS;
 * - `react-native-device-info`: model, manufacturer, OS and app versions, the bundle id, the
 *   vendor id (IDFV / ANDROID_ID) and whether it is an emulator;
 * - `jail-monkey`, optional: root, jailbreak, hooking, debugger and mock-location checks.
 *
 * The modules are required when the adapter is created, not when the package is loaded, so the
 * client core runs (and is tested) where none of them is installed. They are typed here with
 * small structural interfaces, so the package type-checks without them too.
 *
 * Random bytes come from `crypto.getRandomValues`, which Hermes lacks: the app imports
 * `react-native-get-random-values` first (README.md).
 */
import type { AppStateStatus, DeviceInfo, KeyValueStorage, Platform, ScreenSource } from './platform';
import type { Attestation, IntegrityCheck } from './wire';

// Metro sees these literal require calls and bundles the modules; declared here because the
// package is compiled without Node's types.
declare const require: (id: string) => unknown;

interface RNModule {
  AppState: {
    currentState: string | null;
    addEventListener(type: 'change', listener: (state: string) => void): { remove(): void };
  };
  Platform: { OS: string };
  Dimensions: { get(dim: 'screen'): { width: number; height: number; scale: number } };
}

interface AsyncStorageModule {
  getItem(key: string): Promise<string | null>;
  setItem(key: string, value: string): Promise<void>;
  removeItem(key: string): Promise<void>;
}

interface KeychainModule {
  getGenericPassword(options?: { service?: string }): Promise<false | { password: string }>;
  setGenericPassword(
    username: string,
    password: string,
    options?: { service?: string; accessible?: string },
  ): Promise<unknown>;
  resetGenericPassword(options?: { service?: string }): Promise<unknown>;
  ACCESSIBLE?: Record<string, string>;
}

type MaybeAsync<T> = T | Promise<T>;
interface DeviceInfoModule {
  getModel(): string;
  /** iOS: the hardware identifier (`iPhone15,3`), which the protocol asks for as the model. */
  getDeviceId(): string;
  getManufacturer(): MaybeAsync<string>;
  getSystemVersion(): string;
  getVersion(): string;
  getBuildNumber(): string;
  getBundleId(): string;
  getApplicationName(): string;
  /** IDFV on iOS, ANDROID_ID on Android (a promise from version 10 on). */
  getUniqueId(): MaybeAsync<string>;
  isEmulator(): MaybeAsync<boolean>;
}

interface JailMonkeyModule {
  isJailBroken?(): boolean;
  hookDetected?(): boolean;
  isDebuggedMode?(): MaybeAsync<boolean>;
  canMockLocation?(): boolean;
}

/** React Navigation's container ref, as far as screen tracking reads it. */
export interface NavigationRefLike {
  addListener(event: 'state', listener: () => void): () => void;
  getCurrentRoute(): { name: string } | undefined;
  isReady?(): boolean;
}

export interface ReactNativePlatformOptions {
  /** React Navigation's `createNavigationContainerRef()`: the source of screen names for automatic screen tracking. */
  navigationRef?: NavigationRefLike;
  /** A Play Integrity or App Attest token to carry with each session registration (not verified by Rampart). */
  attestation?: () => Promise<Attestation | null>;
  /** Run jail-monkey's checks when it is installed (default true). */
  integrityChecks?: boolean;
}

/**
 * The module's API, whether the module system handed over the namespace or a default export:
 * whichever of the two has `member` (the packages differ, and have changed across versions).
 */
function moduleWith<T>(m: unknown, member: string): T {
  const ns = m as Record<string, unknown> & { default?: Record<string, unknown> };
  if (ns && ns[member] !== undefined) return ns as unknown as T;
  if (ns && ns.default && ns.default[member] !== undefined) return ns.default as unknown as T;
  throw new Error(`Rampart: the installed module has no ${member}`);
}

/** jail-monkey is optional. Metro treats a require inside try/catch as optional: it bundles without it. */
function loadJailMonkey(): JailMonkeyModule | null {
  try {
    return moduleWith<JailMonkeyModule>(require('jail-monkey'), 'isJailBroken');
  } catch {
    return null;
  }
}

interface Globals {
  crypto?: { getRandomValues?(array: Uint8Array): Uint8Array };
  fetch?: Platform['fetch'];
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
  console: { log(message: string): void; warn?(message: string): void };
}

function keychainStorage(keychain: KeychainModule): KeyValueStorage {
  // Readable after the first unlock (a flush at close may run locked), never restored to another phone from a backup.
  const accessible = keychain.ACCESSIBLE?.AFTER_FIRST_UNLOCK_THIS_DEVICE_ONLY;
  return {
    async getItem(key) {
      const r = await keychain.getGenericPassword({ service: key });
      return r ? r.password : null;
    },
    async setItem(key, value) {
      await keychain.setGenericPassword(
        'rampart',
        value,
        accessible ? { service: key, accessible } : { service: key },
      );
    },
    async removeItem(key) {
      await keychain.resetGenericPassword({ service: key });
    },
  };
}

function navigationScreens(ref: NavigationRefLike): ScreenSource {
  return {
    subscribe(listener) {
      const emit = () => {
        const name = ref.getCurrentRoute()?.name;
        if (name) listener(name);
      };
      if (!ref.isReady || ref.isReady()) emit();
      return ref.addListener('state', emit);
    },
  };
}

/** `inactive` (iOS, between the two) and `unknown` are not changes; at launch they count as active. */
const appStateOf = (s: string | null): AppStateStatus => (s === 'background' ? 'background' : 'active');

export function createReactNativePlatform(options: ReactNativePlatformOptions = {}): Platform {
  const g = globalThis as unknown as Globals;
  const getRandomValues = g.crypto?.getRandomValues;
  if (typeof getRandomValues !== 'function') {
    throw new Error(
      'Rampart: crypto.getRandomValues is missing; add react-native-get-random-values and import it first in index.js',
    );
  }
  // Literal require calls, one per module: Metro follows only those.
  const rn = moduleWith<RNModule>(require('react-native'), 'AppState');
  if (rn.Platform.OS !== 'ios' && rn.Platform.OS !== 'android')
    throw new Error(`Rampart: @rampart/react-native runs on iOS and Android, not ${rn.Platform.OS}`);
  const platform = rn.Platform.OS;
  const storage = moduleWith<AsyncStorageModule>(
    require('@react-native-async-storage/async-storage'),
    'getItem',
  );
  const keychain = moduleWith<KeychainModule>(require('react-native-keychain'), 'getGenericPassword');
  const device = moduleWith<DeviceInfoModule>(require('react-native-device-info'), 'getUniqueId');
  const jail = options.integrityChecks === false ? null : loadJailMonkey();
  const fetchImpl = g.fetch;
  if (typeof fetchImpl !== 'function') throw new Error('Rampart: fetch is missing');

  async function integrity(): Promise<IntegrityCheck[]> {
    const found: IntegrityCheck[] = [];
    const check = async (name: IntegrityCheck, f: (() => MaybeAsync<boolean>) | undefined) => {
      try {
        if (f && (await f())) found.push(name);
      } catch {
        // A check that cannot run reports nothing.
      }
    };
    await check('emulator', () => device.isEmulator());
    if (jail) {
      await check(platform === 'ios' ? 'jailbroken' : 'rooted', jail.isJailBroken?.bind(jail));
      await check('hooking_framework', jail.hookDetected?.bind(jail));
      await check('debugger', jail.isDebuggedMode?.bind(jail));
      if (platform === 'android') await check('mock_location', jail.canMockLocation?.bind(jail));
    }
    return found;
  }

  async function deviceInfo(): Promise<DeviceInfo> {
    const screen = rn.Dimensions.get('screen');
    const intl = (() => {
      try {
        return Intl.DateTimeFormat().resolvedOptions();
      } catch {
        return null;
      }
    })();
    const vendorId = await Promise.resolve(device.getUniqueId()).catch(() => null);
    const manufacturer = await Promise.resolve(device.getManufacturer()).catch(() => undefined);
    return {
      platform,
      osVersion: device.getSystemVersion(),
      model: platform === 'ios' ? device.getDeviceId() : device.getModel(),
      manufacturer,
      app: {
        id: device.getBundleId(),
        name: device.getApplicationName(),
        version: device.getVersion(),
        build: device.getBuildNumber(),
      },
      locale: intl?.locale,
      timezone: intl?.timeZone,
      timezoneOffset: new Date().getTimezoneOffset(),
      // Dimensions are in points / dp; the protocol wants physical pixels and the density.
      screen: {
        width: Math.round(screen.width * screen.scale),
        height: Math.round(screen.height * screen.scale),
        scale: screen.scale,
      },
      vendorId: vendorId && vendorId !== 'unknown' ? vendorId : null,
      integrity: await integrity(),
    };
  }

  return {
    storage,
    secureStorage: keychainStorage(keychain),
    appState: {
      current: () => appStateOf(rn.AppState.currentState),
      subscribe(listener) {
        const sub = rn.AppState.addEventListener('change', (s) => {
          if (s === 'active' || s === 'background') listener(s);
        });
        return () => sub.remove();
      },
    },
    screens: options.navigationRef ? navigationScreens(options.navigationRef) : undefined,
    deviceInfo,
    attestation: options.attestation,
    fetch: (url, init) => fetchImpl(url, init),
    clock: {
      now: () => Date.now(),
      setTimeout: (f, ms) => g.setTimeout(f, ms),
      clearTimeout: (h) => g.clearTimeout(h),
    },
    randomBytes: (n) => getRandomValues.call(g.crypto, new Uint8Array(n)),
    logger: {
      debug: (message) => g.console.log(message),
      warn: (message) => (g.console.warn ?? g.console.log)(message),
    },
  };
}
