/**
 * The React Native adapter (react-native.ts) over stand-ins for its native modules (jest's
 * virtual mocks: none of them is installed here): what it reads from each, how it maps app
 * states, the Keychain and React Navigation, and the integrity checks. The stand-ins are set with
 * `jest.doMock` (not hoisted): the adapter requires each native module when it is called, after them.
 */
import { createReactNativePlatform } from '../../../src/react-native/react-native';
import { SDK_VERSION } from '../../../src/react-native/version';

const rn = {
  os: 'android',
  state: 'active' as string,
  listeners: [] as ((s: string) => void)[],
};
const keychain = new Map<string, string>();

jest.doMock(
  'react-native',
  () => ({
    AppState: {
      get currentState() {
        return rn.state;
      },
      addEventListener: (_: string, l: (s: string) => void) => {
        rn.listeners.push(l);
        return { remove: () => rn.listeners.splice(rn.listeners.indexOf(l), 1) };
      },
    },
    Platform: {
      get OS() {
        return rn.os;
      },
    },
    Dimensions: { get: () => ({ width: 411.43, height: 914.29, scale: 2.625 }) },
  }),
  { virtual: true },
);
jest.doMock(
  '@react-native-async-storage/async-storage',
  () => {
    const m = new Map<string, string>();
    return {
      __esModule: true,
      default: {
        getItem: async (k: string) => m.get(k) ?? null,
        setItem: async (k: string, v: string) => void m.set(k, v),
        removeItem: async (k: string) => void m.delete(k),
      },
    };
  },
  { virtual: true },
);
jest.doMock(
  'react-native-keychain',
  () => ({
    ACCESSIBLE: { AFTER_FIRST_UNLOCK_THIS_DEVICE_ONLY: 'AccessibleAfterFirstUnlockThisDeviceOnly' },
    getGenericPassword: async ({ service }: { service: string }) =>
      keychain.has(service) ? { username: 'rampart', password: keychain.get(service) } : false,
    setGenericPassword: async (_u: string, p: string, o: { service: string; accessible: string }) => {
      if (o.accessible !== 'AccessibleAfterFirstUnlockThisDeviceOnly') throw new Error('wrong accessibility');
      keychain.set(o.service, p);
      return true;
    },
    resetGenericPassword: async ({ service }: { service: string }) => keychain.delete(service),
  }),
  { virtual: true },
);
jest.doMock(
  'react-native-device-info',
  () => ({
    __esModule: true,
    default: {
      getModel: () => (rn.os === 'ios' ? 'iPhone 14 Pro' : 'Pixel 8'),
      getDeviceId: () => (rn.os === 'ios' ? 'iPhone15,3' : 'shiba'),
      getManufacturer: async () => (rn.os === 'ios' ? 'Apple' : 'Google'),
      getSystemVersion: () => (rn.os === 'ios' ? '17.5' : '14'),
      getVersion: () => '3.2.1',
      getBuildNumber: () => '321',
      getBundleId: () => 'com.example.shop',
      getApplicationName: () => 'Shop',
      getUniqueId: async () => 'a1b2c3d4e5f60718',
      isEmulator: async () => true,
    },
  }),
  { virtual: true },
);
jest.doMock(
  'jail-monkey',
  () => ({
    __esModule: true,
    default: {
      isJailBroken: () => true,
      hookDetected: () => false,
      isDebuggedMode: async () => true,
      canMockLocation: () => true,
    },
  }),
  { virtual: true },
);

beforeEach(() => {
  rn.os = 'android';
  rn.state = 'active';
  rn.listeners = [];
  keychain.clear();
});

describe('createReactNativePlatform', () => {
  it('reads the device from react-native-device-info, Dimensions and Intl (Android)', async () => {
    const p = createReactNativePlatform();
    const info = await p.deviceInfo();
    expect(info).toMatchObject({
      platform: 'android',
      osVersion: '14',
      model: 'Pixel 8',
      manufacturer: 'Google',
      app: { id: 'com.example.shop', name: 'Shop', version: '3.2.1', build: '321' },
      screen: { width: 1080, height: 2400, scale: 2.625 },
      vendorId: 'a1b2c3d4e5f60718',
      timezoneOffset: new Date().getTimezoneOffset(),
    });
    expect(typeof info.locale).toBe('string');
    expect(info.integrity.sort()).toEqual(['debugger', 'emulator', 'mock_location', 'rooted']);
  });

  it('on iOS: the hardware identifier as the model, "jailbroken", no mock-location check', async () => {
    rn.os = 'ios';
    const info = await createReactNativePlatform().deviceInfo();
    expect(info).toMatchObject({
      platform: 'ios',
      model: 'iPhone15,3',
      manufacturer: 'Apple',
      osVersion: '17.5',
    });
    expect(info.integrity.sort()).toEqual(['debugger', 'emulator', 'jailbroken']);
  });

  it('skips jail-monkey when told to', async () => {
    const info = await createReactNativePlatform({ integrityChecks: false }).deviceInfo();
    expect(info.integrity).toEqual(['emulator']);
  });

  it('refuses other platforms', () => {
    rn.os = 'web';
    expect(() => createReactNativePlatform()).toThrow(/iOS and Android/);
  });

  it('keeps secure items in the Keychain, one service per key, this device only', async () => {
    const { secureStorage } = createReactNativePlatform();
    expect(await secureStorage.getItem('rampart.install_id')).toBeNull();
    await secureStorage.setItem('rampart.install_id', 'abc');
    expect(keychain.get('rampart.install_id')).toBe('abc');
    expect(await secureStorage.getItem('rampart.install_id')).toBe('abc');
    await secureStorage.removeItem('rampart.install_id');
    expect(keychain.size).toBe(0);
  });

  it("reports active and background only (iOS's inactive is no change), and unsubscribes", () => {
    const { appState } = createReactNativePlatform();
    const seen: string[] = [];
    const off = appState.subscribe((s) => seen.push(s));
    for (const s of ['inactive', 'background', 'unknown', 'active']) rn.listeners.forEach((l) => l(s));
    expect(seen).toEqual(['background', 'active']);
    off();
    expect(rn.listeners).toHaveLength(0);
    rn.state = 'background';
    expect(appState.current()).toBe('background');
    rn.state = 'inactive';
    expect(appState.current()).toBe('active');
  });

  it("names screens from React Navigation's container ref", () => {
    let route = 'Home';
    const listeners: (() => void)[] = [];
    const navigationRef = {
      isReady: () => true,
      getCurrentRoute: () => ({ name: route }),
      addListener: (_: 'state', l: () => void) => (listeners.push(l), () => listeners.pop()),
    };
    const { screens } = createReactNativePlatform({ navigationRef });
    const seen: string[] = [];
    const off = screens!.subscribe((n) => seen.push(n));
    route = 'Cart';
    listeners.forEach((l) => l());
    expect(seen).toEqual(['Home', 'Cart']);
    off();
    expect(listeners).toHaveLength(0);
  });

  it('draws random bytes from crypto.getRandomValues, and asks for the polyfill when it is missing', () => {
    const p = createReactNativePlatform();
    const a = p.randomBytes(16);
    expect(a).toHaveLength(16);
    expect(Buffer.from(a).equals(Buffer.from(p.randomBytes(16)))).toBe(false);
    const saved = Object.getOwnPropertyDescriptor(globalThis, 'crypto')!;
    Object.defineProperty(globalThis, 'crypto', { value: {}, configurable: true });
    try {
      expect(() => createReactNativePlatform()).toThrow(/react-native-get-random-values/);
    } finally {
      Object.defineProperty(globalThis, 'crypto', saved);
    }
  });
});

describe('the Rampart singleton before configure', () => {
  it('passes requests through unchanged, answers null, and asks for configure', async () => {
    const { Rampart } = await import('../../../src/react-native/index');
    const calls: unknown[][] = [];
    const api = Rampart.wrapFetch(async (...args: unknown[]) => calls.push(args));
    await api('https://api.example.com/v1/login', { headers: { A: 'b' } });
    expect(calls).toEqual([['https://api.example.com/v1/login', { headers: { A: 'b' } }]]);
    const config = { url: 'https://api.example.com/v1/login', headers: {} };
    expect(await Rampart.axiosRequestInterceptor(config)).toEqual({
      url: 'https://api.example.com/v1/login',
      headers: {},
    });
    expect(Rampart.clientId()).toBeNull();
    expect(Rampart.queueSize()).toBe(0);
    expect(Rampart.clientIdHeaderName()).toBe('X-Service-Client-Id');
    await expect(Rampart.identify('42')).rejects.toThrow(/configure/);
    // Castle's names too.
    expect(Rampart.requestTokenHeaderName()).toBe('X-Service-Client-Id');
    expect(Rampart.baseUrl()).toBeNull();
    await expect(Rampart.configureWithPublishableKey('pk_x')).rejects.toThrow(
      "configureWithPublishableKey() is Castle's; Rampart needs where it answers: configure({ publishableKey, baseUrl })",
    );
    const warn = jest.spyOn(console, 'warn').mockImplementation(() => undefined);
    await Rampart.setAdvertisingIdentifier('ad-id');
    expect(warn).toHaveBeenCalledWith(
      'Rampart: setAdvertisingIdentifier() does nothing: Rampart collects no advertising id',
    );
    warn.mockRestore();
    for (const call of [
      () => Rampart.userJwt('a.b.c'),
      () => Rampart.custom('x'),
      () => Rampart.customWithProperties('x', {}),
      () => Rampart.flushIfNeeded('https://api.example.com/v1'),
    ]) {
      await expect(call()).rejects.toThrow(/configure/);
    }
  });
});

it('the library version is the root package.json version', () => {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  expect(SDK_VERSION).toBe(require('../../../package.json').version);
});
