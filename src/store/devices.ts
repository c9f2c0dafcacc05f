/**
 * Devices and the (user, fingerprint) → device index. Devices are keyed `<env>:<token>` and the
 * index `<env>:<user>:<fingerprint key>`, so recognising a device costs two _id look-ups.
 */
import type { Db } from 'mongodb';
import type { Device, DeviceContext, EnvId } from '../core/model';
import type { DeviceStore } from '../core/ports';
import { isDuplicateKey, type IndexSpec } from './database';
import { fromJson, idOf, toJson } from './ids';

export interface DeviceDoc extends Omit<Device, 'context'> {
  _id: string;
  context: Omit<DeviceContext, 'properties'> & { properties: string };
}
interface KeyDoc {
  _id: string;
  envId: EnvId;
  userId: string;
  token: string;
}

export const deviceIndexes: IndexSpec[] = [
  {
    collection: 'devices',
    // listForUser is served by q_env_user_seen, declared with the dashboard queries (src/store/queries.ts).
    indexes: [],
  },
  { collection: 'device_keys', indexes: [{ key: { envId: 1, userId: 1 }, name: 'env_user' }] },
];

const toDoc = (d: Device): DeviceDoc => ({ _id: idOf(d.envId, d.token), ...d, context: { ...d.context, properties: toJson(d.context.properties) } });
export const deviceFromDoc = ({ _id, ...d }: DeviceDoc): Device => ({ ...d, context: { ...d.context, properties: fromJson(d.context.properties, {}) } });

export class MongoDeviceStore implements DeviceStore {
  constructor(private readonly db: Db) {}
  private get col() {
    return this.db.collection<DeviceDoc>('devices');
  }
  private get keys() {
    return this.db.collection<KeyDoc>('device_keys');
  }
  async byToken(env: EnvId, token: string): Promise<Device | null> {
    const d = await this.col.findOne({ _id: idOf(env, token) });
    return d && d.envId === env ? deviceFromDoc(d) : null;
  }
  async tokenForFingerprint(env: EnvId, userId: string, key: string): Promise<string | null> {
    const k = await this.keys.findOne({ _id: idOf(env, userId, key) });
    return k ? k.token : null;
  }
  async insert(device: Device): Promise<Device> {
    const keyId = idOf(device.envId, device.userId, device.fingerprintKey);
    try {
      await this.keys.insertOne({ _id: keyId, envId: device.envId, userId: device.userId, token: device.token });
    } catch (err) {
      if (!isDuplicateKey(err)) throw err;
      const winner = await this.keys.findOne({ _id: keyId });
      const existing = winner ? await this.byToken(device.envId, winner.token) : null;
      if (existing) return existing;
      throw err;
    }
    await this.col.insertOne(toDoc(device));
    return device;
  }
  async save(device: Device): Promise<void> {
    await this.col.replaceOne({ _id: idOf(device.envId, device.token) }, toDoc(device), { upsert: true });
  }
  async listForUser(env: EnvId, userId: string, includeRemoved = false): Promise<Device[]> {
    const docs = await this.col.find({ envId: env, userId }).sort({ lastSeenAt: -1 }).limit(1000).toArray();
    return docs.map(deviceFromDoc).filter((d) => includeRemoved || !d.removedAt);
  }
  async byTokens(env: EnvId, tokens: readonly string[]): Promise<Device[]> {
    if (tokens.length === 0) return [];
    const docs = await this.col.find({ _id: { $in: tokens.map((t) => idOf(env, t)) } }).toArray();
    return docs.filter((d) => d.envId === env).map(deviceFromDoc);
  }
}
