/** Environments and credentials. Credentials are keyed by the SHA-256 of the secret. */
import type { Db } from 'mongodb';
import type { Credential, EnvId, Environment } from '../core/model';
import type { CredentialStore, EnvironmentStore } from '../core/ports';
import type { IndexSpec } from './database';
import { markKeysComplete } from './event-keys';
import type { StoreDeps } from './deps';

interface EnvDoc extends Omit<Environment, 'id'> {
  _id: string;
}
interface CredDoc extends Omit<Credential, 'hash'> {
  _id: string;
}

/** The collection of environments (one small document each). */
export const ENVIRONMENTS = 'environments';

export const environmentIndexes: IndexSpec[] = [
  { collection: ENVIRONMENTS, indexes: [{ key: { name: 1 }, name: 'name_unique', unique: true }] },
  { collection: 'credentials', indexes: [{ key: { envId: 1 }, name: 'env' }] },
];

const toEnv = ({ _id, ...rest }: EnvDoc): Environment => ({ id: _id as EnvId, ...rest });
const toCred = ({ _id, ...rest }: CredDoc): Credential => ({ hash: _id, ...rest });

export class MongoEnvironmentStore implements EnvironmentStore {
  private readonly db: Db;
  private readonly o: { eventKeys?: boolean };
  /** `eventKeys`: this process keeps event keys (event-keys.ts), so a new environment's events all have them. */
  constructor({ db, ...o }: StoreDeps & { eventKeys?: boolean }) {
    this.db = db;
    this.o = o;
  }
  private get col() {
    return this.db.collection<EnvDoc>(ENVIRONMENTS);
  }
  async create(env: Environment): Promise<void> {
    const { id, ...rest } = env;
    // Before the environment exists, so before any of its events.
    if (this.o.eventKeys) await markKeysComplete(this.db, id);
    await this.col.insertOne({ _id: id, ...rest });
  }
  async byId(id: EnvId): Promise<Environment | null> {
    const d = await this.col.findOne({ _id: id });
    return d ? toEnv(d) : null;
  }
  async byName(name: string): Promise<Environment | null> {
    const d = await this.col.findOne({ name });
    return d ? toEnv(d) : null;
  }
  async byPublishableKey(key: string): Promise<Environment | null> {
    const d = await this.col.findOne({ publishableKey: key });
    return d ? toEnv(d) : null;
  }
  async list(): Promise<Environment[]> {
    return (await this.col.find({}).sort({ createdAt: 1 }).toArray()).map(toEnv);
  }
  async update(id: EnvId, patch: Parameters<EnvironmentStore['update']>[1]): Promise<Environment | null> {
    const d = await this.col.findOneAndUpdate({ _id: id }, { $set: patch }, { returnDocument: 'after' });
    return d ? toEnv(d) : null;
  }
}

export class MongoCredentialStore implements CredentialStore {
  private readonly db: Db;
  constructor({ db }: StoreDeps) {
    this.db = db;
  }
  private get col() {
    return this.db.collection<CredDoc>('credentials');
  }
  async insert(c: Credential): Promise<void> {
    const { hash, ...rest } = c;
    await this.col.insertOne({ _id: hash, ...rest });
  }
  async byHash(hash: string): Promise<Credential | null> {
    const d = await this.col.findOne({ _id: hash });
    return d ? toCred(d) : null;
  }
  async list(env: EnvId): Promise<Credential[]> {
    return (await this.col.find({ envId: env }).sort({ createdAt: 1 }).toArray()).map(toCred);
  }
  async revoke(env: EnvId, hash: string, at: Date): Promise<boolean> {
    const r = await this.col.updateOne(
      { _id: hash, envId: env, revokedAt: null },
      { $set: { revokedAt: at } },
    );
    return r.modifiedCount === 1;
  }
}
