/** Velocity counters and distinct sets for signals, keyed `<env>:<key>`, expiring after two days. */
import type { Db } from 'mongodb';
import type { EnvId } from '../core/model';
import type { CounterStore } from '../core/ports';
import { isDuplicateKey, type IndexSpec } from './database';
import { idOf } from './ids';

interface CounterDoc {
  _id: string;
  envId: EnvId;
  n?: number;
  members?: string[];
  expiresAt: Date;
}

const TTL_MS = 2 * 24 * 3_600_000;

/**
 * Two concurrent upserts of a new _id race: the loser gets a duplicate-key error (on MongoDB
 * and FerretDB alike). The document exists by then, so the same update succeeds when repeated.
 */
async function upsertRetrying<T>(op: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await op();
    } catch (err) {
      if (!isDuplicateKey(err) || attempt >= 3) throw err;
    }
  }
}

// No TTL index: FerretDB 1.24 rejects them. Expired counters are deleted by `sweep`.
export const counterIndexes: IndexSpec[] = [{ collection: 'counters', indexes: [{ key: { expiresAt: 1 }, name: 'expires' }] }];

export class MongoCounterStore implements CounterStore {
  constructor(private readonly db: Db) {}
  private get col() {
    return this.db.collection<CounterDoc>('counters');
  }
  private async many(env: EnvId, keys: readonly string[]): Promise<Map<string, CounterDoc>> {
    const docs = await Promise.all(keys.map((k) => this.col.findOne({ _id: idOf(env, k) })));
    const out = new Map<string, CounterDoc>();
    keys.forEach((k, i) => {
      const d = docs[i];
      if (d && d.envId === env) out.set(k, d);
    });
    return out;
  }
  async addDistinct(env: EnvId, key: string, member: string, cap: number): Promise<number> {
    const d = await upsertRetrying(() =>
      this.col.findOneAndUpdate(
        { _id: idOf(env, key) },
        { $addToSet: { members: member }, $set: { envId: env, expiresAt: new Date(Date.now() + TTL_MS) } },
        { upsert: true, returnDocument: 'after' },
      ),
    );
    const size = d?.members?.length ?? 1;
    if (size > cap && d?.members) {
      await this.col.updateOne({ _id: idOf(env, key) }, { $set: { members: d.members.slice(-cap) } });
    }
    return Math.min(size, cap);
  }
  async distinctSizes(env: EnvId, keys: readonly string[]): Promise<Record<string, number>> {
    const found = await this.many(env, keys);
    return Object.fromEntries(keys.map((k) => [k, found.get(k)?.members?.length ?? 0]));
  }
  async increment(env: EnvId, key: string, by = 1): Promise<number> {
    const d = await upsertRetrying(() =>
      this.col.findOneAndUpdate(
        { _id: idOf(env, key) },
        { $inc: { n: by }, $set: { envId: env, expiresAt: new Date(Date.now() + TTL_MS) } },
        { upsert: true, returnDocument: 'after' },
      ),
    );
    return d?.n ?? by;
  }
  /** Delete counters whose window has passed (all tenants: a maintenance task). */
  async sweep(now: Date): Promise<number> {
    return (await this.col.deleteMany({ expiresAt: { $lt: now } })).deletedCount;
  }
  async values(env: EnvId, keys: readonly string[]): Promise<Record<string, number>> {
    const found = await this.many(env, keys);
    return Object.fromEntries(keys.map((k) => [k, found.get(k)?.n ?? 0]));
  }
}
