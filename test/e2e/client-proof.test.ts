/**
 * The browser client's proof of work and behaviour over real HTTP on a real database: the
 * challenge (`POST /v1/client/challenge`), a token whose collection answered it (and the one-step
 * flow, which still works), every way a proof can be wrong, and what the engine makes of a token
 * without one: `unproven_client` only in an environment whose legitimate logins nearly all carry a
 * proof, learned from them.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { startTestApp, call, type TestApp } from '../support/app';
import { laptopComponents, LAPTOP_UA } from '../support/components';
import { challengeKey, issueChallenge, leadingZeroBits } from '../../src/core/client/proof';
import { signClientToken, type ClientClaims } from '../../src/core/client/token';
import { Sealer } from '../../src/core/crypto';

const MASTER_KEY = 'ab'.repeat(32);
const BITS = 6;
let app: TestApp;
beforeAll(async () => {
  // A small difficulty (the tests prove work by the hundred); a collector limit that the
  // population's logins, all from this one loopback address, do not reach.
  app = await startTestApp({
    grpc: false,
    masterKey: MASTER_KEY,
    clientPowBits: BITS,
    clientRateLimitPerSecond: 10_000,
  });
});
afterAll(async () => {
  await app?.close();
});

const ORIGIN = 'https://shop.example';
const post = (path: string, body: Record<string, unknown>, origin = ORIGIN) =>
  call(app, 'POST', path, body, { secret: null, headers: { 'content-type': 'text/plain', origin } });

interface Challenge {
  challenge: string;
  salt: string;
  difficulty: number;
  expires_in: number;
}
async function challenge(pk = app.env.publishableKey): Promise<Challenge> {
  const r = await post('/v1/client/challenge', { publishable_key: pk });
  expect(r.status).toBe(201);
  return r.body as Challenge;
}
/** The first nonce that answers, as the browser script searches (0, 1, 2, … in decimal). */
function solve(c: Pick<Challenge, 'salt' | 'difficulty'>): string {
  for (let n = 0; ; n++)
    if (leadingZeroBits(createHash('sha256').update(`${c.salt}${n}`).digest()) >= c.difficulty)
      return String(n);
}
/** A nonce that does not answer (the first that fails). */
function wrongNonce(c: Pick<Challenge, 'salt' | 'difficulty'>): string {
  for (let n = 0; ; n++)
    if (leadingZeroBits(createHash('sha256').update(`${c.salt}${n}`).digest()) < c.difficulty)
      return String(n);
}
const person = { elapsedMs: 9400, keys: 23, pointer: 2, pastes: 0, inputs: 21, password: 'typed' };
const untouched = { elapsedMs: 310, keys: 0, pointer: 0, pastes: 0, inputs: 0, password: 'filled' };

/** A token as the script gets one: a challenge answered, with the page's behaviour (or, `proof: false`, the one-step flow). */
async function token(
  o: { proof?: boolean; behaviour?: Record<string, unknown> | null; pk?: string; device?: string } = {},
): Promise<string> {
  const pk = o.pk ?? app.env.publishableKey;
  const body: Record<string, unknown> = {
    publishable_key: pk,
    components: laptopComponents(o.device ? { canvas: o.device } : {}),
  };
  if (o.proof !== false) {
    const c = await challenge(pk);
    body.proof = { challenge: c.challenge, nonce: solve(c) };
  }
  if (o.behaviour !== null) body.behaviour = o.behaviour ?? person;
  const r = await post('/v1/client/token', body);
  expect(r.status).toBe(201);
  return r.body.token as string;
}
const claimsOf = (t: string) =>
  JSON.parse(Buffer.from(t.split('.')[1] ?? '', 'base64url').toString('utf8')) as Record<string, unknown>;
const headers = { 'User-Agent': LAPTOP_UA, Accept: 'text/html', 'Accept-Language': 'en-GB' };

describe('the challenge', () => {
  it('answers a signed challenge with its salt and difficulty, with CORS for the page', async () => {
    const r = await post('/v1/client/challenge', { publishable_key: app.env.publishableKey });
    expect(r.status).toBe(201);
    expect(r.body).toEqual({
      challenge: expect.stringMatching(/^rpc1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/),
      salt: expect.stringMatching(/^[A-Za-z0-9_-]{22}$/),
      difficulty: BITS,
      expires_in: 300,
    });
    expect(r.headers.get('access-control-allow-origin')).toBe(ORIGIN);
    expect(r.headers.get('cache-control')).toBe('no-store');
    const pre = await fetch(`${app.baseUrl}/v1/client/challenge`, {
      method: 'OPTIONS',
      headers: { origin: ORIGIN, 'access-control-request-method': 'POST' },
    });
    expect(pre.status).toBe(204);
  });

  it("answers what docs/client.md's example shows", async () => {
    const doc = readFileSync(path.join(__dirname, '..', '..', 'docs', 'client.md'), 'utf8');
    const example = JSON.parse(/^\s*(\{"challenge": "rpc1[^\n]*\})$/m.exec(doc)?.[1] ?? 'null') as Record<
      string,
      unknown
    >;
    const r = await post('/v1/client/challenge', { publishable_key: app.env.publishableKey });
    expect(r.status).toBe(201);
    expect(Object.keys(example).sort()).toEqual(Object.keys(r.body).sort());
    expect([String(example.challenge).slice(0, 5), example.expires_in]).toEqual([
      String(r.body.challenge).slice(0, 5),
      r.body.expires_in,
    ]);
    // "(22 characters)", as the example says.
    expect(r.body.salt).toHaveLength(22);
  });

  it('checks the publishable key and the origin as the collector does', async () => {
    expect((await post('/v1/client/challenge', { publishable_key: 'pk_unknown_key_123456' })).status).toBe(
      401,
    );
    expect((await post('/v1/client/challenge', {})).status).toBe(401);
    const { env } = await app.newEnvironment(`pow-origins-${Date.now()}`);
    await app.built.services.environments.setClientOrigins(env.id, [ORIGIN]);
    const evil = await post(
      '/v1/client/challenge',
      { publishable_key: env.publishableKey },
      'https://evil.example',
    );
    expect([evil.status, evil.body.reason]).toEqual([403, 'origin_not_allowed']);
    expect((await post('/v1/client/challenge', { publishable_key: env.publishableKey })).status).toBe(201);
  });
});

describe('a token with a proof', () => {
  it('carries the difficulty proved, the challenge and the behaviour in its claims', async () => {
    const claims = claimsOf(await token());
    expect(claims).toMatchObject({
      pw: BITS,
      pc: expect.any(String),
      bh: { t: 9400, k: 23, p: 2, v: 0, i: 21, pw: 'typed' },
    });
  });

  it('the one-step flow still works: components alone get a token that says it carries no proof', async () => {
    const claims = claimsOf(await token({ proof: false, behaviour: null }));
    expect(claims).not.toHaveProperty('pw');
    expect(claims).not.toHaveProperty('pc');
    expect(claims).not.toHaveProperty('bh');
    const r = await call(app, 'POST', '/v1/risk', {
      event: '$login',
      user: { id: 'one-step' },
      request_token: await token({ proof: false }),
      context: { ip: '81.2.69.142', headers },
    });
    expect(r.status).toBe(201);
    expect(r.body.signals).not.toHaveProperty('invalid_token');
  });

  it.each<[string, (c: Challenge) => Record<string, unknown>, string, RegExp]>([
    [
      'a nonce that does not answer',
      (c) => ({ proof: { challenge: c.challenge, nonce: wrongNonce(c) } }),
      'proof.nonce',
      /zero bits/,
    ],
    [
      'a challenge altered to a lower difficulty',
      (c) => {
        const [prefix, claims, mac] = c.challenge.split('.') as [string, string, string];
        const lowered = Buffer.from(
          JSON.stringify({
            ...(JSON.parse(Buffer.from(claims, 'base64url').toString('utf8')) as object),
            d: 0,
          }),
        ).toString('base64url');
        return { proof: { challenge: `${prefix}.${lowered}.${mac}`, nonce: '0' } };
      },
      'proof.challenge',
      /not a challenge/,
    ],
    [
      'a client token for a challenge',
      () => ({ proof: { challenge: 'rpt1.e30.AAAA', nonce: '1' } }),
      'proof.challenge',
      /not a challenge/,
    ],
    [
      'a nonce of letters',
      (c) => ({ proof: { challenge: c.challenge, nonce: 'abc' } }),
      'proof.nonce',
      /decimal digits/,
    ],
    [
      'a nonce as a number',
      (c) => ({ proof: { challenge: c.challenge, nonce: 12 } }),
      'proof.nonce',
      /decimal digits/,
    ],
    [
      'an oversized challenge',
      () => ({ proof: { challenge: `rpc1.${'a'.repeat(600)}.b`, nonce: '1' } }),
      'proof.challenge',
      /512/,
    ],
    ['a proof that is not an object', () => ({ proof: 'rpc1.x.y:12' }), 'proof', /object/],
    [
      'an unknown member in the proof',
      (c) => ({ proof: { challenge: c.challenge, nonce: solve(c), difficulty: 30 } }),
      'proof.difficulty',
      /unknown/,
    ],
    [
      'a behaviour with a negative count',
      (c) => ({ proof: { challenge: c.challenge, nonce: solve(c) }, behaviour: { ...person, keys: -3 } }),
      'behaviour.keys',
      /whole number/,
    ],
    [
      'a behaviour with an unknown password entry',
      (c) => ({
        proof: { challenge: c.challenge, nonce: solve(c) },
        behaviour: { ...person, password: 'guessed' },
      }),
      'behaviour.password',
      /one of/,
    ],
    [
      'a behaviour with a member of its own',
      (c) => ({
        proof: { challenge: c.challenge, nonce: solve(c) },
        behaviour: { ...person, keystrokes: 'hunter2' },
      }),
      'behaviour.keystrokes',
      /unknown/,
    ],
  ])('refuses %s (422 naming the field)', async (_name, make, field, message) => {
    const r = await post('/v1/client/token', {
      publishable_key: app.env.publishableKey,
      components: laptopComponents(),
      ...make(await challenge()),
    });
    expect(r.status).toBe(422);
    expect(r.body.type).toBe('invalid_parameters');
    expect(r.body.fields).toEqual(
      expect.arrayContaining([expect.objectContaining({ field, message: expect.stringMatching(message) })]),
    );
  });

  it('a challenge answers one token request: a second is refused, even after a wrong nonce', async () => {
    const c = await challenge();
    const withNonce = (nonce: string) =>
      post('/v1/client/token', {
        publishable_key: app.env.publishableKey,
        components: laptopComponents(),
        proof: { challenge: c.challenge, nonce },
      });
    const wrong = await withNonce(wrongNonce(c));
    expect(wrong.status).toBe(422);
    // The collector is no oracle to search with: the challenge was spent by the wrong answer.
    const again = await withNonce(solve(c));
    expect(again.status).toBe(422);
    expect(again.body.fields).toEqual([
      { field: 'proof.challenge', message: expect.stringMatching(/already used/) },
    ]);
    const d = await challenge();
    const once = () =>
      post('/v1/client/token', {
        publishable_key: app.env.publishableKey,
        components: laptopComponents(),
        proof: { challenge: d.challenge, nonce: solve(d) },
      });
    expect((await once()).status).toBe(201);
    expect((await once()).status).toBe(422);
  });

  it('an expired challenge, or one of another environment, is refused', async () => {
    const key = challengeKey(new Sealer(MASTER_KEY).macKey('client-token'));
    const old = issueChallenge(key, app.env.id, BITS, Date.now() - 301_000);
    const expired = await post('/v1/client/token', {
      publishable_key: app.env.publishableKey,
      components: laptopComponents(),
      proof: { challenge: old.challenge, nonce: solve(old) },
    });
    expect(expired.body.fields).toEqual([
      { field: 'proof.challenge', message: expect.stringMatching(/expired/) },
    ]);
    const { env } = await app.newEnvironment(`pow-other-${Date.now()}`);
    await app.built.services.environments.setClientOrigins(env.id, [ORIGIN]);
    const theirs = await challenge(env.publishableKey);
    const other = await post('/v1/client/token', {
      publishable_key: app.env.publishableKey,
      components: laptopComponents(),
      proof: { challenge: theirs.challenge, nonce: solve(theirs) },
    });
    expect(other.body.fields).toEqual([
      { field: 'proof.challenge', message: expect.stringMatching(/another environment/) },
    ]);
  });

  it('a native app sends no proof (its session proves itself)', async () => {
    const c = await challenge();
    const r = await post('/v1/client/token', {
      publishable_key: app.env.publishableKey,
      mobile: { platform: 'android' },
      proof: { challenge: c.challenge, nonce: solve(c) },
    });
    expect(r.status).toBe(422);
    expect(r.body.fields).toEqual([expect.objectContaining({ field: 'proof' })]);
  });

  it('tokens minted from one proof share one login flow (an instance that did not see the proof redeemed)', async () => {
    const first = await token();
    // What a second instance would have minted from the same proof: the same challenge, another token id.
    const tokenKey = new Sealer(MASTER_KEY).macKey('client-token');
    const second = signClientToken(tokenKey, {
      ...(claimsOf(first) as unknown as ClientClaims),
      jti: 'another-token-id',
    });
    const risk = (t: string) =>
      call(app, 'POST', '/v1/risk', {
        event: '$login',
        user: { id: 'shared-proof' },
        request_token: t,
        context: { ip: '81.2.69.142', headers },
      });
    for (const t of [first, first, first])
      expect((await risk(t)).body.signals).not.toHaveProperty('replayed_token');
    expect((await risk(second)).body.signals).toHaveProperty('replayed_token');
  });
});

describe('unproven_client, learned from the environment', () => {
  let n = 0;
  /**
   * An environment of its own, whose pages post with a proof (or, `proved: false`, without: an
   * integration or a tool that posts components alone), after 60 legitimate logins through them.
   */
  async function environment(proved: boolean) {
    const { env, secret } = await app.newEnvironment(`pow-${proved ? 'proved' : 'unproved'}-${Date.now()}`);
    await app.built.services.environments.setClientOrigins(env.id, [ORIGIN]);
    // Each login on a laptop of its own (one laptop for many accounts is evidence of its own).
    const mint = (o: Parameters<typeof token>[0] = {}) =>
      token({ pk: env.publishableKey, device: `laptop-${n + 1}`, ...o });
    /** A legitimate login: a user of its own, from an address of its own (no velocity evidence gathers). */
    const login = async (t: string) => {
      const user = `pow-user-${++n}`;
      const ip = `81.2.${70 + Math.floor(n / 200)}.${10 + (n % 200)}`;
      const r = await call({ baseUrl: app.baseUrl, secret }, 'POST', '/v1/risk', {
        event: '$login',
        status: '$succeeded',
        user: { id: user, email: `${user}@example.com` },
        request_token: t,
        context: { ip, headers },
      });
      expect(r.status).toBe(201);
      return r.body as { signals: Record<string, Record<string, unknown>>; policy: { action: string } };
    };
    for (let i = 0; i < 60; i++) {
      const v = await login(await mint(proved ? {} : { proof: false, behaviour: null }));
      expect(v.policy.action).toBe('allow');
    }
    return { mint, login };
  }

  it('where nearly every legitimate login carries a proof: a token without one is named, with why; one from a page nobody touched too', async () => {
    const { mint, login } = await environment(true);
    const bare = await login(await mint({ proof: false, behaviour: null }));
    expect(bare.signals.unproven_client).toMatchObject({
      reason: 'no_proof_of_work',
      expected_by: 'environment',
      share_with_proof: 1,
      behaviour: 'absent',
    });
    // Alone it challenges at most: privacy tools and old pages exist.
    expect(bare.policy.action).not.toBe('deny');
    const nobody = await login(await mint({ behaviour: untouched }));
    expect(nobody.signals.unproven_client).toMatchObject({
      reason: 'no_user_input',
      expected_by: 'environment',
      time_on_page_ms: 310,
      keys: 0,
      pointer: 0,
      password: 'filled',
    });
    const proved = await login(await mint());
    expect(proved.signals).not.toHaveProperty('unproven_client');
  });

  it('where legitimate logins come without a proof (another integration, an evaluation posting components), none is named', async () => {
    const { mint, login } = await environment(false);
    expect((await login(await mint({ proof: false, behaviour: null }))).signals).not.toHaveProperty(
      'unproven_client',
    );
    expect((await login(await mint({ proof: false, behaviour: untouched }))).signals).not.toHaveProperty(
      'unproven_client',
    );
  });
});
