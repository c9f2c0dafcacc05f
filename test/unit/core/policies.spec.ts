/** Policy matching, defaults and levels, without I/O. */
import {
  PolicyService,
  DEFAULT_POLICIES,
  CATCH_ALL,
  validateDraft,
} from '../../../src/core/policies/service';
import type { PolicySet, PolicyRevision } from '../../../src/core/policies/model';
import type { PolicyStore } from '../../../src/core/ports';
import { asEnvId } from '../../../src/core/model';
import { riskLevel } from '../../../src/core/scoring/signals';
import { InvalidParameters } from '../../../src/core/errors';

/** An in-memory PolicyStore: the core's own port, for pure tests of the matching rules. */
class MemoryPolicyStore implements PolicyStore {
  set: PolicySet | null = null;
  revs: PolicyRevision[] = [];
  async getSet() {
    return this.set
      ? (JSON.parse(JSON.stringify(this.set), (k, v) => (k.endsWith('At') ? new Date(v) : v)) as PolicySet)
      : null;
  }
  async putSet(s: PolicySet, expected: number) {
    if ((this.set?.version ?? 0) !== expected) return false;
    this.set = s;
    return true;
  }
  async addRevisions(r: PolicyRevision[]) {
    this.revs.push(...r);
  }
  async revisions(_e: unknown, ids: readonly string[]) {
    return this.revs.filter((r) => ids.includes(r.policyId));
  }
  async revision(_e: unknown, id: string) {
    return this.revs.find((r) => r.id === id) ?? null;
  }
}

const env = asEnvId('env-1');
const clock = { now: () => new Date('2026-11-22T00:00:00Z') };

describe('risk levels', () => {
  it.each([
    [0, 'low'],
    [0.59, 'low'],
    [0.6, 'medium'],
    [0.89, 'medium'],
    [0.9, 'high'],
    [1, 'high'],
  ])('%d is %s', (risk, level) => expect(riskLevel(risk)).toBe(level));
});

describe('default policies', () => {
  let svc: PolicyService;
  let set: PolicySet;
  beforeAll(async () => {
    svc = new PolicyService({ store: new MemoryPolicyStore(), clock });
    set = await svc.createDefaults(env);
  });
  const m = (
    event: string,
    risk: number,
    deviceState: 'approved' | 'reported' | 'unreviewed' = 'unreviewed',
  ) => svc.match(set, { event, risk, level: riskLevel(risk), signals: [], country: null, deviceState });

  it.each([
    ['$login.succeeded', 0.95, 'unreviewed', 'deny'],
    ['$login', 0.95, 'unreviewed', 'deny'],
    ['$login.succeeded', 0.7, 'unreviewed', 'challenge'],
    ['$login', 0.7, 'unreviewed', 'challenge'],
    ['$login', 0.7, 'approved', 'allow'],
    ['$login', 0.1, 'unreviewed', 'allow'],
    ['$login', 0.1, 'reported', 'deny'],
    ['$registration.attempted', 0.95, 'unreviewed', 'deny'],
    ['$registration', 0.95, 'unreviewed', 'deny'],
    ['$registration', 0.7, 'unreviewed', 'challenge'],
    ['$registration.attempted', 0.7, 'unreviewed', 'challenge'],
    ['$registration', 0.5, 'unreviewed', 'allow'],
    ['$registration.succeeded', 0.95, 'unreviewed', 'deny'],
    ['$registration.succeeded', 0.7, 'unreviewed', 'challenge'],
    ['$registration.succeeded', 0.5, 'unreviewed', 'allow'],
    ['$login.attempted', 0.95, 'unreviewed', 'deny'],
    ['$login.attempted', 0.7, 'unreviewed', 'challenge'],
    ['$login.attempted', 0.5, 'unreviewed', 'allow'],
    ['$login.failed', 0.95, 'unreviewed', 'deny'],
    ['$login.failed', 0.7, 'unreviewed', 'challenge'],
    ['$login.failed', 0.5, 'unreviewed', 'allow'],
    ['$password_reset_request.succeeded', 0.99, 'unreviewed', 'allow'],
  ] as const)('%s at %d on a %s device: %s', (event, risk, state, action) => {
    expect(m(event, risk, state).action).toBe(action);
  });
  it('falls back to the catch-all', () => {
    expect(m('$logout', 0.99).catchAll).toBe(true);
    expect(set.policies).toHaveLength(DEFAULT_POLICIES.length + 1);
    expect(set.policies.find((p) => p.catchAll)?.name).toBe(CATCH_ALL.name);
  });
  it('a new policy for $password_reset_request.succeeded gives a verdict; an edit makes a new revision', async () => {
    const p = await svc.create(env, {
      name: 'Deny risky resets',
      group: 'event',
      conditions: { events: ['$password_reset_request.succeeded'], minRisk: 0.8 },
      action: 'deny',
    });
    set = await svc.set(env);
    expect(m('$password_reset_request.succeeded', 0.85).id).toBe(p.id);
    const updated = await svc.update(env, p.id, { action: 'challenge' });
    expect(updated.revision).not.toBe(p.revision);
    set = await svc.set(env);
    expect(m('$password_reset_request.succeeded', 0.85).action).toBe('challenge');
    expect((await svc.revisions(env, [p.id])).map((r) => r.action)).toEqual(['deny', 'challenge']);
    await svc.archive(env, p.id);
    set = await svc.set(env);
    expect(m('$password_reset_request.succeeded', 0.85).action).toBe('allow');
  });
  it('orders groups before, event, after and positions within a group', async () => {
    const a = await svc.create(env, {
      name: 'A',
      group: 'event',
      conditions: { signalsAny: ['proxy_ip'] },
      action: 'challenge',
    });
    const b = await svc.create(env, {
      name: 'B',
      group: 'event',
      conditions: { signalsAny: ['proxy_ip'] },
      action: 'deny',
    });
    set = await svc.set(env);
    const hit = () =>
      svc.match(set, {
        event: '$logout',
        risk: 0.1,
        level: 'low',
        signals: ['proxy_ip'],
        country: null,
        deviceState: 'unreviewed',
      });
    expect(hit().id).toBe(a.id);
    const ids = (await svc.list(env)).filter((p) => p.group === 'event').map((p) => p.id);
    await svc.reorder(env, 'event', [b.id, ...ids.filter((i) => i !== b.id)]);
    set = await svc.set(env);
    expect(hit().id).toBe(b.id);
  });
  it('rejects invalid drafts naming each field', () => {
    try {
      validateDraft({
        name: '',
        group: 'middle' as never,
        conditions: { events: ['$nope'], minRisk: 3, signalsAny: ['nope'], countries: ['usa'] },
        action: 'maybe' as never,
      });
      throw new Error('no error');
    } catch (err) {
      expect(err).toBeInstanceOf(InvalidParameters);
      expect((err as InvalidParameters).fields.map((f) => f.field).sort()).toEqual(
        [
          'action',
          'conditions.countries',
          'conditions.events',
          'conditions.minRisk',
          'conditions.signalsAny',
          'group',
          'name',
        ].sort(),
      );
    }
  });
  it.each(['emulator', 'compromised_device', 'no_app_activity', 'unproven_client', 'registration_velocity'])(
    'a policy can name the %s signal',
    (signal) => {
      expect(() =>
        validateDraft({
          name: 'By signal',
          group: 'event',
          conditions: { signalsAny: [signal] },
          action: 'challenge',
        }),
      ).not.toThrow();
    },
  );
});
