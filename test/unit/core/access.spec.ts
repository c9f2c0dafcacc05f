/**
 * Failed-authentication throttling per source address (core/access.ts), with a stand-in for the
 * environment service's secret check and a clock of the test's own.
 */
import { AccessService } from '../../../src/core/access';
import type { EnvironmentService } from '../../../src/core/environments';
import { RateLimited, Unauthorized } from '../../../src/core/errors';
import type { Principal } from '../../../src/core/model';
import { RateLimiter } from '../../../src/core/ratelimit';

const principal = { env: { id: 'env-1' }, kind: 'secret', credentialHash: 'h' } as unknown as Principal;
const environments = {
  authenticate: async (s: string) => (s === 'sk_good' ? principal : Promise.reject(new Unauthorized())),
} as unknown as EnvironmentService;

function access(now: { t: number }) {
  return new AccessService({
    environments,
    limiter: new RateLimiter({ perSecond: 1000 }),
    failedLimit: { limit: 3, windowMs: 60_000 },
    now: () => now.t,
  });
}

it("past the limit, an address's failures answer 429 until its window ends; other addresses are not", async () => {
  const now = { t: 0 };
  const a = access(now);
  for (let i = 0; i < 3; i++)
    await expect(a.caller('sk_bad', 'api', { source: '198.51.100.1' })).rejects.toBeInstanceOf(Unauthorized);
  await expect(a.caller('sk_bad', 'api', { source: '198.51.100.1' })).rejects.toMatchObject({
    retryAfterSeconds: 60,
  });
  await expect(a.caller('sk_other', 'api', { source: '198.51.100.1' })).rejects.toBeInstanceOf(RateLimited);
  await expect(a.caller('sk_bad', 'api', { source: '198.51.100.2' })).rejects.toBeInstanceOf(Unauthorized);
  now.t = 59_500;
  await expect(a.caller('sk_bad', 'api', { source: '198.51.100.1' })).rejects.toMatchObject({
    retryAfterSeconds: 1,
  });
  now.t = 60_000;
  await expect(a.caller('sk_bad', 'api', { source: '198.51.100.1' })).rejects.toBeInstanceOf(Unauthorized);
});

it('never refuses a valid secret for the failures of others at its address, throttled or not', async () => {
  const now = { t: 0 };
  const a = access(now);
  for (let i = 0; i < 10; i++)
    await a.caller(`sk_guess_${i}`, 'api', { source: '198.51.100.5' }).catch(() => undefined);
  await expect(a.caller('sk_bad', 'api', { source: '198.51.100.5' })).rejects.toBeInstanceOf(RateLimited);
  await expect(a.caller('sk_good', 'api', { source: '198.51.100.5' })).resolves.toBe(principal);
  await expect(a.caller('sk_good', 'read', { source: '198.51.100.5' })).resolves.toBe(principal);
  // And the valid one does not lift the throttle off the guesses.
  await expect(a.caller('sk_bad', 'api', { source: '198.51.100.5' })).rejects.toBeInstanceOf(RateLimited);
});

it('a missing secret counts as a failure; a caller without a source address is never throttled', async () => {
  const a = access({ t: 0 });
  for (let i = 0; i < 3; i++)
    await expect(a.caller(null, 'api', { source: '198.51.100.3' })).rejects.toBeInstanceOf(Unauthorized);
  await expect(a.caller(null, 'api', { source: '198.51.100.3' })).rejects.toBeInstanceOf(RateLimited);
  await expect(a.caller('sk_good', 'api', { source: '198.51.100.3' })).resolves.toBe(principal);
  for (let i = 0; i < 10; i++) await expect(a.caller('sk_bad', 'api')).rejects.toBeInstanceOf(Unauthorized);
  await expect(a.caller('sk_good', 'api')).resolves.toBe(principal);
});
