/**
 * Native apps' sessions and the tokens they mint (core/client/session.ts), and the components a
 * phone registers with (core/client/mobile.ts): signatures, expiry, environment; a device key that
 * a reinstall or a wipe of the app's data keeps; the user agent completed from the session.
 */
import { createHmac, randomBytes } from 'node:crypto';
import {
  mintMobileToken,
  MOBILE_TOKEN_TTL_MS,
  openMobileToken,
  openSession,
  SESSION_TTL_MS,
  sessionKey,
  signSession,
  type SessionClaims,
} from '../../../src/core/client/session';
import {
  localeLanguage,
  mobileDeviceKey,
  mobileMachineKey,
  mobileProperties,
  readMobileComponents,
  withMobileDevice,
} from '../../../src/core/client/mobile';
import { mobileClient } from '../../../src/core/client/service';
import { InvalidParameters } from '../../../src/core/errors';
import { parseUserAgent } from '../../../src/intel';
import { readVectors } from '../../support/test-vectors';

const KEY = randomBytes(32);
const NOW = Date.parse('2026-11-25T12:00:00Z');
const claims = (over: Partial<SessionClaims> = {}): SessionClaims => ({
  env: 'env-1',
  sid: 'session-1',
  iat: NOW,
  exp: NOW + SESSION_TTL_MS,
  dk: 'mdevice',
  mk: 'mmachine',
  p: 'android',
  os: '14',
  mo: 'Pixel 8',
  mf: 'Google',
  app: 'com.example.shop',
  av: '3.2.1',
  ab: '321',
  int: [],
  att: null,
  lang: 'en',
  tzo: 0,
  did: null,
  ...over,
});
const session = (over: Partial<SessionClaims> = {}) => signSession(KEY, claims(over));
/** A token minted as docs/mobile.md says, independently of the code under test. */
function mint(s: string, key: string, at: number, nonce = 'abcdefghijklmnop'): string {
  const signed = `rpm1.${s.slice('rps1.'.length)}.${at}.${nonce}`;
  return `${signed}.${createHmac('sha256', Buffer.from(key, 'utf8')).update(signed).digest('base64url')}`;
}

describe('mobile sessions and the tokens an app mints', () => {
  it('a minted token opens with the session it came from, and a single-use id per nonce', () => {
    const s = session();
    const key = sessionKey(KEY, 'session-1');
    expect(key).toMatch(/^[\w-]{43}$/);
    const opened = openMobileToken(KEY, mint(s, key, NOW - 1000), 'env-1', NOW);
    expect(opened).toEqual({ ok: true, claims: claims(), jti: 'session-1.abcdefghijklmnop', at: NOW - 1000 });
    expect(mintMobileToken(s, key, NOW - 1000, 'abcdefghijklmnop')).toBe(mint(s, key, NOW - 1000));
  });

  it.each<[string, () => string, string]>([
    ['minted with another session key', () => mint(session(), sessionKey(KEY, 'session-2'), NOW), 'forged'],
    [
      'a session signed by another deployment',
      () => mint(signSession(randomBytes(32), claims()), sessionKey(KEY, 'session-1'), NOW),
      'forged',
    ],
    [
      'session claims rewritten (another device)',
      () => {
        const [, , mac] = session().split('.');
        return mint(
          `rps1.${Buffer.from(JSON.stringify(claims({ dk: 'victim' }))).toString('base64url')}.${mac}`,
          sessionKey(KEY, 'session-1'),
          NOW,
        );
      },
      'forged',
    ],
    [
      'its time rewritten after minting',
      () => mint(session(), sessionKey(KEY, 'session-1'), NOW - 1000).replace(`.${NOW - 1000}.`, `.${NOW}.`),
      'forged',
    ],
    ['a short nonce', () => mint(session(), sessionKey(KEY, 'session-1'), NOW, 'abc'), 'malformed'],
    [
      'a time that is not a number',
      () => mint(session(), sessionKey(KEY, 'session-1'), NOW).replace(`.${NOW}.`, '.soon.'),
      'malformed',
    ],
    ['too few parts', () => 'rpm1.a.b.c', 'malformed'],
    [
      'of another environment',
      () => mint(session({ env: 'env-2' }), sessionKey(KEY, 'session-1'), NOW),
      'other_environment',
    ],
    [
      'older than its lifetime',
      () => mint(session(), sessionKey(KEY, 'session-1'), NOW - MOBILE_TOKEN_TTL_MS - 1),
      'expired',
    ],
    [
      'minted in the future (beyond 30 s of skew)',
      () => mint(session(), sessionKey(KEY, 'session-1'), NOW + 120_000),
      'not_yet_valid',
    ],
    [
      'minted after its session expired',
      () =>
        mint(
          session({ iat: NOW - SESSION_TTL_MS - 10_000, exp: NOW - 60_000 }),
          sessionKey(KEY, 'session-1'),
          NOW,
        ),
      'expired',
    ],
    [
      'of a session issued ahead of this clock (beyond 30 s of skew)',
      () =>
        mint(session({ iat: NOW + 60_000, exp: NOW + SESSION_TTL_MS }), sessionKey(KEY, 'session-1'), NOW),
      'not_yet_valid',
    ],
  ])('refuses a token %s', (_name, make, reason) => {
    expect(openMobileToken(KEY, make(), 'env-1', NOW)).toEqual({ ok: false, reason });
  });

  it('a session opens for its events a week past its expiry (an app that was offline), not beyond', () => {
    const s = session({ exp: NOW - 86_400_000 });
    expect(openSession(KEY, s, 'env-1', NOW).ok).toBe(false);
    expect(openSession(KEY, s, 'env-1', NOW, 7 * 86_400_000).ok).toBe(true);
    expect(openSession(KEY, s, 'env-1', NOW + 7 * 86_400_000, 7 * 86_400_000).ok).toBe(false);
    expect(openSession(KEY, 'rps1.x', 'env-1', NOW)).toEqual({ ok: false, reason: 'malformed' });
  });
});

/** clients/test-vectors/tokens.json (rpm1), table by table: what every client library is checked against. */
describe('the shared vectors (rpm1)', () => {
  const v = readVectors('tokens.json');
  const key = Buffer.from(v.client_token_key_hex, 'hex');
  const own = v.rpm1.sessions.filter((s: any) => s.name !== 'signed by another deployment');

  it.each<[string, any]>(own.map((s: any) => [s.name, s]))(
    'the %s session and its key are what the collector issues for its claims',
    (_name, s) => {
      expect(signSession(key, s.claims)).toBe(s.session);
      expect(sessionKey(key, s.claims.sid)).toBe(s.session_key);
      expect(openSession(key, s.session, v.env, s.claims.iat)).toEqual({ ok: true, claims: s.claims });
    },
  );

  it.each<[string, any]>(v.rpm1.mint.map((m: any) => [m.name, m]))('mints %s byte for byte', (_name, m) => {
    expect(m.t).toBe(Math.floor(m.device_time + m.offset));
    expect(mintMobileToken(m.session, m.session_key, m.t, m.nonce)).toBe(m.token);
    expect(openMobileToken(key, m.token, v.env, m.t).ok).toBe(true);
  });

  it.each<[string, any]>(v.rpm1.verify.map((c: any) => [c.name, c]))('verifies a token: %s', (_name, c) => {
    const opened = openMobileToken(key, c.token, c.env, c.now);
    expect(opened.ok ? { ok: true, jti: opened.jti } : opened).toEqual(c.expect);
  });
});

const pixel = (over: Record<string, unknown> = {}) => ({
  platform: 'android',
  osVersion: '14',
  model: 'Pixel 8',
  manufacturer: 'Google',
  app: { id: 'com.example.shop', version: '3.2.1', build: '321' },
  installId: 'install-0000000000001',
  vendorId: 'a'.repeat(64),
  screen: { width: 1080, height: 2400, scale: 2.625 },
  ...over,
});

describe("a phone's components", () => {
  it('are read with defaults for what is optional, and integrity findings de-duplicated', () => {
    const m = readMobileComponents(pixel({ integrity: ['rooted', 'emulator', 'rooted'] }));
    expect(m).toMatchObject({
      platform: 'android',
      app: { id: 'com.example.shop', version: '3.2.1', build: '321' },
      locale: null,
      deviceId: null,
      attestation: null,
      integrity: ['emulator', 'rooted'],
    });
  });

  it.each([
    ['not an object', 'android', 'mobile'],
    ['no platform', pixel({ platform: undefined }), 'mobile.platform'],
    ['no app', pixel({ app: undefined }), 'mobile.app'],
    ['an app without a version', pixel({ app: { id: 'com.example.shop' } }), 'mobile.app.version'],
    [
      'an unknown member of the app',
      pixel({ app: { id: 'com.example.shop', version: '1', signature: 'x' } }),
      'mobile.app.signature',
    ],
    ['a screen scale of 11', pixel({ screen: { width: 1, height: 1, scale: 11 } }), 'mobile.screen.scale'],
    ['a timezone offset of 901 minutes', pixel({ timezoneOffset: 901 }), 'mobile.timezoneOffset'],
    [
      'an attestation of an unknown kind',
      pixel({ attestation: { kind: 'safetynet', token: 'x' } }),
      'mobile.attestation.kind',
    ],
  ])('refuses %s, naming the field', (_name, value, field) => {
    try {
      readMobileComponents(value);
      throw new Error('accepted');
    } catch (e) {
      expect(e).toBeInstanceOf(InvalidParameters);
      expect((e as InvalidParameters).fields.map((f) => f.field)).toContain(field);
    }
  });

  it('Android keeps its device key through a reinstall or a wipe (the vendor id), iOS through a reinstall (the Keychain install id)', () => {
    const android = readMobileComponents(pixel());
    expect(mobileDeviceKey({ ...android, installId: 'install-0000000000002' })).toBe(
      mobileDeviceKey(android),
    );
    expect(mobileDeviceKey({ ...android, vendorId: 'b'.repeat(64) })).not.toBe(mobileDeviceKey(android));
    const iphone = readMobileComponents(pixel({ platform: 'ios', model: 'iPhone15,3' }));
    expect(mobileDeviceKey({ ...iphone, vendorId: 'c'.repeat(64) })).toBe(mobileDeviceKey(iphone));
    expect(mobileDeviceKey({ ...iphone, installId: 'install-0000000000003' })).not.toBe(
      mobileDeviceKey(iphone),
    );
    // Without a vendor id, an Android install is its own device.
    expect(mobileDeviceKey({ ...android, vendorId: null })).not.toBe(mobileDeviceKey(android));
    expect(mobileDeviceKey(android)).toMatch(/^m/);
  });

  it.each([
    ['an OS update', { osVersion: '15' }],
    ['an app update', { app: { id: 'com.example.shop', version: '9.9.9', build: '999' } }],
    [
      'the phone set to another language and time zone (travel)',
      { locale: 'de-DE', timezone: 'Europe/Berlin', timezoneOffset: -60 },
    ],
    ['a new library version', { sdk: 'rampart-android/9.0.0' }],
    ['a display setting changing the screen', { screen: { width: 1440, height: 3120, scale: 3.5 } }],
    ['a rooted phone found rooted later', { integrity: ['rooted'] }],
  ] as [string, Partial<ReturnType<typeof readMobileComponents>>][])(
    'the same phone after %s is the same device, on Android and on iOS',
    (_name, change) => {
      for (const platform of ['android', 'ios'] as const) {
        const before = readMobileComponents(
          pixel({ platform, ...(platform === 'ios' ? { model: 'iPhone15,3' } : {}) }),
        );
        expect(mobileDeviceKey({ ...before, ...change })).toBe(mobileDeviceKey(before));
      }
    },
  );

  it('a farm of emulators of one image is one device, whatever ids its tool sets for each account', () => {
    const emulator = (n: number) =>
      readMobileComponents(
        pixel({
          model: 'sdk_gphone64_x86_64',
          integrity: ['emulator'],
          installId: `install-farm-00000000${n}`,
          vendorId: String(n).repeat(64),
        }),
      );
    expect(mobileDeviceKey(emulator(1))).toBe(mobileDeviceKey(emulator(2)));
    expect(mobileDeviceKey(emulator(1))).not.toBe(
      mobileDeviceKey(readMobileComponents(pixel({ model: 'sdk_gphone64_arm64', integrity: ['emulator'] }))),
    );
  });

  it('the machine key is the hardware as reported: identical phones share it, a patch release does not change it', () => {
    const a = readMobileComponents(pixel());
    expect(mobileMachineKey({ ...a, osVersion: '14.1' })).toBe(mobileMachineKey(a));
    expect(
      mobileMachineKey(
        readMobileComponents(pixel({ installId: 'install-0000000000009', vendorId: 'd'.repeat(64) })),
      ),
    ).toBe(mobileMachineKey(a));
    expect(mobileMachineKey({ ...a, model: 'sdk_gphone64_x86_64' })).not.toBe(mobileMachineKey(a));
  });

  it('the locale gives the language', () => {
    expect(localeLanguage('en-GB')).toBe('en');
    expect(localeLanguage('pt_BR')).toBe('pt');
    expect(localeLanguage('!!')).toBeNull();
    expect(localeLanguage(null)).toBeNull();
  });

  it("completes a bare HTTP stack's user agent from the session, and describes the phone for the registry", () => {
    const m = mobileClient(claims({ did: 'raw-android-id', int: ['rooted'] }));
    const ua = withMobileDevice(parseUserAgent('okhttp/4.12.0'), m);
    expect(ua).toMatchObject({
      browser: 'okhttp',
      os: 'Android 14',
      platform: 'Android',
      device: 'Google Pixel 8',
      type: 'mobile',
      mobile: true,
    });
    // What the user agent says itself is kept.
    expect(withMobileDevice(parseUserAgent('ShopApp/1.2 (iPhone; iOS 17.5; Scale/3.00)'), m).os).toBe(
      'iOS 17.5',
    );
    expect(mobileProperties(m)).toEqual({
      platform: 'android',
      model: 'Pixel 8',
      manufacturer: 'Google',
      os: 'Android 14',
      app_id: 'com.example.shop',
      app_version: '3.2.1',
      app_build: '321',
      device_id: 'raw-android-id',
      integrity: 'rooted',
    });
  });
});
