/**
 * One browser profile or another on the same machine: a private window, cleared storage, or a
 * second profile start with a new profile id (the device key of a client token), on the same
 * canvas, audio, WebGL, fonts and hardware (the machine vector, core/client/components.ts).
 *
 * A verdict links a new profile to one of the user's own devices when:
 *  - the machine is that device's, or differs from it in one rendering hash at most (a browser
 *    update changes one);
 *  - the event comes from a network the user has logged in from (an address or a /24 of their
 *    legitimate logins): an anti-detect browser that copies the victim's fingerprint cannot read
 *    the victim's storage, and comes from the attacker's network;
 *  - the machine is not common: identical machines (a company's fleet of one laptop model)
 *    share a vector, so where the environment's legitimate logins show it far more often than
 *    this user does, it identifies nobody.
 * The linked profile then names that device from now on (anywhere: the link was made at home).
 *
 * Pure: no I/O.
 */
import type { Device } from '../model';
import type { UserState } from '../ports';
import { ownNetwork } from '../scoring/behaviour';
import { userCount } from '../scoring/behaviour-tables';
import { LEVEL, type Features } from '../scoring/features';

/** Rendering hashes that may differ between two sightings of one machine. */
const TOLERATED_CHANGES = 1;
/** Profiles linked to one device at most (the oldest links stay). */
export const MAX_LINKED_PROFILES = 8;
/**
 * How many times the user's own legitimate logins on a machine the environment's may show it
 * (plus a few) before the machine is taken as a common one: a family computer shows it for two
 * or three people, a fleet for hundreds.
 */
const COMMON_FACTOR = 3;
const COMMON_SLACK = 5;

/** Whether two machine vectors are one machine: the same hardware, at most one rendering hash apart. */
export function sameMachine(a: string, b: string): boolean {
  const x = a.split('.');
  const y = b.split('.');
  if (x.length !== 5 || y.length !== 5 || x[0] !== y[0]) return false;
  let differ = 0;
  let agree = 0;
  for (let i = 1; i < 5; i++) {
    if (x[i] !== y[i]) differ++;
    else if (x[i] !== '-') agree++;
  }
  // Two machines that report nothing alike but the hardware are not known to be one.
  return differ <= TOLERATED_CHANGES && agree >= 2;
}

/**
 * The user's device a new browser profile on this machine is (see above), or null. `machineCount`:
 * the environment's legitimate events with this exact machine vector (decayed, see population.ts).
 */
export function deviceOfMachine(
  state: UserState,
  f: Features,
  machineCount: number,
  now: number,
): Device | null {
  const machine = f.machine;
  const b = state.behaviour;
  if (!machine || !f.fingerprinted || !ownNetwork(b, f, now)) return null;
  let best: { device: Device; own: number } | null = null;
  for (const d of state.devices) {
    if (
      !d.machine ||
      d.removedAt ||
      d.feedback === 'reported' ||
      d.identity !== 'fingerprint' ||
      !sameMachine(d.machine, machine)
    )
      continue;
    // Only a device the user really used (its legitimate logins), never one an attacker brought.
    const own = userCount(b, LEVEL.device, d.fingerprintKey, now);
    if (own < 1 || (best && best.own >= own)) continue;
    best = { device: d, own };
  }
  if (!best) return null;
  const mine = userCount(b, LEVEL.machine, machine, now);
  if (machineCount > COMMON_FACTOR * Math.max(mine, best.own) + COMMON_SLACK) return null;
  return best.device;
}
