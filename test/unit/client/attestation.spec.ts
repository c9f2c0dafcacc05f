/**
 * The attestation verifiers (src/core/client/attestation): App Attest attestations and assertions
 * under a root CA the test makes, Play Integrity tokens under keys it makes, each valid and then
 * spoilt one way at a time; the CBOR and DER readers on hostile input; and Apple's committed root.
 */
import { createHash, X509Certificate } from 'node:crypto';
import {
  APPLE_APP_ATTESTATION_ROOT_PEM,
  APPLE_APP_ATTESTATION_ROOT_SHA256,
} from '../../../src/core/client/attestation/apple-root';
import { verifyAppAssertion, verifyAppAttestation } from '../../../src/core/client/attestation/app-attest';
import { CborError, decodeCbor, encodeCbor } from '../../../src/core/client/attestation/cbor';
import { verifyPlayIntegrity } from '../../../src/core/client/attestation/play-integrity';
import {
  AttestationVerifier,
  decodeOutcome,
  encodeOutcome,
  type AttestationClaim,
} from '../../../src/core/client/attestation/verifier';
import { createFakeAttestedKeyStore } from '../../support/fakes/stores';
import { asEnvId } from '../../../src/core/model';
import { attestationEvidence } from '../../../src/core/scoring/attestation-evidence';
import type { EvidenceInput } from '../../../src/core/scoring/evidence';
import type { AttestationOutcome } from '../../../src/core/model';
import {
  clientDataHash,
  makeAppAssertion,
  makeAppAttestation,
  makePlayKeys,
  makePlayToken,
  makeRoot,
  playPayload,
} from '../../support/attestation';

const APP_ID = 'ABCDE12345.com.example.shop';
const now = new Date('2026-11-28T02:00:00Z');
const root = makeRoot(now);
const challenge = 'rpc1.challenge-the-collector-issued.mac';

describe("Apple's App Attestation root", () => {
  it('is the certificate Apple publishes: its fingerprint, self-signed, a CA until 2045', () => {
    const cert = new X509Certificate(APPLE_APP_ATTESTATION_ROOT_PEM);
    expect(createHash('sha256').update(cert.raw).digest('hex')).toBe(APPLE_APP_ATTESTATION_ROOT_SHA256);
    expect(cert.subject).toContain('CN=Apple App Attestation Root CA');
    expect(cert.verify(cert.publicKey)).toBe(true);
    expect(cert.ca).toBe(true);
    expect(Date.parse(cert.validTo)).toBeGreaterThan(Date.parse('2045-01-01'));
  });

  it('is not the trust anchor of an attestation made under another root', () => {
    const made = makeAppAttestation({ root, appId: APP_ID, challenge, now });
    const r = verifyAppAttestation(
      { keyId: made.keyId, object: made.object, clientDataHash: clientDataHash(challenge) },
      { root: new X509Certificate(APPLE_APP_ATTESTATION_ROOT_PEM), appIds: [APP_ID], now },
    );
    expect(r).toEqual({ ok: false, reason: 'untrusted_chain' });
  });
});

describe('App Attest attestation', () => {
  const verify = (
    made: { keyId: string; object: string },
    o: { challenge?: string; appIds?: string[]; at?: Date; anchor?: X509Certificate } = {},
  ) =>
    verifyAppAttestation(
      { keyId: made.keyId, object: made.object, clientDataHash: clientDataHash(o.challenge ?? challenge) },
      { root: o.anchor ?? root.cert, appIds: o.appIds ?? [APP_ID], now: o.at ?? now },
    );

  it('holds for a complete, valid object: the key, the App ID, a production build', () => {
    const made = makeAppAttestation({ root, appId: APP_ID, challenge, now });
    const r = verify(made);
    expect(r.ok).toBe(true);
    if (r.ok) {
      expect(r.value).toMatchObject({ appId: APP_ID, development: false });
      expect(r.value.receipt).toMatch(/^[A-Za-z0-9+/]+=*$/);
    }
  });

  it("accepts a development build's AAGUID and says so", () => {
    const r = verify(
      makeAppAttestation({ root, appId: APP_ID, challenge, now, aaguid: Buffer.from('appattestdevelop') }),
    );
    expect(r.ok && r.value.development).toBe(true);
  });

  it('refuses each spoilt part, naming it', () => {
    expect(
      verify(makeAppAttestation({ root, appId: APP_ID, challenge, now }), {
        anchor: makeRoot(now, 'Another Root').cert,
      }),
    ).toEqual({ ok: false, reason: 'untrusted_chain' });
    expect(
      verify(makeAppAttestation({ root, appId: APP_ID, challenge, now }), {
        challenge: 'rpc1.another.challenge',
      }),
    ).toEqual({ ok: false, reason: 'nonce_mismatch' });
    expect(
      verify(makeAppAttestation({ root, appId: APP_ID, challenge, now, nonce: Buffer.alloc(32, 7) })),
    ).toEqual({ ok: false, reason: 'nonce_mismatch' });
    expect(
      verify(makeAppAttestation({ root, appId: 'ZZZZZ99999.com.example.shop', challenge, now })),
    ).toEqual({ ok: false, reason: 'app_id_mismatch' });
    expect(
      verify(makeAppAttestation({ root, appId: APP_ID, challenge, now }), {
        appIds: ['ABCDE12345.com.example.other'],
      }),
    ).toEqual({ ok: false, reason: 'app_id_mismatch' });
    expect(verify(makeAppAttestation({ root, appId: APP_ID, challenge, now, counter: 3 }))).toEqual({
      ok: false,
      reason: 'counter',
    });
    expect(
      verify(makeAppAttestation({ root, appId: APP_ID, challenge, now, aaguid: Buffer.alloc(16, 1) })),
    ).toEqual({ ok: false, reason: 'aaguid' });
    expect(
      verify(makeAppAttestation({ root, appId: APP_ID, challenge, now, keyId: Buffer.alloc(32, 9) })),
    ).toEqual({ ok: false, reason: 'key_id_mismatch' });
  });

  it('refuses an expired credential certificate, and one checked after its time', () => {
    expect(
      verify(
        makeAppAttestation({
          root,
          appId: APP_ID,
          challenge,
          now,
          leafNotAfter: new Date(now.getTime() - 1000),
        }),
      ),
    ).toEqual({ ok: false, reason: 'expired_certificate' });
    expect(
      verify(makeAppAttestation({ root, appId: APP_ID, challenge, now }), {
        at: new Date(now.getTime() + 400 * 86_400_000),
      }),
    ).toEqual({ ok: false, reason: 'expired_certificate' });
  });

  it('refuses a tampered object: a byte of the authenticator data changed, garbage, another format', () => {
    const made = makeAppAttestation({ root, appId: APP_ID, challenge, now });
    const top = decodeCbor(Buffer.from(made.object, 'base64')) as Map<string, unknown>;
    const authData = Buffer.from(top.get('authData') as Buffer);
    authData[40] ^= 1;
    top.set('authData', authData);
    expect(verify({ keyId: made.keyId, object: encodeCbor(top as never).toString('base64') })).toEqual({
      ok: false,
      reason: 'nonce_mismatch',
    });
    top.set('fmt', 'packed');
    expect(verify({ keyId: made.keyId, object: encodeCbor(top as never).toString('base64') })).toEqual({
      ok: false,
      reason: 'malformed',
    });
    expect(verify({ keyId: made.keyId, object: Buffer.from('not cbor at all').toString('base64') })).toEqual({
      ok: false,
      reason: 'malformed',
    });
    expect(verify({ keyId: made.keyId, object: '' })).toEqual({ ok: false, reason: 'malformed' });
  });
});

describe('App Attest assertion', () => {
  const made = makeAppAttestation({ root, appId: APP_ID, challenge, now });
  const attested = verifyAppAttestation(
    { keyId: made.keyId, object: made.object, clientDataHash: clientDataHash(challenge) },
    { root: root.cert, appIds: [APP_ID], now },
  );
  if (!attested.ok) throw new Error('the fixture does not attest');
  const key = attested.value.publicKey;
  const check = (
    assertion: string,
    o: { challenge?: string; last?: number; appId?: string; publicKey?: string } = {},
  ) =>
    verifyAppAssertion({
      assertion,
      clientDataHash: clientDataHash(o.challenge ?? 'rpc1.second'),
      publicKey: o.publicKey ?? key,
      appId: o.appId ?? APP_ID,
      lastCounter: o.last ?? 0,
    });

  it('holds with the attested key and a rising counter, and gives the counter to keep', () => {
    expect(
      check(
        makeAppAssertion({
          credential: made.credential,
          appId: APP_ID,
          challenge: 'rpc1.second',
          counter: 1,
        }),
      ),
    ).toEqual({ ok: true, value: 1 });
    expect(
      check(
        makeAppAssertion({
          credential: made.credential,
          appId: APP_ID,
          challenge: 'rpc1.second',
          counter: 9,
        }),
        { last: 1 },
      ),
    ).toEqual({ ok: true, value: 9 });
  });

  it('refuses a replayed counter, another challenge, another app, another key, garbage', () => {
    const a = makeAppAssertion({
      credential: made.credential,
      appId: APP_ID,
      challenge: 'rpc1.second',
      counter: 5,
    });
    expect(check(a, { last: 5 })).toEqual({ ok: false, reason: 'counter' });
    expect(check(a, { last: 7 })).toEqual({ ok: false, reason: 'counter' });
    expect(check(a, { challenge: 'rpc1.third' })).toEqual({ ok: false, reason: 'bad_signature' });
    expect(
      check(
        makeAppAssertion({
          credential: made.credential,
          appId: 'ABCDE12345.com.other',
          challenge: 'rpc1.second',
          counter: 1,
        }),
      ),
    ).toEqual({ ok: false, reason: 'app_id_mismatch' });
    const other = makeAppAttestation({ root, appId: APP_ID, challenge, now });
    expect(
      check(
        makeAppAssertion({
          credential: other.credential,
          appId: APP_ID,
          challenge: 'rpc1.second',
          counter: 1,
        }),
      ),
    ).toEqual({ ok: false, reason: 'bad_signature' });
    expect(check(Buffer.from([0xa0]).toString('base64'))).toEqual({ ok: false, reason: 'malformed' });
  });
});

describe('Play Integrity', () => {
  const keys = makePlayKeys();
  const binding = createHash('sha256').update(challenge).digest('base64url');
  const at = now.getTime();
  const expect_ = { packageName: 'com.example.shop', binding, notBefore: at - 60_000, notAfter: at + 30_000 };
  const token = (o: Partial<Parameters<typeof playPayload>[0]> = {}) =>
    makePlayToken(
      keys,
      playPayload({ packageName: 'com.example.shop', nonce: binding, at: at - 1000, ...o }),
    );

  it('opens a valid token: the device and app verdicts', () => {
    expect(verifyPlayIntegrity(token(), keys, expect_)).toEqual({
      ok: true,
      value: { device: 'device', app: 'recognized', at: at - 1000 },
    });
    expect(
      verifyPlayIntegrity(
        token({ device: ['MEETS_BASIC_INTEGRITY', 'MEETS_DEVICE_INTEGRITY', 'MEETS_STRONG_INTEGRITY'] }),
        keys,
        expect_,
      ),
    ).toMatchObject({ ok: true, value: { device: 'strong' } });
    expect(verifyPlayIntegrity(token({ device: ['MEETS_VIRTUAL_INTEGRITY'] }), keys, expect_)).toMatchObject({
      ok: true,
      value: { device: 'virtual' },
    });
    expect(
      verifyPlayIntegrity(token({ device: [], app: 'UNRECOGNIZED_VERSION' }), keys, expect_),
    ).toMatchObject({ ok: true, value: { device: 'none', app: 'unrecognized' } });
  });

  it('takes a nonce in standard base64 with padding as the same binding', () => {
    const padded = Buffer.from(binding, 'base64url').toString('base64');
    expect(verifyPlayIntegrity(token({ nonce: padded }), keys, expect_).ok).toBe(true);
  });

  it('refuses other keys, another nonce, another package, an old or future verdict, a tampered token', () => {
    const other = makePlayKeys();
    expect(verifyPlayIntegrity(token(), { ...keys, decryptionKey: other.decryptionKey }, expect_)).toEqual({
      ok: false,
      reason: 'undecryptable',
    });
    expect(
      verifyPlayIntegrity(token(), { ...keys, verificationKey: other.verificationKey }, expect_),
    ).toEqual({ ok: false, reason: 'bad_signature' });
    expect(
      verifyPlayIntegrity(
        makePlayToken(
          { decryptionKey: keys.decryptionKey, signer: other.signer },
          playPayload({ packageName: 'com.example.shop', nonce: binding, at }),
        )!,
        keys,
        expect_,
      ),
    ).toEqual({ ok: false, reason: 'bad_signature' });
    expect(
      verifyPlayIntegrity(
        token({ nonce: createHash('sha256').update('rpc1.other').digest('base64url') }),
        keys,
        expect_,
      ),
    ).toEqual({ ok: false, reason: 'nonce_mismatch' });
    expect(verifyPlayIntegrity(token({ packageName: 'com.attacker.repack' }), keys, expect_)).toEqual({
      ok: false,
      reason: 'app_id_mismatch',
    });
    expect(verifyPlayIntegrity(token({ at: at - 3_600_000 }), keys, expect_)).toEqual({
      ok: false,
      reason: 'stale',
    });
    expect(verifyPlayIntegrity(token({ at: at + 120_000 }), keys, expect_)).toEqual({
      ok: false,
      reason: 'stale',
    });
    const parts = token().split('.');
    const ct = Buffer.from(parts[3] as string, 'base64url');
    ct[5] ^= 1;
    parts[3] = ct.toString('base64url');
    expect(verifyPlayIntegrity(parts.join('.'), keys, expect_)).toEqual({
      ok: false,
      reason: 'undecryptable',
    });
    expect(verifyPlayIntegrity('a.b.c', keys, expect_)).toEqual({ ok: false, reason: 'malformed' });
    expect(
      verifyPlayIntegrity(
        token(),
        { decryptionKey: 'c2hvcnQ=', verificationKey: keys.verificationKey },
        expect_,
      ),
    ).toEqual({ ok: false, reason: 'bad_keys' });
  });
});

describe('the CBOR decoder', () => {
  it('reads what it writes: integers of every width, strings, bytes, arrays, maps, simple values', () => {
    const v = new Map<string | number, never>([
      [
        'a',
        [0, 23, 24, 255, 256, 65535, 65536, 2 ** 32, Number.MAX_SAFE_INTEGER, -1, -24, -25, -1000] as never,
      ],
      [1, Buffer.from([1, 2, 3]) as never],
      [-2, 'ünïcode' as never],
      ['t', [true, false, null] as never],
    ]);
    expect(decodeCbor(encodeCbor(v))).toEqual(v);
  });

  it('refuses what is malformed or outside its subset, with CborError', () => {
    const bad = [
      [], // empty
      [0x62, 0x61], // text string truncated
      [0x5a, 0xff, 0xff, 0xff, 0xff], // a length beyond the buffer
      [0x9f, 0xff], // indefinite array
      [0xc0, 0x00], // a tag
      [0xf9, 0x3c, 0x00], // a half float
      [0x1b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff], // beyond 2^53
      [0xa2, 0x61, 0x61, 0x00, 0x61, 0x61, 0x00], // duplicate key
      [0xa1, 0x40, 0x00], // a byte-string key
      [0x00, 0x00], // bytes after the value
      [0x62, 0xff, 0xfe], // not UTF-8
      [0x9b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00], // a count beyond the buffer
      Array.from({ length: 40 }, () => 0x81), // nested too deeply
    ];
    for (const b of bad) expect(() => decodeCbor(Buffer.from(b))).toThrow(CborError);
  });
});

describe("an attestation's outcome", () => {
  const outcomes: AttestationOutcome[] = [
    { status: 'verified', kind: 'app_attest' },
    { status: 'verified', kind: 'play_integrity', device: 'virtual', app: 'recognized' },
    { status: 'failed', kind: 'app_attest', reason: 'counter' },
    { status: 'unverified', kind: 'play_integrity', reason: 'not_configured' },
    { status: 'missing' },
  ];

  it("travels in a session's claims and comes back as it was", () => {
    for (const o of outcomes) expect(decodeOutcome(encodeOutcome(o), 'kind' in o ? o.kind : null)).toEqual(o);
    expect(encodeOutcome(null)).toBeNull();
    expect(decodeOutcome('v:rooted:yes', 'play_integrity')).toBeNull();
    expect(decodeOutcome('v', 'something_else')).toBeNull();
  });

  it("is weighed: for a verified device, against a failed or missing one, with Google's verdicts", () => {
    const weigh = (attestation: AttestationOutcome | null, problem: string | null = null) =>
      attestationEvidence({ client: { problem, mobile: { attestation } } } as unknown as EvidenceInput).map(
        (c) => [c.signal, Math.sign(c.weight), c.detail.reason ?? c.detail.evidence ?? null],
      );
    expect(weigh({ status: 'verified', kind: 'app_attest' })).toEqual([['attested_device', -1, null]]);
    expect(
      weigh({ status: 'verified', kind: 'play_integrity', device: 'device', app: 'recognized' }),
    ).toEqual([['attested_device', -1, null]]);
    expect(
      weigh({ status: 'verified', kind: 'play_integrity', device: 'virtual', app: 'recognized' }),
    ).toEqual([['emulator', 1, 'play_integrity']]);
    expect(
      weigh({ status: 'verified', kind: 'play_integrity', device: 'none', app: 'unrecognized' }),
    ).toEqual([
      ['emulator', 1, 'play_integrity'],
      ['spoofed_device', 1, 'tampered_app'],
    ]);
    expect(
      weigh({ status: 'verified', kind: 'play_integrity', device: 'basic', app: 'unevaluated' }),
    ).toEqual([['compromised_device', 1, 'play_integrity']]);
    expect(weigh({ status: 'failed', kind: 'app_attest', reason: 'untrusted_chain' })).toEqual([
      ['spoofed_device', 1, 'attestation_failed'],
    ]);
    expect(weigh({ status: 'missing' })).toEqual([['spoofed_device', 1, 'attestation_missing']]);
    expect(weigh({ status: 'unverified', kind: 'app_attest', reason: 'no_challenge' })).toEqual([]);
    expect(weigh(null)).toEqual([]);
    // A token that does not verify says nothing of its session's attestation.
    expect(weigh({ status: 'missing' }, 'forged')).toEqual([]);
  });
});

describe("the collector's verifier (settings, the kept keys)", () => {
  const keys = createFakeAttestedKeyStore();
  const play = makePlayKeys();
  const sealed = new Map<string, string>();
  const seal = (v: string) => {
    const id = `sealed-${sealed.size}`;
    sealed.set(id, v);
    return id;
  };
  const verifier = new AttestationVerifier({
    keys,
    appleRoot: root.cert,
    open: (s) => {
      const v = sealed.get(s);
      if (v === undefined) throw new Error('sealed under another key');
      return v;
    },
  });
  const settings = {
    app: 'com.example.shop',
    appleTeamId: 'ABCDE12345',
    play: { decryptionKey: seal(play.decryptionKey), verificationKey: seal(play.verificationKey) },
    required: false,
  };
  const ctx = (
    platform: 'ios' | 'android',
    over: Partial<Parameters<AttestationVerifier['verify']>[1]> = {},
  ) => ({
    envId: asEnvId('env-1'),
    platform,
    appId: 'com.example.shop',
    settings,
    issuedAt: now.getTime() - 1000,
    now,
    ...over,
  });
  const claim = (o: Partial<AttestationClaim>): AttestationClaim & { challenge: string } => ({
    kind: 'app_attest',
    token: null,
    keyId: null,
    object: null,
    assertion: null,
    ...o,
    challenge,
  });

  it('attests a key, keeps it, verifies its assertions, and refuses a key it never attested', async () => {
    const made = makeAppAttestation({ root, appId: APP_ID, challenge, now });
    expect(await verifier.verify(claim({ keyId: made.keyId, object: made.object }), ctx('ios'))).toEqual({
      status: 'verified',
      kind: 'app_attest',
    });
    expect(keys.all.size).toBe(1);
    const assertion = makeAppAssertion({ credential: made.credential, appId: APP_ID, challenge, counter: 2 });
    expect(await verifier.verify(claim({ keyId: made.keyId, assertion }), ctx('ios'))).toEqual({
      status: 'verified',
      kind: 'app_attest',
    });
    expect(await verifier.verify(claim({ keyId: made.keyId, assertion }), ctx('ios'))).toEqual({
      status: 'failed',
      kind: 'app_attest',
      reason: 'counter',
    });
    expect(
      await verifier.verify(claim({ keyId: made.keyId, assertion }), ctx('ios', { envId: asEnvId('env-2') })),
    ).toEqual({ status: 'failed', kind: 'app_attest', reason: 'unknown_key' });
  });

  it('says what it could not verify: another platform, nothing configured, keys it cannot open', async () => {
    expect(await verifier.verify(claim({ kind: 'play_integrity', token: 'x' }), ctx('ios'))).toEqual({
      status: 'failed',
      kind: 'play_integrity',
      reason: 'platform_mismatch',
    });
    expect(
      await verifier.verify(
        claim({ kind: 'play_integrity', token: 'x' }),
        ctx('android', { settings: { ...settings, play: null } }),
      ),
    ).toEqual({ status: 'unverified', kind: 'play_integrity', reason: 'not_configured' });
    expect(
      await verifier.verify(
        claim({ kind: 'play_integrity', token: 'x' }),
        ctx('android', {
          settings: { ...settings, play: { decryptionKey: 'lost', verificationKey: 'lost' } },
        }),
      ),
    ).toEqual({ status: 'unverified', kind: 'play_integrity', reason: 'not_configured' });
    const binding = createHash('sha256').update(challenge).digest('base64url');
    const token = makePlayToken(
      play,
      playPayload({ packageName: 'com.example.shop', nonce: binding, at: now.getTime() }),
    );
    expect(await verifier.verify(claim({ kind: 'play_integrity', token }), ctx('android'))).toEqual({
      status: 'verified',
      kind: 'play_integrity',
      device: 'device',
      app: 'recognized',
    });
    // Made before the challenge was issued: not over it.
    const early = makePlayToken(
      play,
      playPayload({ packageName: 'com.example.shop', nonce: binding, at: now.getTime() - 120_000 }),
    );
    expect(await verifier.verify(claim({ kind: 'play_integrity', token: early }), ctx('android'))).toEqual({
      status: 'failed',
      kind: 'play_integrity',
      reason: 'stale',
    });
  });
});
