/**
 * Platform attestations through REST on a real database (docs/mobile.md, "Attestation"): an app
 * asks the collector for a challenge with its app id, attests over it (App Attest under a root CA
 * this test makes and gives the service in Apple's place; Play Integrity under keys it makes and
 * configures as the Play Console's), registers its session with the attestation, and the verdicts
 * its tokens get reflect what verifying it found: a verified device, a replayed counter, Google's
 * emulator verdict, a session without one where the app requires it.
 */
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { call, startTestApp, type TestApp } from '../support/app';
import {
  makeAppAssertion,
  makeAppAttestation,
  makePlayKeys,
  makePlayToken,
  makeRoot,
  playPayload,
} from '../support/attestation';
import { runCommand } from '../../src/cli/main';
import type { Environment } from '../../src/core/model';

const root = makeRoot();
const play = makePlayKeys();
const TEAM = 'ABCDE12345';
let app: TestApp;
let env: Environment;
let secret: string;

beforeAll(async () => {
  app = await startTestApp({ grpc: false, appAttestRoot: root.pem });
  ({ env, secret } = await app.newEnvironment(`attest-${Date.now()}`));
  await app.built.services.environments.setClientApps(env.id, ['com.example.shop', 'com.example.bank']);
  // Configured before the collector first reads the environment (it caches it for 5 seconds).
  const dir = mkdtempSync(join(tmpdir(), 'rampart-play-'));
  writeFileSync(
    join(dir, 'keys.json'),
    JSON.stringify({ decryptionKey: play.decryptionKey, verificationKey: play.verificationKey }),
  );
  const lines: string[] = [];
  const cli = (...args: string[]) => runCommand(app.built.services, args, (l) => lines.push(l));
  expect(await cli('env', 'set-app-attest', env.name, 'com.example.shop', TEAM)).toBe(0);
  expect(await cli('env', 'set-play-integrity', env.name, 'com.example.shop', join(dir, 'keys.json'))).toBe(
    0,
  );
  expect(await cli('env', 'set-app-attest', env.name, 'com.example.bank', TEAM)).toBe(0);
  expect(await cli('env', 'require-attestation', env.name, 'com.example.bank', 'on')).toBe(0);
  await cli('env', 'list');
  const listed = lines.find((l) => l.startsWith(`${env.name}\t`)) ?? '';
  expect(listed).toContain(
    `attestation=com.example.shop:app_attest(${TEAM})+play_integrity,com.example.bank:app_attest(${TEAM}):required`,
  );
  // The keys are stored sealed, never in clear.
  const stored = JSON.stringify(await app.built.services.environments.byName(env.name));
  expect(stored).not.toContain(play.decryptionKey);
  expect(stored).not.toContain(play.verificationKey);
});
afterAll(async () => {
  await app?.close();
});

const appHeaders = (ua: string) => ({
  'User-Agent': ua,
  Accept: 'application/json',
  'Accept-Encoding': 'gzip',
  'Content-Type': 'application/json',
});
const IOS_UA = 'ShopApp/321 CFNetwork/1494.0.7 Darwin/23.4.0';
const OKHTTP = 'okhttp/4.12.0';

const phone = (
  platform: 'ios' | 'android',
  appId = 'com.example.shop',
  attestation?: Record<string, unknown>,
): Record<string, unknown> => ({
  platform,
  osVersion: platform === 'ios' ? '17.5' : '14',
  model: platform === 'ios' ? 'iPhone15,3' : 'Pixel 8',
  manufacturer: platform === 'ios' ? 'Apple' : 'Google',
  app: { id: appId, version: '3.2.1', build: '321' },
  installId: randomBytes(16).toString('base64url'),
  ...(platform === 'android'
    ? { vendorId: createHmac('sha256', 'v').update(randomBytes(8)).digest('hex') }
    : {}),
  ...(attestation ? { attestation } : {}),
});

interface Session {
  session: string;
  session_key: string;
}

async function challenge(appId = 'com.example.shop'): Promise<string> {
  const r = await call(
    app,
    'POST',
    '/v1/client/challenge',
    { publishable_key: env.publishableKey, app: appId },
    { secret: null },
  );
  expect(r.status).toBe(201);
  return r.body.challenge as string;
}

async function register(
  mobile: Record<string, unknown>,
  status = 201,
): Promise<Session & { body: Record<string, unknown> }> {
  const r = await call(
    app,
    'POST',
    '/v1/client/token',
    { publishable_key: env.publishableKey, mobile },
    { secret: null },
  );
  expect(r.status).toBe(status);
  return { ...(r.body as unknown as Session), body: r.body };
}

function mint(s: Session): string {
  const signed = `rpm1.${s.session.slice('rps1.'.length)}.${Date.now()}.${randomBytes(12).toString('base64url')}`;
  return `${signed}.${createHmac('sha256', Buffer.from(s.session_key, 'utf8')).update(signed).digest('base64url')}`;
}

let n = 0;
type Answer = { risk: number; signals: Record<string, Record<string, unknown>>; device: { token: string } };
async function login(
  s: Session,
  ua: string,
): Promise<{ answer: Answer; properties: Record<string, unknown> }> {
  const user = `attest-user-${++n}`;
  const r = await call(
    app,
    'POST',
    '/v1/risk',
    {
      event: '$login',
      user: { id: user, email: `${user}@example.com` },
      request_token: mint(s),
      context: { ip: '81.2.69.142', headers: appHeaders(ua) },
    },
    { secret },
  );
  expect(r.status).toBe(201);
  const devices = await call(app, 'GET', `/v1/users/${user}/devices`, undefined, { secret });
  const d = (devices.body.data as { context: { properties: Record<string, unknown> } }[])[0];
  return { answer: r.body as unknown as Answer, properties: d?.context.properties ?? {} };
}

describe('App Attest', () => {
  const appId = `${TEAM}.com.example.shop`;

  it('a key attested over a challenge, then assertions with a rising counter: verified, and a replayed counter fails', async () => {
    const c1 = await challenge();
    const made = makeAppAttestation({ root, appId, challenge: c1 });
    const first = await register(
      phone('ios', 'com.example.shop', {
        kind: 'app_attest',
        challenge: c1,
        keyId: made.keyId,
        object: made.object,
      }),
    );
    const one = await login(first, IOS_UA);
    expect(one.properties).toMatchObject({ attestation: 'app_attest', attestation_status: 'verified' });
    expect(one.answer.signals).not.toHaveProperty('spoofed_device');

    const c2 = await challenge();
    const second = await register(
      phone('ios', 'com.example.shop', {
        kind: 'app_attest',
        challenge: c2,
        keyId: made.keyId,
        assertion: makeAppAssertion({ credential: made.credential, appId, challenge: c2, counter: 1 }),
      }),
    );
    expect((await login(second, IOS_UA)).properties).toMatchObject({ attestation_status: 'verified' });

    // The same counter again, over a fresh challenge: a copy of the key's state, not the phone.
    const c3 = await challenge();
    const replayed = await register(
      phone('ios', 'com.example.shop', {
        kind: 'app_attest',
        challenge: c3,
        keyId: made.keyId,
        assertion: makeAppAssertion({ credential: made.credential, appId, challenge: c3, counter: 1 }),
      }),
    );
    const r = await login(replayed, IOS_UA);
    expect(r.properties).toMatchObject({ attestation_status: 'failed: counter' });
    expect(r.answer.signals).toMatchObject({
      spoofed_device: { reason: 'attestation_failed', attestation: 'app_attest', failure: 'counter' },
    });
  });

  it('an attestation under another root, or for another challenge, is evidence against the device', async () => {
    const c = await challenge();
    const forged = makeAppAttestation({ root: makeRoot(new Date(), 'Farm Root'), appId, challenge: c });
    const s = await register(
      phone('ios', 'com.example.shop', {
        kind: 'app_attest',
        challenge: c,
        keyId: forged.keyId,
        object: forged.object,
      }),
    );
    expect((await login(s, IOS_UA)).answer.signals).toMatchObject({
      spoofed_device: { reason: 'attestation_failed', failure: 'untrusted_chain' },
    });

    const c2 = await challenge();
    const other = makeAppAttestation({ root, appId, challenge: 'rpc1.some-other-challenge' });
    const s2 = await register(
      phone('ios', 'com.example.shop', {
        kind: 'app_attest',
        challenge: c2,
        keyId: other.keyId,
        object: other.object,
      }),
    );
    expect((await login(s2, IOS_UA)).answer.signals).toMatchObject({
      spoofed_device: { reason: 'attestation_failed', failure: 'nonce_mismatch' },
    });
  });

  it('a challenge serves one registration: a replayed one answers 422, as does one not issued here', async () => {
    const c = await challenge();
    const made = makeAppAttestation({ root, appId, challenge: c });
    const body = phone('ios', 'com.example.shop', {
      kind: 'app_attest',
      challenge: c,
      keyId: made.keyId,
      object: made.object,
    });
    await register(body);
    const again = await register(body, 422);
    expect(again.body.fields).toEqual([
      { field: 'mobile.attestation.challenge', message: 'was already used: ask for another' },
    ]);
    const forged = await register(
      phone('ios', 'com.example.shop', {
        kind: 'app_attest',
        challenge: 'rpc1.e30.not-a-mac',
        keyId: made.keyId,
        object: made.object,
      }),
      422,
    );
    expect(forged.body.fields).toEqual([
      { field: 'mobile.attestation.challenge', message: 'is not a challenge of this collector' },
    ]);
  });

  it('where the app requires attestation, a session without one is flagged', async () => {
    const none = await register(phone('ios', 'com.example.bank'));
    const r = await login(none, IOS_UA);
    expect(r.properties).toMatchObject({ attestation_status: 'missing' });
    expect(r.answer.signals).toMatchObject({ spoofed_device: { reason: 'attestation_missing' } });
    const c = await challenge('com.example.bank');
    const made = makeAppAttestation({ root, appId: `${TEAM}.com.example.bank`, challenge: c });
    const attested = await login(
      await register(
        phone('ios', 'com.example.bank', {
          kind: 'app_attest',
          challenge: c,
          keyId: made.keyId,
          object: made.object,
        }),
      ),
      IOS_UA,
    );
    expect(attested.answer.signals).not.toHaveProperty('spoofed_device');
  });
});

describe('Play Integrity', () => {
  const token = (c: string, device: string[]) =>
    makePlayToken(
      play,
      playPayload({
        packageName: 'com.example.shop',
        nonce: createHash('sha256').update(c).digest('base64url'),
        at: Date.now(),
        device,
      }),
    );

  it('a phone Google vouches for is verified; an emulator Google labels virtual is an emulator, though it reports no finding of its own', async () => {
    const c = await challenge();
    const good = await login(
      await register(
        phone('android', 'com.example.shop', {
          kind: 'play_integrity',
          challenge: c,
          token: token(c, ['MEETS_DEVICE_INTEGRITY']),
        }),
      ),
      OKHTTP,
    );
    expect(good.properties).toMatchObject({ attestation: 'play_integrity', attestation_status: 'verified' });
    expect(good.answer.signals).not.toHaveProperty('emulator');

    const c2 = await challenge();
    const farm = await login(
      await register(
        phone('android', 'com.example.shop', {
          kind: 'play_integrity',
          challenge: c2,
          token: token(c2, ['MEETS_VIRTUAL_INTEGRITY']),
        }),
      ),
      OKHTTP,
    );
    expect(farm.answer.signals).toMatchObject({
      emulator: { evidence: 'play_integrity', device_verdict: 'virtual' },
    });
    expect(farm.answer.risk).toBeGreaterThan(good.answer.risk);
  });

  it('a token made for another challenge fails', async () => {
    const c = await challenge();
    const s = await register(
      phone('android', 'com.example.shop', {
        kind: 'play_integrity',
        challenge: c,
        token: token('rpc1.another', ['MEETS_DEVICE_INTEGRITY']),
      }),
    );
    expect((await login(s, OKHTTP)).answer.signals).toMatchObject({
      spoofed_device: {
        reason: 'attestation_failed',
        attestation: 'play_integrity',
        failure: 'nonce_mismatch',
      },
    });
  });

  it('refuses a badly shaped attestation with 422 naming the member', async () => {
    const c = await challenge();
    const r = await register(
      phone('android', 'com.example.shop', { kind: 'play_integrity', challenge: c, keyId: 'AAAA' }),
      422,
    );
    expect((r.body.fields as { field: string }[]).map((f) => f.field)).toEqual(
      expect.arrayContaining(['mobile.attestation.token', 'mobile.attestation.keyId']),
    );
  });
});
