/** Policies (PolicyService) on an in-memory store: edits apply from the very next verdict. */
import { createFakeServices } from '../../support/fakes';

const login = {
  event: '$login',
  status: '$succeeded',
  user: { id: 'q1' },
  context: {
    ip: '81.2.69.142',
    headers: {
      'User-Agent':
        'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36',
      'Accept-Language': 'en-GB',
    },
  },
};

describe('policies', () => {
  it('a new policy decides the very next verdict; archived, it no longer applies', async () => {
    const s = createFakeServices();
    const { principal, env } = await s.environment();
    expect((await s.verdicts.evaluate(principal, 'risk', login)).action).toBe('allow');
    const policy = await s.policies.create(env.id, {
      name: 'Deny logins',
      group: 'before',
      action: 'deny',
      conditions: { events: ['$login.succeeded'] },
    });
    const denied = await s.verdicts.evaluate(principal, 'risk', login);
    expect([denied.action, denied.policy.id, denied.policy.revision]).toEqual([
      'deny',
      policy.id,
      policy.revision,
    ]);
    await s.policies.archive(env.id, policy.id);
    expect((await s.verdicts.evaluate(principal, 'risk', login)).action).toBe('allow');
    expect((await s.policies.list(env.id, true)).find((p) => p.id === policy.id)?.archived).toBe(true);
  });
});
