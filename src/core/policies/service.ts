/**
 * Policy use cases: the defaults of every environment, matching an evaluated event against the
 * ordered set, and edits (each edit a new revision; the set is replaced atomically by version).
 */
import { uuid } from '../crypto';
import { InvalidParameters, NotFound } from '../errors';
import type { Action, EnvId, RiskLevel } from '../model';
import { ACTIONS } from '../model';
import type { Clock, PolicyStore } from '../ports';
import {
  FAILED_LOGIN_EVENTS,
  LOGIN_EVENTS,
  PREAUTH_EVENTS,
  REGISTRATION_EVENTS,
  eventSpec,
} from '../events/catalog';
import type {
  DeviceReviewState,
  Policy,
  PolicyConditions,
  PolicyDraft,
  PolicyGroup,
  PolicyRevision,
  PolicySet,
} from './model';
import { POLICY_GROUPS } from './model';
import { SIGNAL_NAMES } from '../scoring/signals';

/** What a policy is matched against. */
export interface MatchInput {
  event: string;
  risk: number;
  level: RiskLevel;
  signals: readonly string[];
  country: string | null;
  deviceState: DeviceReviewState;
  /** The lists the event is in (core/lists/matcher.ts); absent: none. */
  lists?: readonly { list: { id: string } }[];
}

export const DEFAULT_POLICIES: readonly PolicyDraft[] = [
  {
    name: 'Deny reported devices',
    group: 'before',
    conditions: { deviceStates: ['reported'] },
    action: 'deny',
  },
  {
    name: 'Deny high-risk logins',
    group: 'event',
    conditions: { events: [...LOGIN_EVENTS], riskLevels: ['high'] },
    action: 'deny',
  },
  {
    name: 'Challenge medium-risk logins',
    group: 'event',
    conditions: { events: [...LOGIN_EVENTS], riskLevels: ['medium'], deviceStates: ['unreviewed'] },
    action: 'challenge',
  },
  // Pre-auth: before the password is checked, so a challenge here is a CAPTCHA or a delay.
  {
    name: 'Deny high-risk login attempts',
    group: 'event',
    conditions: { events: [...PREAUTH_EVENTS], riskLevels: ['high'] },
    action: 'deny',
  },
  {
    name: 'Challenge medium-risk login attempts',
    group: 'event',
    conditions: { events: [...PREAUTH_EVENTS], riskLevels: ['medium'] },
    action: 'challenge',
  },
  // A failed login's verdict (/v1/filter) says what to do before the next attempt: an integration
  // without the pre-auth check stops a stuffing source here (a CAPTCHA, a block), not a person.
  {
    name: 'Deny high-risk failed logins',
    group: 'event',
    conditions: { events: [...FAILED_LOGIN_EVENTS], riskLevels: ['high'] },
    action: 'deny',
  },
  {
    name: 'Challenge medium-risk failed logins',
    group: 'event',
    conditions: { events: [...FAILED_LOGIN_EVENTS], riskLevels: ['medium'] },
    action: 'challenge',
  },
  {
    name: 'Deny high-risk registrations',
    group: 'event',
    conditions: { events: [...REGISTRATION_EVENTS], riskLevels: ['high'] },
    action: 'deny',
  },
  {
    name: 'Challenge medium-risk registrations',
    group: 'event',
    conditions: { events: [...REGISTRATION_EVENTS], riskLevels: ['medium'] },
    action: 'challenge',
  },
];
export const CATCH_ALL: PolicyDraft = {
  name: 'Allow everything else',
  group: 'after',
  conditions: {},
  action: 'allow',
};

const MAX_RETRIES = 5;

/** How long a process reuses an environment's policy set for verdicts by default. */
export const DEFAULT_POLICY_CACHE_MS = 1000;

export interface PolicyServiceDeps {
  store: PolicyStore;
  clock: Clock;
  /**
   * How long a process reuses an environment's policy set for verdicts (default
   * DEFAULT_POLICY_CACHE_MS). Edits made through this process take effect on the very next
   * verdict; edits made by another instance within `cacheMs`.
   */
  cacheMs?: number;
  /** The ids of the environment's lists: a policy may name only those (absent: not checked). */
  listIds?: (env: EnvId) => Promise<ReadonlySet<string>>;
}

export class PolicyService {
  private readonly cache = new Map<
    EnvId,
    { set: PolicySet; until: number; refreshing: Promise<void> | null }
  >();

  private readonly store: PolicyStore;
  private readonly clock: Clock;
  private readonly cacheMs: number;
  private readonly listIds?: (env: EnvId) => Promise<ReadonlySet<string>>;

  constructor(d: PolicyServiceDeps) {
    this.store = d.store;
    this.clock = d.clock;
    this.cacheMs = d.cacheMs ?? DEFAULT_POLICY_CACHE_MS;
    if (d.listIds) this.listIds = d.listIds;
  }

  /** The active policies whose conditions name a list (by name, for a message). */
  async usingList(envId: EnvId, listId: string): Promise<string[]> {
    const set = await this.store.getSet(envId);
    return (set?.policies ?? [])
      .filter(
        (p) =>
          !p.archived &&
          (p.conditions.inLists?.includes(listId) || p.conditions.notInLists?.includes(listId)),
      )
      .map((p) => p.name);
  }

  /** Refuse conditions naming a list the environment does not have. */
  private async checkLists(
    envId: EnvId,
    conditions: PolicyConditions | undefined,
    prefix = '',
  ): Promise<void> {
    const named = [...(conditions?.inLists ?? []), ...(conditions?.notInLists ?? [])];
    if (!named.length || !this.listIds) return;
    const known = await this.listIds(envId);
    const missing = named.filter((id) => !known.has(id));
    if (missing.length)
      throw new InvalidParameters([
        {
          field: `${prefix}conditions.${conditions?.inLists?.some((id) => missing.includes(id)) ? 'inLists' : 'notInLists'}`,
          message: `no such list: ${missing.join(', ')}`,
        },
      ]);
  }

  /**
   * The policy set verdicts match against. Once read, a set is reused for `cacheMs`; after that
   * the cached set is still answered while one read refreshes it in the background, so a verdict
   * never waits on the database for its policies (and a slow database cannot stall verdicts
   * here). Only the first verdict of an environment in this process waits for the read.
   */
  async forVerdicts(envId: EnvId): Promise<PolicySet> {
    const now = this.clock.now().getTime();
    const hit = this.cache.get(envId);
    if (hit) {
      if (hit.until <= now && !hit.refreshing) {
        hit.refreshing = this.requireSet(envId).then(
          (set) => {
            if (this.cache.get(envId) === hit)
              this.cache.set(envId, {
                set,
                until: this.clock.now().getTime() + this.cacheMs,
                refreshing: null,
              });
          },
          () => {
            // Keep answering the set we have; the next verdict after the delay tries again.
            hit.refreshing = null;
            hit.until = this.clock.now().getTime() + this.cacheMs;
          },
        );
      }
      return hit.set;
    }
    const set = await this.requireSet(envId);
    if (this.cacheMs > 0) {
      if (this.cache.size > 10_000) this.cache.clear();
      this.cache.set(envId, { set, until: now + this.cacheMs, refreshing: null });
    }
    return set;
  }

  /** Create the defaults and the catch-all for a new environment. */
  async createDefaults(envId: EnvId): Promise<PolicySet> {
    const existing = await this.store.getSet(envId);
    if (existing) return existing;
    const now = this.clock.now();
    const policies = [...DEFAULT_POLICIES, CATCH_ALL].map((d, i) =>
      this.newPolicy(envId, d, i, now, d === CATCH_ALL),
    );
    const set: PolicySet = { envId, version: 1, policies };
    await this.store.addRevisions(policies.map((p) => toRevision(p, now)));
    if (!(await this.store.putSet(set, 0))) return (await this.store.getSet(envId)) ?? set;
    return set;
  }

  /** The environment's policies, active ones first in evaluation order; archived last. */
  async list(envId: EnvId, includeArchived = false): Promise<Policy[]> {
    const set = await this.requireSet(envId);
    return ordered(set.policies).filter((p) => includeArchived || !p.archived);
  }

  async get(envId: EnvId, id: string): Promise<Policy> {
    const p = (await this.requireSet(envId)).policies.find((x) => x.id === id);
    if (!p) throw new NotFound('no such policy');
    return p;
  }

  async set(envId: EnvId): Promise<PolicySet> {
    return this.requireSet(envId);
  }

  revisions(envId: EnvId, policyIds: readonly string[]): Promise<PolicyRevision[]> {
    return this.store.revisions(envId, policyIds);
  }

  async create(envId: EnvId, draft: PolicyDraft): Promise<Policy> {
    validateDraft(draft);
    await this.checkLists(envId, draft.conditions);
    return this.mutate(envId, (set, now) => {
      const policy = this.newPolicy(envId, draft, nextPosition(set, draft.group), now, false);
      set.policies.push(policy);
      return { result: policy, changed: [policy] };
    });
  }

  async update(envId: EnvId, id: string, patch: Partial<PolicyDraft>): Promise<Policy> {
    if (patch.conditions) await this.checkLists(envId, patch.conditions);
    return this.mutate(envId, (set, now) => {
      const p = set.policies.find((x) => x.id === id);
      if (!p) throw new NotFound('no such policy');
      applyUpdate(p, patch, now);
      return { result: p, changed: [p] };
    });
  }

  /**
   * Make a policy as it was at one of its revisions: a new revision with that revision's name,
   * group, action, conditions and archived state (the catch-all: its name).
   */
  async rollback(envId: EnvId, id: string, revisionId: string): Promise<Policy> {
    const r = await this.store.revision(envId, revisionId);
    if (!r || r.policyId !== id || r.envId !== envId) throw new NotFound('no such revision of this policy');
    return this.mutate(envId, (set, now) => {
      const p = set.policies.find((x) => x.id === id);
      if (!p) throw new NotFound('no such policy');
      if (p.catchAll) applyUpdate(p, { name: r.name }, now);
      else {
        if (p.group !== r.group) p.position = nextPosition(set, r.group);
        applyUpdate(p, { name: r.name, group: r.group, action: r.action, conditions: r.conditions }, now);
        p.archived = r.archived;
      }
      return { result: p, changed: [p] };
    });
  }

  /**
   * The environment's policy set with `drafts` applied, in memory only (for a dry run): each
   * draft is validated as createPolicy, updatePolicy or archivePolicy would validate it.
   */
  async draftSet(
    envId: EnvId,
    drafts: readonly PolicyDraftChange[],
  ): Promise<{ current: PolicySet; draft: PolicySet }> {
    const current = await this.requireSet(envId);
    for (const [i, d] of drafts.entries())
      await this.checkLists(
        envId,
        'create' in d ? d.create.conditions : d.update?.conditions,
        `drafts[${i}].`,
      );
    const copy: PolicySet = {
      ...current,
      policies: current.policies.map((p) => ({ ...p, conditions: { ...p.conditions } })),
    };
    const now = this.clock.now();
    drafts.forEach((d, i) => {
      try {
        if ('create' in d) {
          validateDraft(d.create);
          copy.policies.push(this.newPolicy(envId, d.create, nextPosition(copy, d.create.group), now, false));
          return;
        }
        const p = copy.policies.find((x) => x.id === d.id);
        if (!p) throw new NotFound(`no such policy: ${d.id}`);
        if (d.update) applyUpdate(p, d.update, now);
        if (d.archive) {
          if (p.catchAll)
            throw new InvalidParameters([
              { field: 'archive', message: 'the catch-all policy cannot be archived' },
            ]);
          p.archived = true;
        }
      } catch (err) {
        if (err instanceof InvalidParameters)
          throw new InvalidParameters(
            err.fields.map((f) => ({ field: `drafts[${i}].${f.field}`, message: f.message })),
          );
        throw err;
      }
    });
    return { current, draft: copy };
  }

  async archive(envId: EnvId, id: string): Promise<Policy> {
    return this.mutate(envId, (set, now) => {
      const p = set.policies.find((x) => x.id === id);
      if (!p) throw new NotFound('no such policy');
      if (p.catchAll)
        throw new InvalidParameters([{ field: 'id', message: 'the catch-all policy cannot be archived' }]);
      Object.assign(p, { archived: true, revision: uuid(), updatedAt: now });
      return { result: p, changed: [p] };
    });
  }

  /** Set the order of a group: `ids` lists every active policy of the group, first to last. */
  async reorder(envId: EnvId, group: PolicyGroup, ids: readonly string[]): Promise<Policy[]> {
    return this.mutate(envId, (set) => {
      const members = set.policies.filter((p) => p.group === group && !p.archived && !p.catchAll);
      const want = new Set(ids);
      if (want.size !== ids.length || members.length !== ids.length || members.some((m) => !want.has(m.id))) {
        throw new InvalidParameters([
          { field: 'ids', message: `must list each active policy of group ${group} exactly once` },
        ]);
      }
      ids.forEach((id, i) => {
        const p = members.find((m) => m.id === id);
        if (p) p.position = i;
      });
      return { result: ordered(set.policies).filter((p) => p.group === group && !p.archived), changed: [] };
    });
  }

  /** First matching active policy in group order, or the catch-all. */
  match(set: PolicySet, x: MatchInput): Policy {
    const active = activeOf(set);
    const hit = active.find((p) => !p.catchAll && matches(p.conditions, x));
    const fallback = active.find((p) => p.catchAll);
    if (hit) return hit;
    if (!fallback) throw new Error(`environment ${set.envId} has no catch-all policy`);
    return fallback;
  }

  private newPolicy(envId: EnvId, d: PolicyDraft, position: number, now: Date, catchAll: boolean): Policy {
    return {
      ...d,
      id: uuid(),
      envId,
      revision: uuid(),
      position,
      archived: false,
      catchAll,
      createdAt: now,
      updatedAt: now,
    };
  }

  private async requireSet(envId: EnvId): Promise<PolicySet> {
    const set = await this.store.getSet(envId);
    if (!set) throw new NotFound('this environment has no policies');
    return set;
  }

  private async mutate<T>(
    envId: EnvId,
    change: (set: PolicySet, now: Date) => { result: T; changed: Policy[] },
  ): Promise<T> {
    for (let attempt = 0; attempt < MAX_RETRIES; attempt++) {
      const set = await this.requireSet(envId);
      const expected = set.version;
      const now = this.clock.now();
      const { result, changed } = change(set, now);
      set.version = expected + 1;
      if (changed.length) await this.store.addRevisions(changed.map((p) => toRevision(p, now)));
      if (await this.store.putSet(set, expected)) {
        this.cache.delete(envId);
        return result;
      }
    }
    throw new Error('policy set changed concurrently too many times');
  }
}

/** One change of a dry run's draft set: a new policy, or a change to an existing one. */
export type PolicyDraftChange =
  { create: PolicyDraft } | { id: string; update?: Partial<PolicyDraft>; archive?: boolean };

/** Position after the last of a group. */
function nextPosition(set: PolicySet, group: PolicyGroup): number {
  return (
    Math.max(-1, ...set.policies.filter((p) => p.group === group && !p.catchAll).map((p) => p.position)) + 1
  );
}

/** Apply an updatePolicy patch to a policy (a new revision id); the catch-all can only be renamed. */
function applyUpdate(p: Policy, patch: Partial<PolicyDraft>, now: Date): void {
  if (
    p.catchAll &&
    (patch.action !== undefined || patch.conditions !== undefined || patch.group !== undefined)
  ) {
    throw new InvalidParameters([{ field: 'id', message: 'the catch-all policy can only be renamed' }]);
  }
  const draft: PolicyDraft = {
    name: patch.name ?? p.name,
    group: patch.group ?? p.group,
    conditions: patch.conditions ?? p.conditions,
    action: patch.action ?? p.action,
  };
  validateDraft(draft);
  Object.assign(p, draft, { revision: uuid(), updatedAt: now });
}

function toRevision(p: Policy, at: Date): PolicyRevision {
  return {
    id: p.revision,
    policyId: p.id,
    envId: p.envId,
    name: p.name,
    group: p.group,
    conditions: p.conditions,
    action: p.action,
    archived: p.archived,
    createdAt: at,
  };
}

/**
 * A set's active policies in match order, kept per set and version: every verdict matches against
 * them, and a set changes only through `mutate`, which moves its version.
 */
const actives = new WeakMap<PolicySet, { version: number; policies: readonly Policy[]; active: Policy[] }>();
function activeOf(set: PolicySet): readonly Policy[] {
  const kept = actives.get(set);
  if (kept && kept.version === set.version && kept.policies === set.policies) return kept.active;
  const active = ordered(set.policies).filter((p) => !p.archived);
  actives.set(set, { version: set.version, policies: set.policies, active });
  return active;
}

function ordered(policies: readonly Policy[]): Policy[] {
  const g = (p: Policy) => POLICY_GROUPS.indexOf(p.group) * 2 + (p.catchAll ? 1 : 0);
  return [...policies].sort(
    (a, b) => Number(a.archived) - Number(b.archived) || g(a) - g(b) || a.position - b.position,
  );
}

function matches(c: PolicyConditions, x: MatchInput): boolean {
  if (c.events?.length && !c.events.includes(x.event)) return false;
  if (c.riskLevels?.length && !c.riskLevels.includes(x.level)) return false;
  if (c.minRisk !== undefined && x.risk < c.minRisk) return false;
  if (c.maxRisk !== undefined && x.risk > c.maxRisk) return false;
  if (c.signalsAny?.length && !c.signalsAny.some((s) => x.signals.includes(s))) return false;
  if (c.signalsAll?.length && !c.signalsAll.every((s) => x.signals.includes(s))) return false;
  if (c.countries?.length && (!x.country || !c.countries.includes(x.country))) return false;
  if (c.deviceStates?.length && !c.deviceStates.includes(x.deviceState)) return false;
  if (c.inLists?.length && !(x.lists ?? []).some((m) => c.inLists?.includes(m.list.id))) return false;
  if (c.notInLists?.length && (x.lists ?? []).some((m) => c.notInLists?.includes(m.list.id))) return false;
  return true;
}

const LEVELS: readonly RiskLevel[] = ['low', 'medium', 'high'];
const STATES: readonly DeviceReviewState[] = ['approved', 'reported', 'unreviewed'];

/** Validate a policy draft; throws InvalidParameters naming each bad field. */
export function validateDraft(d: PolicyDraft): void {
  const p: { field: string; message: string }[] = [];
  if (typeof d.name !== 'string' || !d.name.trim() || d.name.length > 200)
    p.push({ field: 'name', message: 'must be 1-200 characters' });
  if (!POLICY_GROUPS.includes(d.group))
    p.push({ field: 'group', message: `must be one of ${POLICY_GROUPS.join(', ')}` });
  if (!ACTIONS.includes(d.action as Action))
    p.push({ field: 'action', message: 'must be allow, challenge or deny' });
  const c = d.conditions ?? {};
  for (const e of c.events ?? [])
    if (!eventSpec(e)) p.push({ field: 'conditions.events', message: `unknown event ${e}` });
  for (const l of c.riskLevels ?? [])
    if (!LEVELS.includes(l)) p.push({ field: 'conditions.riskLevels', message: `unknown level ${l}` });
  for (const k of ['minRisk', 'maxRisk'] as const) {
    const v = c[k];
    if (v !== undefined && (typeof v !== 'number' || v < 0 || v > 1))
      p.push({ field: `conditions.${k}`, message: 'must be in [0, 1]' });
  }
  for (const k of ['signalsAny', 'signalsAll'] as const) {
    for (const s of c[k] ?? [])
      if (!SIGNAL_NAMES.includes(s)) p.push({ field: `conditions.${k}`, message: `unknown signal ${s}` });
  }
  for (const cc of c.countries ?? [])
    if (!/^[A-Z]{2}$/.test(cc))
      p.push({ field: 'conditions.countries', message: `not an ISO country code: ${cc}` });
  for (const s of c.deviceStates ?? [])
    if (!STATES.includes(s))
      p.push({ field: 'conditions.deviceStates', message: `unknown device state ${s}` });
  for (const k of ['inLists', 'notInLists'] as const) {
    const ids = c[k];
    if (
      ids !== undefined &&
      (!Array.isArray(ids) ||
        ids.length > 20 ||
        ids.some((id) => typeof id !== 'string' || !id || id.length > 64))
    )
      p.push({ field: `conditions.${k}`, message: 'must be at most 20 list ids' });
  }
  if (p.length) throw new InvalidParameters(p);
}
