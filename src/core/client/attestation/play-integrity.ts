/**
 * Google Play Integrity verdicts, verified offline with the application's own keys (docs/mobile.md,
 * "Attestation"): Google gives the app's owner a decryption key (AES-256) and a verification key
 * (an EC P-256 public key) in the Play Console, and a verdict token is a JWE (`A256KW` key
 * wrapping, `A256GCM` content) wrapping a JWS (`ES256`) of the verdict. With those two keys the
 * token is opened and checked here, with no call to Google: the signature, the request it was made
 * for (its `nonce`, or `requestHash` for standard requests, must be the challenge's binding), the
 * package, and the time Google made it.
 *
 * Pure: no I/O.
 */
import { createDecipheriv, createPublicKey, verify, type KeyObject } from 'node:crypto';
import { joseSegment } from '../user-jwt';

export interface PlayIntegrityKeys {
  /** The decryption key, base64 (32 bytes). */
  decryptionKey: string;
  /** The verification key, base64 of its SPKI DER. */
  verificationKey: string;
}

export type PlayFailure =
  | 'malformed'
  | 'bad_keys'
  | 'undecryptable'
  | 'bad_signature'
  | 'nonce_mismatch'
  | 'app_id_mismatch'
  | 'stale';

/** What Google said of the device and the app (deviceIntegrity, appIntegrity). */
export interface PlayVerdict {
  /** The strongest device label: strong, device, basic, virtual (an emulator with Play services), none (no label). */
  device: 'strong' | 'device' | 'basic' | 'virtual' | 'none';
  /** appRecognitionVerdict: the Play Store's build, another build, or not evaluated. */
  app: 'recognized' | 'unrecognized' | 'unevaluated';
  /** When Google made the verdict (ms since the epoch). */
  at: number;
}

export type PlayResult = { ok: true; value: PlayVerdict } | { ok: false; reason: PlayFailure };

export interface PlayExpectations {
  /** The package the app registers as (the session's app id). */
  packageName: string;
  /** The value the token's nonce or requestHash must carry (base64url, padding and alphabet aside). */
  binding: string;
  /** The earliest and latest acceptable verdict times (ms): the challenge's issue and now, with skew. */
  notBefore: number;
  notAfter: number;
}

const fail = (reason: PlayFailure): PlayResult => ({ ok: false, reason });
const AES_KW_IV = Buffer.from('A6A6A6A6A6A6A6A6', 'hex');
/** Standard base64 or base64url, with or without padding, as one form. */
export const normalBase64 = (s: string): string =>
  s.replace(/=+$/, '').replace(/\+/g, '-').replace(/\//g, '_');

const obj = (v: unknown): Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {};

/** The keys as key material, or null when they are not a 32-byte key and an EC P-256 public key. */
export function readPlayKeys(keys: PlayIntegrityKeys): { aes: Buffer; ec: KeyObject } | null {
  try {
    const aes = Buffer.from(keys.decryptionKey, 'base64');
    const ec = createPublicKey({
      key: Buffer.from(keys.verificationKey, 'base64'),
      format: 'der',
      type: 'spki',
    });
    if (
      aes.length !== 32 ||
      ec.asymmetricKeyType !== 'ec' ||
      ec.asymmetricKeyDetails?.namedCurve !== 'prime256v1'
    )
      return null;
    return { aes, ec };
  } catch {
    return null;
  }
}

/** Decrypt the JWE: the JWS inside, or null. */
function decrypt(token: string, aes: Buffer): string | null {
  const parts = token.split('.');
  if (parts.length !== 5) return null;
  const [h, ek, iv, ct, tag] = parts as [string, string, string, string, string];
  const header = joseSegment(h);
  if (!header || header.alg !== 'A256KW' || header.enc !== 'A256GCM') return null;
  try {
    const unwrap = createDecipheriv('id-aes256-wrap', aes, AES_KW_IV);
    const cek = Buffer.concat([unwrap.update(Buffer.from(ek, 'base64url')), unwrap.final()]);
    const gcm = createDecipheriv('aes-256-gcm', cek, Buffer.from(iv, 'base64url'));
    gcm.setAAD(Buffer.from(h, 'ascii'));
    gcm.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([gcm.update(Buffer.from(ct, 'base64url')), gcm.final()]).toString('utf8');
  } catch {
    return null;
  }
}

const DEVICE_LABELS: ReadonlyArray<[string, PlayVerdict['device']]> = [
  ['MEETS_STRONG_INTEGRITY', 'strong'],
  ['MEETS_DEVICE_INTEGRITY', 'device'],
  ['MEETS_BASIC_INTEGRITY', 'basic'],
  ['MEETS_VIRTUAL_INTEGRITY', 'virtual'],
];

/** Open and check a Play Integrity verdict token (see the module comment). Never throws. */
export function verifyPlayIntegrity(token: string, keys: PlayIntegrityKeys, e: PlayExpectations): PlayResult {
  const k = readPlayKeys(keys);
  if (!k) return fail('bad_keys');
  if (token.split('.').length !== 5) return fail('malformed');
  const jws = decrypt(token, k.aes);
  if (jws === null) return fail('undecryptable');
  const parts = jws.split('.');
  if (parts.length !== 3) return fail('malformed');
  const [h, p, s] = parts as [string, string, string];
  if (joseSegment(h)?.alg !== 'ES256') return fail('bad_signature');
  let good = false;
  try {
    good = verify(
      'sha256',
      Buffer.from(`${h}.${p}`, 'ascii'),
      { key: k.ec, dsaEncoding: 'ieee-p1363' },
      Buffer.from(s, 'base64url'),
    );
  } catch {
    good = false;
  }
  if (!good) return fail('bad_signature');
  const payload = joseSegment(p);
  if (!payload) return fail('malformed');
  const req = obj(payload.requestDetails);
  const bound =
    typeof req.nonce === 'string' ? req.nonce : typeof req.requestHash === 'string' ? req.requestHash : null;
  if (bound === null || normalBase64(bound) !== normalBase64(e.binding)) return fail('nonce_mismatch');
  const app = obj(payload.appIntegrity);
  const pkg = typeof app.packageName === 'string' ? app.packageName : req.requestPackageName;
  if (
    pkg !== e.packageName ||
    (req.requestPackageName !== undefined && req.requestPackageName !== e.packageName)
  )
    return fail('app_id_mismatch');
  const at = Number(req.timestampMillis);
  if (!Number.isFinite(at) || at < e.notBefore || at > e.notAfter) return fail('stale');
  const labels = obj(payload.deviceIntegrity).deviceRecognitionVerdict;
  const list = Array.isArray(labels) ? labels.filter((l): l is string => typeof l === 'string') : [];
  const device = DEVICE_LABELS.find(([label]) => list.includes(label))?.[1] ?? 'none';
  const recognition = app.appRecognitionVerdict;
  const appVerdict =
    recognition === 'PLAY_RECOGNIZED'
      ? 'recognized'
      : recognition === 'UNRECOGNIZED_VERSION'
        ? 'unrecognized'
        : 'unevaluated';
  return { ok: true, value: { device, app: appVerdict, at } };
}
