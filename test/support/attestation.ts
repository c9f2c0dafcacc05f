/**
 * Platform attestations made here, for tests: a certificate authority of the test's own (X.509
 * certificates built as DER and signed with node:crypto), App Attest attestation objects and
 * assertions under it, and Play Integrity verdict tokens (JWE A256KW/A256GCM around a JWS ES256)
 * under keys the test generates. What a real device and Google would give, built to the same
 * formats, so the verifiers are tested on complete, valid objects and on each one spoilt.
 */
import {
  createCipheriv,
  createHash,
  generateKeyPairSync,
  randomBytes,
  sign,
  X509Certificate,
  type KeyObject,
} from 'node:crypto';
import { encodeCbor, type CborValue } from '../../src/core/client/attestation/cbor';
import { APP_ATTEST_NONCE_OID } from '../../src/core/client/attestation/app-attest';

// --- DER ---------------------------------------------------------------------------------------
const tlv = (tag: number, body: Buffer): Buffer => {
  const n = body.length;
  const len =
    n < 0x80 ? Buffer.from([n]) : n < 0x100 ? Buffer.from([0x81, n]) : Buffer.from([0x82, n >> 8, n & 0xff]);
  return Buffer.concat([Buffer.from([tag]), len, body]);
};
const seq = (...items: Buffer[]) => tlv(0x30, Buffer.concat(items));
const set = (...items: Buffer[]) => tlv(0x31, Buffer.concat(items));
const octets = (b: Buffer) => tlv(0x04, b);
const bool = (v: boolean) => tlv(0x01, Buffer.from([v ? 0xff : 0]));
const explicit = (n: number, b: Buffer) => tlv(0xa0 + n, b);
const integer = (b: Buffer) => tlv(0x02, (b[0] ?? 0) & 0x80 ? Buffer.concat([Buffer.from([0]), b]) : b);
const bitString = (b: Buffer) => tlv(0x03, Buffer.concat([Buffer.from([0]), b]));
function oid(dotted: string): Buffer {
  const [a, b, ...rest] = dotted.split('.').map(Number) as [number, number, ...number[]];
  const bytes = [40 * a + b];
  for (const n of rest) {
    const chunk = [n & 0x7f];
    for (let v = Math.floor(n / 128); v > 0; v = Math.floor(v / 128)) chunk.unshift((v & 0x7f) | 0x80);
    bytes.push(...chunk);
  }
  return tlv(0x06, Buffer.from(bytes));
}
const time = (d: Date) => {
  const s = d.toISOString().replace(/[-:T]/g, '').slice(0, 14);
  return d.getUTCFullYear() < 2050
    ? tlv(0x17, Buffer.from(`${s.slice(2)}Z`, 'ascii'))
    : tlv(0x18, Buffer.from(`${s}Z`, 'ascii'));
};
const name = (cn: string) => seq(set(seq(oid('2.5.4.3'), tlv(0x0c, Buffer.from(cn, 'utf8')))));

export interface CertSpec {
  subject: string;
  issuer: string;
  publicKey: KeyObject;
  /** The issuer's private key (the subject's own, self-signed). */
  signer: KeyObject;
  ca: boolean;
  notBefore: Date;
  notAfter: Date;
  /** Extra extensions: identifier and value (the extnValue's content). */
  extensions?: Array<{ oid: string; value: Buffer }>;
}

/** A certificate, DER, signed ecdsa-with-SHA256 by its issuer's key. */
export function makeCertificate(c: CertSpec): Buffer {
  const algorithm = seq(oid('1.2.840.10045.4.3.2'));
  const exts = [
    seq(oid('2.5.29.19'), bool(true), octets(c.ca ? seq(bool(true)) : seq())),
    ...(c.extensions ?? []).map((e) => seq(oid(e.oid), octets(e.value))),
  ];
  const tbs = seq(
    explicit(0, integer(Buffer.from([2]))),
    integer(randomBytes(8).fill(0x11, 0, 1)),
    algorithm,
    name(c.issuer),
    seq(time(c.notBefore), time(c.notAfter)),
    name(c.subject),
    c.publicKey.export({ format: 'der', type: 'spki' }),
    explicit(3, seq(...exts)),
  );
  return seq(tbs, algorithm, bitString(sign('sha256', tbs, c.signer)));
}

const DAY = 86_400_000;
const ec = () => generateKeyPairSync('ec', { namedCurve: 'prime256v1' });

/** A root CA of the test's own, valid from a year ago for ten years. */
export function makeRoot(
  now = new Date(),
  cn = 'Test App Attestation Root CA',
): { cert: X509Certificate; pem: string; key: KeyObject } {
  const k = ec();
  const der = makeCertificate({
    subject: cn,
    issuer: cn,
    publicKey: k.publicKey,
    signer: k.privateKey,
    ca: true,
    notBefore: new Date(now.getTime() - 365 * DAY),
    notAfter: new Date(now.getTime() + 3650 * DAY),
  });
  const cert = new X509Certificate(der);
  return { cert, pem: cert.toString(), key: k.privateKey };
}

const sha256 = (...parts: Buffer[]) => createHash('sha256').update(Buffer.concat(parts)).digest();

/** clientDataHash as the app computes it: SHA-256 of the challenge's UTF-8 bytes. */
export const clientDataHash = (challenge: string): Buffer => sha256(Buffer.from(challenge, 'utf8'));

export interface AppAttestSpec {
  root: { cert: X509Certificate; key: KeyObject };
  /** `<team id>.<bundle id>`. */
  appId: string;
  challenge: string;
  now?: Date;
  /** Spoilers. */
  counter?: number;
  aaguid?: Buffer;
  /** The credential certificate's validity (default: from a day ago for a year). */
  leafNotAfter?: Date;
  /** Nonce in the certificate (default: the right one). */
  nonce?: Buffer;
  /** The key id the app reports (default: the right one). */
  keyId?: Buffer;
}

export interface MadeAttestation {
  keyId: string;
  object: string;
  /** The credential's private key: assertions are signed with it. */
  credential: KeyObject;
}

/** An App Attest attestation object as DCAppAttestService.attestKey gives it (base64), with its key id. */
export function makeAppAttestation(s: AppAttestSpec): MadeAttestation {
  const now = s.now ?? new Date();
  const intermediateKey = ec();
  const intermediate = makeCertificate({
    subject: 'Test App Attestation CA 1',
    issuer: s.root.cert.subject.replace(/^CN=/, ''),
    publicKey: intermediateKey.publicKey,
    signer: s.root.key,
    ca: true,
    notBefore: new Date(now.getTime() - 30 * DAY),
    notAfter: new Date(now.getTime() + 365 * DAY),
  });
  const cred = ec();
  const jwk = cred.publicKey.export({ format: 'jwk' });
  const point = Buffer.concat([
    Buffer.from([4]),
    Buffer.from(jwk.x as string, 'base64url'),
    Buffer.from(jwk.y as string, 'base64url'),
  ]);
  const keyId = sha256(point);
  const aaguid = s.aaguid ?? Buffer.concat([Buffer.from('appattest'), Buffer.alloc(7)]);
  const counter = Buffer.alloc(4);
  counter.writeUInt32BE(s.counter ?? 0);
  const credLen = Buffer.alloc(2);
  credLen.writeUInt16BE(keyId.length);
  const cose = encodeCbor(
    new Map<number, CborValue>([
      [1, 2],
      [3, -7],
      [-1, 1],
      [-2, Buffer.from(jwk.x as string, 'base64url')],
      [-3, Buffer.from(jwk.y as string, 'base64url')],
    ]),
  );
  const authData = Buffer.concat([
    sha256(Buffer.from(s.appId, 'utf8')),
    Buffer.from([0x40]),
    counter,
    aaguid,
    credLen,
    keyId,
    cose,
  ]);
  const nonce = s.nonce ?? sha256(authData, clientDataHash(s.challenge));
  const leaf = makeCertificate({
    subject: keyId.toString('hex'),
    issuer: 'Test App Attestation CA 1',
    publicKey: cred.publicKey,
    signer: intermediateKey.privateKey,
    ca: false,
    notBefore: new Date(now.getTime() - DAY),
    notAfter: s.leafNotAfter ?? new Date(now.getTime() + 365 * DAY),
    extensions: [{ oid: APP_ATTEST_NONCE_OID, value: seq(explicit(1, octets(nonce))) }],
  });
  const object = encodeCbor(
    new Map<string, CborValue>([
      ['fmt', 'apple-appattest'],
      [
        'attStmt',
        new Map<string, CborValue>([
          ['x5c', [leaf, intermediate]],
          ['receipt', randomBytes(64)],
        ]),
      ],
      ['authData', authData],
    ]),
  );
  return {
    keyId: (s.keyId ?? keyId).toString('base64'),
    object: object.toString('base64'),
    credential: cred.privateKey,
  };
}

/** An App Attest assertion as generateAssertion gives it (base64). */
export function makeAppAssertion(s: {
  credential: KeyObject;
  appId: string;
  challenge: string;
  counter: number;
}): string {
  const counter = Buffer.alloc(4);
  counter.writeUInt32BE(s.counter);
  const authenticatorData = Buffer.concat([
    sha256(Buffer.from(s.appId, 'utf8')),
    Buffer.from([0x01]),
    counter,
  ]);
  const signature = sign('sha256', sha256(authenticatorData, clientDataHash(s.challenge)), s.credential);
  return encodeCbor(
    new Map<string, CborValue>([
      ['signature', signature],
      ['authenticatorData', authenticatorData],
    ]),
  ).toString('base64');
}

// --- Play Integrity ---------------------------------------------------------------------------

export interface PlayKeys {
  /** What the Play Console gives the app's owner, as Rampart takes them. */
  decryptionKey: string;
  verificationKey: string;
  /** Google's side: the signing key. */
  signer: KeyObject;
}

export function makePlayKeys(): PlayKeys {
  const k = ec();
  return {
    decryptionKey: randomBytes(32).toString('base64'),
    verificationKey: k.publicKey.export({ format: 'der', type: 'spki' }).toString('base64'),
    signer: k.privateKey,
  };
}

const b64u = (v: Buffer | string) => Buffer.from(v).toString('base64url');

/** A Play Integrity verdict token for `payload`, signed and encrypted as Google does. */
export function makePlayToken(keys: Pick<PlayKeys, 'decryptionKey' | 'signer'>, payload: object): string {
  const h = b64u(JSON.stringify({ alg: 'ES256' }));
  const p = b64u(JSON.stringify(payload));
  const sig = sign('sha256', Buffer.from(`${h}.${p}`), { key: keys.signer, dsaEncoding: 'ieee-p1363' });
  const jws = `${h}.${p}.${b64u(sig)}`;
  const cek = randomBytes(32);
  const wrap = createCipheriv(
    'id-aes256-wrap',
    Buffer.from(keys.decryptionKey, 'base64'),
    Buffer.from('A6A6A6A6A6A6A6A6', 'hex'),
  );
  const ek = Buffer.concat([wrap.update(cek), wrap.final()]);
  const header = b64u(JSON.stringify({ alg: 'A256KW', enc: 'A256GCM' }));
  const iv = randomBytes(12);
  const gcm = createCipheriv('aes-256-gcm', cek, iv);
  gcm.setAAD(Buffer.from(header, 'ascii'));
  const ct = Buffer.concat([gcm.update(jws, 'utf8'), gcm.final()]);
  return [header, b64u(ek), b64u(iv), b64u(ct), b64u(gcm.getAuthTag())].join('.');
}

/** A verdict as Google gives it for a classic request with `nonce`. */
export function playPayload(o: {
  packageName: string;
  nonce: string;
  at: number;
  device?: string[];
  app?: string;
}): object {
  return {
    requestDetails: { requestPackageName: o.packageName, timestampMillis: String(o.at), nonce: o.nonce },
    appIntegrity: {
      appRecognitionVerdict: o.app ?? 'PLAY_RECOGNIZED',
      packageName: o.packageName,
      certificateSha256Digest: ['6a6a1474b5cbbb2b1aa57e0bc3'],
      versionCode: '42',
    },
    deviceIntegrity: { deviceRecognitionVerdict: o.device ?? ['MEETS_DEVICE_INTEGRITY'] },
    accountDetails: { appLicensingVerdict: 'LICENSED' },
  };
}
