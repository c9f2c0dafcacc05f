/**
 * Migrations of data written by earlier versions, run at start-up before the doors open: the
 * devices (below), packed documents made plain, and the webhook outbox (migrateWebhookOutbox).
 *
 * Earlier versions kept each device in its own document (`devices`, keyed `<env>:<token>`) with a
 * `(user, fingerprint) → token` index in `device_keys`, and the user's last location as an
 * object. Now a user's devices live in the user's document (see user-state.ts). The migration folds
 * every device into its user's document (the `devices` documents stay: they are the dashboards'
 * copy, in the same shape, and name each device by its token), writes token documents (which the
 * versions between read), converts the last location, and drops `device_keys` last, which marks
 * it done.
 * Interrupted, it simply runs again: every step sets values, so repeating it changes nothing.
 */
import type { Db } from 'mongodb';
import type { EnvId } from '../core/model';
import { idOf } from './ids';
import { delta, fieldName } from './state/delta';
import type { StateLayer } from './state/layer';
import { PACKED, unpack } from './state/pack';
import { DEVICE_TOKENS, DEVICES, storedDevice, USERS, type DeviceDoc } from './user-state';
import { isDuplicateKey, writeErrors } from './database';
import {
  dedupeRecordOf,
  fromDoc,
  toOutboxDoc,
  WEBHOOK_COLLECTIONS,
  type DedupeRecord,
  type DeliveryDoc,
  type OutboxDoc,
} from './webhooks';
import { DEDUPE_MARGIN_MS } from '../core/webhooks/outbox';

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
    if (typeof d.userId !== 'string' || typeof d.fingerprintKey !== 'string' || typeof d.token !== 'string')
      continue;
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
    state.apply(
      DEVICE_TOKENS,
      idOf(env, d.token),
      delta()
        .set(['envId'], env)
        .set(['userId'], d.userId)
        .set(['key'], d.fingerprintKey)
        .set(['createdAt'], d.createdAt),
    );
    devices++;
    if (devices % 1000 === 0) await state.flush();
  }
  type LegacyUser = {
    _id: string;
    lastLocation?: { lat: number; lon: number; country: string | null; at: Date } | null;
  };
  for await (const u of db.collection<LegacyUser>(USERS).find({ lastLocation: { $type: 'object' } })) {
    const l = u.lastLocation;
    if (!l || !(l.at instanceof Date)) continue;
    state.apply(
      USERS,
      u._id,
      delta()
        .max(['lastLoc'], `${l.at.toISOString()}|${l.lat}|${l.lon}|${l.country ?? ''}`)
        .unset(['lastLocation']),
    );
  }
  await state.flush();
  await db.collection(LEGACY_KEYS).drop();
  log.info({ devices }, "migrated devices into their users' documents");
  return devices;
}

/**
 * Documents the embedded Rampart wrote packed (see state/pack.ts) made plain again, for a
 * Rampart that writes deltas to the same FerretDB (several instances, or MONGODB_URI pointed at
 * it): a delta applies to fields, which a packed document hides. Returns how many were unpacked.
 */
export async function unpackStored(
  db: Db,
  collections: readonly string[],
  log: MigrationLog,
): Promise<number> {
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

/** Migrations done, one document each (`_id`: the migration's name), where no other marker serves. */
export const MIGRATIONS = 'rampart_migrations';
const OUTBOX_MIGRATION = 'webhook-outbox';

export interface OutboxMigrationOptions {
  /**
   * Look for open deliveries an earlier version left in the history on every start, not only the
   * first (MongoDB, where it is one index range and where older instances may still run).
   */
  everyStart: boolean;
  /** The dedupe window (default 1 hour): finished deliveries younger than it and the margin keep their ids in the outbox. */
  dedupeWindowMs?: number;
  now: Date;
  log: MigrationLog;
}

/**
 * Earlier versions kept every delivery, open or finished, in `webhook_deliveries`. Now that
 * collection is the history and the open ones live in `webhook_outbox` (store/webhooks.ts). The
 * migration moves each open delivery into the outbox as it is (its lease, its attempts, its lease
 * version: claims already made stay valid), then deletes it from the history; it leaves a dedupe
 * record in the outbox for each finished delivery whose notice could still repeat, so that the
 * upgrade never sends one twice; it drops the history's indexes that served the dispatcher on
 * MongoDB (on FerretDB, indexes no read uses are dropped at start-up anyway); and it records that
 * it is done (`rampart_migrations`), so that FerretDB, where finding the open deliveries in the
 * history reads all of it, does so once. Interrupted, it runs again: every step is an insert of
 * an id that may exist already, or a delete of what was moved.
 */
export async function migrateWebhookOutbox(
  db: Db,
  o: OutboxMigrationOptions,
): Promise<{ moved: number; dedupe: number }> {
  const meta = db.collection<{ _id: string; at: Date }>(MIGRATIONS);
  const done = (await meta.findOne({ _id: OUTBOX_MIGRATION })) !== null;
  if (done && !o.everyStart) return { moved: 0, dedupe: 0 };
  const history = db.collection<DeliveryDoc>(WEBHOOK_COLLECTIONS.history);
  const outbox = db.collection<OutboxDoc | DedupeRecord>(WEBHOOK_COLLECTIONS.outbox);
  const ignoreDuplicates = (err: unknown) => {
    if (!isDuplicateKey(err) && !(writeErrors(err) ?? [{ error: err }]).every((w) => isDuplicateKey(w.error)))
      throw err;
  };
  // The open deliveries are few (the backlog): read them all before moving any.
  const open = await history.find({ status: { $in: ['pending', 'delivering'] } }).toArray();
  for (const doc of open) {
    await outbox.insertOne(toOutboxDoc(fromDoc(doc))).catch(ignoreDuplicates);
    // On FerretDB by `_id` alone (anything else reads the whole history); this process is its only writer.
    await history.deleteOne(
      o.everyStart ? { _id: doc._id, status: doc.status, leaseVersion: doc.leaseVersion } : { _id: doc._id },
    );
  }
  let dedupe = 0;
  if (!done) {
    const since = new Date(o.now.getTime() - (o.dedupeWindowMs ?? 3_600_000) - DEDUPE_MARGIN_MS);
    const recent = history.find(
      { status: { $in: ['delivered', 'failed'] }, createdAt: { $gte: since } },
      { projection: { _id: 1, createdAt: 1, test: 1 } },
    );
    let batch: DedupeRecord[] = [];
    const write = async () => {
      if (batch.length > 0) await outbox.insertMany(batch, { ordered: false }).catch(ignoreDuplicates);
      dedupe += batch.length;
      batch = [];
    };
    for await (const d of recent) {
      if (d.test) continue;
      batch.push(dedupeRecordOf(d._id, d.createdAt));
      if (batch.length >= 500) await write();
    }
    await write();
    // On MongoDB the history no longer serves the dispatcher: its indexes for it only cost writes.
    if (o.everyStart) {
      const existing = new Set(
        (
          await history
            .listIndexes()
            .toArray()
            .catch(() => [])
        ).map((i: { name?: unknown }) => String(i.name)),
      );
      for (const name of ['status_due', 'status_lease', 'env_user_open'])
        if (existing.has(name)) await history.dropIndex(name);
    }
    await meta.updateOne({ _id: OUTBOX_MIGRATION }, { $set: { at: o.now } }, { upsert: true });
  }
  if (open.length + dedupe > 0)
    o.log.info({ moved: open.length, dedupe }, 'moved open webhook deliveries into the outbox');
  return { moved: open.length, dedupe };
}
