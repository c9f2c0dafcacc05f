/** User profiles, keyed `<env>:<user id>`. */
import type { Db } from 'mongodb';
import type { EnvId, UserProfile } from '../core/model';
import type { UserStore } from '../core/ports';
import type { IndexSpec } from './database';
import { fromJson, idOf, toJson } from './ids';

export interface UserDoc extends Omit<UserProfile, 'traits'> {
  _id: string;
  traits: string;
}

export const userIndexes: IndexSpec[] = [
  {
    collection: 'users',
    indexes: [
      { key: { envId: 1, lastSeenAt: -1 }, name: 'env_seen' },
      { key: { envId: 1, email: 1 }, name: 'env_email' },
    ],
  },
];

export const userFromDoc = ({ _id, traits, ...rest }: UserDoc): UserProfile => ({ ...rest, deviceCount: rest.deviceCount ?? 0, traits: fromJson(traits, {}) });

export class MongoUserStore implements UserStore {
  constructor(private readonly db: Db) {}
  private get col() {
    return this.db.collection<UserDoc>('users');
  }
  async get(env: EnvId, userId: string): Promise<UserProfile | null> {
    const d = await this.col.findOne({ _id: idOf(env, userId) });
    return d && d.envId === env ? userFromDoc(d) : null;
  }
  async byEmail(env: EnvId, email: string): Promise<UserProfile[]> {
    return (await this.col.find({ envId: env, email }).limit(1000).toArray()).map(userFromDoc);
  }
  async save(u: UserProfile): Promise<void> {
    await this.col.replaceOne({ _id: idOf(u.envId, u.userId) }, { ...u, traits: toJson(u.traits) }, { upsert: true });
  }
}
