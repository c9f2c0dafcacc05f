/**
 * `configure`'s options (docs/client.md): Rampart's own names and castle-js 2.x's, read into what
 * the client uses; an unknown option or a wrong type is a warning for the console. No browser API
 * here (unit-tested in Node: test/unit/client/browser-client.spec.ts).
 */

/** What a publishable key looks like (as the collector checks it: core/client/service.ts). */
export const PUBLISHABLE_KEY = /^pk_[A-Za-z0-9_-]{8,64}$/;
/** Where the profile id is kept in localStorage unless `configure` names another key. */
export const DEFAULT_STORAGE_KEY = 'rampart.profile';

export interface CollectorOptions {
  /** The environment's publishable key (`pk_…`). */
  publishableKey: string;
  /** Rampart's base URL, without a trailing slash. */
  endpoint: string;
  /** How long one call to Rampart may take before it is given up (null: as long as the browser lets it). */
  timeoutMs: number | null;
  /** The localStorage key of the profile id. */
  storageKey: string;
}

/** `configure`'s options: Rampart's own names and castle-js 2.x's. */
export interface ConfigureOptions {
  /** The environment's publishable key (`pk_…`). Castle's name: `pk`. */
  publishableKey?: string;
  pk?: string;
  /** Rampart's base URL (default: the origin the script was loaded from; the page's own origin for the ES module). Castle's name: `apiUrl`. */
  endpoint?: string;
  apiUrl?: string;
  /** Milliseconds one call to Rampart may take (default: no limit of the script's own). */
  timeout?: number;
  /** false: no console warnings (default true). */
  verbose?: boolean;
  /** `name`: the localStorage key of the profile id (default `rampart.profile`); `expireIn` has no effect (localStorage does not expire). */
  storage?: { name?: string; expireIn?: number };
  /** The `__cid` cookie's domain, with Castle's 1.x names (exposeCastleNames). */
  cookieDomain?: string;
  /** Fill a token into every form submitted in the page (the field `formTokenInputName`). */
  autoInjectTokenOnSubmit?: boolean;
  /** Send a fresh token in `X-Castle-Request-Token` with every same-origin request that is not GET, HEAD or OPTIONS (fetch and XMLHttpRequest). */
  autoInjectTokenOnRequest?: boolean;
  /** The form field `injectTokenOnSubmit(event)` fills (default `castle_request_token`). */
  formTokenInputName?: string;
  /** castle-js options that mean nothing here: accepted without effect. */
  avoidCookies?: boolean;
  throttling?: boolean;
  window?: unknown;
  storageNamespace?: string;
  eFn?: unknown;
  dbg?: unknown;
  wUrl?: unknown;
  swUrl?: unknown;
  dwUrl?: unknown;
  dCss?: unknown;
  eCss?: unknown;
}

/** Options castle-js 2.x takes that have no effect here (Rampart's script needs no workers, styles or throttling). */
const WITHOUT_EFFECT = [
  'avoidCookies',
  'throttling',
  'window',
  'storageNamespace',
  'eFn',
  'dbg',
  'wUrl',
  'swUrl',
  'dwUrl',
  'dCss',
  'eCss',
];
const KNOWN = new Set([
  'publishableKey',
  'pk',
  'endpoint',
  'apiUrl',
  'timeout',
  'verbose',
  'storage',
  'cookieDomain',
  'autoInjectTokenOnSubmit',
  'autoInjectTokenOnRequest',
  'formTokenInputName',
  ...WITHOUT_EFFECT,
]);

/** The header `autoInjectTokenOnRequest` sends the token in: Castle's, which Rampart reads among the forwarded headers. */
export const REQUEST_TOKEN_HEADER = 'X-Castle-Request-Token';
/** The field castle-js's `injectTokenOnSubmit(event)` fills, and its server SDKs' examples read. */
export const CASTLE_TOKEN_FIELD = 'castle_request_token';

export interface ReadOptions {
  collector: CollectorOptions;
  verbose: boolean;
  cookieDomain: string | null;
  autoInjectTokenOnSubmit: boolean;
  autoInjectTokenOnRequest: boolean;
  formTokenInputName: string;
  /** What the page should be told on the console (unknown options, wrong types). */
  warnings: string[];
}

/** Rampart's base URL from `apiUrl`/`endpoint`: no trailing slash, and Castle's `/v1/monitor` (or `/v1`) path left off. */
function baseUrl(value: string): string {
  return value.replace(/\/+$/, '').replace(/\/v1(\/monitor)?$/, '');
}

/** `configure`'s argument read: Castle's and Rampart's names, defaults, and what to warn about. Throws without a publishable key. */
export function readOptions(o: ConfigureOptions | string | undefined, defaultEndpoint: string): ReadOptions {
  const given: ConfigureOptions = typeof o === 'string' ? { pk: o } : o && typeof o === 'object' ? o : {};
  const key = given.publishableKey ?? given.pk;
  if (typeof key !== 'string' || !key.startsWith('pk_'))
    throw new Error(
      'Rampart: configure({ pk: "pk_…" }) (or { publishableKey: "pk_…" }): the environment\'s publishable key',
    );
  const warnings: string[] = [];
  for (const name of Object.keys(given))
    if (!KNOWN.has(name)) warnings.push(`configure: unknown option "${name}" ignored`);
  const str = (name: keyof ConfigureOptions): string | undefined => {
    const v = given[name];
    if (v === undefined || typeof v === 'string') return v;
    warnings.push(`configure: option "${name}" must be a string; ignored`);
    return undefined;
  };
  const bool = (name: keyof ConfigureOptions): boolean | undefined => {
    const v = given[name];
    if (v === undefined || typeof v === 'boolean') return v;
    warnings.push(`configure: option "${name}" must be true or false; ignored`);
    return undefined;
  };
  const endpoint = str('endpoint') ?? str('apiUrl');
  let timeoutMs: number | null = null;
  if (given.timeout !== undefined) {
    if (typeof given.timeout === 'number' && Number.isFinite(given.timeout) && given.timeout > 0)
      timeoutMs = given.timeout;
    else warnings.push('configure: option "timeout" must be a positive number of milliseconds; ignored');
  }
  const storage = given.storage;
  let storageKey = DEFAULT_STORAGE_KEY;
  if (storage !== undefined) {
    if (
      storage &&
      typeof storage === 'object' &&
      (storage.name === undefined ||
        (typeof storage.name === 'string' && /^[\w.:-]{1,64}$/.test(storage.name)))
    )
      storageKey = storage.name ?? storageKey;
    else
      warnings.push(
        'configure: option "storage" must be { name: 1 to 64 letters, digits, _ . : - }; ignored',
      );
  }
  const field = str('formTokenInputName');
  if (field !== undefined && !/^[\w.[\]-]{1,64}$/.test(field))
    warnings.push(
      'configure: option "formTokenInputName" must be a field name of 1 to 64 characters; ignored',
    );
  if (!PUBLISHABLE_KEY.test(key))
    warnings.push(
      'configure: the publishable key does not look like one (pk_ and 8 to 64 letters, digits, _ or -): Rampart will refuse it',
    );
  return {
    collector: { publishableKey: key, endpoint: baseUrl(endpoint ?? defaultEndpoint), timeoutMs, storageKey },
    verbose: given.verbose !== false,
    cookieDomain: str('cookieDomain') ?? null,
    autoInjectTokenOnSubmit: bool('autoInjectTokenOnSubmit') ?? false,
    autoInjectTokenOnRequest: bool('autoInjectTokenOnRequest') ?? false,
    formTokenInputName: field !== undefined && /^[\w.[\]-]{1,64}$/.test(field) ? field : CASTLE_TOKEN_FIELD,
    warnings,
  };
}
