/**
 * The webhook outbox on MongoDB/FerretDB, in two collections:
 *
 *  - `webhook_outbox`: the open deliveries (`pending`, `delivering`), each with its raw body and
 *    attempts, and `dueAt`, when it may be claimed (its next attempt, or the end of its lease);
 *    then, once it is finished, a small dedupe record in its place (`{_id, status: 'done', dueAt:
 *    <creation time>}`) until no notice can repeat it (its dedupe window has passed). Every read
 *    the dispatcher makes is an index range: due ones through (status, dueAt, _id), a user's first
 *    open one through (envId, userId, createdAt, seq, _id). On Rampart's FerretDB build (patch
 *    0009) both are served by SQLite's index with their sort and limit: a read costs the rows it
 *    returns, however much history there is.
 *  - `webhook_deliveries`: the history, delivered and failed deliveries with their attempts,
 *    written once when a delivery finishes and deleted by the retention sweep
 *    (store/retention.ts). Nothing the dispatcher does reads it.
 *
 * A notice's delivery id is derived from its dedupe slot, and the insert-if-absent queued on the
 * state layer into `webhook_outbox` is the atomic dedupe check: the id stays there (open, or as
 * its dedupe record) for as long as the slot can repeat.
 *
 * Claims: a findOneAndUpdate that moves a delivery from the state it was read in (its status and
 * `dueAt`) to `delivering` under a new lease, and increments its lease version. Where findAndModify
 * is atomic (MongoDB, Rampart's FerretDB build) that alone lets one claimant win. A stock FerretDB
 * 1.x runs it as a query followed by a replace, so two instances could both "win": there
 * (`atomicUpdates: false`) a claim is first an insert into `webhook_claims` of
 * `<delivery>:<leaseVersion>:<n>`, which the unique `_id` makes atomic, and only its winner moves
 * the delivery; the claim guards only that move, so it is deleted once it is made (in batches, by
 * `_id`). Every later write of a delivery (`complete`, `release`) is made by its lease holder and
 * guarded by its lease (heldBy), so no two writers ever race on one delivery.
 *
 * Every filter is one an index serves on Rampart's FerretDB build: `_id` alone (FerretDB uses its
 * `_id` index for nothing else), or the fields of one index patch 0009 reads through (a guarded
 * write: equalities on `status_due`'s).
 * `webhook_dedupe` holds the dedupe slots of earlier versions, swept when they expire.
 */
import type { Collection, Db, Filter } from 'mongodb';
import type { EnvId } from '../core/model';
import type { DeliveryAttempt, DeliveryStatus, WebhookDelivery } from '../core/webhooks/model';
import type {
  DeliveryListQuery,
  DeliveryOutcome,
  DueCursor,
  DuePage,
  DueQuery,
  OpenDeliveries,
  WebhookDeliveryStore,
} from '../core/webhooks/ports';
import { isDuplicateKey, writeErrors, type IndexSpec } from './database';
import type { StateLayer } from './state/layer';
import { pack, unpackAs } from './state/pack';
import type { StateStoreDeps } from './deps';

/** A delivery as stored (history: in `webhook_deliveries`). */
export interface DeliveryDoc extends Omit<WebhookDelivery, 'id'> {
  _id: string;
}
/** An open delivery in `webhook_outbox`: when it may be claimed is `dueAt`. */
export interface OutboxDoc extends DeliveryDoc {
  dueAt: Date | null;
}
/** What stays of a finished delivery in `webhook_outbox` while its notice could repeat. */
export interface DedupeRecord {
  _id: string;
  status: typeof DONE;
  /** The delivery's creation time. */
  dueAt: Date;
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

export const WEBHOOK_COLLECTIONS = {
  outbox: 'webhook_outbox',
  history: 'webhook_deliveries',
  dedupe: 'webhook_dedupe',
  claims: 'webhook_claims',
} as const;

/** The status of a finished delivery's dedupe record in the outbox. */
const DONE = 'done';

export const webhookIndexes: IndexSpec[] = [
  {
    collection: WEBHOOK_COLLECTIONS.outbox,
    indexes: [
      // What is due: pending ones by next attempt, leases by their end; dedupe records by age.
      { key: { status: 1, dueAt: 1, _id: 1 }, name: 'status_due' },
      // A user's open deliveries in creation order: whose turn it is.
      { key: { envId: 1, userId: 1, createdAt: 1, seq: 1, _id: 1 }, name: 'user_open' },
      // MongoDB: the outbox metrics' read (the oldest open ones), and the console's lists.
      { key: { status: 1, createdAt: 1 }, name: 'status_created' },
      { key: { envId: 1, createdAt: -1 }, name: 'env_time' },
    ],
    // Rampart's FerretDB build reads both through SQLite's index, and the writes guarded by a
    // lease too (equalities on status_due's fields: heldBy, claimableAt).
    servedOnEmbedded: ['status_due', 'user_open'],
  },
  {
    collection: WEBHOOK_COLLECTIONS.history,
    indexes: [
      { key: { envId: 1, createdAt: -1 }, name: 'env_time' },
      { key: { envId: 1, status: 1, createdAt: -1 }, name: 'env_status_time' },
      { key: { envId: 1, userId: 1, createdAt: -1 }, name: 'env_user_time' },
      // The upgrade's look for open deliveries an earlier version left here (migrateWebhookOutbox).
      { key: { status: 1, createdAt: 1 }, name: 'status_created' },
    ],
    // Rampart's FerretDB build: the console's pages of history (newest first, with a keyset
    // cursor on (createdAt, _id)), all of it, by status or by user, through an index.
    embeddedOnly: [
      { key: { envId: 1, createdAt: -1, _id: -1 }, name: 'env_time_id' },
      { key: { envId: 1, status: 1, createdAt: -1, _id: -1 }, name: 'env_status_time_id' },
      { key: { envId: 1, userId: 1, createdAt: -1, _id: -1 }, name: 'env_user_time_id' },
    ],
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
/** Due deliveries one query reads at most. */
const DUE_PAGE = 64;
/** How often a `due` read also looks for leases that ran out. */
const EXPIRED_READ_MS = 1_000;
/** Due deliveries one `due` call examines at most (those it skips included). */
const DUE_EXAMINED = 256;
/** Spent claims deleted in one command. */
const CLAIM_BATCH = 500;
/** Dedupe records deleted in one command. */
const SWEEP_BATCH = 1_000;

const OPEN: DeliveryStatus[] = ['pending', 'delivering'];
const isOpen = (status: string): boolean => status === 'pending' || status === 'delivering';

/** When an open delivery may be claimed: its next attempt, or (being sent) the end of its lease. */
const dueAtOf = (d: Pick<WebhookDelivery, 'status' | 'nextAttemptAt' | 'leaseUntil'>): Date | null =>
  d.status === 'pending' ? d.nextAttemptAt : d.status === 'delivering' ? d.leaseUntil : null;

/**
 * What an open delivery keeps as fields in the outbox: what filters, indexes and the lease's
 * writes name. The rest (body, attempts, URL, type, …) is one JSON string (`_p`, state/pack.ts):
 * FerretDB pays for every field of a document it reads, and the dispatcher reads these often
 * (measured on this machine: a page of 16 due deliveries 5.95 → 4.15 ms of FerretDB CPU).
 */
const OUTBOX_FIELDS = [
  '_id',
  'envId',
  'userId',
  'status',
  'dueAt',
  'createdAt',
  'seq',
  'leaseVersion',
  'leaseOwner',
  'leaseUntil',
  'nextAttemptAt',
] as const;

export const toDoc = ({ id, ...rest }: WebhookDelivery): DeliveryDoc => ({ _id: id, ...rest });
/** An open delivery as the outbox keeps it: packed, with when it may be claimed. */
export const toOutboxDoc = (d: WebhookDelivery): OutboxDoc =>
  pack({ ...toDoc(d), dueAt: dueAtOf(d) }, OUTBOX_FIELDS) as unknown as OutboxDoc;
/** A delivery from the outbox (packed, or plain as an earlier version wrote it) or the history. */
export const fromDoc = (stored: DeliveryDoc): WebhookDelivery => {
  const { _id, ...rest } = unpackAs(stored);
  delete (rest as Partial<OutboxDoc>).dueAt;
  return {
    id: _id,
    ...rest,
    // Deliveries recorded before `seq` existed order by creation time alone.
    seq: rest.seq ?? 0,
    attempts: (rest.attempts ?? []).map((a: DeliveryAttempt) => ({ ...a })),
  };
};
/** The dedupe record a finished delivery leaves in the outbox. */
export const dedupeRecordOf = (id: string, createdAt: Date): DedupeRecord => ({
  _id: id,
  status: DONE,
  dueAt: createdAt,
});

/**
 * A user's open deliveries, through `user_open`. The bound on `createdAt` matches every delivery
 * (MongoDB's dates begin in 1970 for Rampart's); it tells patch 0009 the sorted field holds dates,
 * which spares each look-up the four checks for mixed types it makes on an unfiltered sort field.
 */
const EPOCH = new Date(0);
const openOf = (env: EnvId, userId: string): Filter<OutboxDoc> => ({
  envId: env,
  userId,
  createdAt: { $gte: EPOCH },
});

/**
 * The lease a claimed delivery is under: `delivering` until its lease's end, which names it alone
 * (another claim of the delivery needs this lease to have ended first, so its end is later). The
 * owner is recorded, not matched. Every guard is equalities on `status_due`'s fields (status,
 * dueAt, _id): FerretDB uses its `_id` index only for a filter on `_id` alone, and Rampart's build
 * serves these through that index (patch 0009); anything else would decode the whole outbox.
 */
const heldBy = (delivery: WebhookDelivery): Filter<OutboxDoc> => ({
  status: 'delivering',
  dueAt: delivery.leaseUntil,
  _id: delivery.id,
});

/**
 * The delivery as it was read (and found due: its next attempt has come, or the lease being taken
 * over has ended), if it is still so: the same status and the same `dueAt`. A pending delivery
 * given back and parked again until the same time is as claimable as it was; a lease is named by
 * its end (heldBy).
 */
const claimableAt = (delivery: WebhookDelivery): Filter<OutboxDoc> => ({
  status: delivery.status,
  dueAt: dueAtOf(delivery),
  _id: delivery.id,
});

/** Newest first, as the lists read: creation time, then id. */
const newestFirst = (a: WebhookDelivery, b: WebhookDelivery): number =>
  b.createdAt.getTime() - a.createdAt.getTime() || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0);

/** Both sides of a list, one delivery once (the outbox's copy when a crash left it in both), newest first. */
function merged(open: WebhookDelivery[], done: WebhookDelivery[], limit: number): WebhookDelivery[] {
  const ids = new Set(open.map((d) => d.id));
  return [...open, ...done.filter((d) => !ids.has(d.id))].sort(newestFirst).slice(0, limit);
}

export interface WebhookStoreDeps extends StateStoreDeps {
  /**
   * The server runs findAndModify atomically (MongoDB, and Rampart's FerretDB build, whose patch
   * 0002 serialises each update and findAndModify of a collection): the lease version's guard
   * alone then lets one claimant win, and no claim document is written. Default false: a claim
   * document first (the protocol above), for any other FerretDB.
   */
  atomicUpdates?: boolean;
}

/** A finished delivery waiting for the history's next insert (group commit). */
interface HistoryWrite {
  doc: DeliveryDoc;
  done: (inserted: boolean) => void;
  failed: (err: unknown) => void;
}

export class MongoWebhookStore implements WebhookDeliveryStore {
  /** Claims whose move is made: deleted in one command with the next `due` (or sweep). */
  private spent: string[] = [];
  /** Finished deliveries for the history's next insert, and whether one is under way. */
  private historyQueue: HistoryWrite[] = [];
  private historyWriting = false;
  /** When expired leases were last looked for (epoch ms). */
  private expiredReadAt = 0;
  private readonly atomicUpdates: boolean;

  private readonly db: Db;
  private readonly state: StateLayer;
  constructor(deps: WebhookStoreDeps) {
    this.db = deps.db;
    this.state = deps.state;
    this.atomicUpdates = deps.atomicUpdates ?? false;
  }
  private get outbox(): Collection<OutboxDoc> {
    return this.db.collection<OutboxDoc>(WEBHOOK_COLLECTIONS.outbox);
  }
  private get records(): Collection<DedupeRecord> {
    return this.db.collection<DedupeRecord>(WEBHOOK_COLLECTIONS.outbox);
  }
  private get history(): Collection<DeliveryDoc> {
    return this.db.collection<DeliveryDoc>(WEBHOOK_COLLECTIONS.history);
  }
  private get dedupe() {
    return this.db.collection<DedupeDoc>(WEBHOOK_COLLECTIONS.dedupe);
  }
  private get claims() {
    return this.db.collection<ClaimDoc>(WEBHOOK_COLLECTIONS.claims);
  }

  enqueue(delivery: WebhookDelivery): Promise<boolean> {
    return new Promise((resolve) =>
      this.state.insert(WEBHOOK_COLLECTIONS.outbox, toOutboxDoc(delivery), resolve),
    );
  }

  async insert(delivery: WebhookDelivery): Promise<void> {
    await this.outbox.insertOne(toOutboxDoc(delivery));
  }

  /** Two look-ups by `_id`: the outbox (open), then the history. */
  async get(env: EnvId, id: string): Promise<WebhookDelivery | null> {
    const open = await this.outbox.findOne({ _id: id });
    if (open && isOpen(open.status)) return open.envId === env ? fromDoc(open) : null;
    const done = await this.history.findOne({ _id: id });
    return done && done.envId === env ? fromDoc(done) : null;
  }

  /**
   * A page of both collections, newest first: the open deliveries (the outbox, a scan of it on
   * FerretDB, as large as the backlog) and the history (through its indexes), merged. A status
   * reads only the collection that holds it.
   */
  async list(env: EnvId, q: DeliveryListQuery): Promise<WebhookDelivery[]> {
    const filter: Filter<DeliveryDoc> = { envId: env };
    if (q.status) filter.status = q.status;
    if (q.userId !== undefined) filter.userId = q.userId;
    if (q.before) {
      filter.$or = [
        { createdAt: { $lt: q.before.createdAt } },
        { createdAt: q.before.createdAt, _id: { $lt: q.before.id } },
      ];
    }
    const [open, done] = await Promise.all([
      !q.status || isOpen(q.status)
        ? this.outbox
            .find(filter as Filter<OutboxDoc>)
            .sort({ createdAt: -1, _id: -1 })
            .limit(q.limit)
            .toArray()
        : [],
      !q.status || !isOpen(q.status)
        ? this.history.find(filter).sort({ createdAt: -1, _id: -1 }).limit(q.limit).toArray()
        : [],
    ]);
    return merged(open.map(fromDoc), done.map(fromDoc), q.limit);
  }

  async listForUser(env: EnvId, userId: string, limit: number): Promise<WebhookDelivery[]> {
    const [open, done] = await Promise.all([
      this.outbox
        .find({ envId: env, userId })
        .sort({ createdAt: -1, seq: -1, _id: -1 })
        .limit(limit)
        .toArray(),
      this.history.find({ envId: env, userId }).sort({ createdAt: -1, _id: -1 }).limit(limit).toArray(),
    ]);
    return merged(open.map(fromDoc), done.map(fromDoc), limit);
  }

  /** One index range: the outbox holds only open deliveries of users (dedupe records name none). */
  async openOfUser(env: EnvId, userId: string, limit: number): Promise<WebhookDelivery[]> {
    const docs = await this.outbox
      .find(openOf(env, userId))
      .sort({ createdAt: 1, seq: 1, _id: 1 })
      .limit(limit)
      .toArray();
    return docs.filter((d) => isOpen(d.status)).map(fromDoc);
  }

  async due(now: Date, q: DueQuery): Promise<DuePage> {
    await this.deleteSpentClaims();
    if (q.user) return { deliveries: await this.dueOfUser(now, q.user, q.limit), next: null };
    const skipIds = new Set(q.skipIds ?? []);
    const skipEnvs = new Set<string>(q.skipEnvs ?? []);
    const skipUsers = new Set((q.skipUsers ?? []).map((u) => JSON.stringify([u.env, u.userId])));
    const skipped = (d: OutboxDoc) =>
      skipIds.has(d._id) ||
      skipEnvs.has(d.envId) ||
      (d.userId !== null && skipUsers.has(JSON.stringify([d.envId, d.userId])));
    const found: WebhookDelivery[] = [];
    // Leases that ran out (an instance died while sending): rare, looked for at most once a second.
    if (now.getTime() - this.expiredReadAt >= EXPIRED_READ_MS || now.getTime() < this.expiredReadAt) {
      this.expiredReadAt = now.getTime();
      const expired = await this.outbox
        .find({ status: 'delivering', dueAt: { $lt: now } })
        .sort({ dueAt: 1, _id: 1 })
        .limit(DUE_PAGE)
        .toArray();
      for (const d of expired) if (!skipped(d) && found.length < q.limit) found.push(fromDoc(d));
      if (found.length >= q.limit) return { deliveries: found, next: q.after ?? null };
    }
    // Then the pending ones in the order they fell due, a page at a time from the cursor: the
    // first page barely larger than what is asked for (FerretDB decodes every document it
    // returns), each next one twice the last.
    let after: DueCursor | null = q.after ?? null;
    let examined = 0;
    let size = Math.min(DUE_PAGE, q.limit - found.length + 2);
    for (;;) {
      const filter: Filter<OutboxDoc> = { status: 'pending', dueAt: { $lte: now } };
      if (after) filter.$or = [{ dueAt: { $gt: after.at } }, { dueAt: after.at, _id: { $gt: after.id } }];
      const page = await this.outbox.find(filter).sort({ dueAt: 1, _id: 1 }).limit(size).toArray();
      for (const d of page) {
        examined++;
        after = { at: d.dueAt as Date, id: d._id };
        if (skipped(d)) continue;
        found.push(fromDoc(d));
        if (found.length >= q.limit) return { deliveries: found, next: after };
      }
      if (page.length < size) return { deliveries: found, next: null };
      if (examined >= DUE_EXAMINED) return { deliveries: found, next: after };
      size = Math.min(DUE_PAGE, size * 2);
    }
  }

  /** Among the user's first `limit` open deliveries (creation order), those that may be claimed now. */
  private async dueOfUser(
    now: Date,
    user: { env: EnvId; userId: string },
    limit: number,
  ): Promise<WebhookDelivery[]> {
    const docs = await this.outbox
      .find(openOf(user.env, user.userId))
      .sort({ createdAt: 1, seq: 1, _id: 1 })
      .limit(limit)
      .toArray();
    const t = now.getTime();
    return docs
      .filter(
        (d) =>
          d.dueAt !== null &&
          ((d.status === 'pending' && d.dueAt.getTime() <= t) ||
            (d.status === 'delivering' && d.dueAt.getTime() < t)),
      )
      .map(fromDoc);
  }

  async claim(
    delivery: WebhookDelivery,
    owner: string,
    now: Date,
    leaseUntil: Date,
  ): Promise<WebhookDelivery | null> {
    const version = delivery.leaseVersion;
    if (this.atomicUpdates) {
      const claimed = await this.outbox.findOneAndUpdate(
        claimableAt(delivery),
        {
          $set: { status: 'delivering', leaseOwner: owner, leaseUntil, dueAt: leaseUntil },
          $inc: { leaseVersion: 1 },
        },
        { returnDocument: 'after' },
      );
      return claimed ? fromDoc(claimed) : null;
    }
    for (let n = 0; n < MAX_TAKEOVERS; n++) {
      const claimId = `${delivery.id}:${version}:${n}`;
      try {
        await this.claims.insertOne({
          _id: claimId,
          deliveryId: delivery.id,
          envId: delivery.envId,
          owner,
          until: leaseUntil,
          createdAt: now,
        });
      } catch (err) {
        if (!isDuplicateKey(err)) throw err;
        const held = await this.claims.findOne({ _id: claimId });
        if (!held || held.until.getTime() > now.getTime()) return null;
        // That claimant's lease ran out before it took the delivery: try the next slot.
        continue;
      }
      const claimed = await this.outbox.findOneAndUpdate(
        claimableAt(delivery),
        {
          $set: { status: 'delivering', leaseOwner: owner, leaseUntil, dueAt: leaseUntil },
          $inc: { leaseVersion: 1 },
        },
        { returnDocument: 'after' },
      );
      if (claimed) {
        // The claim has done its work: the delivery is past this version.
        this.spent.push(claimId);
        return fromDoc(claimed);
      }
      // Not claimable as read (changed meanwhile, or gone): free the slot for whoever reads it right.
      await this.claims.deleteOne({ _id: claimId });
      return null;
    }
    return null;
  }

  /**
   * The outcome of an attempt. A retry stays in the outbox (due at its next attempt). A delivery
   * that is over is written to the history first, then replaced in the outbox by its dedupe
   * record (a test webhook, never repeated, by nothing), both by the lease holder only: when the
   * lease was lost meanwhile, the history copy is taken back. A crash between the two leaves the
   * delivery open under a lease that runs out: it is sent again (at least once).
   */
  async complete(
    delivery: WebhookDelivery,
    owner: string,
    attempt: DeliveryAttempt,
    outcome: DeliveryOutcome,
  ): Promise<boolean> {
    const held = heldBy(delivery);
    const after = {
      status: outcome.status,
      nextAttemptAt: outcome.nextAttemptAt,
      deliveredAt: outcome.deliveredAt,
      lastError: outcome.lastError,
      url: attempt.url,
      leaseOwner: null,
      leaseUntil: null,
    };
    if (outcome.status === 'pending') {
      // Written whole (the lease holder's copy is the delivery), packed as it was.
      const next: WebhookDelivery = {
        ...delivery,
        ...after,
        status: 'pending',
        attempts: [...delivery.attempts, attempt],
      };
      const r = await this.outbox.replaceOne(held, toOutboxDoc(next));
      return r.matchedCount === 1;
    }
    const finished: DeliveryDoc = { ...toDoc(delivery), ...after, attempts: [...delivery.attempts, attempt] };
    if (!(await this.writeHistory(finished))) return false;
    const r = delivery.test
      ? await this.outbox.deleteOne(held)
      : await this.records.replaceOne(
          held as unknown as Filter<DedupeRecord>,
          dedupeRecordOf(delivery.id, delivery.createdAt),
        );
    const done = ('deletedCount' in r ? r.deletedCount : r.matchedCount) === 1;
    if (!done) {
      // The lease was lost: take back this copy, unless a later lease's is there already.
      const there = await this.history.findOne({ _id: delivery.id }, { projection: { leaseVersion: 1 } });
      if (there?.leaseVersion === delivery.leaseVersion) await this.history.deleteOne({ _id: delivery.id });
    }
    return done;
  }

  /**
   * A finished delivery into the history, by `_id` alone (FerretDB reads anything else through
   * the whole collection): a copy written under an earlier lease (a lost one) is replaced, one
   * written under a later lease is kept (false).
   */
  private async writeHistory(finished: DeliveryDoc): Promise<boolean> {
    if (await this.insertHistory(finished)) return true;
    const there = await this.history.findOne({ _id: finished._id }, { projection: { leaseVersion: 1 } });
    if (there && there.leaseVersion > finished.leaseVersion) return false;
    await this.history.replaceOne({ _id: finished._id }, finished, { upsert: true });
    return true;
  }

  /**
   * Insert into the history; false when the id is there already. Group commit: the first insert
   * goes at once, and those asked for while it is under way go together in the next one, so that
   * attempts ending together cost one command (a failure rejects every insert of its batch).
   */
  private insertHistory(doc: DeliveryDoc): Promise<boolean> {
    return new Promise((done, failed) => {
      this.historyQueue.push({ doc, done, failed });
      if (!this.historyWriting) void this.writeHistoryBatches();
    });
  }

  private async writeHistoryBatches(): Promise<void> {
    this.historyWriting = true;
    try {
      while (this.historyQueue.length > 0) {
        const batch = this.historyQueue.splice(0, SWEEP_BATCH);
        const duplicates = new Set<number>();
        try {
          await this.history.insertMany(
            batch.map((w) => w.doc),
            { ordered: false },
          );
        } catch (err) {
          const errors = writeErrors(err);
          const other = errors?.find((w) => !isDuplicateKey(w.error));
          if (errors === null || errors.length === 0 || other) {
            for (const w of batch) w.failed(other?.error ?? err);
            continue;
          }
          for (const w of errors) duplicates.add(w.index);
        }
        batch.forEach((w, i) => w.done(!duplicates.has(i)));
      }
    } finally {
      this.historyWriting = false;
    }
  }

  async release(delivery: WebhookDelivery, owner: string, nextAttemptAt: Date): Promise<boolean> {
    const r = await this.outbox.updateOne(heldBy(delivery), {
      $set: { status: 'pending', nextAttemptAt, dueAt: nextAttemptAt, leaseOwner: null, leaseUntil: null },
    });
    return r.matchedCount === 1;
  }

  /**
   * The outbox's open deliveries: on MongoDB an index range (status_created); on FerretDB a scan
   * of the outbox, which holds the backlog (and the dedupe records of the last hour), never the
   * history. The count is asked for only when there are more open deliveries than `limit`.
   */
  async openDeliveries(limit: number): Promise<OpenDeliveries> {
    const open: Filter<OutboxDoc> = { status: { $in: OPEN } };
    const docs = await this.outbox
      .find(open, { projection: { _id: 1, createdAt: 1 } })
      .sort({ createdAt: 1 })
      .limit(limit)
      .toArray();
    const total = docs.length < limit ? docs.length : await this.outbox.countDocuments(open);
    return { total, oldest: docs.map((d) => ({ id: d._id, createdAt: d.createdAt })) };
  }

  /**
   * Dedupe records past `dedupeBefore`, found through the due index and deleted by `_id`; then
   * the claims left by a crash between a claim and its move, and the dedupe slots of earlier
   * versions (both small: each is a scan on FerretDB).
   */
  async sweep(now: Date, dedupeBefore: Date): Promise<{ dedupe: number }> {
    let dedupe = 0;
    for (;;) {
      const ids = (
        await this.records
          .find({ status: DONE, dueAt: { $lt: dedupeBefore } }, { projection: { _id: 1 } })
          .sort({ dueAt: 1, _id: 1 })
          .limit(SWEEP_BATCH)
          .toArray()
      ).map((d) => d._id);
      // By `_id` alone (the index FerretDB uses for it): an id stays a dedupe record until deleted.
      if (ids.length > 0) dedupe += (await this.records.deleteMany({ _id: { $in: ids } })).deletedCount;
      if (ids.length < SWEEP_BATCH) break;
    }
    dedupe += (await this.dedupe.deleteMany({ expiresAt: { $lte: now } })).deletedCount;
    await this.deleteSpentClaims();
    await this.claims.deleteMany({ until: { $lt: new Date(now.getTime() - CLAIM_GRACE_MS) } });
    return { dedupe };
  }

  /** Claims whose move is made, by `_id`; a failure leaves them to the sweep (by their lease's end). */
  private async deleteSpentClaims(): Promise<void> {
    while (this.spent.length > 0) {
      const ids = this.spent.splice(0, CLAIM_BATCH);
      try {
        await this.claims.deleteMany({ _id: { $in: ids } });
      } catch {
        return;
      }
    }
  }
}
