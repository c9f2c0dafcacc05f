/**
 * The client core: Castle's mobile API shape (configure, identify, secure, userJwt, screen,
 * custom, flush, the request token and its interceptor; Castle's React Native option spellings
 * taken as aliases, its options without a meaning here warned about) over a `Platform`. It owns the rules of when events are
 * queued and flushed, the user attached to them, and the app's lifecycle; the queue (queue.ts),
 * the sending (flusher.ts), the session and tokens (session.ts) and the allow list
 * (allow-list.ts, interceptor.ts) are its parts. No React Native import: the unit tests run it
 * over an in-memory platform with a fake clock.
 *
 * When events are flushed (Castle's mobile SDKs' limits, docs/mobile.md): at the app's install, update, open and
 * close, at identify and userJwt, when a request under the allow list goes out, and when the
 * queue reaches `flushLimit`. Never otherwise, except by `flush()`, `flushIfNeeded()` and
 * `reset()`. clients/test-vectors/queue.json gives each rule as a scenario.
 */
import { AllowList, parseHttpUrl } from './allow-list';
import { buildComponents, buildUserAgent } from './components';
import { base64url, base64urlDecodeText } from './crypto';
import { Flusher } from './flusher';
import {
  axiosInterceptor,
  wrapFetch,
  type AxiosRequestConfigLike,
  type InterceptorDeps,
} from './interceptor';
import type { AppStateStatus, DeviceInfo, Platform } from './platform';
import { EventQueue, type NewEvent } from './queue';
import { SESSION_REFRESH_MS, SessionKeeper } from './session';
import { SDK_NAME, SDK_VERSION } from './version';
import { LIMITS, type AppEventType, type EventProperties } from './wire';

export interface RampartConfig {
  /** The environment's publishable key (`pk_…`, `npx rampart env list`): not a secret. */
  publishableKey: string;
  /** Where Rampart answers, e.g. `https://rampart.example.com`. */
  baseUrl: string;
  /** Screen events from the platform's screen source (React Navigation): off by default in React Native. */
  screenTrackingEnabled?: boolean;
  /** Logs through the platform's logger; never the session key, the session or a whole token. */
  debugLoggingEnabled?: boolean;
  /** Sends the raw vendor id (ANDROID_ID / identifierForVendor) as `deviceId`; off by default. */
  deviceIDAutoForwardingEnabled?: boolean;
  /** At most this many events queued; the oldest go first (default 1,000). */
  maxQueueLimit?: number;
  /** Flush when this many events are queued (default 20). */
  flushLimit?: number;
  /** Base URLs of the app's own API: only requests under them get the request-token header. */
  baseURLAllowList?: string[];
  /** The request-token header (default `X-Service-Client-Id`; `CASTLE_REQUEST_TOKEN_HEADER` for Castle's). */
  clientIdHeaderName?: string;
  /** Queue `app_installed`, `app_updated`, `app_opened` and `app_closed` (default on). */
  lifecycleTrackingEnabled?: boolean;
  /** Castle's spelling of `clientIdHeaderName`. */
  requestTokenHeaderName?: string;
  /** Castle's spelling of `lifecycleTrackingEnabled`. */
  lifeCycleEventsEnabled?: boolean;
}

/** Castle's request-token header, for a backend that reads it (`requestTokenHeaderName: CASTLE_REQUEST_TOKEN_HEADER`). */
export const CASTLE_REQUEST_TOKEN_HEADER = 'X-Castle-Request-Token';

/** Castle's spellings of our options: taken as ours. */
const ALIASES = {
  requestTokenHeaderName: 'clientIdHeaderName',
  lifeCycleEventsEnabled: 'lifecycleTrackingEnabled',
  baseURLWhiteList: 'baseURLAllowList',
} as const;
/** Castle's options that have no meaning here: a console warning says why, so that none is ignored in silence. */
const CASTLE_ONLY: Record<string, string> = {
  useCloudflareApp: 'Rampart answers at baseUrl; a proxy in front of it goes in baseUrl',
  apiDomain: 'Rampart answers at baseUrl; set baseUrl instead',
  apiPath: 'Rampart answers at baseUrl; set baseUrl instead',
};

type Settings = Required<Omit<RampartConfig, keyof typeof ALIASES>>;

const DEFAULTS: Omit<Settings, 'publishableKey' | 'baseUrl'> = {
  screenTrackingEnabled: false,
  debugLoggingEnabled: false,
  deviceIDAutoForwardingEnabled: false,
  maxQueueLimit: 1000,
  flushLimit: 20,
  baseURLAllowList: [],
  clientIdHeaderName: 'X-Service-Client-Id',
  lifecycleTrackingEnabled: true,
};

/** Storage keys; secure ones hold the install id and the session (its key signs tokens). */
const KEYS = {
  queue: 'rampart.queue',
  app: 'rampart.app',
  user: 'rampart.user',
  installId: 'rampart.install_id',
  session: 'rampart.session',
} as const;

/** How long the interceptor waits for a first session before sending a request without a token. */
export const TOKEN_WAIT_MS = 3000;
/** clientId() starts a background registration at most this often. */
const REGISTRATION_RETRY_MS = 10_000;

const INSTALL_ID = /^[A-Za-z0-9_-]{16,64}$/;
const SIGNATURE = /^[0-9a-fA-F]{64}$/;
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

interface User {
  id: string | null;
  signature: string | null;
  /** The user id that was identified when `secure()` was called (null: before any identify). */
  signatureFor: string | null;
  /** The signed-user JWT (`userJwt`), for the user it names (`id`). */
  jwt?: string | null;
}

const JWT = /^[A-Za-z0-9_-]+\.([A-Za-z0-9_-]+)\.[A-Za-z0-9_-]+$/;

/** The user a JWT's payload names (`id`, else `sub`), read without verifying it: Rampart verifies it. */
export function userIdOfJwt(jwt: string): string | null {
  const m = typeof jwt === 'string' && jwt.length <= LIMITS.userJwtLength ? JWT.exec(jwt) : null;
  const text = m ? base64urlDecodeText(m[1]) : null;
  if (text === null) return null;
  try {
    const payload = JSON.parse(text) as Record<string, unknown>;
    const id = typeof payload === 'object' && payload !== null ? (payload.id ?? payload.sub) : undefined;
    if (typeof id === 'string' && id.length > 0 && id.length <= LIMITS.userIdLength) return id;
    if (typeof id === 'number' && Number.isSafeInteger(id)) return String(id);
  } catch {
    return null;
  }
  return null;
}

const KNOWN = new Set<string>(['publishableKey', 'baseUrl', ...Object.keys(DEFAULTS)]);

/** The options with Castle's spellings taken as ours, and a warning for each option that does nothing. */
function normalise(config: RampartConfig): { config: RampartConfig; warnings: string[] } {
  const out: Record<string, unknown> = {};
  const warnings: string[] = [];
  for (const [k, v] of Object.entries(config)) {
    if (v === undefined) continue;
    if (k in ALIASES) {
      const ours = ALIASES[k as keyof typeof ALIASES];
      if (
        ours in config &&
        (config as unknown as Record<string, unknown>)[ours] !== undefined &&
        (config as unknown as Record<string, unknown>)[ours] !== v
      ) {
        throw new Error(`Rampart: configure() got both ${ours} and Castle's ${k}, with different values`);
      }
      out[ours] = v;
    } else if (k in CASTLE_ONLY)
      warnings.push(`Rampart: configure() option ${k} is Castle's and does nothing here: ${CASTLE_ONLY[k]}`);
    else if (!KNOWN.has(k)) warnings.push(`Rampart: configure() option ${k} is unknown and does nothing`);
    else out[k] = v;
  }
  return { config: out as unknown as RampartConfig, warnings };
}

function validate(given: RampartConfig): { settings: Settings; warnings: string[] } {
  if (!given || typeof given !== 'object')
    throw new Error('Rampart: configure({ publishableKey: "pk_…", baseUrl }) needs the publishable key');
  const { config, warnings } = normalise(given);
  if (typeof config.publishableKey !== 'string' || !config.publishableKey.startsWith('pk_'))
    throw new Error('Rampart: configure({ publishableKey: "pk_…", baseUrl }) needs the publishable key');
  if (typeof config.baseUrl !== 'string' || !parseHttpUrl(config.baseUrl))
    throw new Error('Rampart: configure({ baseUrl }) needs an absolute http(s) URL');
  const s: Settings = { ...DEFAULTS, ...config, baseUrl: config.baseUrl.replace(/\/+$/, '') };
  for (const k of ['maxQueueLimit', 'flushLimit'] as const) {
    if (!Number.isInteger(s[k]) || s[k] < 1) throw new Error(`Rampart: ${k} must be a positive integer`);
  }
  if (!HEADER_NAME.test(s.clientIdHeaderName))
    throw new Error('Rampart: clientIdHeaderName must be an HTTP header name');
  return { settings: s, warnings };
}

/** Traits as event properties: at most 20 members, strings cut to 256, numbers and booleans; anything else left out. */
function toProperties(
  traits: Record<string, unknown> | undefined,
  dropped?: (key: string) => void,
): EventProperties | undefined {
  if (!traits || typeof traits !== 'object') return undefined;
  const out: EventProperties = {};
  let n = 0;
  for (const [k, v] of Object.entries(traits)) {
    if (n >= LIMITS.propertiesPerEvent) break;
    if (typeof v === 'string') out[k] = v.slice(0, LIMITS.propertyStringLength);
    else if ((typeof v === 'number' && Number.isFinite(v)) || typeof v === 'boolean') out[k] = v;
    else {
      dropped?.(k);
      continue;
    }
    n++;
  }
  return n > 0 ? out : undefined;
}

export class RampartClient {
  private settings: Settings | null = null;
  private ready: Promise<void> | null = null;
  private queue: EventQueue | null = null;
  private sessions: SessionKeeper | null = null;
  private flusher: Flusher | null = null;
  private allowList = new AllowList([]);
  private device: DeviceInfo | null = null;
  private agent: string | null = null;
  private user: User = { id: null, signature: null, signatureFor: null };
  private appState: AppStateStatus = 'active';
  private lastScreen: string | null = null;
  private readonly unsubscribers: (() => void)[] = [];
  private readonly pending = new Set<Promise<unknown>>();
  private destroyed = false;
  private nextBackgroundRegistration = 0;

  constructor(private readonly platform: Platform) {}

  /**
   * Starts the client: reads what earlier runs stored, queues the install, update and open
   * events, and registers a session in the background. Resolves once events can be queued;
   * the registration and the first flush go on after it (`idle()` waits for them). A second
   * call keeps the first configuration.
   */
  configure(config: RampartConfig): Promise<void> {
    if (this.ready) {
      this.log('configure() was called again; the first configuration stays');
      return this.ready;
    }
    let settings: Settings;
    try {
      const v = validate(config);
      settings = v.settings;
      this.allowList = new AllowList(settings.baseURLAllowList);
      for (const w of v.warnings) this.warn(w);
    } catch (e) {
      return Promise.reject(e);
    }
    this.settings = settings;
    this.ready = this.start(settings);
    return this.ready;
  }

  private async start(s: Settings): Promise<void> {
    const log = (m: string) => this.log(m);
    const queue = new EventQueue(this.platform.storage, KEYS.queue, s.maxQueueLimit, log);
    this.queue = queue;
    this.device = await this.platform.deviceInfo();
    this.agent = buildUserAgent(this.device, `${SDK_NAME}/${SDK_VERSION}`);
    const installId = await this.installId();
    const sessions = new SessionKeeper({
      platform: this.platform,
      endpoint: s.baseUrl,
      publishableKey: s.publishableKey,
      log,
      storageKey: KEYS.session,
      components: async () =>
        buildComponents(this.device as DeviceInfo, {
          installId,
          sdk: `${SDK_NAME}/${SDK_VERSION}`,
          userAgent: this.agent ?? '',
          forwardDeviceId: s.deviceIDAutoForwardingEnabled,
          attestation: this.platform.attestation ? await this.platform.attestation().catch(() => null) : null,
        }),
    });
    this.sessions = sessions;
    this.flusher = new Flusher({
      platform: this.platform,
      queue,
      sessions,
      endpoint: s.baseUrl,
      publishableKey: s.publishableKey,
      log,
    });
    await Promise.all([queue.load(), sessions.load(), this.loadUser()]);
    if (this.destroyed) return;

    this.appState = this.platform.appState.current();
    this.unsubscribers.push(this.platform.appState.subscribe((state) => this.onAppState(state)));
    if (s.screenTrackingEnabled) {
      if (this.platform.screens)
        this.unsubscribers.push(this.platform.screens.subscribe((name) => this.onScreen(name)));
      else this.log('screen tracking is on but the platform has no screen source');
    }

    const lifecycle = await this.lifecycleAtLaunch(s);
    const open = this.appState === 'active';
    if (open && s.lifecycleTrackingEnabled) this.enqueue('app_opened');
    // A launch in the foreground is an open: a session older than an hour is replaced.
    // One registration attempt per trigger: when it fails, the events wait for the next one.
    this.track(
      this.ensureSession(open ? SESSION_REFRESH_MS : undefined).then((ok) =>
        ok && (lifecycle || open) ? this.flushNow() : undefined,
      ),
    );
  }

  /** Queues `app_installed` or `app_updated` when this launch is the first, or the first of a new version; true when it did. */
  private async lifecycleAtLaunch(s: Settings): Promise<boolean> {
    const app = (this.device as DeviceInfo).app;
    let previous: { version?: unknown; build?: unknown } | null = null;
    try {
      const raw = await this.platform.storage.getItem(KEYS.app);
      previous = raw ? (JSON.parse(raw) as { version?: unknown; build?: unknown }) : null;
    } catch {
      previous = null;
    }
    let queued = false;
    const properties: EventProperties = { version: app.version.slice(0, LIMITS.propertyStringLength) };
    if (app.build) properties.build = app.build.slice(0, LIMITS.propertyStringLength);
    if (previous === null) {
      if (s.lifecycleTrackingEnabled) this.enqueue('app_installed', { properties });
      queued = s.lifecycleTrackingEnabled;
    } else if (previous.version !== app.version) {
      if (typeof previous.version === 'string')
        properties.previous_version = previous.version.slice(0, LIMITS.propertyStringLength);
      if (typeof previous.build === 'string')
        properties.previous_build = previous.build.slice(0, LIMITS.propertyStringLength);
      if (s.lifecycleTrackingEnabled) this.enqueue('app_updated', { properties });
      queued = s.lifecycleTrackingEnabled;
    }
    // Stored even with lifecycle tracking off, so that turning it on later is not taken for an install.
    if (
      previous === null ||
      previous.version !== app.version ||
      (previous.build ?? null) !== (app.build ?? null)
    ) {
      await this.platform.storage
        .setItem(KEYS.app, JSON.stringify({ version: app.version, build: app.build ?? null }))
        .catch(() => this.log('the app version could not be stored'));
    }
    return queued;
  }

  private onAppState(state: AppStateStatus): void {
    const s = this.settings;
    if (!s || this.destroyed || state === this.appState) return;
    this.appState = state;
    if (state === 'active') {
      if (s.lifecycleTrackingEnabled) this.enqueue('app_opened');
      this.track(this.ensureSession(SESSION_REFRESH_MS).then((ok) => (ok ? this.flushNow() : undefined)));
    } else {
      if (s.lifecycleTrackingEnabled) this.enqueue('app_closed');
      // The app may be suspended at any moment: what is not sent now stays stored for the next open.
      this.track(this.flushNow());
    }
  }

  private onScreen(name: string): void {
    if (typeof name !== 'string' || name.length === 0 || name === this.lastScreen) return;
    this.lastScreen = name;
    this.track(this.screen(name).catch(() => undefined));
  }

  /** Registers a session if needed; false when that failed (logged), which only postpones it. */
  private async ensureSession(maxAgeMs?: number): Promise<boolean> {
    try {
      await this.sessions?.ensure(maxAgeMs);
      return true;
    } catch {
      this.log('no session for now; it will be registered again at the next trigger or token');
      return false;
    }
  }

  private flushNow(): Promise<void> {
    return this.flusher ? this.flusher.flush() : Promise.resolve();
  }

  /** Queues an event with the identified user, and flushes when the queue reaches the flush limit. */
  private enqueue(type: AppEventType, extra: Pick<NewEvent, 'name' | 'properties'> = {}): void {
    const queue = this.queue;
    const s = this.settings;
    if (!queue || !s || this.destroyed) return;
    const e: NewEvent = {
      type,
      ...extra,
      at: this.platform.clock.now(),
      offset: this.sessions?.offset() ?? null,
    };
    if (e.properties === undefined) delete e.properties;
    if (e.name === undefined) delete e.name;
    if (this.user.id !== null) e.user_id = this.user.id;
    if (this.user.id !== null && this.user.signature !== null) e.user_signature = this.user.signature;
    if (type === 'identify' && this.user.id !== null && this.user.jwt) e.user_jwt = this.user.jwt;
    queue.push(e);
    this.log(`queued ${type} (${queue.size()} queued)`);
    if (queue.size() >= s.flushLimit) this.track(this.flushNow());
  }

  private async whenReady(what: string): Promise<void> {
    if (!this.ready) throw new Error(`Rampart: call configure() before ${what}`);
    await this.ready;
  }

  /** Attaches `userId` to this and every later event, queues an `identify` and flushes. */
  async identify(userId: string, traits?: Record<string, unknown>): Promise<void> {
    if (typeof userId !== 'string' || userId.length === 0 || userId.length > LIMITS.userIdLength)
      throw new Error(`Rampart: identify() needs a user id of 1 to ${LIMITS.userIdLength} characters`);
    await this.whenReady('identify()');
    const u = this.user;
    // A signature given for another user must not travel with this one's events; one given
    // before any identify is taken to be for the user identified next.
    const keep = u.signature !== null && (u.signatureFor === null || u.signatureFor === userId);
    const jwt = u.jwt && u.id === userId ? u.jwt : null;
    this.user = { id: userId, signature: keep ? u.signature : null, signatureFor: keep ? userId : null, jwt };
    await this.saveUser();
    this.enqueue('identify', { properties: toProperties(traits) });
    await this.track(this.flushNow());
  }

  /** The user signature from the app's backend (hex HMAC-SHA256 of the user id under the API secret). */
  async secure(userSignature: string): Promise<void> {
    if (typeof userSignature !== 'string' || !SIGNATURE.test(userSignature))
      throw new Error('Rampart: secure() needs the 64-character hex HMAC-SHA256 of the user id');
    await this.whenReady('secure()');
    this.user = { ...this.user, signature: userSignature.toLowerCase(), signatureFor: this.user.id };
    await this.saveUser();
  }

  /**
   * Castle's signed-user form: a JWT the app's backend signed with the API secret (HS256), naming
   * the user as `id` (or `sub`). Identifies that user (their id on this and every later event) and
   * queues an `identify` carrying the JWT, which Rampart verifies; flushes.
   */
  async userJwt(jwt: string): Promise<void> {
    const userId = userIdOfJwt(jwt);
    if (userId === null)
      throw new Error(
        `Rampart: userJwt() needs a JWT (at most ${LIMITS.userJwtLength} characters) whose payload names the user as id or sub`,
      );
    await this.whenReady('userJwt()');
    this.user = { id: userId, signature: null, signatureFor: null, jwt };
    await this.saveUser();
    this.enqueue('identify');
    await this.track(this.flushNow());
  }

  /** Queues a custom event: a name (cut to 128 characters) and up to 20 string, number or boolean properties. */
  async custom(name: string, properties?: Record<string, unknown>): Promise<void> {
    if (typeof name !== 'string' || name.length === 0) throw new Error('Rampart: custom() needs a name');
    await this.whenReady('custom()');
    this.enqueue('custom', {
      name: name.slice(0, LIMITS.nameLength),
      properties: toProperties(properties, (k) =>
        this.log(`custom ${name}: property ${k} is not a string, number or boolean and is not sent`),
      ),
    });
  }

  /** Castle's spelling of `custom(name, properties)`. */
  customWithProperties(name: string, properties: Record<string, unknown>): Promise<void> {
    return this.custom(name, properties);
  }

  /**
   * Flushes when `url` is under the allow list (Castle's `flushIfNeeded`); true when it did. The
   * interceptors do it for every request they let through with a token.
   */
  async flushIfNeeded(url: string): Promise<boolean> {
    await this.whenReady('flushIfNeeded()');
    if (!this.allowList.allows(url)) return false;
    await this.track(this.flushNow());
    return true;
  }

  /** Queues a screen view (names are cut to 128 characters). */
  async screen(name: string): Promise<void> {
    if (typeof name !== 'string' || name.length === 0) throw new Error('Rampart: screen() needs a name');
    await this.whenReady('screen()');
    this.lastScreen = name;
    this.enqueue('screen', { name: name.slice(0, LIMITS.nameLength) });
  }

  /** Sends what is queued now (joins a flush under way). Never rejects: failures keep the events. */
  async flush(): Promise<void> {
    await this.whenReady('flush()');
    await this.track(this.flushNow());
  }

  queueSize(): number {
    return this.queue?.size() ?? 0;
  }

  /**
   * A fresh request token, synchronously, when a session exists; else null (and a session is
   * registered in the background, so that a later call has one).
   */
  clientId(): string | null {
    const sessions = this.sessions;
    if (!sessions || this.destroyed) return null;
    const token = sessions.mint();
    // Registers in the background, at most every REGISTRATION_RETRY_MS: an app offline calls this per request.
    const now = this.platform.clock.now();
    if (token === null && now >= this.nextBackgroundRegistration) {
      this.nextBackgroundRegistration = now + REGISTRATION_RETRY_MS;
      this.track(this.ensureSession());
    }
    return token;
  }

  /** A fresh request token, registering a session first when needed. Rejects when none can be had. */
  async createRequestToken(): Promise<string> {
    await this.whenReady('createRequestToken()');
    const sessions = this.sessions as SessionKeeper;
    return sessions.mintFrom(await sessions.ensure());
  }

  clientIdHeaderName(): string {
    return this.settings?.clientIdHeaderName ?? DEFAULTS.clientIdHeaderName;
  }

  /** Castle's `configureWithPublishableKey`: refused with the reason, since a self-hosted Rampart needs its base URL. */
  configureWithPublishableKey(_publishableKey: string): Promise<void> {
    return Promise.reject(
      new Error(
        "Rampart: configureWithPublishableKey() is Castle's; Rampart needs where it answers: configure({ publishableKey, baseUrl })",
      ),
    );
  }

  /** Castle's `setAdvertisingIdentifier`: no advertising id is collected, on purpose; a console warning says so. */
  async setAdvertisingIdentifier(_identifier: string): Promise<void> {
    this.warn('Rampart: setAdvertisingIdentifier() does nothing: Rampart collects no advertising id');
  }

  /** Castle's name for `clientIdHeaderName()`. */
  requestTokenHeaderName(): string {
    return this.clientIdHeaderName();
  }

  /** Rampart's base URL, as configured (null before configure). */
  baseUrl(): string | null {
    return this.settings?.baseUrl ?? null;
  }

  /** `<App>/<version> (<build>; <model>; <OS> <osVersion>) rampart-react-native/<version>`, once the device is known. */
  userAgent(): string | null {
    return this.agent;
  }

  /** Flushes, then forgets the identified user and the signature (at logout). */
  async reset(): Promise<void> {
    await this.whenReady('reset()');
    await this.track(this.flushNow());
    this.user = { id: null, signature: null, signatureFor: null, jwt: null };
    await this.platform.storage
      .removeItem(KEYS.user)
      .catch(() => this.log('the user could not be removed from storage'));
  }

  /** Resolves when the work started so far (registration, flushes, storage) is done. For tests and for a clean shutdown. */
  async idle(): Promise<void> {
    if (this.ready) await this.ready.catch(() => undefined);
    for (;;) {
      const work: Promise<unknown>[] = [...this.pending];
      const flush = this.flusher?.current;
      if (flush) work.push(flush);
      if (work.length === 0) break;
      await Promise.all(work.map((p) => p.catch(() => undefined)));
    }
    await this.queue?.persist();
  }

  /** Stops listening to the app state and the screens and stops the timers. The storage is kept. */
  destroy(): void {
    this.destroyed = true;
    for (const u of this.unsubscribers.splice(0)) u();
    this.flusher?.stop();
  }

  /** `fetch` that adds the request-token header to requests under `baseURLAllowList`. */
  wrapFetch<F extends (...args: never[]) => Promise<unknown>>(fetchImpl: F): F {
    return wrapFetch(fetchImpl, this.interceptorDeps);
  }

  /** For `axios.interceptors.request.use(Rampart.axiosRequestInterceptor)`: bound, so it can be passed as it is. */
  readonly axiosRequestInterceptor = <C extends AxiosRequestConfigLike>(config: C): Promise<C> =>
    axiosInterceptor(this.interceptorDeps)(config);

  private readonly interceptorDeps: InterceptorDeps = {
    allowList: { allows: (url: string) => this.allowList.allows(url) },
    headerName: () => this.clientIdHeaderName(),
    token: () => this.tokenForRequest(),
    // An allow-listed request going out is a flush trigger (Castle's flushIfNeeded): the queued
    // events reach Rampart before the backend asks for a verdict on this request.
    allowed: () => {
      if (this.flusher && !this.destroyed) this.track(this.flushNow());
    },
  };

  /** A token for an outgoing request: at once when a session exists, else after at most TOKEN_WAIT_MS, else none. */
  private async tokenForRequest(): Promise<string | null> {
    const now = this.clientId();
    if (now !== null || !this.ready || this.destroyed) return now;
    const { clock } = this.platform;
    let timer: unknown = null;
    const timeout = new Promise<null>((resolve) => {
      timer = clock.setTimeout(() => resolve(null), TOKEN_WAIT_MS);
    });
    try {
      return await Promise.race([this.createRequestToken().catch(() => null), timeout]);
    } finally {
      clock.clearTimeout(timer);
    }
  }

  /** The install id: random, made once, kept in secure storage (it survives a reinstall on iOS). */
  private async installId(): Promise<string> {
    const { secureStorage } = this.platform;
    try {
      const stored = await secureStorage.getItem(KEYS.installId);
      if (stored && INSTALL_ID.test(stored)) return stored;
    } catch {
      this.log('the install id could not be read from secure storage');
    }
    const id = base64url(this.platform.randomBytes(16));
    await secureStorage
      .setItem(KEYS.installId, id)
      .catch(() => this.log('the install id could not be stored; a new one is made at the next launch'));
    return id;
  }

  private async loadUser(): Promise<void> {
    try {
      const raw = await this.platform.storage.getItem(KEYS.user);
      const u = raw ? (JSON.parse(raw) as Partial<User>) : null;
      if (u && typeof u.id === 'string' && this.user.id === null) {
        const signature = typeof u.signature === 'string' && SIGNATURE.test(u.signature) ? u.signature : null;
        const jwt = typeof u.jwt === 'string' && userIdOfJwt(u.jwt) === u.id ? u.jwt : null;
        this.user = { id: u.id, signature, signatureFor: signature !== null ? u.id : null, jwt };
      }
    } catch {
      this.log('the identified user could not be read from storage');
    }
  }

  private saveUser(): Promise<void> {
    return this.platform.storage
      .setItem(KEYS.user, JSON.stringify(this.user))
      .catch(() => this.log('the identified user could not be stored'));
  }

  private track<T>(p: Promise<T>): Promise<T> {
    this.pending.add(p);
    const done = () => {
      this.pending.delete(p);
    };
    p.then(done, done);
    return p;
  }

  /** A configuration warning: always shown (console.warn), whatever the debug setting. */
  private warn(message: string): void {
    const logger = this.platform.logger;
    if (logger.warn) logger.warn(message);
    else (globalThis as { console?: { warn?(m: string): void } }).console?.warn?.(message);
  }

  private log(message: string): void {
    if (this.settings?.debugLoggingEnabled) this.platform.logger.debug(`[Rampart] ${message}`);
  }
}
