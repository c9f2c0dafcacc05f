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
export function normaliseHeaders(
  raw: unknown,
  field: string,
  problems: FieldProblem[],
): Record<string, string | true> {
  const out: Record<string, string | true> = Object.create(null) as Record<string, string | true>;
  if (raw === undefined || raw === null) return out;
  if (Array.isArray(raw)) {
    for (let i = 0; i < raw.length; i++) {
      const item = raw[i] as unknown;
      if (!Array.isArray(item) || item.length !== 2) {
        problems.push({ field: `${field}[${i}]`, message: 'must be a [name, value] pair' });
        return out;
      }
    }
    if (raw.length > MAX_HEADERS) {
      problems.push({ field, message: `at most ${MAX_HEADERS} headers` });
      return out;
    }
    for (const item of raw as [unknown, unknown][]) header(out, item[0], item[1], field, problems);
  } else if (typeof raw === 'object') {
    const headers = raw as Record<string, unknown>;
    let count = 0;
    for (const name in headers) if (Object.prototype.hasOwnProperty.call(headers, name)) count++;
    if (count > MAX_HEADERS) {
      problems.push({ field, message: `at most ${MAX_HEADERS} headers` });
      return out;
    }
    for (const name in headers)
      if (Object.prototype.hasOwnProperty.call(headers, name))
        header(out, name, headers[name], field, problems);
  } else {
    problems.push({
      field,
      message: 'must be an object of header name to value, or an array of [name, value] pairs',
    });
  }
  return out;
}

/** One header into `out` (its name lower-cased), or its problem. */
function header(
  out: Record<string, string | true>,
  name: unknown,
  value: unknown,
  field: string,
  problems: FieldProblem[],
): void {
  if (
    typeof name !== 'string' ||
    name.length === 0 ||
    name.length > MAX_HEADER_NAME ||
    !HEADER_NAME.test(name)
  ) {
    problems.push({ field, message: `invalid header name ${JSON.stringify(String(name).slice(0, 40))}` });
    return;
  }
  const key = name.toLowerCase();
  if (value === true || value === 'true') out[key] = true;
  else if (typeof value === 'string') {
    if (value.length > MAX_HEADER_VALUE)
      problems.push({ field: `${field}.${name}`, message: `at most ${MAX_HEADER_VALUE} characters` });
    else out[key] = value;
  } else if (value === false || value === null) {
    return;
  } else {
    problems.push({ field: `${field}.${name}`, message: 'must be a string or true' });
  }
}

/** A value that means "a fingerprint token", as opposed to the SDKs' placeholders for none. */
export function fingerprintValue(value: unknown): string | null {
  if (typeof value !== 'string') return null;
  const v = value.trim();
  return NO_FINGERPRINT.has(v) ? null : v;
}

/** The fingerprint from `client_id`, `request_token`, or the client-id headers, in that order. */
export function pickFingerprint(
  candidates: unknown[],
  headers: Record<string, string | true>,
): string | null {
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
        if (!/^[a-z]{2}(-[a-z0-9]{1,3})?$/i.test(value))
          throw new Error('test token ip must look like us or us-ca');
        result.ip = value.toLowerCase();
        break;
      case 'policy.action':
      case 'action':
        if (!ACTIONS.has(value as Action))
          throw new Error('test token policy.action must be allow, challenge or deny');
        result.action = value as Action;
        break;
      case 'risk': {
        const n = Number(value);
        if (!Number.isFinite(n) || n < 0 || n > 1)
          throw new Error('test token risk must be a number in [0, 1]');
        result.risk = n;
        break;
      }
      default:
        throw new Error(`test token key "${key}" is not recognised`);
    }
  }
  return result;
}
