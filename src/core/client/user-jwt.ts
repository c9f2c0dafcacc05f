/**
 * The signed-user form of an app's identify (Castle's `userJwt`): a JWT the application's backend
 * signs with the environment's API secret (HS256) and hands to the app, whose payload names the
 * user (`id`, or `sub`). Rampart takes it as it takes a user signature: an identify whose JWT
 * verifies under one of the live secrets, names the same user and has not expired is `verified`.
 * Only HS256: the secret is shared, so no other algorithm (and never `none`) is accepted.
 *
 * Pure: no I/O.
 */
import { hmacSha256, safeEqual } from '../crypto';

/** Longest JWT accepted (the events' schema bounds it too). */
export const USER_JWT_MAX_LENGTH = 4096;
/** Clock skew tolerated on `exp` and `nbf`. */
const SKEW_S = 30;
const PART = /^[A-Za-z0-9_-]+$/;

/** A JOSE segment (a JWT's or JWS's header or claims): its base64url JSON object, or null. */
export function joseSegment(part: string): Record<string, unknown> | null {
  try {
    const v: unknown = JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/** The user a JWT names (its `id`, else its `sub`), without verifying it; null when it names none. */
export function userIdOfJwt(jwt: string): string | null {
  const parts = typeof jwt === 'string' ? jwt.split('.') : [];
  const payload =
    parts.length === 3 && PART.test(parts[1] as string) ? joseSegment(parts[1] as string) : null;
  if (!payload) return null;
  const id = payload.id ?? payload.sub;
  if (typeof id === 'string' && id.length > 0 && id.length <= 128) return id;
  if (typeof id === 'number' && Number.isSafeInteger(id)) return String(id);
  return null;
}

/**
 * The user a JWT names when it verifies (HS256 under one of `secrets`, constant time; `exp` not
 * passed and `nbf` reached, 30 s of skew, where present); else null. Never throws.
 */
export function verifyUserJwt(secrets: readonly string[], jwt: string, now: number): string | null {
  if (typeof jwt !== 'string' || jwt.length > USER_JWT_MAX_LENGTH) return null;
  const parts = jwt.split('.');
  if (parts.length !== 3 || !parts.every((p) => PART.test(p))) return null;
  const [h, p, sig] = parts as [string, string, string];
  const header = joseSegment(h);
  if (!header || header.alg !== 'HS256') return null;
  let ok = false;
  for (const secret of secrets)
    if (safeEqual(hmacSha256(secret, `${h}.${p}`).toString('base64url'), sig)) ok = true;
  if (!ok) return null;
  const payload = joseSegment(p);
  if (!payload) return null;
  const seconds = now / 1000;
  if (payload.exp !== undefined && (typeof payload.exp !== 'number' || payload.exp + SKEW_S < seconds))
    return null;
  if (payload.nbf !== undefined && (typeof payload.nbf !== 'number' || payload.nbf - SKEW_S > seconds))
    return null;
  return userIdOfJwt(jwt);
}
