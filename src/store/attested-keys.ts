/**
 * App Attest keys attested in each environment (core/client/attestation/verifier.ts), one small
 * document each, keyed by environment and key id (an `_id` look-up on every assertion). A key
 * unused for a year is swept: its install is long gone, and an app whose key is unknown attests a
 * new one.
 */
import type { Db } from 'mongodb';
import type { EnvId } from '../core/model';
import type { AttestedKeyRecord, AttestedKeyStore } from '../core/client/attestation/verifier';
import type { IndexSpec } from './database';
import type { StoreDeps } from './deps';

export const ATTESTED_KEYS = 'attested_keys';
/** How long a key no assertion used is kept. */
export const ATTESTED_KEY_UNUSED_MS = 365 * 86_400_000;

export const attestedKeyIndexes: IndexSpec[] = [
  { collection: ATTESTED_KEYS, indexes: [{ key: { usedAt: 1 }, name: 'used' }] },
];

interface KeyDoc extends Omit<AttestedKeyRecord, 'envId' | 'keyId'> {
  _id: string;
  envId: string;
  keyId: string;
}

const idOf = (envId: EnvId, keyId: string) => `${envId}:${keyId}`;

export class MongoAttestedKeyStore implements AttestedKeyStore {
  private readonly db: Db;
  constructor({ db }: StoreDeps) {
    this.db = db;
  }
  private get col() {
    return this.db.collection<KeyDoc>(ATTESTED_KEYS);
  }

  async get(envId: EnvId, keyId: string): Promise<AttestedKeyRecord | null> {
    const d = await this.col.findOne({ _id: idOf(envId, keyId) });
    if (!d || d.envId !== envId) return null;
    const { _id, ...rest } = d;
    // A null member may come back absent (the embedded database drops it under $setOnInsert).
    return { ...rest, envId: rest.envId as EnvId, receipt: rest.receipt ?? null };
  }

  async add(r: AttestedKeyRecord): Promise<void> {
    // A key id already kept stays as it is (its counter is not reset to 0).
    await this.col.updateOne({ _id: idOf(r.envId, r.keyId) }, { $setOnInsert: { ...r } }, { upsert: true });
  }

  async advance(envId: EnvId, keyId: string, counter: number, at: Date): Promise<boolean> {
    const r = await this.col.updateOne(
      { _id: idOf(envId, keyId), counter: { $lt: counter } },
      { $set: { counter, usedAt: at } },
    );
    return r.matchedCount === 1;
  }

  /** Delete keys no assertion used for a year (all tenants: a maintenance task). */
  async sweep(now: Date): Promise<number> {
    return (await this.col.deleteMany({ usedAt: { $lt: new Date(now.getTime() - ATTESTED_KEY_UNUSED_MS) } }))
      .deletedCount;
  }
}
