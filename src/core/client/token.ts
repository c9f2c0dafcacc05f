/**
 * Rampart's client tokens: what the collector answers the browser script, and what the
 * application's backend forwards as `request_token` (or `client_id`), unchanged, through Castle's
 * SDKs. A token is `rpt1.<claims>.<mac>`: the claims as base64url JSON, and an HMAC-SHA256 of
 * `rpt1.<claims>` under a key derived from the master key, so only this deployment can issue one
 * and any change to the claims is seen. The claims carry what a verdict needs (the device key,
 * the automation evidence, the user agent the browser reported), so verifying a token costs no
 * database look-up; single use is checked separately (see population.ts, `t:` documents).
 *
 * Pure: no I/O.
 */
import { hmacSha256, safeEqual } from '../crypto';

export const CLIENT_TOKEN_PREFIX = 'rpt1.';
/** How long a token is accepted after it was issued. */
export const CLIENT_TOKEN_TTL_MS = 300_000;
/** Clock skew tolerated between the instance that issued a token and the one verifying it. */
const SKEW_MS = 30_000;

export interface ClientClaims {
  /** The environment the token was issued for. */
  env: string;
  /** The token's own id (single use is tracked by it). */
  jti: string;
  /** Issued at (epoch ms, server time). */
  iat: number;
  /** The device key derived from the browser's stable components. */
  dk: string;
  /** Automation and tampering evidence the browser showed (names, see components.ts). */
  auto: string[];
  /** Short hash of the user agent the browser itself reported. */
  ua: string;
  /** The browser's first language (primary tag), when it reported one. */
  lang?: string | null;
  /** The browser's timezone offset (minutes to UTC, as `getTimezoneOffset()`), when it reported one. */
  tzo?: number | null;
  /** The machine vector of the browser's stable components (components.ts machineVectorOf), when it reported any. */
  mk?: string | null;
  /** The difficulty (bits) of the proof of work the collection carried (proof.ts); absent: none. */
  pw?: number;
  /** The challenge that proof answered: tokens minted from one proof share one flow's uses. */
  pc?: string;
  /** What the page reported of itself (proof.ts BehaviourClaim), when it did. */
  bh?: Record<string, unknown>;
}

/**
 * Why a token, session or challenge does not open. `not_yet_valid`: its time is more than the
 * tolerated skew ahead of the verifier's clock (the issuing server's, or the phone's clock offset,
 * is off), which says nothing of its age: it is not `expired`.
 */
export type TokenProblem = 'malformed' | 'forged' | 'expired' | 'not_yet_valid' | 'other_environment';

export type OpenedToken = { ok: true; claims: ClientClaims } | { ok: false; reason: TokenProblem };

/** Whether a token is one of Rampart's (as opposed to a Castle token or a test token). */
export const isClientToken = (token: string): boolean => token.startsWith(CLIENT_TOKEN_PREFIX);

const mac = (key: Buffer, signed: string) => hmacSha256(key, signed).toString('base64url');

export function signClientToken(key: Buffer, claims: ClientClaims): string {
  const signed = `${CLIENT_TOKEN_PREFIX}${encodeClaims(claims)}`;
  return `${signed}.${mac(key, signed)}`;
}

/** Verify a token's MAC, age (at most `maxAgeMs` since its issue) and environment; never throws. */
export function openClientToken(
  key: Buffer,
  token: string,
  env: string,
  now: number,
  maxAgeMs = CLIENT_TOKEN_TTL_MS,
): OpenedToken {
  const dot = token.lastIndexOf('.');
  if (!isClientToken(token) || dot <= CLIENT_TOKEN_PREFIX.length) return { ok: false, reason: 'malformed' };
  const signed = token.slice(0, dot);
  if (!safeEqual(token.slice(dot + 1), mac(key, signed))) return { ok: false, reason: 'forged' };
  const claims = parseClaims(signed.slice(CLIENT_TOKEN_PREFIX.length));
  if (!claims) return { ok: false, reason: 'malformed' };
  if (claims.env !== env) return { ok: false, reason: 'other_environment' };
  if (claims.iat - now > SKEW_MS) return { ok: false, reason: 'not_yet_valid' };
  if (now - claims.iat > maxAgeMs) return { ok: false, reason: 'expired' };
  return { ok: true, claims };
}

/** Claims as a token carries them: base64url JSON (session.ts's too). */
export const encodeClaims = (claims: object): string =>
  Buffer.from(JSON.stringify(claims), 'utf8').toString('base64url');

/** The object a token's claims encode, or null when they are not base64url JSON of an object (never throws). */
export function decodeClaims(encoded: string): Record<string, unknown> | null {
  try {
    const v: unknown = JSON.parse(Buffer.from(encoded, 'base64url').toString('utf8'));
    return typeof v === 'object' && v !== null ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

function parseClaims(encoded: string): ClientClaims | null {
  const c = decodeClaims(encoded);
  if (!c) return null;
  const str = (x: unknown): x is string => typeof x === 'string' && x.length > 0 && x.length <= 128;
  if (
    !str(c.env) ||
    !str(c.jti) ||
    !str(c.dk) ||
    typeof c.ua !== 'string' ||
    typeof c.iat !== 'number' ||
    !Number.isFinite(c.iat)
  )
    return null;
  if (!Array.isArray(c.auto) || c.auto.length > 16 || !c.auto.every(str)) return null;
  const lang = typeof c.lang === 'string' && c.lang.length <= 8 ? c.lang : null;
  const tzo = typeof c.tzo === 'number' && Number.isFinite(c.tzo) ? c.tzo : null;
  const mk = typeof c.mk === 'string' && /^[\w-]{6}(\.(?:[\w-]{6}|-)){4}$/.test(c.mk) ? c.mk : null;
  return {
    env: c.env,
    jti: c.jti,
    iat: c.iat,
    dk: c.dk,
    auto: c.auto as string[],
    ua: c.ua,
    lang,
    tzo,
    mk,
    ...provenClaims(c),
  };
}

/** The proof claims a token carries (additive: absent when it carries none). */
function provenClaims(c: Record<string, unknown>): Pick<ClientClaims, 'pw' | 'pc' | 'bh'> {
  return {
    ...(typeof c.pw === 'number' && Number.isInteger(c.pw) && c.pw >= 0 && c.pw <= 64 ? { pw: c.pw } : {}),
    ...(typeof c.pc === 'string' && c.pc.length > 0 && c.pc.length <= 64 ? { pc: c.pc } : {}),
    ...(typeof c.bh === 'object' && c.bh !== null && !Array.isArray(c.bh)
      ? { bh: c.bh as Record<string, unknown> }
      : {}),
  };
}
