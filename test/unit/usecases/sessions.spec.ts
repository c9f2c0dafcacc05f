/**
 * The console's sign-in sessions (SessionService) on in-memory fakes and fake time: a credential
 * opens a session whose token is stored only as its hash; requests need the CSRF token; a session
 * ends when idle, at its absolute limit, on sign-out, and as soon as its credential is revoked or
 * its environment disabled; a wrong key is refused in words a person can act on.
 */
import { AccessService } from '../../../src/core/access';
import { sha256Hex } from '../../../src/core/crypto';
import { EnvironmentService } from '../../../src/core/environments';
import { Forbidden, Unauthorized } from '../../../src/core/errors';
import { PolicyService } from '../../../src/core/policies/service';
import { Sealer } from '../../../src/core/crypto';
import { RateLimiter } from '../../../src/core/ratelimit';
import { SessionService } from '../../../src/core/sessions/service';
import {
  createFakeCredentialStore,
  createFakeEnvironmentStore,
  createFakePolicyStore,
  createFakeSessionStore,
} from '../../support/fakes/stores';
import { createFakeTime } from '../../support/fakes/time';

const IDLE = 30 * 60_000;
const ABSOLUTE = 12 * 3_600_000;

async function setup() {
  const time = createFakeTime();
  const environments = new EnvironmentService({
    environments: createFakeEnvironmentStore(),
    credentials: createFakeCredentialStore(),
    policies: new PolicyService({ store: createFakePolicyStore(), clock: time.clock }),
    sealer: new Sealer('22'.repeat(32)),
    clock: time.clock,
    authCacheMs: 0,
    scheduler: time.scheduler,
  });
  const access = new AccessService({
    environments,
    limiter: new RateLimiter({ perSecond: 1_000 }),
    failedLimit: { limit: 5, windowMs: 60_000 },
    now: () => time.clock.now().getTime(),
  });
  const store = createFakeSessionStore();
  const sessions = new SessionService({
    store,
    access,
    environments,
    clock: time.clock,
    csrfKey: Buffer.from('fake-csrf-key'),
    idleMs: IDLE,
    absoluteMs: ABSOLUTE,
  });
  const { env, secret } = await environments.create('sandbox', { sandbox: true });
  return { time, environments, store, sessions, env, secret };
}

it('opens a session for a credential, storing only its token’s hash; a request needs the CSRF token', async () => {
  const { sessions, store, secret, env } = await setup();
  const opened = await sessions.signIn(secret, '10.0.0.1');
  expect(opened.principal.env.id).toBe(env.id);
  expect([...store.all.keys()]).toEqual([sha256Hex(opened.token)]);
  expect(JSON.stringify([...store.all.values()])).not.toContain(opened.token);
  const resolved = await sessions.resolve(opened.token, opened.csrf, {
    source: '10.0.0.1',
    requireCsrf: true,
  });
  expect(resolved.principal.env.id).toBe(env.id);
  await expect(
    sessions.resolve(opened.token, null, { source: '10.0.0.1', requireCsrf: true }),
  ).rejects.toBeInstanceOf(Forbidden);
  await expect(
    sessions.resolve(opened.token, 'x'.repeat(43), { source: '10.0.0.1', requireCsrf: true }),
  ).rejects.toBeInstanceOf(Forbidden);
  // Reading needs no CSRF token (a GET cannot change anything).
  await expect(
    sessions.resolve(opened.token, null, { source: '10.0.0.1', requireCsrf: false }),
  ).resolves.toBeDefined();
});

it.each([
  ['a mistyped analyst key', 'ak_nope', /analyst key was not accepted/],
  ['a publishable key', 'pk_live_123', /publishable key/],
  ['nothing', '', /sign in with an analyst key/],
])('refuses %s, saying what to do', async (_what, key, message) => {
  const { sessions } = await setup();
  await expect(sessions.signIn(key, '10.0.0.2')).rejects.toThrow(message);
});

it('ends a session idle for longer than the idle time, and any session at its absolute limit, however used', async () => {
  const { sessions, time, secret, store } = await setup();
  const idle = await sessions.signIn(secret, null);
  await time.advance(IDLE + 1);
  await expect(sessions.resolve(idle.token, idle.csrf, { source: null, requireCsrf: true })).rejects.toThrow(
    /expired/,
  );
  expect(store.all.has(sha256Hex(idle.token))).toBe(false);

  const busy = await sessions.signIn(secret, null);
  // Used every 20 minutes: the idle expiry moves on, the absolute one does not.
  for (let t = 0; t < ABSOLUTE - 20 * 60_000; t += 20 * 60_000) {
    await time.advance(20 * 60_000);
    await sessions.resolve(busy.token, busy.csrf, { source: null, requireCsrf: true });
  }
  await time.advance(20 * 60_000);
  await expect(
    sessions.resolve(busy.token, busy.csrf, { source: null, requireCsrf: true }),
  ).rejects.toBeInstanceOf(Unauthorized);
});

it('ends on sign-out, and when its credential is revoked or its environment disabled', async () => {
  const { sessions, environments, env, secret } = await setup();
  const out = await sessions.signIn(secret, null);
  await sessions.signOut(out.token);
  await expect(sessions.resolve(out.token, out.csrf, { source: null, requireCsrf: true })).rejects.toThrow(
    /not signed in/,
  );

  const revoked = await sessions.signIn(secret, null);
  await environments.revoke(env.id, secret);
  await expect(
    sessions.resolve(revoked.token, revoked.csrf, { source: null, requireCsrf: true }),
  ).rejects.toThrow(/no longer valid/);

  const other = await environments.create('other', { sandbox: true });
  const disabled = await sessions.signIn(other.secret, null);
  await environments.setEnabled(other.env.id, false);
  await expect(
    sessions.resolve(disabled.token, disabled.csrf, { source: null, requireCsrf: true }),
  ).rejects.toBeInstanceOf(Forbidden);
  await environments.setEnabled(other.env.id, true);
  // The session ended with the environment: re-enabling it does not bring it back.
  await expect(
    sessions.resolve(disabled.token, disabled.csrf, { source: null, requireCsrf: true }),
  ).rejects.toBeInstanceOf(Unauthorized);
});

it('sweeps expired sessions', async () => {
  const { sessions, time, secret, store } = await setup();
  await sessions.signIn(secret, null);
  await sessions.signIn(secret, null);
  await time.advance(IDLE + 1);
  const fresh = await sessions.signIn(secret, null);
  expect(await sessions.sweep()).toBe(2);
  expect([...store.all.keys()]).toEqual([sha256Hex(fresh.token)]);
});
