/**
 * Apple App Attest, verified offline (docs/mobile.md, "Attestation"): an attestation with Apple's
 * App Attestation root certificate alone, and the assertions that follow with the public key it
 * attested.
 *
 * An attestation object is CBOR `{fmt: "apple-appattest", attStmt: {x5c, receipt}, authData}`.
 * It holds when the x5c chain (the credential certificate first) leads to the root, each
 * certificate signed by the next and within its validity dates, every issuer a CA; the credential
 * certificate's extension 1.2.840.113635.100.8.2 holds SHA-256(authData ‖ clientDataHash); the key
 * id is SHA-256 of the credential's public key (the uncompressed P-256 point) and the authData's
 * credential id; the authData's RP id hash is SHA-256 of one of the app's App IDs
 * (`<team id>.<bundle id>`); its counter is 0 and its AAGUID `appattestdevelop` (a development
 * build) or `appattest` and seven zero bytes (the App Store's).
 *
 * An assertion is CBOR `{signature, authenticatorData}`: the signature (ECDSA P-256 with SHA-256,
 * DER) over SHA-256(authenticatorData ‖ clientDataHash) verifies with the attested key, the RP id
 * hash is the App ID's, and its counter is above the last one seen for that key.
 *
 * Pure: no I/O (the root is injectable; the stored key and counter are the caller's).
 */
import { createHash, createPublicKey, verify, X509Certificate, type KeyObject } from 'node:crypto';
import { cborBytes, cborMap, decodeCbor, type CborValue } from './cbor';
import { certificateExtension, children, readTlv } from './der';

export const APP_ATTEST_NONCE_OID = '1.2.840.113635.100.8.2';
const AAGUID_PRODUCTION = Buffer.concat([Buffer.from('appattest', 'ascii'), Buffer.alloc(7)]);
const AAGUID_DEVELOPMENT = Buffer.from('appattestdevelop', 'ascii');

/** Why an attestation or an assertion does not hold. */
export type AppAttestFailure =
  | 'malformed'
  | 'untrusted_chain'
  | 'expired_certificate'
  | 'nonce_mismatch'
  | 'key_id_mismatch'
  | 'app_id_mismatch'
  | 'counter'
  | 'aaguid'
  | 'bad_signature'
  | 'unknown_key';

export type AppAttestResult<T> = { ok: true; value: T } | { ok: false; reason: AppAttestFailure };

export interface AttestedKey {
  /** The credential's public key, SPKI DER base64 (kept to verify assertions). */
  publicKey: string;
  /** The App ID it was attested for. */
  appId: string;
  /** A development build's key (AAGUID `appattestdevelop`). */
  development: boolean;
  /** Apple's receipt (for Apple's fraud-metric service; kept, not read). */
  receipt: string | null;
}

const sha256 = (...parts: Buffer[]) => createHash('sha256').update(Buffer.concat(parts)).digest();
const fail = <T>(reason: AppAttestFailure): AppAttestResult<T> => ({ ok: false, reason });

/** The authenticator data's fixed part, and its attested credential where it has one. */
interface AuthData {
  rpIdHash: Buffer;
  counter: number;
  aaguid: Buffer | null;
  credentialId: Buffer | null;
}

function readAuthData(b: Buffer, attested: boolean): AuthData | null {
  if (b.length < 37) return null;
  const base = { rpIdHash: b.subarray(0, 32), counter: b.readUInt32BE(33) };
  if (!attested) return { ...base, aaguid: null, credentialId: null };
  if (b.length < 55) return null;
  const len = b.readUInt16BE(53);
  if (b.length < 55 + len) return null;
  return { ...base, aaguid: b.subarray(37, 53), credentialId: b.subarray(55, 55 + len) };
}

/** The uncompressed EC point of a P-256 public key (0x04 ‖ x ‖ y), or null for any other key. */
function ecPoint(key: KeyObject): Buffer | null {
  if (key.asymmetricKeyType !== 'ec' || key.asymmetricKeyDetails?.namedCurve !== 'prime256v1') return null;
  const jwk = key.export({ format: 'jwk' });
  if (typeof jwk.x !== 'string' || typeof jwk.y !== 'string') return null;
  return Buffer.concat([Buffer.from([4]), Buffer.from(jwk.x, 'base64url'), Buffer.from(jwk.y, 'base64url')]);
}

/** The nonce the credential certificate's extension carries: SEQUENCE { [1] { OCTET STRING } }. */
function certificateNonce(cert: X509Certificate): Buffer | null {
  try {
    const ext = certificateExtension(cert.raw, APP_ATTEST_NONCE_OID);
    if (!ext) return null;
    const seq = readTlv(ext, 0);
    const tagged = seq.tag === 0x30 ? children(seq.value).find((t) => t.tag === 0xa1) : undefined;
    const octets = tagged ? readTlv(tagged.value, 0) : undefined;
    return octets?.tag === 0x04 ? octets.value : null;
  } catch {
    return null;
  }
}

/** Whether `certs` (the credential certificate first) chain to `root`, all of them valid at `now`. */
function checkChain(certs: X509Certificate[], root: X509Certificate, now: Date): AppAttestFailure | null {
  const chain = [...certs, root];
  for (let i = 0; i < chain.length; i++) {
    const cert = chain[i] as X509Certificate;
    const issuer = chain[i + 1] ?? root;
    if (i > 0 && !cert.ca) return 'untrusted_chain';
    if (!cert.checkIssued(issuer) || !cert.verify(issuer.publicKey)) return 'untrusted_chain';
  }
  for (const cert of chain) {
    if (now.getTime() < Date.parse(cert.validFrom) || now.getTime() > Date.parse(cert.validTo))
      return 'expired_certificate';
  }
  return null;
}

export interface AttestationInput {
  /** The key id DCAppAttestService gave (base64 of SHA-256 of the public key). */
  keyId: string;
  /** The attestation object, as attestKey returned it (base64). */
  object: string;
  /** SHA-256 of the challenge the app attested over. */
  clientDataHash: Buffer;
}

export interface AppAttestOptions {
  /** The trust anchor: Apple's App Attestation root (apple-root.ts), or a test's own. */
  root: X509Certificate;
  /** The App IDs (`<team id>.<bundle id>`) the attestation may be for. */
  appIds: readonly string[];
  now: Date;
}

/** Verify an App Attest attestation object (see the module comment). Never throws. */
export function verifyAppAttestation(
  input: AttestationInput,
  o: AppAttestOptions,
): AppAttestResult<AttestedKey> {
  let fmt: CborValue | undefined;
  let x5c: Buffer[];
  let authData: Buffer;
  let receipt: Buffer | null;
  try {
    const top = cborMap(decodeCbor(Buffer.from(input.object, 'base64')), 'the attestation object');
    fmt = top.get('fmt');
    const stmt = cborMap(top.get('attStmt'), 'attStmt');
    const list = stmt.get('x5c');
    if (!Array.isArray(list) || list.length < 2 || list.length > 4) return fail('malformed');
    x5c = list.map((c, i) => cborBytes(c, `x5c[${i}]`));
    authData = cborBytes(top.get('authData'), 'authData');
    const r = stmt.get('receipt');
    receipt = Buffer.isBuffer(r) ? r : null;
  } catch {
    return fail('malformed');
  }
  if (fmt !== 'apple-appattest') return fail('malformed');
  let certs: X509Certificate[];
  try {
    certs = x5c.map((der) => new X509Certificate(der));
  } catch {
    return fail('malformed');
  }
  const chain = checkChain(certs, o.root, o.now);
  if (chain) return fail(chain);
  const cred = certs[0] as X509Certificate;
  const nonce = certificateNonce(cred);
  if (!nonce || !nonce.equals(sha256(authData, input.clientDataHash))) return fail('nonce_mismatch');
  const point = ecPoint(cred.publicKey);
  const keyId = Buffer.from(input.keyId, 'base64');
  if (!point || keyId.length !== 32 || !sha256(point).equals(keyId)) return fail('key_id_mismatch');
  const auth = readAuthData(authData, true);
  if (!auth) return fail('malformed');
  const appId = o.appIds.find((id) => sha256(Buffer.from(id, 'utf8')).equals(auth.rpIdHash));
  if (appId === undefined) return fail('app_id_mismatch');
  if (auth.counter !== 0) return fail('counter');
  const development = Boolean(auth.aaguid?.equals(AAGUID_DEVELOPMENT));
  if (!development && !auth.aaguid?.equals(AAGUID_PRODUCTION)) return fail('aaguid');
  if (!auth.credentialId?.equals(keyId)) return fail('key_id_mismatch');
  const publicKey = cred.publicKey.export({ format: 'der', type: 'spki' }).toString('base64');
  return {
    ok: true,
    value: { publicKey, appId, development, receipt: receipt ? receipt.toString('base64') : null },
  };
}

export interface AssertionInput {
  /** The assertion, as generateAssertion returned it (base64). */
  assertion: string;
  clientDataHash: Buffer;
  /** The attested key (SPKI DER base64) and its App ID. */
  publicKey: string;
  appId: string;
  /** The highest counter seen for the key so far (0 after the attestation). */
  lastCounter: number;
}

/** Verify an App Attest assertion; its value is the assertion's counter, to store. Never throws. */
export function verifyAppAssertion(input: AssertionInput): AppAttestResult<number> {
  let signature: Buffer;
  let authData: Buffer;
  try {
    const top = cborMap(decodeCbor(Buffer.from(input.assertion, 'base64')), 'the assertion');
    signature = cborBytes(top.get('signature'), 'signature');
    authData = cborBytes(top.get('authenticatorData'), 'authenticatorData');
  } catch {
    return fail('malformed');
  }
  const auth = readAuthData(authData, false);
  if (!auth) return fail('malformed');
  let good = false;
  try {
    const key = createPublicKey({ key: Buffer.from(input.publicKey, 'base64'), format: 'der', type: 'spki' });
    good = verify('sha256', sha256(authData, input.clientDataHash), key, signature);
  } catch {
    good = false;
  }
  if (!good) return fail('bad_signature');
  if (!sha256(Buffer.from(input.appId, 'utf8')).equals(auth.rpIdHash)) return fail('app_id_mismatch');
  if (auth.counter <= input.lastCounter) return fail('counter');
  return { ok: true, value: auth.counter };
}
