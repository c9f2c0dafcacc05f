/**
 * Velocity counters for signals on the state layer: one document per key (`<env>:<key>`) holding
 * named counts (`c.<name>`, increments) and named distinct sets (`s.<name>`, set-adds), read
 * through the cache and changed only by deltas written behind, so concurrent requests never lose
 * an increment. They expire after two days and are swept (FerretDB 1.24 has no TTL indexes).
 */
import type { Db } from 'mongodb';
import type { EnvId } from '../core/model';
import type { CounterBump, CounterSnapshot, CounterStore } from '../core/ports';
import { sweepExpired, type IndexSpec } from './database';
import { idOf } from './ids';
import { delta } from './state/delta';
import type { StateLayer } from './state/layer';

export const COUNTERS = 'counters';

interface CounterDoc {
  envId?: EnvId;
  c?: Record<string, number>;
  s?: Record<string, string[]>;
  expiresAt?: Date;
}

const TTL_MS = 2 * 24 * 3_600_000;
const NAME = /^[a-z_]{1,32}$/;

export const counterIndexes: IndexSpec[] = [{ collection: COUNTERS, indexes: [{ key: { expiresAt: 1 }, name: 'expires' }] }];

const EMPTY: CounterSnapshot = { counts: {}, sets: {} };

export class StateCounterStore implements CounterStore {
  constructor(private readonly db: Db, private readonly state: StateLayer, private readonly now: () => Date) {}

  async read(env: EnvId, keys: readonly string[], deadline?: number): Promise<Record<string, CounterSnapshot> | undefined> {
    const docs = await Promise.all(keys.map((k) => this.state.read(COUNTERS, idOf(env, k), deadline)));
    if (docs.some((d) => d === undefined)) return undefined;
    const out: Record<string, CounterSnapshot> = {};
    keys.forEach((k, i) => {
      const d = docs[i] as CounterDoc | null;
      out[k] = d && d.envId === env ? { counts: d.c ?? {}, sets: d.s ?? {} } : EMPTY;
    });
    return out;
  }

  bump(env: EnvId, bumps: readonly CounterBump[]): void {
    const now = this.now().getTime();
    for (const b of bumps) {
      const d = delta().set(['envId'], env).max(['expiresAt'], new Date(now + (b.keepMs ?? TTL_MS)));
      // Count and set names are ours (never request data), so they are safe as field names.
      for (const [name, by] of Object.entries(b.inc ?? {})) if (NAME.test(name)) d.inc(['c', name], by);
      for (const [name, v] of Object.entries(b.min ?? {})) if (NAME.test(name)) d.min(['c', name], v);
      for (const [name, member] of Object.entries(b.add ?? {})) if (NAME.test(name)) d.addToSet(['s', name], member);
      for (const [name, members] of Object.entries(b.replaceSet ?? {})) if (NAME.test(name)) d.set(['s', name], [...members]);
      this.state.apply(COUNTERS, idOf(env, b.key), d);
    }
  }

  /** Delete counters whose window has passed (all tenants: a maintenance task). */
  async sweep(now: Date): Promise<number> {
    return sweepExpired(this.db, COUNTERS, now);
  }
}

/**
 * Remove a member (a purged user's id or e-mail) from every distinct set of an environment, in
 * the database; the caller drops the cached copies.
 */
export async function pullCounterMember(db: Db, env: EnvId, member: string, setNames: readonly string[]): Promise<number> {
  let modified = 0;
  for (const name of setNames) {
    const path = `s.${name}`;
    modified += (await db.collection<CounterDoc>(COUNTERS).updateMany({ envId: env, [path]: member }, { $pull: { [path]: member } as Record<string, string> })).modifiedCount;
  }
  return modified;
}
