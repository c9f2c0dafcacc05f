/**
 * Authentication while the database hangs (core/environments.ts): a credential whose cached
 * verification has expired is checked again, but a check that does not answer within its short
 * wait leaves the last verification standing, so that a hung database does not hold every request
 * for its whole timeout; a revoked credential still fails as soon as the store says so; a
 * credential never verified waits at most its own bound, then Unavailable. Fake time and a store
 * the test can make hang.
 */
import { EnvironmentService } from '../../../src/core/environments';
import { PolicyService } from '../../../src/core/policies/service';
import { Sealer } from '../../../src/core/crypto';
import { Unauthorized, Unavailable } from '../../../src/core/errors';
import type { CredentialStore } from '../../../src/core/ports';
import {
  createFakeCredentialStore,
  createFakeEnvironmentStore,
  createFakePolicyStore,
} from '../../support/fakes/stores';
import { createFakeTime } from '../../support/fakes/time';

/** A credential store that answers, or hangs until released, as the test says. */
function hangable(inner: CredentialStore) {
  let hung = false;
  let failing = false;
  let asked = 0;
  const waiting: (() => void)[] = [];
  const store: CredentialStore = {
    ...inner,
    byHash: async (hash) => {
      asked++;
      if (failing) throw new Error('the database is down');
      if (hung) await new Promise<void>((resolve) => waiting.push(resolve));
      return inner.byHash(hash);
    },
    revoke: (...a) => inner.revoke(...a),
    insert: (c) => inner.insert(c),
    list: (e) => inner.list(e),
  };
  return {
    store,
    /** How many look-ups the store was asked for. */
    asked: () => asked,
    hang: () => (hung = true),
    /** Every look-up fails at once (true), or answers again (false). */
    fail: (on: boolean) => (failing = on),
    resume: () => {
      hung = false;
      for (const w of waiting.splice(0)) w();
    },
  };
}

async function setup() {
  const time = createFakeTime();
  const credentials = hangable(createFakeCredentialStore());
  const environments = createFakeEnvironmentStore();
  const service = new EnvironmentService({
    environments,
    credentials: credentials.store,
    policies: new PolicyService({ store: createFakePolicyStore(), clock: time.clock }),
    sealer: new Sealer('11'.repeat(32)),
    clock: time.clock,
    authCacheMs: 2_000,
    scheduler: time.scheduler,
  });
  const { env, secret } = await service.create('sandbox', { sandbox: true });
  return { time, credentials, service, env, secret };
}

/** Whether `p` settled after the fake time advanced by `ms` (and how). */
async function after<T>(
  time: Awaited<ReturnType<typeof setup>>['time'],
  p: Promise<T>,
  ms: number,
): Promise<{ value?: T; error?: unknown; pending?: true }> {
  let out: { value?: T; error?: unknown; pending?: true } = { pending: true };
  p.then(
    (value) => (out = { value }),
    (error: unknown) => (out = { error }),
  );
  await time.advance(ms);
  return out;
}

it('a hung database holds a known credential no longer than the re-check wait: it answers as last verified', async () => {
  const { time, credentials, service, env, secret } = await setup();
  expect((await service.authenticate(secret)).env.id).toBe(env.id);
  await time.advance(3_000); // the cached verification expired
  credentials.hang();
  const r = await after(time, service.authenticate(secret), 100);
  expect(r.value?.env.id).toBe(env.id);
  // Another request meanwhile shares the check under way and answers after the same wait.
  expect((await after(time, service.authenticate(secret), 100)).value?.env.id).toBe(env.id);
  credentials.resume();
});

/** Revoke as another instance would: in the store, leaving this process's cache as it is. */
const revokeElsewhere = async (s: Awaited<ReturnType<typeof setup>>) => {
  const [cred] = await s.credentials.store.list(s.env.id);
  await s.credentials.store.revoke(s.env.id, cred!.hash, s.time.clock.now());
};

it('with the database answering, a re-check sees a revocation made elsewhere once the cache expires', async () => {
  const s = await setup();
  await s.service.authenticate(s.secret);
  await revokeElsewhere(s);
  // Within the cache's life the verification stands (the documented revocation delay).
  expect((await s.service.authenticate(s.secret)).env.id).toBe(s.env.id);
  await s.time.advance(3_000);
  await expect(s.service.authenticate(s.secret)).rejects.toBeInstanceOf(Unauthorized);
});

it('a re-check that answers late with a revocation ends the credential for every later request', async () => {
  const s = await setup();
  await s.service.authenticate(s.secret);
  s.credentials.hang();
  await s.time.advance(3_000);
  // Answered as last verified while the check hangs.
  expect((await after(s.time, s.service.authenticate(s.secret), 100)).value?.env.id).toBe(s.env.id);
  await revokeElsewhere(s);
  s.credentials.resume();
  await s.time.advance(0);
  await expect(s.service.authenticate(s.secret)).rejects.toBeInstanceOf(Unauthorized);
});

it('a credential never verified by this process waits at most its bound, then Unavailable', async () => {
  const { time, credentials, service, secret } = await setup();
  credentials.hang();
  const r = await after(time, service.authenticate(secret), 2_000);
  expect(r.error).toBeInstanceOf(Unavailable);
  credentials.resume();
});

it('a verification older than the stale bound is not stood in for', async () => {
  const { time, credentials, service, secret } = await setup();
  await service.authenticate(secret);
  await time.advance(11 * 60_000);
  credentials.hang();
  const pending = service.authenticate(secret);
  expect((await after(time, pending, 100)).pending).toBe(true);
  expect((await after(time, pending, 1_900)).error).toBeInstanceOf(Unavailable);
  credentials.resume();
});

it('a credential in steady use is checked again behind its requests, so none waits for the store', async () => {
  const { time, credentials, service, env, secret } = await setup();
  await service.authenticate(secret);
  const asked = credentials.asked();
  // Within the first half of the cached verification's life nothing is asked.
  await time.advance(900);
  expect((await service.authenticate(secret)).env.id).toBe(env.id);
  expect(credentials.asked()).toBe(asked);
  // In its second half a request answers at once, even while the store hangs, and starts one check.
  await time.advance(300);
  credentials.hang();
  expect((await after(time, service.authenticate(secret), 0)).value?.env.id).toBe(env.id);
  expect((await after(time, service.authenticate(secret), 0)).value?.env.id).toBe(env.id);
  expect(credentials.asked()).toBe(asked + 1);
  credentials.resume();
  await time.advance(0);
  // The check renewed the verification: past the first one's expiry, still nothing to wait for.
  await time.advance(1_500);
  credentials.hang();
  expect((await after(time, service.authenticate(secret), 0)).value?.env.id).toBe(env.id);
  credentials.resume();
});

it('a revocation made elsewhere ends the credential as soon as the check ahead of expiry sees it', async () => {
  const s = await setup();
  await s.service.authenticate(s.secret);
  await revokeElsewhere(s);
  await s.time.advance(1_200);
  // The request that starts the check is answered as last verified; the check finds the revocation.
  expect((await s.service.authenticate(s.secret)).env.id).toBe(s.env.id);
  await s.time.advance(0);
  await expect(s.service.authenticate(s.secret)).rejects.toBeInstanceOf(Unauthorized);
});

it('a check ahead of expiry that fails is not started again by every request that follows', async () => {
  const { time, credentials, service, env, secret } = await setup();
  await service.authenticate(secret);
  await time.advance(1_200);
  credentials.fail(true);
  const asked = credentials.asked();
  for (let i = 0; i < 5; i++) {
    expect((await service.authenticate(secret)).env.id).toBe(env.id);
    await time.advance(10);
  }
  expect(credentials.asked()).toBe(asked + 1);
  // A while later one more is tried, and with the store back it renews the verification.
  credentials.fail(false);
  await time.advance(500);
  expect((await service.authenticate(secret)).env.id).toBe(env.id);
  await time.advance(0);
  expect(credentials.asked()).toBe(asked + 2);
  await time.advance(1_500);
  credentials.hang();
  expect((await after(time, service.authenticate(secret), 0)).value?.env.id).toBe(env.id);
  credentials.resume();
});
