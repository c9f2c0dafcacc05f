/**
 * Mobile sessions and the request tokens an app mints from them (docs/mobile.md).
 *
 * A session is `rps1.<claims>.<mac>`: what the collector learnt of the device and the app (the
 * device key, the app, the integrity evidence), signed under a key derived from the master key,
 * like the browser's tokens. With it the app gets a session key, HMAC(master-derived key, session
 * id), which Rampart never stores: it derives it again from the session id. On every request to
 * its own API the app mints `rpm1.<claims>.<mac>.<t>.<nonce>.<tokenMac>`, the token MAC being
 * HMAC-SHA256 under the session key, so that each request carries a fresh token without a round
 * trip to Rampart, and a token taken from one request serves no other flow. Verifying one costs
 * two HMACs and no database look-up; single use is checked as for browser tokens (the `t:`
 * counter of `<session id>.<nonce>`).
 *
 * Pure: no I/O.
 */
import { hmacSha256, safeEqual } from '../crypto';
import type { MobilePlatform } from './mobile';
import { decodeClaims, encodeClaims, type TokenProblem } from './token';

export const SESSION_PREFIX = 'rps1.';
export const MOBILE_TOKEN_PREFIX = 'rpm1.';
/** How long a session may mint tokens. */
export const SESSION_TTL_MS = 24 * 3_600_000;
/** How long a minted token is accepted after its time, and how far ahead of Rampart's clock it may be. */
export const MOBILE_TOKEN_TTL_MS = 300_000;
const SKEW_MS = 30_000;
/** Events of a session are accepted this long after it expired (an app that was offline flushes late). */
export const SESSION_EVENTS_GRACE_MS = 7 * 86_400_000;

/** What a session says about the device and the app. Short names: it travels in every token. */
export interface SessionClaims {
  env: string;
  /** The session's id (its key and the tokens' single use are derived from it). */
  sid: string;
  iat: number;
  exp: number;
  /** The device key and the machine key (mobile.ts). */
  dk: string;
  mk: string;
  p: MobilePlatform;
  /** OS version, model, manufacturer. */
  os: string;
  mo: string;
  mf: string | null;
  /** The app: id, version, build. */
  app: string;
  av: string;
  ab: string | null;
  /** Integrity findings (mobile.ts INTEGRITY). */
  int: string[];
  /** The kind of platform attestation the app carried, if any. */
  att: string | null;
  /** What verifying it found (attestation/verifier.ts encodeOutcome; absent: nothing carried, none required). */
  ats?: string;
  /** The device's language and timezone offset (minutes to UTC, as getTimezoneOffset()). */
  lang: string | null;
  tzo: number | null;
  /** The vendor id itself, where the app forwards it (device-ID forwarding). */
  did: string | null;
}

export type OpenedSession = { ok: true; claims: SessionClaims } | { ok: false; reason: TokenProblem };
export type OpenedMobileToken =
  { ok: true; claims: SessionClaims; jti: string; at: number } | { ok: false; reason: TokenProblem };

const b64 = (b: Buffer) => b.toString('base64url');
const sessionMacKey = (key: Buffer) => hmacSha256(key, 'rps1:session');
const sessionKeyRoot = (key: Buffer) => hmacSha256(key, 'rps1:session-key');

/** The session key the app holds for a session id (never stored: derived again to verify). */
export const sessionKey = (key: Buffer, sid: string): string => b64(hmacSha256(sessionKeyRoot(key), sid));

export function signSession(key: Buffer, claims: SessionClaims): string {
  const body = encodeClaims(claims);
  return `${SESSION_PREFIX}${body}.${b64(hmacSha256(sessionMacKey(key), `${SESSION_PREFIX}${body}`))}`;
}

/** Whether a client id is one of Rampart's minted mobile tokens. */
export const isMobileToken = (token: string): boolean => token.startsWith(MOBILE_TOKEN_PREFIX);

/** Verify a session's MAC and environment; `graceMs` past its expiry it still opens. Never throws. */
export function openSession(
  key: Buffer,
  session: string,
  env: string,
  now: number,
  graceMs = 0,
): OpenedSession {
  if (typeof session !== 'string' || !session.startsWith(SESSION_PREFIX) || session.length > 8192)
    return { ok: false, reason: 'malformed' };
  const parts = session.slice(SESSION_PREFIX.length).split('.');
  if (parts.length !== 2) return { ok: false, reason: 'malformed' };
  return openParts(key, parts[0] as string, parts[1] as string, env, now, graceMs);
}

function openParts(
  key: Buffer,
  body: string,
  mac: string,
  env: string,
  now: number,
  graceMs: number,
): OpenedSession {
  if (!safeEqual(mac, b64(hmacSha256(sessionMacKey(key), `${SESSION_PREFIX}${body}`))))
    return { ok: false, reason: 'forged' };
  const claims = parseClaims(body);
  if (!claims) return { ok: false, reason: 'malformed' };
  if (claims.env !== env) return { ok: false, reason: 'other_environment' };
  if (claims.iat - now > SKEW_MS) return { ok: false, reason: 'not_yet_valid' };
  if (now > claims.exp + graceMs) return { ok: false, reason: 'expired' };
  return { ok: true, claims };
}

/** Mint a token from a session: what the app does for each request, and what registering does for the first token it answers with (service.ts), so the app has one before it mints its own. */
export function mintMobileToken(session: string, key: string, at: number, nonce: string): string {
  const signed = `${MOBILE_TOKEN_PREFIX}${session.slice(SESSION_PREFIX.length)}.${Math.floor(at)}.${nonce}`;
  return `${signed}.${b64(hmacSha256(Buffer.from(key, 'utf8'), signed))}`;
}

/** Verify a minted token: the session's MAC, the token's MAC under the session key, its age and environment. Never throws. */
export function openMobileToken(key: Buffer, token: string, env: string, now: number): OpenedMobileToken {
  if (!isMobileToken(token) || token.length > 8192) return { ok: false, reason: 'malformed' };
  const parts = token.slice(MOBILE_TOKEN_PREFIX.length).split('.');
  if (parts.length !== 5) return { ok: false, reason: 'malformed' };
  const [body, smac, t, nonce, mac] = parts as [string, string, string, string, string];
  if (!/^\d{1,15}$/.test(t) || !/^[A-Za-z0-9_-]{16,32}$/.test(nonce))
    return { ok: false, reason: 'malformed' };
  // The session first: its key is derived from the session id it carries.
  const session = openParts(key, body, smac, env, now, MOBILE_TOKEN_TTL_MS);
  if (!session.ok) return session;
  const signed = token.slice(0, token.lastIndexOf('.'));
  if (!safeEqual(mac, b64(hmacSha256(Buffer.from(sessionKey(key, session.claims.sid), 'utf8'), signed))))
    return { ok: false, reason: 'forged' };
  const at = Number(t);
  // A time past the session's end is a token of an ended session; one ahead of this clock, a phone whose offset is off.
  if (now - at > MOBILE_TOKEN_TTL_MS || at > session.claims.exp + SKEW_MS)
    return { ok: false, reason: 'expired' };
  if (at - now > SKEW_MS) return { ok: false, reason: 'not_yet_valid' };
  return { ok: true, claims: session.claims, jti: `${session.claims.sid}.${nonce}`, at };
}

function parseClaims(encoded: string): SessionClaims | null {
  const c = decodeClaims(encoded);
  if (!c) return null;
  const str = (x: unknown, max = 160): x is string =>
    typeof x === 'string' && x.length > 0 && x.length <= max;
  const opt = (x: unknown, max = 160): string | null => (typeof x === 'string' && x.length <= max ? x : null);
  const num = (x: unknown): x is number => typeof x === 'number' && Number.isFinite(x);
  if (!str(c.env) || !str(c.sid) || !str(c.dk) || !str(c.mk) || !num(c.iat) || !num(c.exp)) return null;
  if (c.p !== 'android' && c.p !== 'ios') return null;
  if (!str(c.os, 32) || !str(c.mo, 64) || !str(c.app) || !str(c.av, 32)) return null;
  if (!Array.isArray(c.int) || c.int.length > 16 || !c.int.every((x) => str(x, 32))) return null;
  return {
    env: c.env,
    sid: c.sid,
    iat: c.iat,
    exp: c.exp,
    dk: c.dk,
    mk: c.mk,
    p: c.p,
    os: c.os,
    mo: c.mo,
    mf: opt(c.mf, 64),
    app: c.app,
    av: c.av,
    ab: opt(c.ab, 32),
    int: c.int as string[],
    att: opt(c.att, 32),
    ...(typeof c.ats === 'string' && c.ats.length > 0 && c.ats.length <= 48 ? { ats: c.ats } : {}),
    lang: opt(c.lang, 8),
    tzo: num(c.tzo) ? c.tzo : null,
    did: opt(c.did, 64),
  };
}
