/**
 * Small cryptographic helpers: secret hashing, constant-time comparison, random tokens and
 * sealing (authenticated encryption) of secrets that must be recoverable to sign webhooks.
 */
import * as nodeCrypto from 'node:crypto';
import {
  createCipheriv,
  createDecipheriv,
  createHash,
  createHmac,
  randomBytes,
  randomFillSync,
  randomUUID,
  timingSafeEqual,
  type BinaryToTextEncoding,
} from 'node:crypto';

/**
 * A digest of text in one call: Node's one-shot `crypto.hash` (from 20.12), which makes no hash
 * object (a verdict hashes its e-mail, its credential and its device's fingerprint: ~2.5 times
 * faster for such short text), else a hash object as before.
 */
const digest: (algorithm: string, value: string, encoding: BinaryToTextEncoding) => string =
  typeof (nodeCrypto as { hash?: unknown }).hash === 'function'
    ? (algorithm, value, encoding) => nodeCrypto.hash(algorithm, value, encoding)
    : (algorithm, value, encoding) => createHash(algorithm).update(value, 'utf8').digest(encoding);

export const sha256Hex = (value: string): string => digest('sha256', value, 'hex');

/**
 * A string function with its last results kept (at most `size` inputs, forgotten all at once when
 * full): for hashes of text that repeats (a user agent, an e-mail), which cost a hash object each.
 */
export function memoText(size: number, f: (value: string) => string): (value: string) => string {
  const kept = new Map<string, string>();
  return (value) => {
    let out = kept.get(value);
    if (out === undefined) {
      out = f(value);
      if (kept.size >= size) kept.clear();
      kept.set(value, out);
    }
    return out;
  };
}

/** A short, stable key for long text (16 URL-safe characters of its SHA-1): not a security measure. */
export const shortHash = (value: string): string => digest('sha1', value, 'base64url').slice(0, 16);

/** Constant-time string comparison (lengths are compared first, which leaks only the length). */
export function safeEqual(a: string, b: string): boolean {
  const ab = Buffer.from(a, 'utf8');
  const bb = Buffer.from(b, 'utf8');
  if (ab.length !== bb.length) {
    timingSafeEqual(ab, ab);
    return false;
  }
  return timingSafeEqual(ab, bb);
}

/** URL-safe random token with `bytes` bytes of entropy. */
export const randomToken = (bytes = 24): string => randomBytes(bytes).toString('base64url');
export const uuid = (): string => randomUUID();
/**
 * Random bytes drawn from the system's generator a pool at a time (every id a verdict makes would
 * otherwise ask it once): each byte is handed out once, then the pool is filled again.
 */
const randomPool = Buffer.alloc(4096);
let randomPoolAt = randomPool.length;
/** Fill `target` (at most the pool's size) with random bytes never handed out before. */
function takeRandom(target: Buffer): void {
  if (randomPoolAt + target.length > randomPool.length) {
    randomFillSync(randomPool);
    randomPoolAt = 0;
  }
  randomPool.copy(target, 0, randomPoolAt, randomPoolAt + target.length);
  randomPoolAt += target.length;
}
/** The bytes of the id being made (a scratch buffer: its text is what leaves). */
const uuidBytes = Buffer.alloc(16);

/**
 * A UUIDv7 (RFC 9562): the time in milliseconds in its first 48 bits, then 74 random bits. Ids made
 * later sort after earlier ones, so a database index on them grows at its end: an event's `_id`
 * entry lands on the index page the previous events filled, not on a random one.
 */
export function timeOrderedUuid(now: number = Date.now()): string {
  const b = uuidBytes;
  takeRandom(b);
  b.writeUIntBE(Math.max(0, Math.min(now, 0xffffffffffff)), 0, 6);
  b[6] = ((b[6] ?? 0) & 0x0f) | 0x70;
  b[8] = ((b[8] ?? 0) & 0x3f) | 0x80;
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}
/** A random 32-byte key (for MACs whose key need not outlive the process). */
export const randomKey = (): Buffer => randomBytes(32);

export const hmacSha256 = (key: string | Buffer, data: string | Buffer): Buffer =>
  createHmac('sha256', key).update(data).digest();

/** Seals and opens values with AES-256-GCM under a 32-byte master key. */
export class Sealer {
  private readonly key: Buffer;
  constructor(masterKeyHex: string) {
    this.key = Buffer.from(masterKeyHex, 'hex');
    if (this.key.length !== 32) throw new Error('master key must be 32 bytes');
  }
  seal(plain: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return [
      'v1',
      iv.toString('base64url'),
      cipher.getAuthTag().toString('base64url'),
      body.toString('base64url'),
    ].join('.');
  }
  open(sealed: string): string {
    const [v, iv, tag, body] = sealed.split('.');
    if (v !== 'v1' || !iv || !tag || body === undefined) throw new Error('unrecognised sealed value');
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64url'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString(
      'utf8',
    );
  }
  /** A key for signing links and other server-side MACs, derived so it never equals the sealing key. */
  macKey(purpose: string): Buffer {
    return hmacSha256(this.key, `rampart:${purpose}`);
  }
}
