/**
 * castle-js 2.x's names over Rampart's client (docs/client.md, "Castle's 2.x names"): its
 * `configure` options read (Castle's and Rampart's spellings; an unknown one is a console warning),
 * its submit helpers, and the token on every same-origin request that changes something
 * (`autoInjectTokenOnRequest`).
 */
import type { CollectorOptions } from './collector';
import { DEFAULT_STORAGE_KEY } from './components';
import type { UserParams } from './events';
import { attempt, PUBLISHABLE_KEY, setField } from './util';

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
const WITHOUT_EFFECT = ['avoidCookies', 'throttling', 'window', 'storageNamespace', 'eFn', 'dbg', 'wUrl', 'swUrl', 'dwUrl', 'dCss', 'eCss'];
const KNOWN = new Set(['publishableKey', 'pk', 'endpoint', 'apiUrl', 'timeout', 'verbose', 'storage', 'cookieDomain', 'autoInjectTokenOnSubmit', 'autoInjectTokenOnRequest', 'formTokenInputName', ...WITHOUT_EFFECT]);

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
  if (typeof key !== 'string' || !key.startsWith('pk_')) throw new Error('Rampart: configure({ pk: "pk_…" }) (or { publishableKey: "pk_…" }): the environment\'s publishable key');
  const warnings: string[] = [];
  for (const name of Object.keys(given)) if (!KNOWN.has(name)) warnings.push(`configure: unknown option "${name}" ignored`);
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
    if (typeof given.timeout === 'number' && Number.isFinite(given.timeout) && given.timeout > 0) timeoutMs = given.timeout;
    else warnings.push('configure: option "timeout" must be a positive number of milliseconds; ignored');
  }
  const storage = given.storage;
  let storageKey = DEFAULT_STORAGE_KEY;
  if (storage !== undefined) {
    if (storage && typeof storage === 'object' && (storage.name === undefined || (typeof storage.name === 'string' && /^[\w.:-]{1,64}$/.test(storage.name)))) storageKey = storage.name ?? storageKey;
    else warnings.push('configure: option "storage" must be { name: 1 to 64 letters, digits, _ . : - }; ignored');
  }
  const field = str('formTokenInputName');
  if (field !== undefined && !/^[\w.[\]-]{1,64}$/.test(field)) warnings.push('configure: option "formTokenInputName" must be a field name of 1 to 64 characters; ignored');
  if (!PUBLISHABLE_KEY.test(key)) warnings.push('configure: the publishable key does not look like one (pk_ and 8 to 64 letters, digits, _ or -): Rampart will refuse it');
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

/** The form a submit event is for (the handler's element, else the event's target). */
export function formOf(event: Event): HTMLFormElement | null {
  const f = event.currentTarget instanceof HTMLFormElement ? event.currentTarget : event.target;
  return f instanceof HTMLFormElement ? f : null;
}

/**
 * castle-js's `injectTokenOnSubmit(event, onDone?)`: the submit held, a fresh token put in the
 * form's `field` (added when missing), then the form submitted (or `onDone(event)` called). Without
 * a token the form still goes: the backend scores the login with less evidence.
 */
export function injectOnSubmitEvent(event: Event, field: string, token: () => Promise<string>, onDone?: (event: Event) => unknown): void {
  const form = formOf(event);
  if (!form) return;
  event.preventDefault();
  const done = (t: string) => {
    setField(form, field, t);
    // HTMLFormElement.submit() does not fire 'submit' again.
    if (typeof onDone === 'function') onDone(event);
    else form.submit();
  };
  token().then(done, () => done(''));
}

/** The values castle-js's `formEventOnSubmit` reports: the fields marked `data-castle-value="<name>"`, never a password. */
export function markedValues(form: HTMLFormElement): Record<string, string> {
  const values: Record<string, string> = {};
  for (const el of Array.from(form.querySelectorAll<HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement>('[data-castle-value]'))) {
    const name = el.getAttribute('data-castle-value');
    if (!name || (el instanceof HTMLInputElement && el.type === 'password')) continue;
    values[name] = el.value;
  }
  return values;
}

/** A user argument of castle-js's helpers: a user object, or the backend's JWT. */
export function userArgument(user: UserParams | string | undefined): { user?: UserParams; userJwt?: string } {
  return typeof user === 'string' ? { userJwt: user } : user ? { user } : {};
}

let requestsPatched = false;

/**
 * `autoInjectTokenOnRequest`: every same-origin request the page makes with fetch or
 * XMLHttpRequest, other than GET, HEAD and OPTIONS (a login, a sign-up, a change), carries a fresh
 * token in `header`; requests to `skip` (Rampart's own) and to other origins never do. A request
 * waits for its token; without one it goes as it was.
 */
export function injectOnRequests(header: string, token: () => Promise<string>, skip: (url: URL) => boolean): void {
  if (requestsPatched) return;
  requestsPatched = true;
  const wants = (url: string, method: string) => {
    const u = attempt(() => new URL(url, location.href), null);
    return u !== null && u.origin === location.origin && !/^(GET|HEAD|OPTIONS)$/i.test(method) && !skip(u);
  };
  const nativeFetch = window.fetch;
  if (typeof nativeFetch === 'function') {
    window.fetch = function (input: RequestInfo | URL, init?: RequestInit): Promise<Response> {
      const request = typeof Request === 'function' && input instanceof Request ? input : null;
      const method = init?.method ?? request?.method ?? 'GET';
      if (!wants(request ? request.url : String(input), method)) return nativeFetch.call(window, input, init);
      return token().then(
        (t) => {
          const headers = new Headers(init?.headers ?? request?.headers);
          headers.set(header, t);
          return nativeFetch.call(window, input, { ...init, headers });
        },
        () => nativeFetch.call(window, input, init),
      );
    };
  }
  if (typeof XMLHttpRequest !== 'function') return;
  const proto = XMLHttpRequest.prototype;
  const open = proto.open as (this: XMLHttpRequest, ...args: unknown[]) => void;
  const send = proto.send;
  const opened = new WeakMap<XMLHttpRequest, boolean>();
  proto.open = function (this: XMLHttpRequest, ...args: unknown[]): void {
    // A synchronous request cannot wait for a token: it goes as it is.
    opened.set(this, args[2] !== false && wants(String(args[1]), String(args[0])));
    open.apply(this, args);
  } as typeof proto.open;
  proto.send = function (this: XMLHttpRequest, body?: Document | XMLHttpRequestBodyInit | null): void {
    if (!opened.get(this)) return send.call(this, body);
    opened.delete(this);
    token().then(
      (t) => {
        attempt(() => this.setRequestHeader(header, t), undefined);
        send.call(this, body);
      },
      () => send.call(this, body),
    );
  };
}
