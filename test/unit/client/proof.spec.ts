/**
 * The collector's proof of work and the page's behaviour (core/client/proof.ts): challenges
 * signed, aged, bound to their environment and redeemed once; a nonce that answers a challenge
 * and one that does not; the behaviour's validation and the compact form a token carries.
 */
import { createHash, createHmac, randomBytes } from 'node:crypto';
import {
  behaviourClaim,
  behaviourOfClaim,
  CHALLENGE_TTL_MS,
  challengeKey,
  interacted,
  issueChallenge,
  leadingZeroBits,
  openChallenge,
  proofHolds,
  readBehaviour,
  readProof,
  RedeemedChallenges,
  type Behaviour,
} from '../../../src/core/client/proof';
import { InvalidParameters } from '../../../src/core/errors';
import { readVectors } from '../../support/test-vectors';

const KEY = challengeKey(randomBytes(32));
const NOW = Date.parse('2026-11-26T12:00:00Z');

/** A nonce for `salt` at `bits`, found as any client would. */
function solve(salt: string, bits: number): string {
  for (let n = 0; ; n++)
    if (leadingZeroBits(createHash('sha256').update(`${salt}${n}`).digest()) >= bits) return String(n);
}

const fields = (f: () => unknown) => {
  try {
    f();
  } catch (err) {
    if (err instanceof InvalidParameters) return err.fields.map((p) => p.field);
    throw err;
  }
  return [];
};

describe('challenge', () => {
  it('opens what was issued, with its salt and difficulty', () => {
    const c = issueChallenge(KEY, 'env-1', 12, NOW);
    expect(c.challenge).toMatch(/^rpc1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    expect(openChallenge(KEY, c.challenge, 'env-1', NOW + 1000)).toEqual({
      ok: true,
      claims: { env: 'env-1', cid: c.claims.cid, s: c.salt, d: 12, iat: NOW },
    });
    expect(c.expiresInSeconds).toBe(CHALLENGE_TTL_MS / 1000);
    // Each challenge is another: another id, another salt.
    const other = issueChallenge(KEY, 'env-1', 12, NOW);
    expect([other.claims.cid, other.salt]).not.toEqual([c.claims.cid, c.salt]);
  });

  it.each<[string, () => string, string]>([
    [
      'signed with another key',
      () => issueChallenge(challengeKey(randomBytes(32)), 'env-1', 12, NOW).challenge,
      'forged',
    ],
    [
      'its difficulty lowered after signing',
      () => {
        const [prefix, claims, mac] = issueChallenge(KEY, 'env-1', 12, NOW).challenge.split('.') as [
          string,
          string,
          string,
        ];
        const lowered = {
          ...(JSON.parse(Buffer.from(claims, 'base64url').toString('utf8')) as object),
          d: 0,
        };
        return `${prefix}.${Buffer.from(JSON.stringify(lowered)).toString('base64url')}.${mac}`;
      },
      'forged',
    ],
    ['a client token instead', () => 'rpt1.eyJ9.abc', 'malformed'],
    [
      'claims not JSON, correctly signed',
      () => {
        const signed = `rpc1.${Buffer.from('not json').toString('base64url')}`;
        return `${signed}.${createHmac('sha256', KEY).update(signed).digest('base64url')}`;
      },
      'malformed',
    ],
    [
      'issued for another environment',
      () => issueChallenge(KEY, 'env-2', 12, NOW).challenge,
      'other_environment',
    ],
    [
      'older than its lifetime',
      () => issueChallenge(KEY, 'env-1', 12, NOW - CHALLENGE_TTL_MS - 1).challenge,
      'expired',
    ],
    [
      'issued ahead of this clock (beyond 30 s of skew)',
      () => issueChallenge(KEY, 'env-1', 12, NOW + 30_001).challenge,
      'not_yet_valid',
    ],
  ])('%s', (_name, make, reason) => {
    expect(openChallenge(KEY, make(), 'env-1', NOW)).toEqual({ ok: false, reason });
  });

  it("is not a client token's key: one MAC never verifies the other", () => {
    const tokenKey = randomBytes(32);
    expect(challengeKey(tokenKey).equals(tokenKey)).toBe(false);
  });
});

describe('proof of work', () => {
  it('counts leading zero bits', () => {
    expect(leadingZeroBits(Uint8Array.from([0x80, 0]))).toBe(0);
    expect(leadingZeroBits(Uint8Array.from([0x00, 0x1f]))).toBe(11);
    expect(leadingZeroBits(Uint8Array.from([0, 0, 0, 1]))).toBe(31);
    expect(leadingZeroBits(new Uint8Array(32))).toBe(256);
  });

  it('a nonce found for the salt answers it at that difficulty; another salt, or a higher difficulty, it does not', () => {
    const salt = issueChallenge(KEY, 'env-1', 10, NOW).salt;
    const nonce = solve(salt, 10);
    expect(proofHolds(salt, nonce, 10)).toBe(true);
    const bits = leadingZeroBits(createHash('sha256').update(`${salt}${nonce}`).digest());
    expect(proofHolds(salt, nonce, bits + 1)).toBe(false);
    expect(proofHolds(`${salt}x`, nonce, 10) && proofHolds(`${salt}y`, nonce, 10)).toBe(false);
    // Difficulty 0: any nonce.
    expect(proofHolds(salt, '0', 0)).toBe(true);
  });

  it('a challenge is redeemed once; it can be forgotten only once it expired', () => {
    const r = new RedeemedChallenges(3);
    expect(r.redeem('a', NOW + 1000, NOW)).toBe(true);
    expect(r.redeem('a', NOW + 1000, NOW + 10)).toBe(false);
    expect(r.redeem('b', NOW + 1000, NOW)).toBe(true);
    // Past its expiry a remembered id is dropped (openChallenge refuses it anyway).
    expect(r.redeem('c', NOW + 5000, NOW + 2000)).toBe(true);
    expect(r.redeem('b', NOW + 1000, NOW + 20)).toBe(true);
  });

  it('remembers at most its cap, forgetting the oldest first', () => {
    const r = new RedeemedChallenges(2);
    for (const id of ['a', 'b', 'c']) expect(r.redeem(id, NOW + 60_000, NOW)).toBe(true);
    expect(r.redeem('c', NOW + 60_000, NOW)).toBe(false);
    expect(r.redeem('b', NOW + 60_000, NOW)).toBe(false);
    expect(r.redeem('a', NOW + 60_000, NOW)).toBe(true);
  });
});

describe('the collector reads proof and behaviour', () => {
  const behaviour: Behaviour = {
    elapsedMs: 8400,
    keys: 23,
    pointer: 2,
    pastes: 0,
    inputs: 21,
    password: 'typed',
    ahead: false,
  };

  it('absent is null (the one-step flow)', () => {
    expect(readProof(undefined)).toBeNull();
    expect(readProof(null)).toBeNull();
    expect(readBehaviour(undefined)).toBeNull();
  });

  it.each<[string, unknown, string[]]>([
    ['not an object', 'rpc1.x', ['proof']],
    ['no nonce', { challenge: 'rpc1.a.b' }, ['proof.nonce']],
    ['a nonce of letters', { challenge: 'rpc1.a.b', nonce: '12ab' }, ['proof.nonce']],
    ['an oversized nonce', { challenge: 'rpc1.a.b', nonce: '1'.repeat(17) }, ['proof.nonce']],
    ['a number for the challenge', { challenge: 5, nonce: '1' }, ['proof.challenge']],
    ['an oversized challenge', { challenge: 'x'.repeat(600), nonce: '1' }, ['proof.challenge']],
    ['an unknown member', { challenge: 'rpc1.a.b', nonce: '1', bits: 30 }, ['proof.bits']],
  ])('refuses a proof that is %s, naming the field', (_name, value, named) => {
    expect(fields(() => readProof(value))).toEqual(named);
  });

  it.each<[string, Record<string, unknown>, string[]]>([
    ['a negative count', { keys: -1 }, ['behaviour.keys']],
    ['a fractional count', { pointer: 1.5 }, ['behaviour.pointer']],
    ['a huge count', { inputs: 1e9 }, ['behaviour.inputs']],
    ['a string for a number', { elapsedMs: '8400' }, ['behaviour.elapsedMs']],
    ['an unknown password entry', { password: 'guessed' }, ['behaviour.password']],
    ['an unknown member', { mouseTrail: [[1, 2]] }, ['behaviour.mouseTrail']],
  ])('refuses a behaviour with %s, naming the field', (_name, change, named) => {
    expect(fields(() => readBehaviour({ ...behaviour, ...change }))).toEqual(named);
  });

  it('a behaviour, as a token carries it and as the engine reads it back', () => {
    expect(readBehaviour({ ...behaviour, ahead: undefined })).toEqual(behaviour);
    expect(behaviourClaim(behaviour)).toEqual({ t: 8400, k: 23, p: 2, v: 0, i: 21, pw: 'typed' });
    expect(behaviourOfClaim(behaviourClaim(behaviour))).toEqual(behaviour);
    expect(behaviourOfClaim(behaviourClaim({ ...behaviour, ahead: true }))).toEqual({
      ...behaviour,
      ahead: true,
    });
    expect(behaviourOfClaim({ t: 1, k: 'x' })).toBeNull();
    expect(behaviourOfClaim('typed')).toBeNull();
  });

  it('a person interacted: a key, a pointer press, a paste, or a password typed or pasted', () => {
    const none: Behaviour = {
      elapsedMs: 300,
      keys: 0,
      pointer: 0,
      pastes: 0,
      inputs: 0,
      password: 'filled',
      ahead: false,
    };
    expect(interacted(none)).toBe(false);
    expect(interacted({ ...none, pointer: 1 })).toBe(true);
    expect(interacted({ ...none, password: 'pasted' })).toBe(true);
    // Input events alone (a password manager filling the form) are no person's own doing.
    expect(interacted({ ...none, inputs: 4 })).toBe(false);
  });
});

/** clients/test-vectors/proof.json, table by table: what a client's proof of work is checked against. */
describe('the shared vectors (proof of work)', () => {
  const v = readVectors('proof.json');
  it.each<[string, number, any]>(v.solve.map((c: any) => [c.salt, c.difficulty, c]))(
    '%s at %i bits: the first nonce counting from 0',
    (_salt, _d, c) => {
      expect(solve(c.salt, c.difficulty)).toBe(c.nonce);
      expect(createHash('sha256').update(`${c.salt}${c.nonce}`).digest('hex')).toBe(c.sha256_hex);
    },
  );
  it.each<[string, number, string, any]>(v.check.map((c: any) => [c.salt, c.difficulty, c.nonce, c]))(
    '%s at %i bits, nonce %s',
    (_s, _d, _n, c) => {
      expect(leadingZeroBits(createHash('sha256').update(`${c.salt}${c.nonce}`).digest())).toBe(c.zero_bits);
      expect(proofHolds(c.salt, c.nonce, c.difficulty)).toBe(c.holds);
    },
  );
});
