/**
 * Normalises the request context an application forwards: headers in either form, the client
 * fingerprint wherever it arrived, and sandbox test tokens.
 */
import type { Action, TestToken } from '../model';
import type { FieldProblem } from '../errors';

export const MAX_HEADERS = 100;
export const MAX_HEADER_NAME = 256;
export const MAX_HEADER_VALUE = 8192;
export const MAX_TOKEN_LENGTH = 4096;

const FINGERPRINT_HEADERS = ['x-castle-client-id', 'x-castle-request-token', 'x-service-client-id'];
const NO_FINGERPRINT = new Set(['', '?', '_', 'false', 'null', 'undefined']);
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
export const TOKEN_CHARS = /^[\x21-\x7e]+$/;

/** Normalise headers (object or [name, value] pairs) to lower-cased names; collect problems. */
export function normaliseHeaders(raw: unknown, field: string, problems: FieldProblem[]): Record<string, string | true> {
  const out: Record<string, string | true> = Object.create(null) as Record<string, string | true>;
  if (raw === undefined || raw === null) return out;
  let pairs: [unknown, unknown][];
  if (Array.isArray(raw)) {
    pairs = [];
    for (const [i, item] of raw.entries()) {
      if (!Array.isArray(item) || item.length !== 2) {
        problems.push({ field: `${field}[${i}]`, message: 'must be a [name, value] pair' });
        return out;
      }
      pairs.push([item[0], item[1]]);
    }
  } else if (typeof raw === 'object') {
    pairs = Object.entries(raw as Record<string, unknown>);
  } else {
    problems.push({ field, message: 'must be an object of header name to value, or an array of [name, value] pairs' });
    return out;
  }
  if (pairs.length > MAX_HEADERS) {
    problems.push({ field, message: `at most ${MAX_HEADERS} headers` });
    return out;
  }
  for (const [name, value] of pairs) {
    if (typeof name !== 'string' || name.length === 0 || name.length > MAX_HEADER_NAME || !HEADER_NAME.test(name)) {
      problems.push({ field, message: `invalid header name ${JSON.stringify(String(name).slice(0, 40))}` });
      continue;
    }
    const key = name.toLowerCase();
    if (value === true || value === 'true') out[key] = true;
    else if (typeof value === 'string') {
      if (value.length > MAX_HEADER_VALUE) problems.push({ field: `${field}.${name}`, message: `at most ${MAX_HEADER_VALUE} characters` });
      else out[key] = value;
    } else if (value === false || value === null) {
      continue;
    } else {
      problems.push({ field: `${field}.${name}`, message: 'must be a string or true' });
    }
  }
  return out;
}

/**
 * Names whose value is a credential, a session or a secret, in a header or in any member of a
 * payload kept as text: Rampart keeps only that they were sent (the value becomes `true`, as
 * Castle's SDKs send a scrubbed header), never the value.
 */
const SENSITIVE_HEADER = /^(authorization|proxy-authorization|cookie|set-cookie)$|token|secret|passw|session|csrf|xsrf|api[-_]?key|auth|jwt|bearer|signature/;

export const isSensitiveHeader = (name: string): boolean => SENSITIVE_HEADER.test(name.toLowerCase());

/**
 * The headers whose values Rampart keeps: what the model reads (the user agent, the Accept
 * family, Sec-Fetch-* and client hints), and what an analyst reads to tell a browser, an app and
 * a proxy apart (the origin, the host, the forwarding chain, an Android web view's app). Every
 * other header is kept as sent (`true`), never its value: an allow-list, because a deny-list
 * cannot keep up with the names applications give their credentials (`X-Access-Key`, `X-Jwt`).
 */
const KEPT_HEADERS: ReadonlySet<string> = new Set([
  'user-agent', 'accept', 'accept-language', 'accept-encoding', 'accept-charset', 'content-type', 'content-length',
  'sec-fetch-site', 'sec-fetch-mode', 'sec-fetch-dest', 'sec-fetch-user',
  'sec-ch-ua', 'sec-ch-ua-mobile', 'sec-ch-ua-platform', 'sec-ch-ua-platform-version', 'sec-ch-ua-model', 'sec-ch-ua-arch', 'sec-ch-ua-bitness', 'sec-ch-ua-full-version-list', 'sec-ch-ua-wow64',
  'dnt', 'sec-gpc', 'upgrade-insecure-requests', 'cache-control', 'pragma', 'priority', 'te', 'connection', 'keep-alive',
  'origin', 'host', 'via', 'forwarded', 'x-forwarded-for', 'x-forwarded-proto', 'x-forwarded-host', 'x-real-ip', 'true-client-ip', 'cf-connecting-ip', 'cf-ipcountry',
  'x-requested-with',
]);

/** Whether Rampart keeps this header's value (KEPT_HEADERS); every other header is kept as present. */
export const keepsHeaderValue = (name: string): boolean => {
  const n = name.toLowerCase();
  return KEPT_HEADERS.has(n) && !isSensitiveHeader(n);
};

/** The headers as they may be stored and scored: values only of the kept headers, every other header `true`. */
export function scrubHeaders(headers: Record<string, string | true>): Record<string, string | true> {
  const out: Record<string, string | true> = Object.create(null) as Record<string, string | true>;
  for (const [name, value] of Object.entries(headers)) out[name] = keepsHeaderValue(name) ? value : true;
  return out;
}

/** A member name that looks like an HTTP header (`X-Access-Key`): words joined by hyphens. */
const HEADER_LIKE = /^[A-Za-z0-9]+(?:-[A-Za-z0-9]+)+$/;

/**
 * A payload kept as text (the debugger's copy of a rejected request). Well-formed JSON: its
 * `context.headers` (an object, or `[name, value]` pairs) keep only the kept headers' values, as
 * stored events do, and any other member named like a secret is `true`. Malformed JSON, scrubbed
 * as text: every string member named like a secret, or like a header that is not kept, is `true`.
 */
export function scrubPayloadText(text: string): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  if (parsed !== undefined && typeof parsed === 'object' && parsed !== null) return JSON.stringify(scrubValue(parsed, null));
  // Malformed: within each `"headers": {…}` (or `[…]`) the allow-list, everywhere the deny-list
  // and header-like names.
  let out = '';
  let at = 0;
  for (const m of text.matchAll(/"headers"\s*:\s*[{[]/g)) {
    const start = (m.index ?? 0) + m[0].length - 1;
    if (start < at) continue;
    const end = closingOf(text, start);
    out += scrubMembers(text.slice(at, start), false) + scrubMembers(text.slice(start, end), true);
    at = end;
  }
  return out + scrubMembers(text.slice(at), false);
}

/** Where the object or list opening at `start` ends (after its closing bracket; the text's end when it never closes). */
function closingOf(text: string, start: number): number {
  let depth = 0;
  let inString = false;
  for (let i = start; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '{' || c === '[') depth++;
    else if (c === '}' || c === ']') {
      depth--;
      if (depth === 0) return i + 1;
    }
  }
  return text.length;
}

/** String members (`"name": "value"`, and `["name", "value"]` pairs in headers) scrubbed as text. */
function scrubMembers(text: string, headers: boolean): string {
  const hidden = (name: string) => isSensitiveHeader(name) || (headers ? !keepsHeaderValue(name) : HEADER_LIKE.test(name) && !keepsHeaderValue(name));
  const members = text.replace(/"((?:[^"\\]|\\.){1,256})"(\s*):(\s*)"(?:[^"\\]|\\.)*"/g, (whole, name: string, a: string, b: string) => (hidden(name) ? `"${name}"${a}:${b}true` : whole));
  if (!headers) return members;
  return members.replace(/\[(\s*)"((?:[^"\\]|\\.){1,256})"(\s*),(\s*)"(?:[^"\\]|\\.)*"(\s*)\]/g, (whole, a: string, name: string, b: string, c: string, d: string) => (hidden(name) ? `[${a}"${name}"${b},${c}true${d}]` : whole));
}

/** A parsed payload with secrets scrubbed (see scrubPayloadText); `parent` is the member it is the value of. */
function scrubValue(value: unknown, parent: string | null): unknown {
  if (Array.isArray(value)) {
    // Headers as [name, value] pairs.
    if (parent === 'headers') return value.map((pair) => (Array.isArray(pair) && typeof pair[0] === 'string' && typeof pair[1] === 'string' && !keepsHeaderValue(pair[0]) ? [pair[0], true] : scrubValue(pair, null)));
    return value.map((v) => scrubValue(v, null));
  }
  if (typeof value !== 'object' || value === null) return value;
  const out: Record<string, unknown> = {};
  for (const [name, v] of Object.entries(value as Record<string, unknown>)) {
    if (parent === 'headers' && typeof v === 'string') out[name] = keepsHeaderValue(name) ? v : true;
    else if (typeof v === 'string' && isSensitiveHeader(name)) out[name] = true;
    else out[name] = scrubValue(v, name);
  }
  return out;
}

/** A value that means "a fingerprint token", as opposed to the SDKs' placeholders for none. */
export function fingerprintValue(value: unknown): string | null {
  if (typeof value !== 'string') return null;
  const v = value.trim();
  return NO_FINGERPRINT.has(v) ? null : v;
}

/** The fingerprint from `client_id`, `request_token`, or the client-id headers, in that order. */
export function pickFingerprint(candidates: unknown[], headers: Record<string, string | true>): string | null {
  for (const c of candidates) {
    const v = fingerprintValue(c);
    if (v) return v;
  }
  for (const h of FINGERPRINT_HEADERS) {
    const v = fingerprintValue(headers[h]);
    if (v) return v;
  }
  return null;
}

/** Whether a token's shape is acceptable (printable ASCII, bounded length). */
export function tokenShapeOk(token: string): boolean {
  return token.length <= MAX_TOKEN_LENGTH && TOKEN_CHARS.test(token);
}

const ACTIONS = new Set<Action>(['allow', 'challenge', 'deny']);

/**
 * Parse a sandbox test token: `test|device:chrome_on_mac|ip:us-ca|policy.action:deny|risk:0.9`.
 * Returns null when the token is not a test token; throws a message when it is a malformed one.
 */
export function parseTestToken(token: string): TestToken | null {
  if (!token.startsWith('test|') && token !== 'test') return null;
  const result: TestToken = { raw: token, device: null, ip: null, action: null, risk: null };
  for (const part of token.split('|').slice(1)) {
    const idx = part.indexOf(':');
    if (idx <= 0) throw new Error(`test token part "${part}" is not key:value`);
    const key = part.slice(0, idx);
    const value = part.slice(idx + 1);
    switch (key) {
      case 'device':
        if (!/^[a-z0-9_-]{1,64}$/i.test(value)) throw new Error('test token device must be a short name');
        result.device = value.toLowerCase();
        break;
      case 'ip':
        if (!/^[a-z]{2}(-[a-z0-9]{1,3})?$/i.test(value)) throw new Error('test token ip must look like us or us-ca');
        result.ip = value.toLowerCase();
        break;
      case 'policy.action':
      case 'action':
        if (!ACTIONS.has(value as Action)) throw new Error('test token policy.action must be allow, challenge or deny');
        result.action = value as Action;
        break;
      case 'risk': {
        const n = Number(value);
        if (!Number.isFinite(n) || n < 0 || n > 1) throw new Error('test token risk must be a number in [0, 1]');
        result.risk = n;
        break;
      }
      default:
        throw new Error(`test token key "${key}" is not recognised`);
    }
  }
  return result;
}
