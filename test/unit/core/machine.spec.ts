/**
 * One machine across its browser profiles (core/devices/machine.ts): the machine vector the
 * collector derives from the components, which profiles it tolerates as one machine, and when a
 * new profile is taken as one of the user's own devices.
 */
import { machineVectorOf, readComponents } from '../../../src/core/client/components';
import { deviceOfMachine, sameMachine } from '../../../src/core/devices/machine';
import type { Device } from '../../../src/core/model';
import type { UserState } from '../../../src/core/ports';
import { emptyBehaviour, epochWeight, type Behaviour } from '../../../src/core/scoring/behaviour';
import type { Features } from '../../../src/core/scoring/features';
import { laptopComponents } from '../../support/components';

const vector = (over: Record<string, unknown> = {}) =>
  machineVectorOf(readComponents(laptopComponents(over))) as string;

describe('the machine vector', () => {
  it('is the same for every profile, window size, language and timezone of one machine', () => {
    const home = vector({ profile: 'aaaaaaaaaaaaaaaaaaaa' });
    expect(vector({ profile: 'bbbbbbbbbbbbbbbbbbbbbbbb' })).toBe(home);
    expect(
      vector({
        screen: { width: 800, height: 600, depth: 30, pixelRatio: 2 },
        languages: ['fr'],
        timezone: 'Asia/Tokyo',
      }),
    ).toBe(home);
    expect(home).toMatch(/^[\w-]{6}(\.[\w-]{6}){4}$/);
  });

  it('is none where the page reported no rendering at all', () => {
    expect(machineVectorOf(readComponents({ userAgent: 'x' }))).toBeNull();
    expect(
      machineVectorOf(readComponents(laptopComponents({ canvas: null, audio: null, webgl: null }))),
    ).toBeNull();
  });

  it.each([
    ['the same machine', {}, true],
    ['a browser update that changed the canvas hash', { canvas: 'ffffff' }, true],
    ['a browser update that changed the audio hash', { audio: '124.1' }, true],
    ['a font installed', { fonts: ['Arial', 'Helvetica Neue', 'Menlo', 'Fira Code'] }, true],
    ['two rendering hashes changed', { canvas: 'ffffff', audio: '124.1' }, false],
    ['other hardware (cores)', { cores: 8 }, false],
    ['another platform', { platform: 'Win32' }, false],
  ])('one machine: %s → %s', (_what, over, same) => {
    expect(sameMachine(vector(), vector(over))).toBe(same);
  });

  it('needs two rendering hashes alike, not only the hardware', () => {
    const bare = vector({ audio: null, webgl: null, fonts: [] });
    expect(sameMachine(bare, vector({ audio: null, webgl: null, fonts: [] }))).toBe(false);
    expect(sameMachine(vector({ fonts: [] }), vector({ fonts: [] }))).toBe(true);
  });
});

describe('a new profile on one of the user’s machines', () => {
  const NOW = Date.parse('2026-11-20T12:00:00Z');
  const MACHINE = vector();
  const HOME = { ip: '81.2.69.142', net: '81.2.69.0/24' };

  const device = (over: Partial<Device> = {}): Device => ({
    token: 'tok-laptop',
    envId: 'env' as Device['envId'],
    userId: 'alice',
    identity: 'fingerprint',
    fingerprintKey: 'profile-a',
    createdAt: new Date(NOW - 60 * 86_400_000),
    lastSeenAt: new Date(NOW - 86_400_000),
    approvedAt: null,
    escalatedAt: null,
    mitigatedAt: null,
    removedAt: null,
    riskScore: 5,
    feedback: null,
    context: {
      ip: HOME.ip,
      location: null,
      userAgent: {
        raw: '',
        browser: '',
        version: '',
        os: '',
        mobile: false,
        platform: '',
        device: '',
        family: '',
        type: 'desktop',
        bot: false,
        headless: false,
        crawler: false,
      },
      type: 'desktop',
      properties: {},
    },
    lastEventRisk: 0.05,
    sightings: 20,
    machine: MACHINE,
    linkedKeys: [],
    ...over,
  });

  /** The user's history: `logins` legitimate logins on profile-a, from home. */
  const behaviour = (logins: number): Behaviour => {
    const b = emptyBehaviour();
    const w = epochWeight(NOW) * logins;
    b.n = w;
    b.tables = {
      dev: { 'profile-a': { c: w, l: NOW, f: NOW - 60 * 86_400_000 } },
      mk: { [MACHINE]: { c: w, l: NOW } },
      ip: { [HOME.ip]: { c: w, l: NOW } },
      net: { [HOME.net]: { c: w, l: NOW } },
    };
    return b;
  };
  const state = (devices: Device[], logins = 20): UserState => ({
    profile: {} as UserState['profile'],
    devices,
    behaviour: behaviour(logins),
  });
  const features = (
    over: { ip?: string; net?: string; machine?: string | null; fingerprinted?: boolean } = {},
  ): Features =>
    ({
      values: {
        ip: over.ip ?? HOME.ip,
        net: over.net ?? HOME.net,
        dev: 'profile-b',
        mk: over.machine ?? MACHINE,
      },
      fingerprinted: over.fingerprinted ?? true,
      machine: over.machine === undefined ? MACHINE : over.machine,
    }) as unknown as Features;

  it('is the device whose machine it is, at home (the address or its /24)', () => {
    expect(deviceOfMachine(state([device()]), features(), 20, NOW)?.fingerprintKey).toBe('profile-a');
    expect(deviceOfMachine(state([device()]), features({ ip: '81.2.69.7' }), 20, NOW)?.fingerprintKey).toBe(
      'profile-a',
    );
    // After a browser update changed one rendering hash.
    expect(
      deviceOfMachine(state([device()]), features({ machine: vector({ canvas: 'ffffff' }) }), 0, NOW)
        ?.fingerprintKey,
    ).toBe('profile-a');
  });

  it.each([
    [
      'from a network the user never logged in from (an anti-detect browser copying the fingerprint)',
      features({ ip: '90.84.0.10', net: '90.84.0.0/24' }),
      [device()],
      20,
    ],
    ['another machine', features({ machine: vector({ cores: 4 }) }), [device()], 20],
    ['without a machine', features({ machine: null }), [device()], 20],
    ['without a client token', features({ fingerprinted: false }), [device()], 20],
    [
      'a machine the environment shows far more often than this user (a fleet of one laptop model)',
      features(),
      [device()],
      500,
    ],
    ['a device the user reported', features(), [device({ feedback: 'reported' })], 20],
    ['a removed device', features(), [device({ removedAt: new Date(NOW) })], 20],
    [
      'a device the user never logged in with (one an attacker brought)',
      features(),
      [device({ fingerprintKey: 'attackers-profile' })],
      20,
    ],
  ] as const)('is none: %s', (_what, f, devices, machineCount) => {
    expect(deviceOfMachine(state([...devices]), f, machineCount, NOW)).toBeNull();
  });

  it('a family computer (two or three people on it) still identifies each of them', () => {
    expect(deviceOfMachine(state([device()]), features(), 60, NOW)?.fingerprintKey).toBe('profile-a');
  });
});
