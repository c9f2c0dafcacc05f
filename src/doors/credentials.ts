/**
 * Reads the API secret from an Authorization value, as every door receives it: `Basic` with an
 * empty user name and the secret as password (Castle's scheme), or `Bearer <secret>`.
 */
export function secretFromAuthorization(value: string | string[] | undefined): string | null {
  const header = Array.isArray(value) ? value[0] : value;
  if (!header || header.length > 2048) return null;
  const space = header.indexOf(' ');
  if (space < 0) return null;
  const scheme = header.slice(0, space).toLowerCase();
  const rest = header.slice(space + 1).trim();
  if (scheme === 'bearer') return rest || null;
  if (scheme !== 'basic') return null;
  let decoded: string;
  try {
    decoded = Buffer.from(rest, 'base64').toString('utf8');
  } catch {
    return null;
  }
  const colon = decoded.indexOf(':');
  if (colon < 0) return null;
  return decoded.slice(colon + 1) || null;
}

/** The console's session cookie (see src/console/server.ts). */
export const SESSION_COOKIE = 'rampart_session';
/** The header a console page echoes its session's CSRF token in. */
export const CSRF_HEADER = 'x-rampart-csrf';

/** The console session token of a Cookie header, or null. */
export function sessionFromCookie(value: string | string[] | undefined): string | null {
  const header = Array.isArray(value) ? value.join('; ') : value;
  if (!header || header.length > 8192) return null;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() !== SESSION_COOKIE) continue;
    const v = part.slice(eq + 1).trim();
    return /^[A-Za-z0-9_-]{1,128}$/.test(v) ? v : null;
  }
  return null;
}

/** A single-valued request header, or null. */
export function headerValue(value: string | string[] | undefined): string | null {
  const v = Array.isArray(value) ? value[0] : value;
  return v && v.length <= 512 ? v : null;
}
