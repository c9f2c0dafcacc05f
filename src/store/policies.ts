/**
 * Policy sets (one document per environment, read with one _id look-up on every verdict) and
 * their immutable revisions.
 */
import type { Db } from 'mongodb';
import type { EnvId } from '../core/model';
import type { Policy, PolicyRevision, PolicySet } from '../core/policies/model';
import type { PolicyStore } from '../core/ports';
import { putVersioned, type IndexSpec } from './database';
import { fromJson, toJson } from './ids';
import type { StoreDeps } from './deps';

interface StoredPolicy extends Omit<Policy, 'conditions'> {
  conditions: string;
}
interface SetDoc {
  _id: string;
  version: number;
  policies: StoredPolicy[];
}
interface RevisionDoc extends Omit<PolicyRevision, 'id' | 'conditions'> {
  _id: string;
  conditions: string;
}

export const policyIndexes: IndexSpec[] = [
  {
    collection: 'policy_revisions',
    indexes: [{ key: { envId: 1, policyId: 1, createdAt: 1 }, name: 'env_policy_time' }],
  },
];

const fromRevision = ({ _id, conditions, ...r }: RevisionDoc): PolicyRevision => ({
  id: _id,
  ...r,
  conditions: fromJson(conditions, {}),
});

export class MongoPolicyStore implements PolicyStore {
  private readonly db: Db;
  constructor({ db }: StoreDeps) {
    this.db = db;
  }
  private get sets() {
    return this.db.collection<SetDoc>('policy_sets');
  }
  private get revs() {
    return this.db.collection<RevisionDoc>('policy_revisions');
  }
  async getSet(env: EnvId): Promise<PolicySet | null> {
    const d = await this.sets.findOne({ _id: env });
    if (!d) return null;
    return {
      envId: env,
      version: d.version,
      policies: d.policies.map((p) => ({ ...p, envId: env, conditions: fromJson(p.conditions, {}) })),
    };
  }
  async putSet(set: PolicySet, expectedVersion: number): Promise<boolean> {
    const doc: SetDoc = {
      _id: set.envId,
      version: set.version,
      policies: set.policies.map((p) => ({ ...p, conditions: toJson(p.conditions) })),
    };
    return putVersioned(this.sets, doc, expectedVersion);
  }
  async addRevisions(revisions: PolicyRevision[]): Promise<void> {
    if (revisions.length === 0) return;
    await this.revs.insertMany(
      revisions.map(({ id, conditions, ...r }) => ({ _id: id, ...r, conditions: toJson(conditions) })),
    );
  }
  async revisions(env: EnvId, policyIds: readonly string[]): Promise<PolicyRevision[]> {
    if (policyIds.length === 0) return [];
    const docs = await this.revs
      .find({ envId: env, policyId: { $in: [...policyIds] } })
      .sort({ createdAt: 1 })
      .toArray();
    return docs.map(fromRevision);
  }

  async revision(env: EnvId, id: string): Promise<PolicyRevision | null> {
    const d = await this.revs.findOne({ _id: id });
    return d && d.envId === env ? fromRevision(d) : null;
  }
}
