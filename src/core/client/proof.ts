/**
 * What makes a browser token cost something: a proof of work, and the page's behaviour.
 *
 * The collector signs a **challenge** (`rpc1.<claims>.<mac>`: environment, id, a random salt, the
 * difficulty, the issue time), valid CHALLENGE_TTL_MS and redeemable once. The client answers it
 * with a **nonce** (decimal digits) such that SHA-256 of the UTF-8 bytes of `salt ‖ nonce` begins
 * with `difficulty` zero bits: about 2^difficulty hashes to find, one to check. A page pays that
 * once per login flow, in the background while its user types; a script pays it for every token,
 * since a token serves one flow and a challenge one token. Beside it, the page reports a summary
 * of what happened on it before it asked (time on the page, counts of key, pointer, paste and
 * input events, how the password field was filled): counts only, nothing typed.
 *
 * Both are optional on the wire (docs/client.md): a client that sends neither still gets a token,
 * which says so, and the engine weighs that only where the environment's legitimate logins nearly
 * all carry a proof (scoring/request-evidence.ts, `unproven_client`).
 *
 * Pure: no I/O (the redeemed challenges are kept in memory by the caller).
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { hmacSha256, randomToken, safeEqual } from '../crypto';
import { invalidParameters } from './problems';
import { decodeClaims, encodeClaims, type TokenProblem } from './token';
import type { Behaviour, PasswordEntry } from './wire';

export const CHALLENGE_PREFIX = 'rpc1.';
/** How long a challenge may be answered after it was issued. */
export const CHALLENGE_TTL_MS = 300_000;
/** Clock skew tolerated between the instance that issued a challenge and the one redeeming it. */
const SKEW_MS = 30_000;
/**
 * The default difficulty: 2^17 hashes expected; on this project's 2-core server about 60 ms of a
 * page's time in Chromium, and 50 to 170 ms of CPU per token for a Node script (docs/client.md,
 * bench/client-pow.ts).
 */
export const DEFAULT_POW_BITS = 17;
/** Difficulties a deployment may set (0: challenges are trivial, for tests). */
export const MAX_POW_BITS = 30;

export interface ChallengeClaims {
  env: string;
  /** The challenge's own id (single use is tracked by it). */
  cid: string;
  /** The salt the nonce is appended to. */
  s: string;
  /** Leading zero bits the hash must have. */
  d: number;
  /** Issued at (epoch ms, server time). */
  iat: number;
}

export interface IssuedChallenge {
  challenge: string;
  salt: string;
  difficulty: number;
  expiresInSeconds: number;
}

export type OpenedChallenge = { ok: true; claims: ChallengeClaims } | { ok: false; reason: TokenProblem };

/** The challenges' MAC key, derived from the tokens' so that one is never taken for the other. */
export const challengeKey = (tokenKey: Buffer): Buffer => hmacSha256(tokenKey, 'rampart:client-challenge');

const mac = (key: Buffer, signed: string) => hmacSha256(key, signed).toString('base64url');

export function issueChallenge(
  key: Buffer,
  env: string,
  difficulty: number,
  now: number,
): IssuedChallenge & { claims: ChallengeClaims } {
  const claims: ChallengeClaims = { env, cid: randomToken(12), s: randomToken(16), d: difficulty, iat: now };
  const signed = `${CHALLENGE_PREFIX}${encodeClaims(claims)}`;
  return {
    challenge: `${signed}.${mac(key, signed)}`,
    salt: claims.s,
    difficulty,
    expiresInSeconds: CHALLENGE_TTL_MS / 1000,
    claims,
  };
}

/** Verify a challenge's MAC, age and environment; never throws. */
export function openChallenge(key: Buffer, challenge: string, env: string, now: number): OpenedChallenge {
  const dot = challenge.lastIndexOf('.');
  if (!challenge.startsWith(CHALLENGE_PREFIX) || dot <= CHALLENGE_PREFIX.length)
    return { ok: false, reason: 'malformed' };
  const signed = challenge.slice(0, dot);
  if (!safeEqual(challenge.slice(dot + 1), mac(key, signed))) return { ok: false, reason: 'forged' };
  const c = decodeClaims(signed.slice(CHALLENGE_PREFIX.length));
  const str = (x: unknown): x is string => typeof x === 'string' && x.length > 0 && x.length <= 64;
  if (
    !c ||
    !str(c.env) ||
    !str(c.cid) ||
    !str(c.s) ||
    typeof c.d !== 'number' ||
    !Number.isInteger(c.d) ||
    c.d < 0 ||
    c.d > MAX_POW_BITS ||
    typeof c.iat !== 'number' ||
    !Number.isFinite(c.iat)
  )
    return { ok: false, reason: 'malformed' };
  if (c.env !== env) return { ok: false, reason: 'other_environment' };
  if (c.iat - now > SKEW_MS) return { ok: false, reason: 'not_yet_valid' };
  if (now - c.iat > CHALLENGE_TTL_MS) return { ok: false, reason: 'expired' };
  return { ok: true, claims: { env: c.env, cid: c.cid, s: c.s, d: c.d, iat: c.iat } };
}

/** Leading zero bits of a digest. */
export function leadingZeroBits(digest: Uint8Array): number {
  let bits = 0;
  for (const byte of digest) {
    if (byte === 0) {
      bits += 8;
      continue;
    }
    return bits + Math.clz32(byte) - 24;
  }
  return bits;
}

/** Whether `nonce` answers `salt` at `difficulty`: SHA-256(salt ‖ nonce) begins with that many zero bits. */
export const proofHolds = (salt: string, nonce: string, difficulty: number): boolean =>
  leadingZeroBits(createHash('sha256').update(`${salt}${nonce}`, 'utf8').digest()) >= difficulty;

/**
 * Challenges already redeemed, until they expire (one instance's memory; across instances a
 * second token from one proof shares the first one's uses, see ClientTokenUse.jti). At most
 * `cap` are remembered: past that the oldest are forgotten first.
 */
export class RedeemedChallenges {
  private readonly until = new Map<string, number>();

  constructor(private readonly cap = 200_000) {}

  /** Record `cid` as redeemed; false when it already was. */
  redeem(cid: string, expiresAt: number, now: number): boolean {
    if (this.until.has(cid) && (this.until.get(cid) ?? 0) > now) return false;
    this.until.set(cid, expiresAt);
    for (const [id, at] of this.until) {
      if (at > now && this.until.size <= this.cap) break;
      this.until.delete(id);
    }
    return true;
  }
}

/** How the page's password field came to hold its value (wire.ts, PasswordEntry). */
export const PASSWORD_ENTRY = [
  'typed',
  'pasted',
  'filled',
  'empty',
  'absent',
] as const satisfies readonly PasswordEntry[];
export type { Behaviour, PasswordEntry };

const COUNT = 'must be a whole number between 0 and 100000';
const count = z
  .number({ required_error: 'is required', invalid_type_error: COUNT })
  .int(COUNT)
  .min(0, COUNT)
  .max(100_000, COUNT);
const ELAPSED = 'must be a whole number of milliseconds between 0 and 86400000';

/** The collector's `proof` object. */
export const proofSchema = z
  .object(
    {
      challenge: z
        .string({
          required_error: 'is required',
          invalid_type_error: 'must be the challenge string the collector answered',
        })
        .min(1, 'is required')
        .max(512, 'must be at most 512 characters'),
      nonce: z
        .string({
          required_error: 'is required',
          invalid_type_error: 'must be a string of 1 to 16 decimal digits',
        })
        .regex(/^[0-9]{1,16}$/, 'must be a string of 1 to 16 decimal digits'),
    },
    { invalid_type_error: 'must be an object {challenge, nonce}' },
  )
  .strict();

/** The collector's `behaviour` object. */
export const behaviourSchema = z
  .object(
    {
      elapsedMs: z
        .number({ required_error: 'is required', invalid_type_error: ELAPSED })
        .int(ELAPSED)
        .min(0, ELAPSED)
        .max(86_400_000, ELAPSED),
      keys: count,
      pointer: count,
      pastes: count,
      inputs: count,
      password: z.enum(PASSWORD_ENTRY, {
        errorMap: () => ({ message: `must be one of ${PASSWORD_ENTRY.join(', ')}` }),
      }),
      ahead: z.boolean({ invalid_type_error: 'must be true or false' }).optional(),
    },
    { invalid_type_error: 'must be an object' },
  )
  .strict();

/** Validate the collector's `proof` object (absent: undefined or null); throws InvalidParameters naming each problem. */
export function readProof(value: unknown): { challenge: string; nonce: string } | null {
  if (value === undefined || value === null) return null;
  const r = proofSchema.safeParse(value);
  if (!r.success) throw invalidParameters(r.error.issues, { prefix: 'proof', depth: () => 1 });
  return r.data;
}

/** Validate the collector's `behaviour` object (absent: undefined or null); throws InvalidParameters naming each problem. */
export function readBehaviour(value: unknown): Behaviour | null {
  if (value === undefined || value === null) return null;
  const r = behaviourSchema.safeParse(value);
  if (!r.success) throw invalidParameters(r.error.issues, { prefix: 'behaviour', depth: () => 1 });
  return { ...r.data, ahead: r.data.ahead ?? false };
}

/**
 * A behaviour as a token carries it (short names: a token rides in a cookie): `t` elapsed ms,
 * `k` keys, `p` pointer, `v` pastes, `i` inputs, `pw` the password's entry, `a` 1 when ahead.
 */
export interface BehaviourClaim {
  t: number;
  k: number;
  p: number;
  v: number;
  i: number;
  pw: PasswordEntry;
  a?: 1;
}

export const behaviourClaim = (b: Behaviour): BehaviourClaim => ({
  t: b.elapsedMs,
  k: b.keys,
  p: b.pointer,
  v: b.pastes,
  i: b.inputs,
  pw: b.password,
  ...(b.ahead ? { a: 1 as const } : {}),
});

/** A token's behaviour claim as the engine reads it (null: absent or not of this shape). */
export function behaviourOfClaim(v: unknown): Behaviour | null {
  if (typeof v !== 'object' || v === null) return null;
  const c = v as Record<string, unknown>;
  const n = (x: unknown) =>
    typeof x === 'number' && Number.isInteger(x) && x >= 0 && x <= 86_400_000 ? x : null;
  const [t, k, p, pv, i] = [n(c.t), n(c.k), n(c.p), n(c.v), n(c.i)];
  if (
    t === null ||
    k === null ||
    p === null ||
    pv === null ||
    i === null ||
    !(PASSWORD_ENTRY as readonly string[]).includes(c.pw as string)
  )
    return null;
  return {
    elapsedMs: t,
    keys: k,
    pointer: p,
    pastes: pv,
    inputs: i,
    password: c.pw as PasswordEntry,
    ahead: c.a === 1,
  };
}

/** Whether a person did anything on the page before the token was asked for (a key, a pointer press, a paste, or a password typed or pasted). */
export const interacted = (b: Behaviour): boolean =>
  b.keys + b.pointer + b.pastes > 0 || b.password === 'typed' || b.password === 'pasted';
