/**
 * @rampart/react-native: Rampart's client for React Native apps (docs/mobile.md). An app calls
 * `Rampart.configure({ publishableKey, baseUrl, baseURLAllowList })` once at launch, sends its API
 * requests through `Rampart.wrapFetch(fetch)` or the axios interceptor (a fresh request token in a
 * header), and calls `identify`, `secure` and `screen`; lifecycle events are queued and sent on
 * their own. The backend forwards the header to Rampart as Castle's SDKs forward a client id.
 *
 * `Rampart` is the app's one client over React Native; it creates the React Native adapter
 * (react-native.ts) at `configure`, not at import, so importing the package needs no native
 * module. `createRampart(platform)` builds a client over any `Platform`, for tests and for apps
 * with storage or device info of their own.
 */
import { RampartClient, type RampartConfig } from './client';
import type { AxiosRequestConfigLike } from './interceptor';
import type { Platform } from './platform';
import { createReactNativePlatform, type ReactNativePlatformOptions } from './react-native';

export {
  CASTLE_REQUEST_TOKEN_HEADER,
  RampartClient,
  TOKEN_WAIT_MS,
  userIdOfJwt,
  type RampartConfig,
} from './client';
export {
  createReactNativePlatform,
  type NavigationRefLike,
  type ReactNativePlatformOptions,
} from './react-native';
export { parseHttpUrl, type HttpUrl } from './allow-list';
export type { AxiosRequestConfigLike } from './interceptor';
export type {
  AppStateSource,
  AppStateStatus,
  Clock,
  DeviceInfo,
  HttpClient,
  HttpRequest,
  HttpResponse,
  KeyValueStorage,
  Logger,
  Platform,
  ScreenSource,
  TimerHandle,
} from './platform';
export type {
  AppEvent,
  AppEventType,
  Attestation,
  AttestationKind,
  EventProperties,
  EventsRequest,
  EventsResponse,
  IntegrityCheck,
  MobileComponents,
  MobilePlatform,
  RegisterRequest,
  RegisterResponse,
} from './wire';
export { SDK_NAME, SDK_VERSION } from './version';

/** A client over `platform`: each has its own queue, session and subscriptions. */
export function createRampart(platform: Platform): RampartClient {
  return new RampartClient(platform);
}

/** `configure`'s options for the React Native client: the client's, and the adapter's. */
export type ReactNativeConfig = RampartConfig & ReactNativePlatformOptions;

let client: RampartClient | null = null;
const CONFIGURE_WITH_KEY =
  "Rampart: configureWithPublishableKey() is Castle's; Rampart needs where it answers: configure({ publishableKey, baseUrl })";
const NO_ADVERTISING_ID =
  'Rampart: setAdvertisingIdentifier() does nothing: Rampart collects no advertising id';
const notConfigured = (what: string) => Promise.reject(new Error(`Rampart: call configure() before ${what}`));

/** The app's client. Every method but `configure` and the interceptors needs `configure` first. */
export const Rampart = {
  configure(config: ReactNativeConfig): Promise<void> {
    if (!client) {
      const { navigationRef, attestation, integrityChecks, ...rest } = config ?? ({} as ReactNativeConfig);
      try {
        client = new RampartClient(
          createReactNativePlatform({ navigationRef, attestation, integrityChecks }),
        );
      } catch (e) {
        return Promise.reject(e);
      }
      return client.configure(rest);
    }
    return client.configure(config);
  },
  /** Castle's; refused with the reason (Rampart needs `baseUrl`): use `configure`. */
  configureWithPublishableKey: (_publishableKey: string): Promise<void> =>
    Promise.reject(new Error(CONFIGURE_WITH_KEY)),
  /** Castle's; does nothing but a console warning: no advertising id is collected. */
  setAdvertisingIdentifier: (_identifier: string): Promise<void> => {
    (globalThis as { console?: { warn?(m: string): void } }).console?.warn?.(NO_ADVERTISING_ID);
    return Promise.resolve();
  },
  identify: (userId: string, traits?: Record<string, unknown>): Promise<void> =>
    client ? client.identify(userId, traits) : notConfigured('identify()'),
  secure: (userSignature: string): Promise<void> =>
    client ? client.secure(userSignature) : notConfigured('secure()'),
  /** Castle's signed-user form: a JWT from the app's backend, signed with the API secret, naming the user. */
  userJwt: (jwt: string): Promise<void> => (client ? client.userJwt(jwt) : notConfigured('userJwt()')),
  screen: (name: string): Promise<void> => (client ? client.screen(name) : notConfigured('screen()')),
  custom: (name: string, properties?: Record<string, unknown>): Promise<void> =>
    client ? client.custom(name, properties) : notConfigured('custom()'),
  customWithProperties: (name: string, properties: Record<string, unknown>): Promise<void> =>
    client ? client.customWithProperties(name, properties) : notConfigured('customWithProperties()'),
  flushIfNeeded: (url: string): Promise<boolean> =>
    client ? client.flushIfNeeded(url) : notConfigured('flushIfNeeded()'),
  flush: (): Promise<void> => (client ? client.flush() : notConfigured('flush()')),
  reset: (): Promise<void> => (client ? client.reset() : notConfigured('reset()')),
  queueSize: (): number => client?.queueSize() ?? 0,
  clientId: (): string | null => client?.clientId() ?? null,
  createRequestToken: (): Promise<string> =>
    client ? client.createRequestToken() : notConfigured('createRequestToken()'),
  clientIdHeaderName: (): string => client?.clientIdHeaderName() ?? 'X-Service-Client-Id',
  requestTokenHeaderName: (): string => client?.requestTokenHeaderName() ?? 'X-Service-Client-Id',
  baseUrl: (): string | null => client?.baseUrl() ?? null,
  userAgent: (): string | null => client?.userAgent() ?? null,
  /** Can be called before `configure` (at module load): until then requests go out unchanged. */
  wrapFetch<F extends (...args: never[]) => Promise<unknown>>(fetchImpl: F): F {
    const wrapped = (...args: never[]) =>
      client ? client.wrapFetch(fetchImpl)(...args) : fetchImpl(...args);
    return wrapped as unknown as F;
  },
  /** For `axios.interceptors.request.use(Rampart.axiosRequestInterceptor)`. */
  axiosRequestInterceptor: <C extends AxiosRequestConfigLike>(config: C): Promise<C> =>
    client ? client.axiosRequestInterceptor(config) : Promise.resolve(config),
};

export default Rampart;
