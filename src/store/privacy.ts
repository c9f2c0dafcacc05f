/**
 * Privacy storage: access jobs (`privacy_jobs`), their exports (`privacy_exports`, JSON text in
 * chunks well under the 16 MB document limit), the per-user reads an export needs, and the purge,
 * which knows every collection that can hold a user's records and deletes from each by name.
 * Expired exports are deleted by the service's sweeper, not by TTL indexes (FerretDB lacks them).
 */
import { COUNTERS, pullCounterMember } from './counters';
import type { StateLayer } from './state/layer';
import { DEVICE_TOKENS, DEVICES, USERS } from './user-state';
import { COUNTER_SETS, emailAccount, emailKey } from '../core/scoring/population';
import { sha256Hex } from '../core/crypto';
import type { Db } from 'mongodb';
import type { ClientEvent } from '../core/client/events';
import { CLIENT_EVENTS, type ClientEventDoc } from './client-events';
import type { EnvId, RejectedPayload, StoredEvent } from '../core/model';
import type { PrivacyJob, PrivacyJobStatus } from '../core/privacy/model';
import type { PrivacyJobPatch, PrivacyStore, PurgeSubject } from '../core/privacy/ports';
import type { IndexSpec } from './database';
import { fromEventDoc, type EventDoc } from './events';
import { escapeRegex, fromJson, idOf } from './ids';
import { WEBHOOK_COLLECTIONS } from './webhooks';
import { ownNames } from '../core/privacy/names';
import { ENVIRONMENTS } from './environments';
import type { StateStoreDeps } from './deps';

export interface PrivacyStoreDeps extends StateStoreDeps {
  /** Export chunk size in characters (default CHUNK_CHARS). */
  chunkChars?: number;
  /**
   * The database is FerretDB: after a purge, `compact` a small collection. On Rampart's FerretDB
   * build on SQLite (patch 0008) that checkpoints the write-ahead log into the database file and
   * truncates it, so the purged rows, zeroed in place by `secure_delete`, leave no older copy in
   * the log's frames. Elsewhere in FerretDB it is a cheap no-op.
   */
  eraseAfterPurge?: boolean;
  /** Logs a purge whose erasure could not finish. */
  log?: { error(obj: object, msg: string): void };
}

/** How often, and after what pauses, the post-purge checkpoint is tried while readers hold old frames. */
const ERASE_RETRY_MS = [250, 1_000, 4_000];

interface JobDoc extends Omit<PrivacyJob, 'id'> {
  _id: string;
}
interface ExportChunkDoc {
  _id: string;
  envId: EnvId;
  jobId: string;
  userId: string;
  seq: number;
  count: number;
  data: string;
  expiresAt: Date;
}
interface DebugDoc extends Omit<RejectedPayload, 'id' | 'fields'> {
  _id: string;
  fields: string;
}

export const PRIVACY_COLLECTIONS = { jobs: 'privacy_jobs', exports: 'privacy_exports' } as const;

export const privacyIndexes: IndexSpec[] = [
  {
    collection: PRIVACY_COLLECTIONS.jobs,
    indexes: [
      { key: { envId: 1, createdAt: -1 }, name: 'env_time' },
      { key: { envId: 1, userId: 1 }, name: 'env_user' },
      { key: { status: 1, expiresAt: 1 }, name: 'status_expires' },
    ],
  },
  {
    collection: PRIVACY_COLLECTIONS.exports,
    indexes: [
      { key: { envId: 1, jobId: 1, seq: 1 }, name: 'env_job_seq' },
      { key: { envId: 1, userId: 1 }, name: 'env_user' },
      { key: { expiresAt: 1 }, name: 'expires' },
    ],
  },
  // `identifier_type: "$email"` resolves users by profile e-mail.
  { collection: 'users', indexes: [{ key: { envId: 1, email: 1 }, name: 'env_email' }] },
];

/** Characters per chunk: at most 3 UTF-8 bytes each, so a chunk stays under 8 MB. */
const CHUNK_CHARS = 2_500_000;

/** Split text into chunks without cutting a surrogate pair (BSON would mangle a lone half). */
export function chunkText(text: string, size = CHUNK_CHARS): string[] {
  const out: string[] = [];
  let i = 0;
  while (i < text.length) {
    let end = Math.min(text.length, i + size);
    const last = text.charCodeAt(end - 1);
    if (end < text.length && last >= 0xd800 && last <= 0xdbff) end -= 1;
    out.push(text.slice(i, end));
    i = end;
  }
  return out.length ? out : [''];
}

const toJob = ({ _id, ...rest }: JobDoc): PrivacyJob => ({ id: _id, ...rest });

/**
 * Every privacy port on MongoDB/FerretDB. The purge names its collections on purpose: a
 * repository that starts keeping per-user records must be added to `purgeUser` (the privacy
 * integration test scans every collection for the user id after a purge).
 */
export class MongoPrivacyStore implements PrivacyStore {
  private readonly db: Db;
  private readonly state: StateLayer;
  private readonly o: Omit<PrivacyStoreDeps, 'db' | 'state'>;
  constructor({ db, state, ...o }: PrivacyStoreDeps) {
    this.db = db;
    this.state = state;
    this.o = o;
  }
  private get chunkChars(): number {
    return this.o.chunkChars ?? CHUNK_CHARS;
  }
  private get jobs() {
    return this.db.collection<JobDoc>(PRIVACY_COLLECTIONS.jobs);
  }
  private get exports() {
    return this.db.collection<ExportChunkDoc>(PRIVACY_COLLECTIONS.exports);
  }

  async insertJob(job: PrivacyJob): Promise<void> {
    const { id, ...rest } = job;
    await this.jobs.insertOne({ _id: id, ...rest });
  }
  async getJob(env: EnvId, id: string): Promise<PrivacyJob | null> {
    const d = await this.jobs.findOne({ _id: id });
    return d && d.envId === env ? toJob(d) : null;
  }
  async jobBySignedId(id: string): Promise<PrivacyJob | null> {
    const d = await this.jobs.findOne({ _id: id });
    return d ? toJob(d) : null;
  }
  async updateJob(env: EnvId, id: string, patch: PrivacyJobPatch): Promise<void> {
    await this.jobs.updateOne({ _id: id, envId: env }, { $set: patch });
  }
  async listJobs(env: EnvId, limit: number, userId?: string): Promise<PrivacyJob[]> {
    return (
      await this.jobs
        .find({ envId: env, ...(userId !== undefined ? { userId } : {}) })
        .sort({ createdAt: -1 })
        .limit(limit)
        .toArray()
    ).map(toJob);
  }
  async expiredJobs(now: Date, limit: number): Promise<PrivacyJob[]> {
    const live: PrivacyJobStatus[] = ['pending', 'sent'];
    return (
      await this.jobs
        .find({ status: { $in: live }, expiresAt: { $lte: now } })
        .limit(limit)
        .toArray()
    ).map(toJob);
  }
  async stalePendingJobs(before: Date, limit: number): Promise<PrivacyJob[]> {
    return (
      await this.jobs
        .find({ status: 'pending' as PrivacyJobStatus, createdAt: { $lt: before } })
        .limit(limit)
        .toArray()
    ).map(toJob);
  }

  async putExport(
    env: EnvId,
    job: Pick<PrivacyJob, 'id' | 'userId' | 'expiresAt'>,
    json: string,
  ): Promise<number> {
    const chunks = chunkText(json, this.chunkChars);
    try {
      // One chunk per insert: a batch of several 8 MB chunks would exceed the message size limit.
      for (let seq = 0; seq < chunks.length; seq++) {
        await this.exports.insertOne({
          _id: idOf(env, job.id, String(seq)),
          envId: env,
          jobId: job.id,
          userId: job.userId,
          seq,
          count: chunks.length,
          data: chunks[seq] ?? '',
          expiresAt: job.expiresAt,
        });
      }
    } catch (err) {
      await this.deleteExport(env, job.id).catch(() => undefined);
      throw err;
    }
    return Buffer.byteLength(json, 'utf8');
  }
  async readExport(env: EnvId, jobId: string): Promise<string | null> {
    const first = await this.exports.findOne({ _id: idOf(env, jobId, '0') });
    if (!first || first.envId !== env) return null;
    const parts = [first.data];
    for (let seq = 1; seq < first.count; seq++) {
      const chunk = await this.exports.findOne({ _id: idOf(env, jobId, String(seq)) });
      if (!chunk) return null;
      parts.push(chunk.data);
    }
    return parts.join('');
  }
  async deleteExport(env: EnvId, jobId: string): Promise<number> {
    return (await this.exports.deleteMany({ envId: env, jobId })).deletedCount;
  }
  async deleteExpiredExports(now: Date): Promise<number> {
    return (await this.exports.deleteMany({ expiresAt: { $lte: now } })).deletedCount;
  }

  async eventsForUser(env: EnvId, userId: string): Promise<StoredEvent[]> {
    const docs = await this.db
      .collection<EventDoc>('events')
      .find({ envId: env, userId })
      .sort({ occurredAt: 1 })
      .toArray();
    return docs.map(fromEventDoc);
  }
  async rejectedForUser(env: EnvId, userId: string): Promise<RejectedPayload[]> {
    const docs = await this.db
      .collection<DebugDoc>('debugger')
      .find({ envId: env, userId })
      .sort({ receivedAt: 1 })
      .toArray();
    return docs.map(({ _id, fields, ...rest }) => ({ id: _id, ...rest, fields: fromJson(fields, []) }));
  }
  async appEventsForUser(env: EnvId, userId: string): Promise<ClientEvent[]> {
    const docs = await this.db
      .collection<ClientEventDoc>(CLIENT_EVENTS)
      .find({ envId: env, userId })
      .sort({ at: 1 })
      .toArray();
    return docs.map(({ _id, expiresAt: _expires, ...rest }) => ({ id: _id, ...rest }));
  }
  async userIdsByEmail(env: EnvId, email: string, limit: number): Promise<string[]> {
    const docs = await this.db
      .collection<{ _id: string; envId: EnvId; userId: string; email: string | null }>('users')
      .find(
        { envId: env, email: { $regex: `^${escapeRegex(email)}$`, $options: 'i' } },
        { projection: { userId: 1 } },
      )
      .limit(limit)
      .toArray();
    return docs.map((d) => d.userId);
  }

  async purgeUser(env: EnvId, s: PurgeSubject): Promise<Record<string, number>> {
    const db = this.db;
    const byUser = { envId: env, userId: s.userId };
    const deleted: Record<string, number> = {};

    const userDocId = idOf(env, s.userId);
    deleted.users = (
      await db.collection<{ _id: string }>(USERS).deleteMany({ _id: userDocId, envId: env })
    ).deletedCount;
    const tokenIds = (
      await db
        .collection<{ _id: string }>(DEVICE_TOKENS)
        .find(byUser, { projection: { _id: 1 } })
        .toArray()
    ).map((t) => t._id);
    deleted[DEVICE_TOKENS] = (await db.collection(DEVICE_TOKENS).deleteMany(byUser)).deletedCount;
    deleted.devices = (await db.collection(DEVICES).deleteMany(byUser)).deletedCount;
    // Earlier versions kept a (user, fingerprint) → device index here.
    deleted.device_keys = (await db.collection('device_keys').deleteMany(byUser)).deletedCount;
    // What names the user: the profile's e-mail, user name and phone, and those the user's own
    // events gave as the user's (an e-mail or a phone changed since).
    const names = new Set(s.names);
    const own = db
      .collection<Pick<EventDoc, 'email' | 'userTraits'>>('events')
      .find(byUser, { projection: { _id: 0, email: 1, userTraits: 1 } });
    for await (const d of own)
      for (const n of ownNames({ email: d.email ?? null, userTraits: fromJson(d.userTraits, {}) }))
        names.add(n);
    const named = [...names];
    let events = (await db.collection('events').deleteMany(byUser)).deletedCount;
    if (named.length > 0) {
      // Records without a user id that name the user: anonymous events (`names`, and the e-mail
      // of those written before events kept their names) and rejected payloads.
      events += (
        await db.collection('events').deleteMany({ envId: env, userId: null, email: { $in: named } })
      ).deletedCount;
      events += (
        await db.collection('events').deleteMany({ envId: env, userId: null, names: { $in: named } })
      ).deletedCount;
    }
    deleted.events = events;
    let rejected = (await db.collection('debugger').deleteMany(byUser)).deletedCount;
    if (named.length > 0)
      rejected += (
        await db.collection('debugger').deleteMany({ envId: env, userId: null, names: { $in: named } })
      ).deletedCount;
    deleted.debugger = rejected;
    deleted[CLIENT_EVENTS] = (await db.collection(CLIENT_EVENTS).deleteMany(byUser)).deletedCount;

    let counters = 0;
    const members = [...new Set([...s.identifiers, ...named, ...(s.email ? [emailAccount(s.email)] : [])])];
    for (const member of members)
      counters += await pullCounterMember(db, this.state, env, member, COUNTER_SETS);
    // Which account the e-mail belongs to: deleted once nothing queued can write it back.
    const emailDocId = s.email ? idOf(env, emailKey(sha256Hex(s.email.trim().toLowerCase()))) : null;
    if (emailDocId) {
      await this.state.flush();
      counters += (await db.collection<{ _id: string }>(COUNTERS).deleteMany({ _id: emailDocId }))
        .deletedCount;
    }
    deleted.counters = counters;

    // The user's open deliveries (never sent now), their claims, and their history. What stays of
    // a finished delivery in the outbox (its id, for de-duplication) names no user.
    const outbox = db.collection<{ _id: string }>(WEBHOOK_COLLECTIONS.outbox);
    const ids = (await outbox.find(byUser, { projection: { _id: 1 } }).toArray()).map((d) => d._id);
    deleted[WEBHOOK_COLLECTIONS.claims] = ids.length
      ? (await db.collection(WEBHOOK_COLLECTIONS.claims).deleteMany({ deliveryId: { $in: ids } }))
          .deletedCount
      : 0;
    deleted[WEBHOOK_COLLECTIONS.outbox] = (await outbox.deleteMany(byUser)).deletedCount;
    deleted[WEBHOOK_COLLECTIONS.history] = (
      await db.collection(WEBHOOK_COLLECTIONS.history).deleteMany(byUser)
    ).deletedCount;
    deleted[WEBHOOK_COLLECTIONS.dedupe] = (
      await db.collection(WEBHOOK_COLLECTIONS.dedupe).deleteMany(byUser)
    ).deletedCount;

    deleted[PRIVACY_COLLECTIONS.exports] = (
      await db.collection(PRIVACY_COLLECTIONS.exports).deleteMany(byUser)
    ).deletedCount;
    deleted[PRIVACY_COLLECTIONS.jobs] = (
      await db.collection(PRIVACY_COLLECTIONS.jobs).deleteMany(byUser)
    ).deletedCount;

    // Forget the cached copies: the user, its tokens, its dashboard device copies, and (unless
    // they were changed through the state layer) this environment's counters, whose member sets
    // held the user's identifiers.
    const tokens = new Set(tokenIds);
    const envPrefix = `${env}:`;
    const counterCopies = !this.state.wholeDocuments;
    this.state.invalidate(
      (collection, id) =>
        (collection === USERS && id === userDocId) ||
        (collection === DEVICE_TOKENS && tokens.has(id)) ||
        (collection === COUNTERS && id === emailDocId) ||
        ((collection === DEVICES || (collection === COUNTERS && counterCopies)) && id.startsWith(envPrefix)),
    );
    if (this.o.eraseAfterPurge) await this.erase();
    return deleted;
  }

  /** Checkpoints and truncates the write-ahead log (see `eraseAfterPurge`), retrying while readers hold it. */
  private async erase(): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        await this.db.command({ compact: ENVIRONMENTS });
        return;
      } catch (err) {
        const pause = ERASE_RETRY_MS[attempt];
        if (pause === undefined) {
          this.o.log?.error(
            { err },
            'privacy: the purged rows are deleted, but older copies stay in the write-ahead log until its next checkpoint',
          );
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, pause));
      }
    }
  }
}
