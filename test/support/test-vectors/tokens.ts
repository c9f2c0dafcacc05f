/**
 * clients/test-vectors/tokens.json, computed by the server's own code: the browser's `rpt1`
 * tokens (core/client/token.ts), mobile sessions and the `rpm1` tokens an app mints from them
 * (core/client/session.ts), what the verifier answers for each, and when a use of a token is a
 * replay (core/scoring/records.ts). Deterministic: fixed keys, times and nonces.
 */
import { createHmac } from 'node:crypto';
import { Sealer } from '../../../src/core/crypto';
import {
  CLIENT_TOKEN_TTL_MS,
  openClientToken,
  signClientToken,
  type ClientClaims,
  type OpenedToken,
} from '../../../src/core/client/token';
import {
  mintMobileToken,
  MOBILE_TOKEN_TTL_MS,
  openMobileToken,
  SESSION_TTL_MS,
  sessionKey,
  signSession,
  type OpenedMobileToken,
  type SessionClaims,
} from '../../../src/core/client/session';
import { tokenBump, tokenReplayed } from '../../../src/core/scoring/records';
import { TOKEN_FLOW_MS, TOKEN_MAX_USES } from '../../../src/core/scoring/weights';
import type { CounterBump, CounterSnapshot } from '../../../src/core/ports';

/** RAMPART_MASTER_KEY of the vectors' deployment (64 hex digits), and another deployment's. */
export const MASTER_KEY_HEX = '000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f';
const OTHER_MASTER_KEY_HEX = 'ff'.repeat(32);
const ENV = 'env_vectors';
const T0 = Date.parse('2026-11-25T20:00:00.000Z');

const keyOf = (masterHex: string): Buffer => new Sealer(masterHex).macKey('client-token');

type Expect = { ok: true } | { ok: false; reason: string };
const outcome = (o: OpenedToken | OpenedMobileToken): Expect =>
  o.ok ? { ok: true } : { ok: false, reason: o.reason };

function rpt1(key: Buffer) {
  const claims = (over: Partial<ClientClaims> = {}): ClientClaims => ({
    env: ENV,
    jti: 'jti-0001',
    iat: T0,
    dk: 'dk-laptop-1',
    auto: [],
    ua: 'u1a2b3',
    lang: 'en',
    tzo: -60,
    mk: null,
    ...over,
  });
  const plain = claims();
  const proved = claims({
    jti: 'jti-0002',
    pw: 17,
    pc: 'challenge-1',
    bh: { t: 9400, k: 23, p: 2, v: 0, i: 21, pw: 'typed' },
  });
  const other = signClientToken(keyOf(OTHER_MASTER_KEY_HEX), plain);
  const token = signClientToken(key, plain);
  const [prefix, , mac] = token.split('.');
  const tampered = `${prefix}.${Buffer.from(JSON.stringify({ ...plain, dk: 'dk-someone-else' })).toString('base64url')}.${mac}`;
  const verify: { name: string; token: string; env: string; now: number }[] = [
    { name: 'fresh', token, env: ENV, now: T0 + 1000 },
    { name: 'at the end of its lifetime (5 minutes)', token, env: ENV, now: T0 + CLIENT_TOKEN_TTL_MS },
    { name: 'one millisecond past its lifetime', token, env: ENV, now: T0 + CLIENT_TOKEN_TTL_MS + 1 },
    { name: 'issued 30 s ahead of the verifier (clock skew)', token, env: ENV, now: T0 - 30_000 },
    { name: 'issued more than 30 s ahead of the verifier', token, env: ENV, now: T0 - 30_001 },
    { name: 'another environment', token, env: 'env_other', now: T0 },
    { name: 'signed by another deployment (wrong key)', token: other, env: ENV, now: T0 },
    { name: 'claims altered after signing', token: tampered, env: ENV, now: T0 },
    { name: 'MAC cut off', token: token.replace(/\.[^.]+$/, '.'), env: ENV, now: T0 },
    { name: 'no MAC at all', token: 'rpt1.', env: ENV, now: T0 },
  ];
  return {
    issued: [
      { name: 'plain', claims: plain, token },
      { name: 'with proof of work and behaviour', claims: proved, token: signClientToken(key, proved) },
    ],
    verify: verify.map((v) => ({ ...v, expect: outcome(openClientToken(key, v.token, v.env, v.now)) })),
  };
}

function rpm1(key: Buffer) {
  const claims = (over: Partial<SessionClaims> = {}): SessionClaims => ({
    env: ENV,
    sid: 'sid-android-1',
    iat: T0,
    exp: T0 + SESSION_TTL_MS,
    dk: 'mdk-android-1',
    mk: 'mmk-pixel8',
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
  const sessionOf = (name: string, c: SessionClaims, k = key) => ({
    name,
    claims: c,
    session: signSession(k, c),
    session_key: sessionKey(k, c.sid),
  });
  const android = sessionOf('android', claims());
  const ios = sessionOf(
    'ios',
    claims({
      sid: 'sid-ios-1',
      dk: 'mdk-ios-1',
      mk: 'mmk-iphone15',
      p: 'ios',
      os: '17.4',
      mo: 'iPhone15,3',
      mf: 'Apple',
      av: '3.2.1',
      ab: '321',
      int: ['jailbroken'],
      lang: 'fr',
      tzo: -60,
    }),
  );
  const foreign = sessionOf(
    'signed by another deployment',
    claims({ sid: 'sid-foreign' }),
    keyOf(OTHER_MASTER_KEY_HEX),
  );

  // What the device does: t = floor(device clock + offset), a fresh nonce, the MAC under the session key's UTF-8 bytes.
  const mintCases = [
    {
      name: 'android, device clock right',
      s: android,
      device_time: T0 + 5_000,
      offset: 0,
      nonce: 'AAECAwQFBgcICQoLDA0ODw',
    },
    {
      name: 'android, device clock 90 s slow',
      s: android,
      device_time: T0 + 5_000 - 90_000,
      offset: 90_000,
      nonce: 'nonce-0123456789ab',
    },
    {
      name: 'ios, device clock 2 min fast, fractional ms',
      s: ios,
      device_time: T0 + 120_000 + 7_000.75,
      offset: -120_000,
      nonce: 'abcdefghijklmnopqrstuvwxyz012345',
    },
  ];
  const mint = mintCases.map((m) => {
    const t = Math.floor(m.device_time + m.offset);
    return {
      name: m.name,
      session: m.s.session,
      session_key: m.s.session_key,
      device_time: m.device_time,
      offset: m.offset,
      t,
      nonce: m.nonce,
      token: mintMobileToken(m.s.session, m.s.session_key, t, m.nonce),
    };
  });

  const at = T0 + 5_000;
  const good = mintMobileToken(android.session, android.session_key, at, 'AAECAwQFBgcICQoLDA0ODw');
  const parts = good.split('.');
  const withParts = (i: number, v: string) => parts.map((p, j) => (j === i ? v : p)).join('.');
  const alteredClaims = `rpm1.${Buffer.from(JSON.stringify({ ...android.claims, dk: 'mdk-someone-else' })).toString('base64url')}.${parts.slice(2).join('.')}`;
  const verify: { name: string; token: string; env: string; now: number }[] = [
    { name: 'fresh', token: good, env: ENV, now: at + 1_000 },
    {
      name: 'ios session, minted with a fast clock and an offset',
      token: mint[2]!.token,
      env: ENV,
      now: mint[2]!.t,
    },
    {
      name: 'at the end of its lifetime (5 minutes after t)',
      token: good,
      env: ENV,
      now: at + MOBILE_TOKEN_TTL_MS,
    },
    {
      name: 'expired: one millisecond past 5 minutes after t',
      token: good,
      env: ENV,
      now: at + MOBILE_TOKEN_TTL_MS + 1,
    },
    { name: 't 30 s ahead of the verifier (clock skew)', token: good, env: ENV, now: at - 30_000 },
    { name: 't more than 30 s ahead of the verifier', token: good, env: ENV, now: at - 30_001 },
    {
      name: 'minted after its session expired (beyond 30 s of skew)',
      token: mintMobileToken(
        android.session,
        android.session_key,
        android.claims.exp + 30_001,
        'AAECAwQFBgcICQoLDA0ODw',
      ),
      env: ENV,
      now: android.claims.exp + 30_001,
    },
    {
      name: 'wrong key: MAC under another session key',
      token: mintMobileToken(android.session, ios.session_key, at, 'AAECAwQFBgcICQoLDA0ODw'),
      env: ENV,
      now: at,
    },
    {
      name: "wrong key: MAC under the session key's base64url-decoded bytes",
      token: `${parts.slice(0, 5).join('.')}.${createHmac('sha256', Buffer.from(android.session_key, 'base64url')).update(parts.slice(0, 5).join('.')).digest('base64url')}`,
      env: ENV,
      now: at,
    },
    {
      name: 'session signed by another deployment',
      token: mintMobileToken(foreign.session, foreign.session_key, at, 'AAECAwQFBgcICQoLDA0ODw'),
      env: ENV,
      now: at,
    },
    { name: 'session claims altered', token: alteredClaims, env: ENV, now: at },
    { name: 't altered after minting', token: withParts(3, String(at + 1)), env: ENV, now: at },
    { name: 'nonce altered after minting', token: withParts(4, 'BAECAwQFBgcICQoLDA0ODw'), env: ENV, now: at },
    { name: 'another environment', token: good, env: 'env_other', now: at },
    {
      name: 'nonce of 15 characters',
      token: mintMobileToken(android.session, android.session_key, at, 'abcdefghijklmno'),
      env: ENV,
      now: at,
    },
    {
      name: 'nonce of 33 characters',
      token: mintMobileToken(android.session, android.session_key, at, 'abcdefghijklmnopqrstuvwxyz0123456'),
      env: ENV,
      now: at,
    },
    {
      name: 'nonce with a character outside A-Z a-z 0-9 _ -',
      token: mintMobileToken(android.session, android.session_key, at, 'abcdefghijklmnop+'),
      env: ENV,
      now: at,
    },
    { name: 't not decimal', token: withParts(3, '1764100805000.5'), env: ENV, now: at },
    { name: 'a part missing', token: parts.filter((_, i) => i !== 4).join('.'), env: ENV, now: at },
  ];
  return {
    sessions: [android, ios, foreign],
    mint,
    verify: verify.map((v) => {
      const o = openMobileToken(key, v.token, v.env, v.now);
      return { ...v, expect: o.ok ? { ok: true, jti: o.jti } : { ok: false, reason: o.reason } };
    }),
  };
}

/** A counter document after a bump (inc, min, set members), as the store applies it. */
function apply(doc: CounterSnapshot, b: CounterBump): CounterSnapshot {
  const counts = { ...doc.counts };
  const sets = { ...doc.sets };
  for (const [k, v] of Object.entries(b.inc ?? {})) counts[k] = (counts[k] ?? 0) + v;
  for (const [k, v] of Object.entries(b.min ?? {})) counts[k] = Math.min(counts[k] ?? v, v);
  for (const [k, v] of Object.entries(b.add ?? {}))
    sets[k] = (sets[k] ?? []).includes(v) ? (sets[k] as string[]) : [...(sets[k] ?? []), v];
  return { counts, sets };
}

/** Each use of one token in turn: whether the verdict counts it a replay (every use is recorded). */
export function replays(uses: { at: number; ip: string | null }[]): boolean[] {
  let doc: CounterSnapshot = { counts: {}, sets: {} };
  return uses.map((u) => {
    const bump = tokenBump('tok', T0 + u.at, u.ip);
    const replayed = tokenReplayed(new Map([[bump.key, doc]]), 'tok', T0 + u.at, u.ip);
    doc = apply(doc, bump);
    return replayed;
  });
}

function replay() {
  const a = '203.0.113.7';
  const cases: { name: string; uses: { at: number; ip: string | null }[] }[] = [
    {
      name: 'one login flow: pre-auth check, verdict, track within a minute from one address',
      uses: [
        { at: 0, ip: a },
        { at: 4_000, ip: a },
        { at: 9_000, ip: a },
      ],
    },
    {
      name: 'a fourth call',
      uses: [
        { at: 0, ip: a },
        { at: 1_000, ip: a },
        { at: 2_000, ip: a },
        { at: 3_000, ip: a },
      ],
    },
    {
      name: 'a second call more than a minute after the first',
      uses: [
        { at: 0, ip: a },
        { at: TOKEN_FLOW_MS + 1, ip: a },
      ],
    },
    {
      name: 'a second call exactly a minute after the first',
      uses: [
        { at: 0, ip: a },
        { at: TOKEN_FLOW_MS, ip: a },
      ],
    },
    {
      name: 'a second call from another address',
      uses: [
        { at: 0, ip: a },
        { at: 1_000, ip: '198.51.100.9' },
      ],
    },
    {
      name: 'calls without an address',
      uses: [
        { at: 0, ip: null },
        { at: 1_000, ip: a },
        { at: 2_000, ip: null },
      ],
    },
  ];
  return {
    max_uses: TOKEN_MAX_USES,
    flow_ms: TOKEN_FLOW_MS,
    cases: cases.map((c) => ({ ...c, replayed: replays(c.uses) })),
  };
}

export function tokenVectors() {
  const key = keyOf(MASTER_KEY_HEX);
  return {
    master_key_hex: MASTER_KEY_HEX,
    client_token_key_hex: key.toString('hex'),
    env: ENV,
    rpt1: rpt1(key),
    rpm1: rpm1(key),
    replay: replay(),
  };
}
