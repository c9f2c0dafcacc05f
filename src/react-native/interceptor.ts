/**
 * The interceptor: puts a fresh request token in a header on every request to the app's own API
 * (the allow list), for `fetch` and for axios. Typed structurally, so the package depends on
 * neither the DOM's fetch types nor axios. A token is minted per request because the server
 * accepts each one for one login flow only.
 */
export interface InterceptorDeps {
  /** Whether a URL is under the base-URL allow list (allow-list.ts). */
  allowList: { allows(url: string): boolean };
  headerName: () => string;
  /** A fresh token, or null when none can be had in time (the request then goes without one). */
  token: () => Promise<string | null>;
  /** Told of every request under the allow list as it goes out (a flush trigger); never delays it. */
  allowed?: (url: string) => void;
}

type HeaderPairs = ReadonlyArray<readonly [string, string]> | string[][];
interface HeadersLike {
  forEach(callback: (value: string, key: string) => void): void;
}
interface RequestLike {
  url: string;
  headers?: unknown;
}
export interface FetchInitLike {
  headers?: unknown;
  [key: string]: unknown;
}
type FetchLike = (input: unknown, init?: FetchInitLike) => Promise<unknown>;

const isHeadersLike = (h: unknown): h is HeadersLike =>
  typeof h === 'object' &&
  h !== null &&
  typeof (h as HeadersLike).forEach === 'function' &&
  !Array.isArray(h);
const isRequestLike = (x: unknown): x is RequestLike =>
  typeof x === 'object' && x !== null && typeof (x as RequestLike).url === 'string';

/** The URL a fetch call goes to: a string, a URL object (`href`) or a Request (`url`). */
function urlOf(input: unknown): string | null {
  if (typeof input === 'string') return input;
  if (typeof input === 'object' && input !== null) {
    const o = input as { href?: unknown; url?: unknown };
    if (typeof o.href === 'string') return o.href;
    if (typeof o.url === 'string') return o.url;
  }
  return null;
}

/** Headers of any accepted shape as a plain object, with `name` set (replacing any spelling of it). */
function withHeader(headers: unknown, name: string, value: string): Record<string, string> {
  const out: Record<string, string> = {};
  const add = (k: string, v: string) => {
    if (k.toLowerCase() !== name.toLowerCase()) out[k] = v;
  };
  if (Array.isArray(headers)) for (const [k, v] of headers as HeaderPairs) add(String(k), String(v));
  else if (isHeadersLike(headers)) headers.forEach((v, k) => add(k, v));
  else if (typeof headers === 'object' && headers !== null)
    for (const [k, v] of Object.entries(headers)) if (v !== undefined) add(k, String(v));
  out[name] = value;
  return out;
}

/**
 * `fetch` with the token header added to allow-listed URLs. With a Request and no `init.headers`
 * the Request's own headers are carried over, since `init.headers` replaces them.
 */
export function wrapFetch<F extends (...args: never[]) => Promise<unknown>>(
  fetchImpl: F,
  deps: InterceptorDeps,
): F {
  const inner = fetchImpl as unknown as FetchLike;
  const wrapped: FetchLike = async (input, init) => {
    const url = urlOf(input);
    if (url === null || !deps.allowList.allows(url)) return inner(input, init);
    deps.allowed?.(url);
    const token = await deps.token();
    if (token === null) return inner(input, init);
    const source =
      init?.headers !== undefined ? init.headers : isRequestLike(input) ? input.headers : undefined;
    return inner(input, { ...init, headers: withHeader(source, deps.headerName(), token) });
  };
  return wrapped as unknown as F;
}

/** What the interceptor reads of an axios request config. */
export interface AxiosRequestConfigLike {
  url?: string;
  baseURL?: string;
  headers?: unknown;
}

/** axios's rule for joining `baseURL` and `url` (an absolute `url` wins). */
function axiosUrl(config: AxiosRequestConfigLike): string | null {
  const url = config.url ?? '';
  if (/^([a-z][a-z\d+\-.]*:)?\/\//i.test(url)) return url;
  if (!config.baseURL) return url || null;
  return url ? `${config.baseURL.replace(/\/+$/, '')}/${url.replace(/^\/+/, '')}` : config.baseURL;
}

/** For `axios.interceptors.request.use(…)`: the same rule as wrapFetch, on axios's config. */
export function axiosInterceptor(
  deps: InterceptorDeps,
): <C extends AxiosRequestConfigLike>(config: C) => Promise<C> {
  return async (config) => {
    const url = axiosUrl(config);
    if (url === null || !deps.allowList.allows(url)) return config;
    deps.allowed?.(url);
    const token = await deps.token();
    if (token === null) return config;
    const headers = config.headers as { set?: (name: string, value: string) => unknown } | undefined;
    // axios ≥ 1 gives an AxiosHeaders instance (set it in place); older ones a plain object.
    if (headers && typeof headers.set === 'function') headers.set(deps.headerName(), token);
    else config.headers = withHeader(headers, deps.headerName(), token);
    return config;
  };
}
