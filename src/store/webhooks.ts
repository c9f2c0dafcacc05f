/**
 * The webhook outbox on MongoDB/FerretDB: `webhook_deliveries` (keyed by delivery UUID, with
 * the raw body and attempt history; a notification's id is derived from its dedupe slot, so the
 * insert-if-absent queued on the state layer is the atomic dedupe check), `webhook_dedupe` (the
 * slots of earlier versions, swept when they expire), and `webhook_claims`.
 *
 * Why claims: FerretDB 1.x runs findAndModify as a query followed by a replace, so two instances
 * can both "win" the same findOneAndUpdate. A claim is an insert of `<delivery>:<leaseVersion>:<n>`,
 * which the unique `_id` makes atomic on every server; only its winner then moves the delivery
 * to `delivering` (with a findOneAndUpdate guarded by the same leaseVersion). Every later write of
 * a delivery (`complete`, `release`) is made by its lease holder and guarded by owner and
 * leaseVersion, so no two writers ever race on one delivery document.
 */
import type { Db, Filter } from 'mongodb';
import type { EnvId } from '../core/model';
import type { DeliveryAttempt, DeliveryStatus, WebhookDelivery } from '../core/webhooks/model';
import type { DeliveryListQuery, DeliveryOutcome, DueQuery, WebhookDeliveryStore } from '../core/webhooks/ports';
import type { OpenDeliveries } from '../core/webhooks/outbox';
import { isDuplicateKey, type IndexSpec } from './database';
import type { StateLayer } from './state/layer';

export interface DeliveryDoc extends Omit<WebhookDelivery, 'id'> {
  _id: string;
}
export interface DedupeDoc {
  _id: string;
  envId: EnvId;
  userId: string;
  deviceToken: string | null;
  type: string;
  window: number;
  deliveryId: string;
  createdAt: Date;
  expiresAt: Date;
}
export interface ClaimDoc {
  _id: string;
  deliveryId: string;
  envId: EnvId;
  owner: string;
  until: Date;
  createdAt: Date;
}

export const WEBHOOK_COLLECTIONS = { deliveries: 'webhook_deliveries', dedupe: 'webhook_dedupe', claims: 'webhook_claims' } as const;

export const webhookIndexes: IndexSpec[] = [
  {
    collection: WEBHOOK_COLLECTIONS.deliveries,
    indexes: [
      { key: { status: 1, nextAttemptAt: 1 }, name: 'status_due' },
      { key: { status: 1, leaseUntil: 1 }, name: 'status_lease' },
      { key: { envId: 1, createdAt: -1 }, name: 'env_time' },
      { key: { envId: 1, status: 1, createdAt: -1 }, name: 'env_status_time' },
      { key: { envId: 1, userId: 1, createdAt: -1 }, name: 'env_user_time' },
      { key: { envId: 1, userId: 1, status: 1, createdAt: 1, seq: 1 }, name: 'env_user_open' },
      // The outbox metrics' read (openDeliveries): the oldest open deliveries of every tenant.
      { key: { status: 1, createdAt: 1 }, name: 'status_created' },
    ],
    // Rampart's FerretDB build: a user's deliveries (the console's user page) through an index.
    servedOnEmbedded: ['env_user_time'],
  },
  {
    collection: WEBHOOK_COLLECTIONS.dedupe,
    indexes: [
      { key: { expiresAt: 1 }, name: 'expires' },
      { key: { envId: 1, userId: 1 }, name: 'env_user' },
    ],
  },
  {
    collection: WEBHOOK_COLLECTIONS.claims,
    indexes: [
      { key: { until: 1 }, name: 'until' },
      { key: { deliveryId: 1 }, name: 'delivery' },
    ],
  },
];

/** Claims whose lease ended this long ago guard nothing any more and are swept. */
const CLAIM_GRACE_MS = 3_600_000;
/** Take-overs of one lease version tried before giving up for this round. */
const MAX_TAKEOVERS = 8;

const toDoc = ({ id, ...rest }: WebhookDelivery): DeliveryDoc => ({ _id: id, ...rest });
const fromDoc = ({ _id, ...rest }: DeliveryDoc): WebhookDelivery => ({
  id: _id,
  ...rest,
  // Deliveries recorded before `seq` existed order by creation time alone.
  seq: rest.seq ?? 0,
  attempts: (rest.attempts ?? []).map((a: DeliveryAttempt) => ({ ...a })),
});
const OPEN: DeliveryStatus[] = ['pending', 'delivering'];


export class MongoWebhookStore implements WebhookDeliveryStore {
  constructor(private readonly db: Db, private readonly state: StateLayer) {}
  private get col() {
    return this.db.collection<DeliveryDoc>(WEBHOOK_COLLECTIONS.deliveries);
  }
  private get dedupe() {
    return this.db.collection<DedupeDoc>(WEBHOOK_COLLECTIONS.dedupe);
  }
  private get claims() {
    return this.db.collection<ClaimDoc>(WEBHOOK_COLLECTIONS.claims);
  }

  enqueue(delivery: WebhookDelivery): Promise<boolean> {
    return new Promise((resolve) => this.state.insert(WEBHOOK_COLLECTIONS.deliveries, toDoc(delivery), resolve));
  }

  async insert(delivery: WebhookDelivery): Promise<void> {
    await this.col.insertOne(toDoc(delivery));
  }

  async get(env: EnvId, id: string): Promise<WebhookDelivery | null> {
    const d = await this.col.findOne({ _id: id });
    return d && d.envId === env ? fromDoc(d) : null;
  }

  async list(env: EnvId, q: DeliveryListQuery): Promise<WebhookDelivery[]> {
    const filter: Filter<DeliveryDoc> = { envId: env };
    if (q.status) filter.status = q.status;
    if (q.userId !== undefined) filter.userId = q.userId;
    if (q.before) {
      filter.$or = [{ createdAt: { $lt: q.before.createdAt } }, { createdAt: q.before.createdAt, _id: { $lt: q.before.id } }];
    }
    const docs = await this.col.find(filter).sort({ createdAt: -1, _id: -1 }).limit(q.limit).toArray();
    return docs.map(fromDoc);
  }

  async listForUser(env: EnvId, userId: string, limit: number): Promise<WebhookDelivery[]> {
    const docs = await this.col.find({ envId: env, userId }).sort({ createdAt: -1, _id: -1 }).limit(limit).toArray();
    return docs.map(fromDoc);
  }

  async firstOpen(env: EnvId, userId: string): Promise<WebhookDelivery | null> {
    const [d] = await this.col.find({ envId: env, userId, status: { $in: OPEN } }).sort({ createdAt: 1, seq: 1, _id: 1 }).limit(1).toArray();
    return d ? fromDoc(d) : null;
  }

  async due(now: Date, q: DueQuery): Promise<WebhookDelivery[]> {
    const skip: Filter<DeliveryDoc> = {};
    if (q.skipIds?.length) skip._id = { $nin: [...q.skipIds] };
    if (q.skipUsers?.length) skip.$nor = q.skipUsers.map((u) => ({ envId: u.env, userId: u.userId }));
    if (q.skipEnvs?.length) skip.envId = { $nin: [...q.skipEnvs] };
    if (q.user) {
      skip.envId = q.user.env;
      skip.userId = q.user.userId;
    }
    // Two simple queries rather than one $or, so each can use its index.
    const [pending, expired] = await Promise.all([
      this.col.find({ status: 'pending' as DeliveryStatus, nextAttemptAt: { $lte: now }, ...skip }).sort({ nextAttemptAt: 1 }).limit(q.limit).toArray(),
      this.col.find({ status: 'delivering' as DeliveryStatus, leaseUntil: { $lt: now }, ...skip }).sort({ leaseUntil: 1 }).limit(q.limit).toArray(),
    ]);
    return [...expired, ...pending].slice(0, q.limit).map(fromDoc);
  }

  async claim(delivery: WebhookDelivery, owner: string, now: Date, leaseUntil: Date): Promise<WebhookDelivery | null> {
    const version = delivery.leaseVersion;
    for (let n = 0; n < MAX_TAKEOVERS; n++) {
      const claimId = `${delivery.id}:${version}:${n}`;
      try {
        await this.claims.insertOne({ _id: claimId, deliveryId: delivery.id, envId: delivery.envId, owner, until: leaseUntil, createdAt: now });
      } catch (err) {
        if (!isDuplicateKey(err)) throw err;
        const held = await this.claims.findOne({ _id: claimId });
        if (!held || held.until.getTime() > now.getTime()) return null;
        // That claimant's lease ran out before it took the delivery: try the next slot.
        continue;
      }
      const claimed = await this.col.findOneAndUpdate(
        {
          _id: delivery.id,
          leaseVersion: version,
          $or: [
            { status: 'pending', nextAttemptAt: { $lte: now } },
            { status: 'delivering', leaseUntil: { $lt: now } },
          ],
        },
        { $set: { status: 'delivering', leaseOwner: owner, leaseUntil }, $inc: { leaseVersion: 1 } },
        { returnDocument: 'after' },
      );
      return claimed ? fromDoc(claimed) : null;
    }
    return null;
  }

  async complete(delivery: WebhookDelivery, owner: string, attempt: DeliveryAttempt, outcome: DeliveryOutcome): Promise<boolean> {
    const r = await this.col.updateOne(
      { _id: delivery.id, leaseOwner: owner, leaseVersion: delivery.leaseVersion, status: 'delivering' },
      {
        $set: {
          status: outcome.status,
          nextAttemptAt: outcome.nextAttemptAt,
          deliveredAt: outcome.deliveredAt,
          lastError: outcome.lastError,
          url: attempt.url,
          leaseOwner: null,
          leaseUntil: null,
        },
        $push: { attempts: attempt },
      },
    );
    if (r.matchedCount === 1 && outcome.status !== 'pending') {
      await this.claims.deleteMany({ deliveryId: delivery.id });
    }
    return r.matchedCount === 1;
  }

  async release(delivery: WebhookDelivery, owner: string, nextAttemptAt: Date): Promise<boolean> {
    const r = await this.col.updateOne(
      { _id: delivery.id, leaseOwner: owner, leaseVersion: delivery.leaseVersion, status: 'delivering' },
      { $set: { status: 'pending', nextAttemptAt, leaseOwner: null, leaseUntil: null } },
    );
    return r.matchedCount === 1;
  }

  /**
   * On MongoDB an index range (status_created); on FerretDB a scan of the outbox, as each of the
   * dispatcher's polls is, which is why it is read only now and then (see core/webhooks/outbox.ts).
   * The count is asked for only when there are more open deliveries than `limit`.
   */
  async openDeliveries(limit: number): Promise<OpenDeliveries> {
    const open: Filter<DeliveryDoc> = { status: { $in: OPEN } };
    const docs = await this.col.find(open, { projection: { _id: 1, createdAt: 1 } }).sort({ createdAt: 1 }).limit(limit).toArray();
    const total = docs.length < limit ? docs.length : await this.col.countDocuments(open);
    return { total, oldest: docs.map((d) => ({ id: d._id, createdAt: d.createdAt })) };
  }

  async sweep(now: Date, finishedBefore: Date): Promise<{ dedupe: number; deliveries: number }> {
    const dedupe = await this.dedupe.deleteMany({ expiresAt: { $lte: now } });
    await this.claims.deleteMany({ until: { $lt: new Date(now.getTime() - CLAIM_GRACE_MS) } });
    const deliveries = await this.col.deleteMany({ status: { $in: ['delivered', 'failed'] as DeliveryStatus[] }, createdAt: { $lt: finishedBefore } });
    return { dedupe: dedupe.deletedCount, deliveries: deliveries.deletedCount };
  }
}
