/**
 * Webhook signatures. `X-Castle-Signature` is what Castle's official SDKs verify: base64 of
 * HMAC-SHA256 over the raw body, keyed with the API secret. `X-Rampart-Signature` adds replay
 * protection: `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">`.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

/** Base64 HMAC-SHA256 of the raw body under the API secret (the `X-Castle-Signature` value). */
export function signCastle(secret: string, body: string): string {
  return createHmac('sha256', secret).update(body, 'utf8').digest('base64');
}

/** The `X-Rampart-Signature` value for `body` sent at unix time `t` (seconds). */
export function signRampart(secret: string, body: string, t: number): string {
  return `t=${t},v1=${rampartDigest(secret, body, t)}`;
}

function rampartDigest(secret: string, body: string, t: number): string {
  return createHmac('sha256', secret).update(`${t}.${body}`, 'utf8').digest('hex');
}

function equalBytes(a: Buffer, b: Buffer): boolean {
  if (a.length !== b.length) return false;
  return timingSafeEqual(a, b);
}

/** Check an `X-Castle-Signature` value against the raw body (constant-time). */
export function verifyCastle(secret: string, body: string, signature: string): boolean {
  const expected = Buffer.from(signCastle(secret, body), 'utf8');
  return equalBytes(Buffer.from(signature.trim(), 'utf8'), expected);
}

/**
 * Check an `X-Rampart-Signature` header: well-formed, timestamp within `toleranceSec` of `now`
 * (either direction), and one of its `v1` digests matching (constant-time).
 */
export function verifyRampart(
  secret: string,
  body: string,
  header: string,
  toleranceSec: number,
  now: Date,
): boolean {
  let t: number | null = null;
  const digests: string[] = [];
  for (const part of header.split(',')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    const key = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    if (key === 't' && /^\d{1,12}$/.test(value)) t = Number(value);
    else if (key === 'v1' && /^[0-9a-f]{64}$/.test(value)) digests.push(value);
  }
  if (t === null || digests.length === 0) return false;
  if (Math.abs(Math.floor(now.getTime() / 1000) - t) > toleranceSec) return false;
  const expected = Buffer.from(rampartDigest(secret, body, t), 'hex');
  let ok = false;
  for (const d of digests) ok = equalBytes(Buffer.from(d, 'hex'), expected) || ok;
  return ok;
}
