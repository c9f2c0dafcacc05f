/**
 * The base-URL allow list: which requests get a request token. A token is the app's proof of
 * device to its own API, so it must never reach another host. A URL is allowed when its scheme,
 * host and port equal an entry's and its path is the entry's path or below it at a `/` boundary.
 *
 * The URL is parsed here, conservatively, rather than with `URL`: React Native's `URL` is
 * incomplete on several versions, and the native HTTP stack (OkHttp, NSURLSession) parses the
 * string again on its own. Whatever two parsers might read differently (user info, a backslash,
 * spaces or control characters, percent-encoding or non-ASCII in the host, dot segments) is
 * refused, so an odd URL goes without a token rather than to the wrong host.
 */

export interface HttpUrl {
  scheme: 'http' | 'https';
  /** Lower-case host name, IPv4 address or bracketed IPv6 address. */
  host: string;
  port: number;
  /** The path, `/` when empty; without query or fragment. */
  path: string;
}

const DEFAULT_PORT = { http: 80, https: 443 } as const;
const HOST = /^(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*$|^\[[0-9a-f:.]+\]$/;

/** An absolute http(s) URL, or null when it is anything else or could be read two ways. */
export function parseHttpUrl(url: string): HttpUrl | null {
  // Control characters, spaces and backslashes: parsers disagree on them (WHATWG treats "\" as "/").
  if (typeof url !== 'string') return null;
  for (let i = 0; i < url.length; i++) {
    const c = url.charCodeAt(i);
    if (c <= 0x20 || c === 0x7f || c === 0x5c) return null;
  }
  const m = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/?#]*)([^?#]*)/.exec(url);
  if (!m) return null;
  const scheme = m[1].toLowerCase();
  if (scheme !== 'http' && scheme !== 'https') return null;
  const authority = m[2];
  // User info (`https://api.example.com@evil.com`) is refused outright: no app needs it.
  if (authority.includes('@')) return null;
  const hp = /^(\[[^\]]*\]|[^:]*)(?::(\d{1,5}))?$/.exec(authority);
  if (!hp) return null;
  const host = hp[1].toLowerCase();
  if (!HOST.test(host)) return null;
  const port = hp[2] === undefined ? DEFAULT_PORT[scheme] : Number(hp[2]);
  if (!Number.isInteger(port) || port < 1 || port > 65535) return null;
  const path = m[3] === '' ? '/' : m[3];
  // Dot segments, plain or percent-encoded, could climb out of an allowed prefix.
  if (path.split('/').some((seg) => /^(?:\.|%2e){1,2}$/i.test(seg))) return null;
  return { scheme, host, port, path };
}

export class AllowList {
  private readonly entries: HttpUrl[];

  /** Throws on an entry that is not an absolute http(s) URL: a typo must not silently disable the header. */
  constructor(urls: readonly string[]) {
    this.entries = urls.map((u) => {
      const parsed = parseHttpUrl(u);
      if (!parsed) throw new Error(`Rampart: baseURLAllowList entry is not an absolute http(s) URL: ${u}`);
      return parsed;
    });
  }

  get size(): number {
    return this.entries.length;
  }

  allows(url: string): boolean {
    const u = parseHttpUrl(url);
    if (!u) return false;
    return this.entries.some((e) => {
      if (e.scheme !== u.scheme || e.host !== u.host || e.port !== u.port) return false;
      const base = e.path.endsWith('/') ? e.path : `${e.path}/`;
      // `/v1` allows `/v1` and `/v1/…`, never `/v10`.
      return u.path === e.path || u.path.startsWith(base);
    });
  }
}
