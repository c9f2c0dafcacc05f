/**
 * Rampart's client tokens (core/client/token.ts) and the components they are built from
 * (core/client/components.ts): signature, expiry, environment, and a device key that survives
 * what changes on one device and changes with what tells devices apart.
 */
import { createHmac, randomBytes } from 'node:crypto';
import {
  CLIENT_TOKEN_TTL_MS,
  openClientToken,
  signClientToken,
  type ClientClaims,
} from '../../../src/core/client/token';
import {
  automationOf,
  deviceKeyOf,
  readComponents,
  type Components,
} from '../../../src/core/client/components';
import { InvalidParameters } from '../../../src/core/errors';
import { laptopComponents } from '../../support/components';
import { readVectors } from '../../support/test-vectors';
import { replays } from '../../support/test-vectors/tokens';
import { Sealer } from '../../../src/core/crypto';

const KEY = randomBytes(32);
const NOW = Date.parse('2026-11-23T12:00:00Z');
const claims = (over: Partial<ClientClaims> = {}): ClientClaims => ({
  env: 'env-1',
  jti: 'abc123',
  iat: NOW,
  dk: 'device-key',
  auto: [],
  ua: 'uahash',
  lang: 'en',
  tzo: -60,
  mk: null,
  ...over,
});

describe('client token', () => {
  it('opens what was signed, with its claims', () => {
    const opened = openClientToken(
      KEY,
      signClientToken(KEY, claims({ auto: ['webdriver'] })),
      'env-1',
      NOW + 1000,
    );
    expect(opened).toEqual({ ok: true, claims: claims({ auto: ['webdriver'] }) });
  });

  it.each<[string, () => string, string]>([
    ['signed with another key', () => signClientToken(randomBytes(32), claims()), 'forged'],
    [
      'claims altered after signing',
      () => {
        const [prefix, , mac] = signClientToken(KEY, claims()).split('.');
        return `${prefix}.${Buffer.from(JSON.stringify(claims({ dk: 'someone-else' }))).toString('base64url')}.${mac}`;
      },
      'forged',
    ],
    ['MAC cut off', () => signClientToken(KEY, claims()).replace(/\.[^.]+$/, '.'), 'forged'],
    ['no MAC at all', () => 'rpt1.', 'malformed'],
    [
      'claims not JSON, correctly signed',
      () => {
        const signed = `rpt1.${Buffer.from('not json').toString('base64url')}`;
        return `${signed}.${createHmac('sha256', KEY).update(signed).digest('base64url')}`;
      },
      'malformed',
    ],
    [
      'issued for another environment',
      () => signClientToken(KEY, claims({ env: 'env-2' })),
      'other_environment',
    ],
    [
      'older than its lifetime',
      () => signClientToken(KEY, claims({ iat: NOW - CLIENT_TOKEN_TTL_MS - 1 })),
      'expired',
    ],
    [
      'issued in the future (beyond 30 s of skew)',
      () => signClientToken(KEY, claims({ iat: NOW + 120_000 })),
      'not_yet_valid',
    ],
  ])('%s', (_name, make, reason) => {
    expect(openClientToken(KEY, make(), 'env-1', NOW)).toEqual({ ok: false, reason });
  });

  it("carries what the collection proved (difficulty, challenge, the page's behaviour) when it did, and nothing of a claim of the wrong shape", () => {
    const proved = claims({
      pw: 17,
      pc: 'challenge-id',
      bh: { t: 9400, k: 23, p: 2, v: 0, i: 21, pw: 'typed' },
    });
    expect(openClientToken(KEY, signClientToken(KEY, proved), 'env-1', NOW)).toEqual({
      ok: true,
      claims: proved,
    });
    const odd = { ...claims(), pw: 'seventeen', pc: 5, bh: ['typed'] } as unknown as ClientClaims;
    const opened = openClientToken(KEY, signClientToken(KEY, odd), 'env-1', NOW);
    expect(opened).toEqual({ ok: true, claims: claims() });
  });

  it('is accepted up to the end of its lifetime', () => {
    expect(openClientToken(KEY, signClientToken(KEY, claims()), 'env-1', NOW + CLIENT_TOKEN_TTL_MS).ok).toBe(
      true,
    );
  });
});

const laptop = (): Record<string, unknown> => laptopComponents();
const key = (over: Record<string, unknown> = {}) => deviceKeyOf(readComponents({ ...laptop(), ...over }));

describe('device key', () => {
  it.each([
    ['a browser update', { userAgent: String(laptop().userAgent).replace('131.0.0.0', '132.0.0.0') }],
    [
      'another window size or an external monitor',
      { screen: { width: 2560, height: 1440, depth: 30, pixelRatio: 1 } },
    ],
    ['other languages', { languages: ['fr-FR'] }],
    ['travel (another timezone)', { timezone: 'America/New_York' }],
    ['fonts listed in another order', { fonts: ['Menlo', 'Arial', 'Helvetica Neue'] }],
  ])('stays the same through %s', (_name, change) => {
    expect(key(change)).toBe(key());
  });

  it.each([
    [
      'another graphics card',
      { webgl: { vendor: 'Google Inc. (Intel)', renderer: 'ANGLE (Intel, Intel(R) UHD Graphics 620)' } },
    ],
    ['another canvas rendering', { canvas: 'ffee00' }],
    ['other installed fonts', { fonts: ['Arial', 'Calibri'] }],
    ['other hardware', { cores: 4 }],
  ])('changes with %s', (_name, change) => {
    expect(key(change)).not.toBe(key());
  });

  it("with the script's profile id: one key per browser profile, whatever its rendering does", () => {
    const profile = 'a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6';
    expect(key({ profile, canvas: 'changed-by-an-update' })).toBe(key({ profile }));
    expect(key({ profile: 'ffffffffffffffffffffffffffffffff' })).not.toBe(key({ profile }));
    expect(key({ profile })).not.toBe(key());
  });

  it('is short and URL-safe', () => {
    expect(key()).toMatch(/^[A-Za-z0-9_-]{22}$/);
  });
});

describe('components', () => {
  const problems = (value: unknown) => {
    try {
      readComponents(value);
      return [];
    } catch (err) {
      expect(err).toBeInstanceOf(InvalidParameters);
      return (err as InvalidParameters).fields.map((f) => f.field);
    }
  };

  it.each([
    ['not an object', 'chrome', ['components']],
    ['a list', [1, 2], ['components']],
    ['no user agent', { ...laptop(), userAgent: undefined }, ['components.userAgent']],
    ['a user agent of the wrong type', { ...laptop(), userAgent: 42 }, ['components.userAgent']],
    ['an oversized canvas hash', { ...laptop(), canvas: 'x'.repeat(10_000) }, ['components.canvas']],
    [
      'too many fonts',
      { ...laptop(), fonts: Array.from({ length: 500 }, (_, i) => `f${i}`) },
      ['components.fonts'],
    ],
    ['a negative core count', { ...laptop(), cores: -1 }, ['components.cores']],
    ['webgl without a renderer', { ...laptop(), webgl: { vendor: 'x' } }, ['components.webgl.renderer']],
    [
      'automation evidence Rampart does not know',
      { ...laptop(), automation: ['<script>'] },
      ['components.automation'],
    ],
    ['a profile id that is not one', { ...laptop(), profile: '../../etc' }, ['components.profile']],
    ['a component Rampart does not know', { ...laptop(), evil: '1' }, ['components.evil']],
    [
      'an unknown member of the screen',
      { ...laptop(), screen: { width: 1, height: 1, depth: 24, pixelRatio: 1, refresh: 120 } },
      ['components.screen.refresh'],
    ],
    [
      'an unknown member of webgl',
      { ...laptop(), webgl: { vendor: 'x', renderer: 'y', extensions: 'z' } },
      ['components.webgl.extensions'],
    ],
  ])('refuses %s', (_name, value, fields) => {
    expect(problems(value)).toEqual(fields);
  });

  it('accepts a minimal browser (only its user agent)', () => {
    const c: Components = readComponents({ userAgent: 'Mozilla/5.0' });
    expect(c.fonts).toEqual([]);
    expect(c.webgl).toBeNull();
  });

  it('automation: what the script reported, and a headless user agent seen by the server', () => {
    expect(automationOf(readComponents({ ...laptop(), automation: ['webdriver'] }))).toEqual(['webdriver']);
    expect(
      automationOf(
        readComponents({
          ...laptop(),
          userAgent: 'Mozilla/5.0 (X11; Linux x86_64) HeadlessChrome/131.0.0.0 Safari/537.36',
        }),
      ),
    ).toEqual(['headless_user_agent']);
    expect(automationOf(readComponents(laptop()))).toEqual([]);
  });
});

/** clients/test-vectors/tokens.json, table by table: what every client library is checked against. */
describe('the shared vectors (rpt1, replay)', () => {
  const v = readVectors('tokens.json');
  const key = Buffer.from(v.client_token_key_hex, 'hex');

  it('the token key is derived from the master key as the deployment derives it', () => {
    expect(new Sealer(v.master_key_hex).macKey('client-token').toString('hex')).toBe(v.client_token_key_hex);
  });

  it.each<[string, any]>(v.rpt1.issued.map((c: any) => [c.name, c]))(
    'issues %s as the vector says',
    (_name, c) => {
      expect(signClientToken(key, c.claims)).toBe(c.token);
    },
  );

  it.each<[string, any]>(v.rpt1.verify.map((c: any) => [c.name, c]))(
    'verifies a token %s as the vector says',
    (_name, c) => {
      const opened = openClientToken(key, c.token, c.env, c.now);
      expect(opened.ok ? { ok: true } : opened).toEqual(c.expect);
    },
  );

  it.each<[string, any]>(v.replay.cases.map((c: any) => [c.name, c]))('replays: %s', (_name, c) => {
    expect(replays(c.uses)).toEqual(c.replayed);
  });
});
