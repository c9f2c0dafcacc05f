/**
 * The one scrubbing rule for everything Rampart stores (docs/privacy.md, "What is never kept",
 * states it): stored events (their headers, properties, user traits and context), the profile's
 * traits, device contexts, webhook bodies, privacy exports and the debugger's copy of rejected
 * payloads.
 *
 * - Headers: only the values of the headers the model and analysts read (KEPT_HEADERS) are kept;
 *   every other header is kept as sent, `true` (as Castle's SDKs send a scrubbed header).
 * - A member whose name says it holds a secret (isSecretName), at any depth: its value, whatever
 *   it holds, is `true`.
 * - In any string: the value of a query parameter named like a secret (isSecretParam) and a URL's
 *   password (`https://user:…@host`) are `***`.
 * - A payload kept as text (the debugger's): the same rule applied by pattern, never by parsing
 *   (scrubText), since what is kept there is what could not be parsed.
 *
 * Every walk is bounded (depth, members, characters) and iterative or bounded in recursion, and
 * a value with nothing to scrub is returned as it came: no copy of an event that needs none.
 */

/** What a secret's value becomes inside text (a query parameter, `name=value`, `Name: value`). */
export const SCRUBBED = '***';
/** What a value past the walk's bounds (MAX_SCRUB_DEPTH, MAX_SCRUB_MEMBERS) becomes. */
export const CUT = '[cut]';
/** Nesting the walk goes into (the REST and gRPC doors refuse bodies deeper than 32 levels). */
export const MAX_SCRUB_DEPTH = 32;
/** Members and items one walk visits; the rest of a larger value is cut. */
export const MAX_SCRUB_MEMBERS = 10_000;

/**
 * Parts that make a name secret wherever they appear in it, once lower-cased and stripped of
 * separators (`X-Api-Key` → `xapikey`, `newPassword` → `newpassword`).
 */
const SECRET_PARTS = [
  'passw',
  'passphrase',
  'passcode',
  'secret',
  'token',
  'apikey',
  'accesskey',
  'privatekey',
  'authorization',
  'cookie',
  'credential',
  'csrf',
  'xsrf',
  'jwt',
  'bearer',
  'signature',
  'sessionid',
  'sessid',
  'creditcard',
  'cardnumber',
  'ccnumber',
  'cvv',
  'cvc',
  'authcode',
  'pincode',
  'otpcode',
];
/** Short words that make a name secret when they are its last word (`db_pass`, `x-session`, `card_pin`). */
const SECRET_LAST_WORDS: ReadonlySet<string> = new Set([
  'pwd',
  'pass',
  'pin',
  'otp',
  'totp',
  'auth',
  'sig',
  'session',
  'ssn',
]);
/** Last words that make a name secret after one of these words (`private_key`, `reset_code`, `card_number`). */
const QUALIFIED: Readonly<Record<string, ReadonlySet<string>>> = {
  key: new Set([
    'api',
    'access',
    'private',
    'secret',
    'signing',
    'encryption',
    'master',
    'client',
    'license',
    'session',
  ]),
  code: new Set([
    'verification',
    'verify',
    'confirmation',
    'confirm',
    'reset',
    'recovery',
    'backup',
    'security',
    'auth',
    'otp',
    'mfa',
    '2fa',
    'login',
    'sms',
    'access',
    'activation',
  ]),
  number: new Set(['card', 'cc', 'security']),
};
/** Query parameters that carry a credential in a URL whatever else they are called in JSON (`?code=`, `?key=`). */
const SECRET_PARAMS: ReadonlySet<string> = new Set(['code', 'key', 'ticket']);

function classify(name: string): boolean {
  const lower = name.toLowerCase();
  const squashed = lower.replace(/[^a-z0-9]+/g, '');
  if (SECRET_PARTS.some((part) => squashed.includes(part))) return true;
  const words = name
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((w) => w.length > 0);
  const last = words[words.length - 1];
  if (last === undefined) return false;
  if (SECRET_LAST_WORDS.has(last)) return true;
  const before = words[words.length - 2];
  return before !== undefined && (QUALIFIED[last]?.has(before) ?? false);
}

/** Names seen recently, with their verdict: names repeat from event to event. */
const known = new Map<string, boolean>();
const KNOWN_MAX = 4_096;

/**
 * Whether a member, header or parameter of this name holds a secret: a password, a token, a key,
 * a session, a cookie, a signature, a one-time or reset code, a payment card's number or code.
 * Case and separators do not matter (`X-Api-Key`, `api_key`, `apiKey`).
 */
export function isSecretName(name: string): boolean {
  const hit = known.get(name);
  if (hit !== undefined) return hit;
  const secret = classify(name);
  if (name.length <= 64) {
    if (known.size >= KNOWN_MAX) known.clear();
    known.set(name, secret);
  }
  return secret;
}

/** Whether a URL's query parameter of this name carries a credential (isSecretName, or `code`, `key`, `ticket`). */
export const isSecretParam = (name: string): boolean =>
  isSecretName(name) || SECRET_PARAMS.has(name.toLowerCase());

/**
 * The headers whose values Rampart keeps: what the model reads (the user agent, the Accept
 * family, Sec-Fetch-* and client hints), and what an analyst reads to tell a browser, an app and
 * a proxy apart (the origin, the host, the forwarding chain, an Android web view's app). Every
 * other header is kept as sent (`true`), never its value: an allow-list, because a deny-list
 * cannot keep up with the names applications give their credentials (`X-Access-Key`, `X-Jwt`).
 */
const KEPT_HEADERS: ReadonlySet<string> = new Set([
  'user-agent',
  'accept',
  'accept-language',
  'accept-encoding',
  'accept-charset',
  'content-type',
  'content-length',
  'sec-fetch-site',
  'sec-fetch-mode',
  'sec-fetch-dest',
  'sec-fetch-user',
  'sec-ch-ua',
  'sec-ch-ua-mobile',
  'sec-ch-ua-platform',
  'sec-ch-ua-platform-version',
  'sec-ch-ua-model',
  'sec-ch-ua-arch',
  'sec-ch-ua-bitness',
  'sec-ch-ua-full-version-list',
  'sec-ch-ua-wow64',
  'dnt',
  'sec-gpc',
  'upgrade-insecure-requests',
  'cache-control',
  'pragma',
  'priority',
  'te',
  'connection',
  'keep-alive',
  'origin',
  'host',
  'via',
  'forwarded',
  'x-forwarded-for',
  'x-forwarded-proto',
  'x-forwarded-host',
  'x-real-ip',
  'true-client-ip',
  'cf-connecting-ip',
  'cf-ipcountry',
  'x-requested-with',
]);

/** Whether Rampart keeps this header's value (KEPT_HEADERS); every other header is kept as present. */
export const keepsHeaderValue = (name: string): boolean => {
  const n = name.toLowerCase();
  return KEPT_HEADERS.has(n) && !isSecretName(n);
};

/** The headers as they may be stored and scored: values only of the kept headers, every other header `true`. */
export function scrubHeaders(headers: Record<string, string | true>): Record<string, string | true> {
  const out: Record<string, string | true> = Object.create(null) as Record<string, string | true>;
  for (const name in headers)
    if (Object.prototype.hasOwnProperty.call(headers, name))
      out[name] = keepsHeaderValue(name) ? (headers[name] as string | true) : true;
  return out;
}

/** `?name=value`, `&name=value`, `#name=value` (and a string that starts `name=value`). */
const QUERY_PARAM = /(^|[?&#;]\s*)([^=&#;?\s]{1,128})=([^&#;\s]*)/g;
/** The password of a URL's user information: `//user:password@`. */
const URL_PASSWORD = /(\/\/[^/\s:@?#]*:)([^/\s@?#]+)@/g;

/** Where a query parameter's name starts after: `?`, `&`, `#`, `;` (or the string's start). */
const isParamLead = (c: number): boolean => c === 0x3f || c === 0x26 || c === 0x23 || c === 0x3b;

/**
 * Whether a string has a `name=value` whose name is a secret parameter: a scan without a copy,
 * since most strings with an `=` (a link with a page number) have none.
 */
function hasSecretParam(s: string): boolean {
  for (let eq = s.indexOf('='); eq !== -1; eq = s.indexOf('=', eq + 1)) {
    let start = eq;
    while (start > 0 && start > eq - 129) {
      const c = s.charCodeAt(start - 1);
      if (isParamLead(c) || c === 0x3d || c <= 0x20) break;
      start--;
    }
    if (
      start < eq &&
      (start === 0 || isParamLead(s.charCodeAt(start - 1)) || s.charCodeAt(start - 1) <= 0x20) &&
      isSecretParam(s.slice(start, eq))
    )
      return true;
  }
  return false;
}

/** A string with the values of its secret query parameters and a URL's password as `***`. */
export function scrubString(s: string): string {
  let out = s;
  if (out.includes('=') && hasSecretParam(out))
    out = out.replace(QUERY_PARAM, (whole, lead: string, name: string, value: string) =>
      value.length > 0 && value !== SCRUBBED && isSecretParam(name) ? `${lead}${name}=${SCRUBBED}` : whole,
    );
  if (out.includes('://') && out.includes('@'))
    out = out.replace(URL_PASSWORD, (whole, head: string, pass: string) =>
      pass === SCRUBBED ? whole : `${head}${SCRUBBED}@`,
    );
  return out;
}

/** Own-property assignment that keeps `__proto__` a plain key, as JSON.parse does. */
function setOwn(o: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__')
    Object.defineProperty(o, key, { value, enumerable: true, writable: true, configurable: true });
  else o[key] = value;
}

const isPlainObject = (v: object): boolean => {
  const proto: unknown = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
};

interface Budget {
  left: number;
}

function scrubAny(v: unknown, depth: number, budget: Budget): unknown {
  if (typeof v === 'string') return scrubString(v);
  if (typeof v !== 'object' || v === null) return v;
  if (Array.isArray(v)) return depth > MAX_SCRUB_DEPTH ? CUT : scrubArray(v, depth, budget);
  if (!isPlainObject(v)) return v; // a Date a typed door sent
  return depth > MAX_SCRUB_DEPTH ? CUT : scrubObject(v as Record<string, unknown>, depth, budget);
}

function scrubArray(a: unknown[], depth: number, budget: Budget): unknown[] {
  let out: unknown[] | null = null;
  for (let i = 0; i < a.length; i++) {
    const v = a[i];
    const s = --budget.left < 0 ? CUT : scrubAny(v, depth + 1, budget);
    if (out === null && s !== v) out = a.slice(0, i);
    if (out !== null) out.push(s);
  }
  return out ?? a;
}

function scrubObject(o: Record<string, unknown>, depth: number, budget: Budget): Record<string, unknown> {
  let out: Record<string, unknown> | null = null;
  const keys = Object.keys(o);
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i] as string;
    const v = o[k];
    let s: unknown;
    if (--budget.left < 0) s = CUT;
    else if (v !== true && v !== false && v !== null && v !== undefined && isSecretName(k)) s = true;
    else s = scrubAny(v, depth + 1, budget);
    if (out === null && s !== v) {
      out = {};
      for (let j = 0; j < i; j++) setOwn(out, keys[j] as string, o[keys[j] as string]);
    }
    if (out !== null) setOwn(out, k, s);
  }
  return out ?? o;
}

/**
 * A record (properties, user traits, a context's extra members) as it may be stored: every member
 * named like a secret `true`, secret query parameters and URL passwords `***`, at any depth, within
 * MAX_SCRUB_DEPTH levels and MAX_SCRUB_MEMBERS members (beyond them, values are CUT). The record
 * itself when there was nothing to scrub.
 */
export function scrubRecord<T extends Record<string, unknown>>(record: T): T {
  return scrubObject(record, 1, { left: MAX_SCRUB_MEMBERS }) as T;
}

/**
 * A name and its separator in text: a quoted name (any quote, JSON's escaped `\"` too) or a bare
 * one, then `:` or `=`; or a `["name",` pair (headers as pairs). Lazy and bounded: linear in the text.
 */
const MEMBER =
  /(?<![\w$.-])(?:(\\?["'`])([^"'`\\\r\n]{1,256}?)\1|([\w$.-]{1,128}))[ \t]*([:=])[ \t]*|\[\s*(\\?["'`])([^"'`\\\r\n]{1,256}?)\5\s*(,)\s*/g;
/** A member name that looks like an HTTP header (`X-Access-Key`): words joined by hyphens. */
const HEADER_LIKE = /^[A-Za-z0-9]+(?:-[A-Za-z0-9]+)+$/;

/** Where the quoted string opening at `start` (quote `q`) ends: after its closing quote, or the text's end. */
function stringEnd(text: string, start: number, q: string): number {
  const escaped = q.length === 2;
  for (let i = start + q.length; i < text.length; i++) {
    const c = text[i];
    if (escaped) {
      if (c === '\\' && text[i + 1] === q[1]) return i + 2;
      if (c === '\\') i++;
    } else if (c === '\\') i++;
    else if (c === q) return i + 1;
  }
  return text.length;
}

/** Where the object or list opening at `start` ends (after its closing bracket; the text's end when it never closes). */
function closingOf(text: string, start: number): number {
  let depth = 0;
  let quote = '';
  for (let i = start; i < text.length; i++) {
    const c = text[i] as string;
    if (quote) {
      if (c === '\\') i++;
      else if (c === quote) quote = '';
    } else if (c === '"' || c === "'" || c === '`') quote = c;
    else if (c === '{' || c === '[') depth++;
    else if (c === '}' || c === ']') {
      depth--;
      if (depth === 0) return i + 1;
    }
  }
  return text.length;
}

const NUMBER = /^-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/;
const LITERAL = /^(?:true|false|null)(?![\w$])/;
/** Where an unquoted value ends: `name=value` stops at a parameter's end, `Name: value` at the line's (or a member's) end. */
const BARE_AFTER_EQUALS = /[&\s;,"'`}\]<>#]/;
const BARE_AFTER_COLON = /[\r\n,"'`}\]]/;

type ValueKind = 'quoted' | 'container' | 'number' | 'literal' | 'bare';

/** The kind of the value starting at `at` after a separator (and its quote); null when there is none. */
function valueAt(
  text: string,
  at: number,
  sep: string,
): { kind: ValueKind; quote: string; end?: number } | null {
  const c = text[at];
  if (c === undefined) return null;
  if (c === '"' || c === "'" || c === '`') return { kind: 'quoted', quote: c };
  if (c === '\\' && (text[at + 1] === '"' || text[at + 1] === "'"))
    return { kind: 'quoted', quote: text.slice(at, at + 2) };
  if (c === '{' || c === '[') return { kind: 'container', quote: '' };
  if (sep !== '=') {
    const head = text.slice(at, at + 64);
    const literal = LITERAL.exec(head);
    if (literal) return { kind: 'literal', quote: '', end: at + literal[0].length };
    const number = NUMBER.exec(head);
    if (number && !/[\w$.]/.test(head[number[0].length] ?? ''))
      return { kind: 'number', quote: '', end: at + number[0].length };
  }
  const stop = sep === '=' ? BARE_AFTER_EQUALS : BARE_AFTER_COLON;
  return stop.test(c) ? null : { kind: 'bare', quote: '' };
}

/**
 * Where the value at `at` ends. Computed only for a value that is replaced (the scan then goes on
 * after it) or a `headers` object, so that the scan stays linear.
 */
function valueEnd(
  text: string,
  at: number,
  sep: string,
  v: { kind: ValueKind; quote: string; end?: number },
): number {
  if (v.end !== undefined) return v.end;
  if (v.kind === 'quoted') return stringEnd(text, at, v.quote);
  if (v.kind === 'container') return closingOf(text, at);
  const stop = sep === '=' ? BARE_AFTER_EQUALS : BARE_AFTER_COLON;
  let end = at;
  while (end < text.length && !stop.test(text[end] as string)) end++;
  // `Name: value` ends before the spaces that end its line.
  while (end > at + 1 && /[ \t]/.test(text[end - 1] as string)) end--;
  return end;
}

/**
 * A payload kept as text (the debugger's copy of a rejected request), scrubbed by pattern, never
 * by parsing, so that nothing it holds (nesting, size, broken syntax) can make it fail or keep a
 * secret: every `name: value`, `name=value` and `["name", value]` with the name quoted in any way
 * or not at all, in JSON or in free text, inside strings too (a reset link's `?token=`). The value
 * of a name isSecretName or isSecretParam calls secret, of a header not kept inside `headers`, and
 * of a name that looks like a header not kept, becomes `true` where it was a JSON value (so that a
 * payload that was JSON stays JSON) and `***` where it was text; a value that never ends (a cut
 * body) is scrubbed to the end. Linear in the text.
 */
export function scrubText(text: string): string {
  const re = new RegExp(MEMBER.source, 'g');
  let out = '';
  let at = 0;
  let headersUntil = -1;
  for (let m = re.exec(text); m !== null; m = re.exec(text)) {
    const pair = m[7] !== undefined;
    const name = (pair ? m[6] : (m[2] ?? m[3])) as string;
    const sep = (pair ? ',' : m[4]) as string;
    const quotedName = pair || m[1] !== undefined;
    const valueStart = re.lastIndex;
    const value = valueAt(text, valueStart, sep);
    if (value === null || value.kind === 'literal') continue;
    const inHeaders = valueStart < headersUntil;
    if (!inHeaders && value.kind === 'container' && name.toLowerCase() === 'headers') {
      headersUntil = valueEnd(text, valueStart, sep, value);
      continue;
    }
    const secret = isSecretName(name) || (sep === '=' && isSecretParam(name));
    const hiddenHeader =
      (value.kind === 'quoted' || value.kind === 'bare') &&
      (inHeaders ? !keepsHeaderValue(name) : HEADER_LIKE.test(name) && !keepsHeaderValue(name));
    if (!secret && !hiddenHeader) continue;
    const end = valueEnd(text, valueStart, sep, value);
    const q = value.quote.length;
    const held = value.kind === 'quoted' ? text.slice(valueStart + q, end - q) : text.slice(valueStart, end);
    if (held === SCRUBBED || (value.kind === 'quoted' && end - valueStart < 2 * q)) continue;
    const json = sep !== '=' && quotedName && value.kind !== 'bare';
    out += text.slice(at, valueStart) + (json ? 'true' : SCRUBBED);
    at = end;
    // A quoted value's closing quote may open the next name (a string that ended in `password:`).
    re.lastIndex = value.kind === 'quoted' && end < text.length ? end - q : end;
  }
  return at === 0 ? text : out + text.slice(at);
}
