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
