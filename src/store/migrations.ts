/**
 * One-time migration of data written by earlier versions, run at start-up before the doors open.
 *
 * Earlier versions kept each device in its own document (`devices`, keyed `<env>:<token>`) with a
 * `(user, fingerprint) → token` index in `device_keys`, and the user's last location as an
 * object. Now a user's devices live in the user's document (see user-state.ts) and each token has
 * a small document in `device_tokens`. The migration folds every device into its user's document
 * (the `devices` documents stay: they are the dashboards' copy, in the same shape), writes the
 * token documents, converts the last location, and drops `device_keys` last, which marks it done.
 * Interrupted, it simply runs again: every step sets values, so repeating it changes nothing.
 */
import type { Db } from 'mongodb';
import type { EnvId } from '../core/model';
import { idOf } from './ids';
import { delta, fieldName } from './state/delta';
import type { StateLayer } from './state/layer';
import { PACKED, unpack } from './state/pack';
import { DEVICE_TOKENS, DEVICES, storedDevice, USERS, type DeviceDoc } from './user-state';

const LEGACY_KEYS = 'device_keys';

export interface MigrationLog {
  info(obj: object, msg: string): void;
}

/** Returns the number of devices migrated (0 when there was nothing to do). */
export async function migrateLegacyDevices(db: Db, state: StateLayer, log: MigrationLog): Promise<number> {
  const legacy = await db.listCollections({ name: LEGACY_KEYS }, { nameOnly: true }).toArray();
  if (legacy.length === 0) return 0;
  let devices = 0;
  for await (const stored of db.collection<DeviceDoc>(DEVICES).find({})) {
    const d = storedDevice(stored);
    if (typeof d.userId !== 'string' || typeof d.fingerprintKey !== 'string' || typeof d.token !== 'string') continue;
    const env = d.envId as EnvId;
    const at = (...field: string[]) => ['d', fieldName(d.fingerprintKey), ...field];
    const change = delta()
      .set(['envId'], env)
      .set(['userId'], d.userId)
      .set(at('key'), d.fingerprintKey)
      .set(at('identity'), d.identity)
      .addToSet(at('tokens'), d.token)
      .min(at('createdAt'), d.createdAt)
      .max(at('lastSeenAt'), d.lastSeenAt)
      .set(at('context'), d.context)
      .set(at('feedback'), d.feedback ?? null)
      .set(at('approvedAt'), d.approvedAt ?? null)
      .set(at('escalatedAt'), d.escalatedAt ?? null)
      .set(at('mitigatedAt'), d.mitigatedAt ?? null)
      .set(at('removedAt'), d.removedAt ?? null)
      .set(at('lastEventRisk'), d.lastEventRisk ?? null)
      .set(at('pj'), d.lastSeenAt);
    state.apply(USERS, idOf(env, d.userId), change);
    state.apply(DEVICE_TOKENS, idOf(env, d.token), delta().set(['envId'], env).set(['userId'], d.userId).set(['key'], d.fingerprintKey).set(['createdAt'], d.createdAt));
    devices++;
    if (devices % 1000 === 0) await state.flush();
  }
  type LegacyUser = { _id: string; lastLocation?: { lat: number; lon: number; country: string | null; at: Date } | null };
  for await (const u of db.collection<LegacyUser>(USERS).find({ lastLocation: { $type: 'object' } })) {
    const l = u.lastLocation;
    if (!l || !(l.at instanceof Date)) continue;
    state.apply(USERS, u._id, delta().max(['lastLoc'], `${l.at.toISOString()}|${l.lat}|${l.lon}|${l.country ?? ''}`).unset(['lastLocation']));
  }
  await state.flush();
  await db.collection(LEGACY_KEYS).drop();
  log.info({ devices }, 'migrated devices into their users\' documents');
  return devices;
}

/**
 * Documents the embedded Rampart wrote packed (see state/pack.ts) made plain again, for a
 * Rampart that writes deltas to the same FerretDB (several instances, or MONGODB_URI pointed at
 * it): a delta applies to fields, which a packed document hides. Returns how many were unpacked.
 */
export async function unpackStored(db: Db, collections: readonly string[], log: MigrationLog): Promise<number> {
  let n = 0;
  for (const name of collections) {
    const col = db.collection<{ _id: string }>(name);
    for await (const d of col.find({ [PACKED]: { $exists: true } })) {
      const { _id, ...rest } = d;
      await col.replaceOne({ _id }, unpack(rest));
      n++;
    }
  }
  if (n > 0) log.info({ documents: n }, 'unpacked documents written by an embedded Rampart');
  return n;
}
