/**
 * Velocity counters for signals: one document per key (`<env>:<key>`) holding named counts and
 * named distinct sets, read by _id and updated with one upsert. They expire after two days and
 * are swept (FerretDB 1.24 has no TTL indexes).
 */
import type { Db } from 'mongodb';
import type { EnvId } from '../core/model';
import type { CounterBump, CounterSnapshot, CounterStore } from '../core/ports';
import { isDuplicateKey, type IndexSpec } from './database';
import { idOf } from './ids';

interface CounterDoc {
  _id: string;
  envId: EnvId;
  c?: Record<string, number>;
  s?: Record<string, string[]>;
  expiresAt: Date;
}

const TTL_MS = 2 * 24 * 3_600_000;
const NAME = /^[a-z_]{1,32}$/;

export const counterIndexes: IndexSpec[] = [{ collection: 'counters', indexes: [{ key: { expiresAt: 1 }, name: 'expires' }] }];

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

export class MongoCounterStore implements CounterStore {
  constructor(private readonly db: Db) {}
  private get col() {
    return this.db.collection<CounterDoc>('counters');
  }
  async read(env: EnvId, keys: readonly string[]): Promise<Record<string, CounterSnapshot>> {
    const docs = await Promise.all(keys.map((k) => this.col.findOne({ _id: idOf(env, k) })));
    const out: Record<string, CounterSnapshot> = {};
    keys.forEach((k, i) => {
      const d = docs[i];
      out[k] = d && d.envId === env ? { counts: d.c ?? {}, sets: d.s ?? {} } : { counts: {}, sets: {} };
    });
    return out;
  }
  async bump(env: EnvId, bumps: readonly CounterBump[]): Promise<void> {
    const expiresAt = new Date(Date.now() + TTL_MS);
    await Promise.all(
      bumps.map((b) => {
        const update: { $set: Partial<CounterDoc>; $inc?: Record<string, number>; $addToSet?: Record<string, string> } = { $set: { envId: env, expiresAt } };
        // Count and set names are ours (never request data), so they are safe as field paths.
        for (const [name, by] of Object.entries(b.inc ?? {})) if (NAME.test(name)) (update.$inc ??= {})[`c.${name}`] = by;
        for (const [name, member] of Object.entries(b.add ?? {})) if (NAME.test(name)) (update.$addToSet ??= {})[`s.${name}`] = member;
        return upsertRetrying(() => this.col.updateOne({ _id: idOf(env, b.key) }, update, { upsert: true }));
      }),
    );
  }
  /** Delete counters whose window has passed (all tenants: a maintenance task). */
  async sweep(now: Date): Promise<number> {
    return (await this.col.deleteMany({ expiresAt: { $lt: now } })).deletedCount;
  }
}

/** Remove a member (a purged user's id or e-mail) from every distinct set of an environment. */
export async function pullCounterMember(db: Db, env: EnvId, member: string, setNames: readonly string[]): Promise<number> {
  let modified = 0;
  for (const name of setNames) {
    const path = `s.${name}`;
    modified += (await db.collection<CounterDoc>('counters').updateMany({ envId: env, [path]: member }, { $pull: { [path]: member } as Record<string, string> })).modifiedCount;
  }
  return modified;
}
