/**
 * What the collector does with a session's platform attestation (docs/mobile.md, "Attestation"):
 * the app asked the collector for a challenge (`POST /v1/client/challenge` with its app id), made
 * its attestation over it, and registers with both. The challenge is checked and redeemed by the
 * collector (once: a replayed registration fails there); here the attestation is verified against
 * the app's settings and bound to that challenge:
 *
 * - App Attest: clientDataHash = SHA-256 of the challenge's UTF-8 bytes. A first registration of a
 *   key carries its attestation object (verified with Apple's root; the key is then kept), later
 *   ones an assertion (verified with the kept key; its counter must rise).
 * - Play Integrity: the request's `nonce` (classic) or `requestHash` (standard) is the base64url
 *   SHA-256 of the challenge; the token is opened with the app's own keys.
 *
 * The outcome travels in the session's claims and is weighed by the model
 * (scoring/attestation-evidence.ts). Nothing is thrown for a bad attestation: a failure is
 * evidence, not an error.
 */
import { createHash, type X509Certificate } from 'node:crypto';
import type { AppAttestationSettings, AttestationOutcome, EnvId } from '../../model';
import { verifyAppAssertion, verifyAppAttestation } from './app-attest';
import { verifyPlayIntegrity, type PlayVerdict } from './play-integrity';

/** An App Attest key attested in an environment, kept to verify its assertions. */
export interface AttestedKeyRecord {
  envId: EnvId;
  /** The key id (base64, as the app sends it). */
  keyId: string;
  appId: string;
  /** SPKI DER, base64. */
  publicKey: string;
  /** The highest assertion counter seen (0 after the attestation). */
  counter: number;
  development: boolean;
  receipt: string | null;
  createdAt: Date;
  usedAt: Date;
}

/** Where attested App Attest keys are kept (src/store/attested-keys.ts; a fake beside it). */
export interface AttestedKeyStore {
  get(envId: EnvId, keyId: string): Promise<AttestedKeyRecord | null>;
  /** Keep a key just attested; a key id already kept is left as it is. */
  add(record: AttestedKeyRecord): Promise<void>;
  /** Raise a key's counter where it is below `counter`; false where it was not (a replayed assertion, or a race lost to one). */
  advance(envId: EnvId, keyId: string, counter: number, at: Date): Promise<boolean>;
}

/** A platform attestation as the register request carries it (mobile.ts validates its shape). */
export interface AttestationClaim {
  kind: 'app_attest' | 'play_integrity';
  challenge: string | null;
  token: string | null;
  keyId: string | null;
  object: string | null;
  assertion: string | null;
}

export interface AttestationContext {
  envId: EnvId;
  platform: 'android' | 'ios';
  appId: string;
  settings: AppAttestationSettings | null;
  /** When the challenge was issued (ms), and now. */
  issuedAt: number;
  now: Date;
}

export interface VerifierDeps {
  keys: AttestedKeyStore;
  /** The App Attest trust anchor (Apple's root, apple-root.ts; tests inject their own). */
  appleRoot: X509Certificate;
  /** Opens a secret sealed with the master key (the Play Integrity keys). */
  open: (sealed: string) => string;
}

/** Skew allowed between Google's clock and Rampart's. */
const SKEW_MS = 30_000;

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest();

export class AttestationVerifier {
  constructor(private readonly d: VerifierDeps) {}

  /** Whether the app's settings verify attestations of this platform. */
  static configured(
    settings: AppAttestationSettings | null | undefined,
    platform: 'android' | 'ios',
  ): boolean {
    return Boolean(settings && (platform === 'ios' ? settings.appleTeamId : settings.play));
  }

  /** Verify an attestation whose challenge the collector has already checked and redeemed. */
  async verify(
    a: AttestationClaim & { challenge: string },
    c: AttestationContext,
  ): Promise<AttestationOutcome> {
    const kind = a.kind;
    if ((kind === 'app_attest') !== (c.platform === 'ios'))
      return { status: 'failed', kind, reason: 'platform_mismatch' };
    if (!AttestationVerifier.configured(c.settings, c.platform))
      return { status: 'unverified', kind, reason: 'not_configured' };
    const s = c.settings as AppAttestationSettings;
    return kind === 'app_attest'
      ? this.appAttest(a, c, `${s.appleTeamId as string}.${c.appId}`)
      : this.play(a, c, s);
  }

  private async appAttest(
    a: AttestationClaim & { challenge: string },
    c: AttestationContext,
    appId: string,
  ): Promise<AttestationOutcome> {
    const clientDataHash = sha256(a.challenge);
    const keyId = a.keyId ?? '';
    if (a.object) {
      const r = verifyAppAttestation(
        { keyId, object: a.object, clientDataHash },
        { root: this.d.appleRoot, appIds: [appId], now: c.now },
      );
      if (!r.ok) return { status: 'failed', kind: 'app_attest', reason: r.reason };
      await this.d.keys.add({
        envId: c.envId,
        keyId,
        appId,
        publicKey: r.value.publicKey,
        counter: 0,
        development: r.value.development,
        receipt: r.value.receipt,
        createdAt: c.now,
        usedAt: c.now,
      });
      return { status: 'verified', kind: 'app_attest' };
    }
    const stored = await this.d.keys.get(c.envId, keyId);
    if (!stored || stored.appId !== appId)
      return { status: 'failed', kind: 'app_attest', reason: 'unknown_key' };
    const r = verifyAppAssertion({
      assertion: a.assertion ?? '',
      clientDataHash,
      publicKey: stored.publicKey,
      appId,
      lastCounter: stored.counter,
    });
    if (!r.ok) return { status: 'failed', kind: 'app_attest', reason: r.reason };
    if (!(await this.d.keys.advance(c.envId, keyId, r.value, c.now)))
      return { status: 'failed', kind: 'app_attest', reason: 'counter' };
    return { status: 'verified', kind: 'app_attest' };
  }

  private play(
    a: AttestationClaim & { challenge: string },
    c: AttestationContext,
    s: AppAttestationSettings,
  ): AttestationOutcome {
    const sealed = s.play as { decryptionKey: string; verificationKey: string };
    let keys: { decryptionKey: string; verificationKey: string };
    try {
      keys = {
        decryptionKey: this.d.open(sealed.decryptionKey),
        verificationKey: this.d.open(sealed.verificationKey),
      };
    } catch {
      // Sealed under another master key: the deployment's doing, not the device's.
      return { status: 'unverified', kind: 'play_integrity', reason: 'not_configured' };
    }
    const binding = sha256(a.challenge).toString('base64url');
    const r = verifyPlayIntegrity(a.token ?? '', keys, {
      packageName: c.appId,
      binding,
      notBefore: c.issuedAt - SKEW_MS,
      notAfter: c.now.getTime() + SKEW_MS,
    });
    if (!r.ok) return { status: 'failed', kind: 'play_integrity', reason: r.reason };
    return { status: 'verified', kind: 'play_integrity', device: r.value.device, app: r.value.app };
  }
}

/** An outcome as a session's claims carry it (short: it travels in every token). */
export function encodeOutcome(o: AttestationOutcome | null): string | null {
  if (!o) return null;
  switch (o.status) {
    case 'verified':
      return o.kind === 'play_integrity' ? `v:${o.device ?? 'none'}:${o.app ?? 'unevaluated'}` : 'v';
    case 'failed':
      return `f:${o.reason}`;
    case 'unverified':
      return `u:${o.reason}`;
    case 'missing':
      return 'm';
  }
}

type Device = PlayVerdict['device'];
type App = PlayVerdict['app'];
const DEVICES: ReadonlySet<string> = new Set<Device>(['strong', 'device', 'basic', 'virtual', 'none']);
const APPS: ReadonlySet<string> = new Set<App>(['recognized', 'unrecognized', 'unevaluated']);

/** A claim back to its outcome (null when absent or not one), with the kind the session carried. */
export function decodeOutcome(claim: string | null, kind: string | null): AttestationOutcome | null {
  if (!claim) return null;
  if (claim === 'm') return { status: 'missing' };
  if (kind !== 'app_attest' && kind !== 'play_integrity') return null;
  const [s, a, b] = claim.split(':');
  if (s === 'v' && kind === 'app_attest') return { status: 'verified', kind };
  if (s === 'v' && a !== undefined && b !== undefined && DEVICES.has(a) && APPS.has(b))
    return { status: 'verified', kind, device: a as Device, app: b as App };
  if (s === 'f' && a) return { status: 'failed', kind, reason: a };
  if (s === 'u' && (a === 'no_challenge' || a === 'not_configured'))
    return { status: 'unverified', kind, reason: a };
  return null;
}
