/**
 * What a native app's platform attestation says (docs/mobile.md, "Attestation"), as the collector
 * verified it when the session was registered (core/client/attestation): evidence for the device
 * where it verified, against it where it failed, Google's own verdicts on Play Integrity, and a
 * session without one where the environment requires it for the app. Hardened emulator farms,
 * which report no integrity finding of their own, are what this catches: an emulator has no
 * Secure Enclave key for Apple to certify, and Google labels it virtual or not at all.
 *
 * Pure: no I/O.
 */
import type { Contribution, EvidenceInput } from './evidence';
import {
  ATTESTATION_FAILED,
  ATTESTATION_MISSING,
  ATTESTED_DEVICE_CREDIT,
  COMPROMISED,
  EMULATOR,
  TAMPERED_APP,
} from './weights';

export function attestationEvidence(x: EvidenceInput): Contribution[] {
  const m = x.client?.mobile;
  const a = m?.attestation;
  if (!m || !a || x.client?.problem !== null) return [];
  switch (a.status) {
    case 'missing':
      return [
        { signal: 'spoofed_device', weight: ATTESTATION_MISSING, detail: { reason: 'attestation_missing' } },
      ];
    case 'failed':
      return [
        {
          signal: 'spoofed_device',
          weight: ATTESTATION_FAILED,
          detail: { reason: 'attestation_failed', attestation: a.kind, failure: a.reason },
        },
      ];
    case 'unverified':
      return [];
    case 'verified': {
      if (a.kind === 'app_attest')
        return [
          { signal: 'attested_device', weight: -ATTESTED_DEVICE_CREDIT, detail: { attestation: a.kind } },
        ];
      const out: Contribution[] = [];
      // Google's verdicts: an emulator (virtual) or a device it vouches nothing for; a rooted or
      // unlocked phone (basic only); a build of the app the Play Store did not ship.
      if (a.device === 'virtual' || a.device === 'none')
        out.push({
          signal: 'emulator',
          weight: EMULATOR,
          detail: { evidence: 'play_integrity', device_verdict: a.device },
        });
      else if (a.device === 'basic')
        out.push({
          signal: 'compromised_device',
          weight: COMPROMISED,
          detail: { evidence: 'play_integrity', device_verdict: a.device },
        });
      if (a.app === 'unrecognized')
        out.push({
          signal: 'spoofed_device',
          weight: TAMPERED_APP,
          detail: { reason: 'tampered_app', evidence: 'play_integrity', app_verdict: a.app },
        });
      if (out.length === 0)
        out.push({
          signal: 'attested_device',
          weight: -ATTESTED_DEVICE_CREDIT,
          detail: { attestation: a.kind, device_verdict: a.device ?? 'none' },
        });
      return out;
    }
  }
}
