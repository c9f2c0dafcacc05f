/** The audit log (core/audit): one document per change, newest read first through (envId, at). */
import type { Db } from 'mongodb';
import type { AuditEntry, AuditLog } from '../core/audit/model';
import type { EnvId } from '../core/model';
import type { IndexSpec } from './database';
import { fromJson, toJson } from './ids';
import type { StoreDeps } from './deps';

interface AuditDoc extends Omit<AuditEntry, 'id' | 'detail'> {
  _id: string;
  detail: string;
}

export const AUDIT_LOG = 'audit_log';

// A list's history (the console's list page) is read through `env_list_time`; the retention
// sweep finds old entries through `env_time` on MongoDB.
export const auditIndexes: IndexSpec[] = [
  {
    collection: AUDIT_LOG,
    indexes: [
      { key: { envId: 1, at: -1, _id: -1 }, name: 'env_time' },
      { key: { envId: 1, 'target.listId': 1, at: -1, _id: -1 }, name: 'env_list_time' },
    ],
    servedOnEmbedded: ['env_time', 'env_list_time'],
  },
];

export class MongoAuditLog implements AuditLog {
  private readonly db: Db;
  constructor({ db }: StoreDeps) {
    this.db = db;
  }
  private get log() {
    return this.db.collection<AuditDoc>(AUDIT_LOG);
  }
  async append(entries: readonly AuditEntry[]): Promise<void> {
    if (entries.length === 0) return;
    await this.log.insertMany(
      entries.map(({ id, detail, ...e }) => ({ _id: id, ...e, detail: toJson(detail) })),
    );
  }
  async recent(env: EnvId, q: { targetId?: string; listId?: string; limit: number }): Promise<AuditEntry[]> {
    const docs = await this.log
      .find({
        envId: env,
        ...(q.targetId ? { 'target.id': q.targetId } : {}),
        ...(q.listId ? { 'target.listId': q.listId } : {}),
      })
      .sort(q.listId ? { envId: 1, 'target.listId': 1, at: -1, _id: -1 } : { envId: 1, at: -1, _id: -1 })
      .limit(q.limit)
      .toArray();
    return docs.map(({ _id, detail, ...e }) => ({ id: _id, ...e, detail: fromJson(detail, {}) }));
  }
}
