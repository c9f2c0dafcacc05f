/** Privacy requests (PrivacyService) on in-memory fakes: the export mailed, the subject resolved, the purge. */
import { InvalidParameters, NotFound } from '../../../src/core/errors';
import { createFakeServices, type FakeServices } from '../../support/fakes';
import { jobDone } from '../../support/privacy';

const login = (userId: string) => ({
  event: '$login',
  status: '$succeeded',
  user: { id: userId, email: `${userId}@example.com` },
  context: { ip: '81.2.69.142', headers: { 'User-Agent': 'curl/8.4.0' } },
});

let s: FakeServices;
beforeEach(() => {
  s = createFakeServices();
});

describe('privacy', () => {
  it("compiles a user's records into an export and mails its signed link to the privacy address", async () => {
    const { principal, env } = await s.environment({ privacyEmail: 'dpo@shop.example' });
    await s.verdicts.evaluate(principal, 'risk', login('p1'));
    const [job] = await s.privacy.requestAccessFor(env, { userId: 'p1' });
    const done = await jobDone(s.privacy, env.id, job?.id ?? '');
    expect(done.status).toBe('sent');
    expect(s.mailer.sent.map((m) => m.to)).toEqual(['dpo@shop.example']);
    expect(s.mailer.sent[0]?.text).toContain(`https://rampart.test/v1/privacy/exports/${job?.id}?expires=`);
    const exported = JSON.parse(s.privacyStore.exports.get(job?.id ?? '')?.json ?? '{}') as {
      events?: unknown[];
    };
    expect(exported.events).toHaveLength(1);
  });

  it('answers not_found for a user or an e-mail nobody has, and invalid without a privacy address', async () => {
    const { env } = await s.environment({ privacyEmail: 'dpo@shop.example' });
    await expect(s.privacy.requestAccessFor(env, { userId: 'nobody' })).rejects.toBeInstanceOf(NotFound);
    await expect(s.privacy.requestAccessFor(env, { email: 'nobody@example.com' })).rejects.toBeInstanceOf(
      NotFound,
    );
    const bare = await s.environment({ name: 'bare' });
    await expect(s.privacy.requestAccessFor(bare.env, { userId: 'p1' })).rejects.toBeInstanceOf(
      InvalidParameters,
    );
  });

  it("purges the user's records; naming nobody purges nothing", async () => {
    const { principal, env } = await s.environment();
    await s.verdicts.evaluate(principal, 'risk', login('p2'));
    await s.verdicts.evaluate(principal, 'risk', login('p3'));
    const [purged] = await s.privacy.purgeFor(env, { userId: 'p2' });
    expect(purged?.userId).toBe('p2');
    expect(s.events.all.map((e) => e.userId)).toEqual(['p3']);
    expect(await s.privacy.purgeFor(env, { email: 'nobody@example.com' })).toEqual([]);
  });
});
