/**
 * clients/test-vectors/allow-list.json: which requests get the request-token header, computed by
 * the reference implementation (src/react-native/allow-list.ts; the server has no allow list: it
 * is the client libraries' rule, documented in docs/clients.md).
 */
import { AllowList } from '../../../src/react-native/allow-list';

const API = 'https://api.example.com/v1';
const LOCAL = 'http://10.0.2.2:8080';

/** [allow list, url, why]: each url against its list. */
const CASES: [string[], string, string][] = [
  [[API], 'https://api.example.com/v1', 'the entry itself'],
  [[API], 'https://api.example.com/v1/login', 'below the entry'],
  [[API], 'https://api.example.com/v1/', 'the entry with a trailing slash'],
  [[API], 'https://api.example.com/v1/users/42/devices', 'deep below the entry'],
  [[API], 'https://api.example.com/v10', 'path prefix without a "/" boundary'],
  [[API], 'https://api.example.com/v1x/login', 'path prefix without a "/" boundary, deeper'],
  [[API], 'https://api.example.com/', 'above the entry'],
  [[API], 'https://api.example.com', 'above the entry, empty path'],
  [[API], 'https://api.example.com/V1/login', 'paths are case-sensitive'],
  [[API], 'https://api.example.com/v1/login?next=/admin', 'a query is ignored'],
  [[API], 'https://api.example.com/v1?x=1', 'the entry with a query'],
  [[API], 'https://api.example.com/v1/login#top', 'a fragment is ignored'],
  [[API], 'https://api.example.com/v2?/v1/', 'an allowed path in the query does not count'],
  [[API], 'http://api.example.com/v1/login', 'another scheme'],
  [[API], 'HTTPS://api.example.com/v1/login', 'the scheme is case-insensitive'],
  [[API], 'https://API.Example.COM/v1/login', 'the host is case-insensitive'],
  [[API], 'https://api.example.com:443/v1/login', 'the default port written out'],
  [[API], 'https://api.example.com:8443/v1/login', 'another port'],
  [[API], 'https://api.example.com:/v1/login', 'an empty port'],
  [[API], 'https://api.example.com:0/v1/login', 'port 0'],
  [[API], 'https://api.example.com:65536/v1/login', 'a port out of range'],
  [[API], 'https://api.example.com.evil.com/v1/login', 'a look-alike host (suffix)'],
  [[API], 'https://evilapi.example.com/v1/login', 'a look-alike host (prefix)'],
  [[API], 'https://example.com/v1/login', 'the parent domain'],
  [[API], 'https://sub.api.example.com/v1/login', 'a subdomain'],
  [[API], 'https://api.example.com@evil.com/v1/login', 'user info: the host is evil.com'],
  [[API], 'https://user:pass@api.example.com/v1/login', 'user info, even on the allowed host'],
  [[API], 'https://evil.com#@api.example.com/v1/login', 'the allowed host in the fragment'],
  [[API], 'https://evil.com?@api.example.com/v1/login', 'the allowed host in the query'],
  [[API], 'https://evil.com/https://api.example.com/v1', 'the allowed URL in the path of another host'],
  [[API], 'https://api.example.com\\@evil.com/v1/login', 'a backslash (WHATWG reads it as "/")'],
  [[API], 'https://api.example.com/v1\\..\\admin', 'a backslash in the path'],
  [[API], 'https://api.example.com./v1/login', 'a trailing dot on the host'],
  [[API], 'https://api.example.com%2F@evil.com/v1/login', 'percent-encoding in the authority'],
  [[API], 'https://api%2eexample.com/v1/login', 'percent-encoding in the host'],
  [[API], 'https://api.example.com/v1/../admin', 'a dot segment climbing out of the entry'],
  [[API], 'https://api.example.com/v1/%2e%2e/admin', 'a percent-encoded dot segment'],
  [[API], 'https://api.example.com/v1/%2E%2e/admin', 'a percent-encoded dot segment, mixed case'],
  [[API], 'https://api.example.com/v1/./login', 'a single dot segment'],
  [[API], 'https://api.example.com/v1/..login', 'dots inside a segment are a name, not a dot segment'],
  [[API], 'https://api.example.com/v1/log in', 'a space'],
  [[API], 'https://api.example.com/v1/login\t', 'a control character'],
  [[API], ' https://api.example.com/v1/login', 'a leading space'],
  [[API], '//api.example.com/v1/login', 'scheme-relative'],
  [[API], '/v1/login', 'relative'],
  [[API], '', 'empty'],
  [[API], 'wss://api.example.com/v1/socket', 'another scheme (WebSocket)'],
  [[API], 'ftp://api.example.com/v1/file', 'another scheme (ftp)'],
  [
    ['https://xn--bcher-kva.example/api'],
    'https://xn--bcher-kva.example/api/login',
    'an IDN host in its ASCII (punycode) form',
  ],
  [
    ['https://xn--bcher-kva.example/api'],
    'https://bücher.example/api/login',
    'an IDN host in Unicode: refused, the native stack may encode it otherwise',
  ],
  [[LOCAL], 'http://10.0.2.2:8080/login', 'an IPv4 address and a port'],
  [[LOCAL], 'http://10.0.2.2/login', 'the same address on the default port'],
  [[LOCAL], 'http://10.0.2.20:8080/login', 'another address with the same prefix'],
  [['http://[::1]:3000/api'], 'http://[::1]:3000/api/login', 'a bracketed IPv6 address'],
  [
    ['http://[::1]:3000/api'],
    'http://[0:0:0:0:0:0:0:1]:3000/api/login',
    'the same IPv6 address written otherwise: compared as written',
  ],
  [
    ['https://api.example.com'],
    'https://api.example.com/anything',
    'an entry without a path allows the whole origin',
  ],
  [
    ['https://api.example.com/'],
    'https://api.example.com/anything',
    'an entry of "/" allows the whole origin',
  ],
  [['https://api.example.com/v1/'], 'https://api.example.com/v1/login', 'an entry ending in "/", below it'],
  [
    ['https://api.example.com/v1/'],
    'https://api.example.com/v1',
    'an entry ending in "/" does not allow the path without it',
  ],
  [
    ['https://API.EXAMPLE.COM/v1'],
    'https://api.example.com/v1/login',
    "the entry's host is case-insensitive too",
  ],
  [
    ['https://api.example.com:443/v1'],
    'https://api.example.com/v1/login',
    "the entry's default port written out",
  ],
  [[API, LOCAL], 'http://10.0.2.2:8080/health', 'any entry of several'],
  [[], 'https://api.example.com/v1/login', 'an empty list allows nothing'],
];

/** Entries that configure must refuse (a typo must not silently disable the header). */
const INVALID_ENTRIES = [
  'api.example.com/v1',
  '/v1',
  'ftp://api.example.com',
  'https://user@api.example.com',
  'https://api.example.com:99999',
  'https://api example.com',
  '',
];

export function allowListVectors() {
  return {
    cases: CASES.map(([allow, url, why]) => ({ allow, url, sent: new AllowList(allow).allows(url), why })),
    invalid_entries: INVALID_ENTRIES.map((entry) => {
      let refused = false;
      try {
        new AllowList([entry]);
      } catch {
        refused = true;
      }
      if (!refused)
        throw new Error(`allow-list vectors: ${entry} is not refused by the reference implementation`);
      return entry;
    }),
  };
}
