/**
 * Privacy use cases (POST/DELETE /v1/privacy/users/{id} and their gRPC/GraphQL twins).
 * Access: a job compiles every record of the user into an export, stores it, and e-mails a
 * signed link to the environment's privacy address; the link and the export end 48 hours after
 * the request, checked on every download and swept by `sweep`, which a worker runs periodically
 * (src/workers/sweeps.ts; no reliance on TTL indexes). Where the link points is the door's
 * (`links`): the core signs it.
 * Purge: permanently deletes the user and every associated record in every collection.
 */
import { safeEqual, hmacSha256, uuid } from '../crypto';
import { InvalidParameters, NotFound, Unavailable } from '../errors';
import type { EnvId, Environment } from '../model';
import type { Clock, UserStateStore, WriteQueue } from '../ports';
import type { WebhookDelivery } from '../webhooks/model';
import { buildExport } from './export';
import type { PrivacyJob } from './model';
import { privacyIdentifierSchema } from './schema';
import type { Page } from '../queries/model';
import { pageOfList, pageSize } from '../queries/pagination';
import type { Mailer, PrivacyStore } from './ports';
import { nameOf } from './names';

export const EXPORT_LINK_TTL_MS = 48 * 3_600_000;
/** Purpose string of the Sealer-derived key that signs download links. */
export const EXPORT_MAC_PURPOSE = 'privacy-export';

export interface PrivacyLog {
  warn(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

export interface PrivacyServiceDeps {
  /** Jobs, exports, the user's events and debugger entries, and the purge (MongoPrivacyStore). */
  store: PrivacyStore;
  /** Profiles and devices (one state per user). */
  users: UserStateStore;
  /** Changes still queued are written before an export is compiled or a user purged. */
  writes: WriteQueue;
  /** WebhookService (or anything listing a user's deliveries). */
  webhooks: { listForUser(env: EnvId, userId: string): Promise<WebhookDelivery[]> };
  /** Sends the e-mails (one that cannot, e.g. SMTP not configured, rejects: the job is recorded as failed). */
  mailer: Mailer;
  /** The Sealer: `macKey('privacy-export')` signs the links. */
  sealer: { macKey(purpose: string): Buffer };
  clock: Clock;
  /** Where a signed download link points (the REST door's download route). */
  links: ExportLinks;
  log: PrivacyLog;
  /** Link and export lifetime. Default 48 h; the interface fixes it, tests may not need to. */
  linkTtlMs?: number;
  /** A job still pending after this long was interrupted (its instance stopped). Default 1 h. */
  staleJobMs?: number;
}

/**
 * Whom a privacy request names: one user by id, or every user whose profile e-mail is the
 * address (case-insensitively). Build one with `privacySubject` or `subjectOfIdentifier`.
 */
export type PrivacySubject = { userId: string } | { email: string };

/** What a purge deleted for one user. */
export interface UserPurge {
  userId: string;
  /** Records deleted (or modified) per collection. */
  deleted: Record<string, number>;
}

/** Whether a purge found anything of its user (an id Rampart never saw names a user, but purges none). */
export const purgedAnything = (p: UserPurge): boolean => Object.values(p.deleted).some((n) => n > 0);

/** Lets a door abandon a request whose caller went away: no further user is started. */
export interface Cancellation {
  readonly aborted: boolean;
}

/**
 * The subject of a request that names its user by `userId` or `email` (gRPC's oneof, GraphQL's
 * arguments): exactly one of the two. Absent values are undefined or null.
 */
export function privacySubject(input: { userId?: string | null; email?: string | null }): PrivacySubject {
  const given = [input.userId, input.email].filter((v) => v !== undefined && v !== null);
  if (given.length !== 1)
    throw new InvalidParameters([
      { field: 'user_id', message: 'give the user_id or the email of the user, not both' },
    ]);
  if (input.email !== undefined && input.email !== null)
    return subjectOfIdentifier(input.email, '$email', 'email');
  return subjectOfIdentifier(input.userId, '$id', 'user_id');
}

/**
 * The subject of a newer SDK's body `{identifier, identifier_type}`: type `$id` (the default) or
 * `$email`. `field` names the identifier in errors.
 */
export function subjectOfIdentifier(
  identifier: unknown,
  identifierType: unknown,
  field = 'identifier',
): PrivacySubject {
  const r = privacyIdentifierSchema.safeParse({ identifier, identifier_type: identifierType });
  if (!r.success)
    throw new InvalidParameters(
      r.error.issues.map((i) => ({
        field: i.path[0] === 'identifier' ? field : i.path.join('.'),
        message: i.message,
      })),
    );
  return r.data.identifier_type === '$email' ? { email: r.data.identifier } : { userId: r.data.identifier };
}

/** The download link of an export: the door that serves it says where. */
export interface ExportLinks {
  /** An absolute URL that downloads the export of `jobId` with these query values. */
  downloadUrl(jobId: string, query: { expires: number; signature: string }): string;
}

interface RunningJob {
  envId: EnvId;
  userId: string;
  promise: Promise<void>;
}

const NOT_FOUND = 'export not found, or the link has expired';
/** The store lists jobs newest first by limit only: pages are cut from this many. */
const REACHABLE_JOBS = 500;

function checkUserId(userId: string): void {
  if (typeof userId !== 'string' || userId.length === 0 || userId.length > 1024) {
    throw new InvalidParameters([
      { field: 'user_id', message: 'must be a non-empty string of at most 1024 characters' },
    ]);
  }
}

/** The environment's privacy address, which an access request needs. */
function requirePrivacyEmail(env: Environment): string {
  if (!env.privacyEmail) {
    throw new InvalidParameters([
      {
        field: 'privacy_email',
        message:
          'this environment has no privacy e-mail address; set one with `npx rampart env set-privacy-email <env> <address>`',
      },
    ]);
  }
  return env.privacyEmail;
}

const message = (err: unknown): string => (err instanceof Error ? err.message : String(err));

export class PrivacyService {
  private readonly macKey: Buffer;
  private readonly ttlMs: number;
  private readonly running = new Map<string, RunningJob>();
  private stopped = false;

  constructor(private readonly d: PrivacyServiceDeps) {
    this.macKey = d.sealer.macKey(EXPORT_MAC_PURPOSE);
    this.ttlMs = d.linkTtlMs ?? EXPORT_LINK_TTL_MS;
  }

  /**
   * Accept a data access request and return the pending job at once (the 202). The export is
   * compiled and mailed in the background; poll `job()`.
   * Throws InvalidParameters (`privacy_email`) when the environment has no privacy address,
   * NotFound when the user is unknown.
   */
  async requestAccess(env: Environment, userId: string): Promise<PrivacyJob> {
    checkUserId(userId);
    if (this.stopped) throw new Unavailable('shutting down');
    const recipient = requirePrivacyEmail(env);
    if (!(await this.d.users.load(env.id, userId))) throw new NotFound('user not found');
    const now = this.d.clock.now();
    const job: PrivacyJob = {
      id: uuid(),
      envId: env.id,
      userId,
      status: 'pending',
      recipient,
      createdAt: now,
      expiresAt: new Date(now.getTime() + this.ttlMs),
      sentAt: null,
      exportBytes: null,
      error: null,
    };
    await this.d.store.insertJob(job);
    const promise = this.run(env, job).finally(() => this.running.delete(job.id));
    this.running.set(job.id, { envId: env.id, userId, promise });
    return { ...job };
  }

  /**
   * The data access request every door makes (POST /v1/privacy/users[/{id}], Privacy.RequestAccess,
   * requestPrivacyExports): one pending job per user the subject names, in the order found. A
   * user id that is unknown, or an e-mail address no user has, is NotFound; an environment without
   * a privacy address is InvalidParameters (`privacy_email`). With `signal`, users not started
   * when it aborts are left out.
   */
  async requestAccessFor(
    env: Environment,
    subject: PrivacySubject,
    signal?: Cancellation,
  ): Promise<PrivacyJob[]> {
    requirePrivacyEmail(env);
    const userIds = await this.usersOf(env.id, subject);
    if (userIds.length === 0) throw new NotFound('no user has this e-mail address');
    const jobs: PrivacyJob[] = [];
    for (const userId of userIds) {
      if (signal?.aborted) break;
      jobs.push(await this.requestAccess(env, userId));
    }
    return jobs;
  }

  /**
   * The purge every door makes (DELETE /v1/privacy/users[/{id}], Privacy.Purge, purgeUsers): every
   * user the subject names is purged (see purge). Naming nobody is not an error: nothing is
   * purged. With `signal`, users not started when it aborts are left out.
   */
  async purgeFor(env: Environment, subject: PrivacySubject, signal?: Cancellation): Promise<UserPurge[]> {
    const done: UserPurge[] = [];
    for (const userId of await this.usersOf(env.id, subject)) {
      if (signal?.aborted) break;
      done.push({ userId, ...(await this.purge(env, userId)) });
    }
    return done;
  }

  /**
   * The users a newer-SDK privacy body names: `{identifier, identifier_type}` with type `$id`
   * (the default) or `$email` (every user whose profile e-mail matches, case-insensitively).
   * An e-mail that matches nobody yields an empty list.
   */
  async resolveIdentifier(env: EnvId, identifier: unknown, identifierType: unknown): Promise<string[]> {
    return this.usersOf(env, subjectOfIdentifier(identifier, identifierType));
  }

  /** The user ids a subject names (an id names itself, known or not). */
  private async usersOf(env: EnvId, subject: PrivacySubject): Promise<string[]> {
    if ('userId' in subject) return [subject.userId];
    // Profiles are written behind: a user seen a moment ago must be found by its e-mail too.
    await this.d.writes.flush();
    return this.d.store.userIdsByEmail(env, subject.email, 100);
  }

  /** One job of the environment, or null. */
  job(env: EnvId, id: string): Promise<PrivacyJob | null> {
    return this.d.store.getJob(env, id);
  }

  /** A page of the environment's jobs (only user `userId`'s, when given), newest first (pages are cut from the newest 500). */
  async jobsPage(
    env: EnvId,
    page: { userId?: string | null; first?: number | null; after?: string | null },
  ): Promise<Page<PrivacyJob>> {
    return pageOfList(
      await this.jobs(env, REACHABLE_JOBS, page.userId ?? undefined),
      pageSize(page.first, 20),
      page.after,
      (j) => j.id,
    );
  }

  /** The environment's jobs (only user `userId`'s, when given), newest first. */
  jobs(env: EnvId, limit: number, userId?: string): Promise<PrivacyJob[]> {
    return this.d.store.listJobs(env, Math.max(1, Math.min(500, Math.floor(limit) || 1)), userId);
  }

  /**
   * Serve a download link: `GET /v1/privacy/exports/{jobId}?expires=…&signature=…`, no other
   * credential. A bad signature, a passed expiry (of the link or of the job), or an unknown,
   * failed or swept job all answer NotFound, so the link never works after 48 hours.
   */
  async download(
    jobId: string,
    expires: string,
    signature: string,
  ): Promise<{ filename: string; json: string }> {
    if (!/^[0-9a-f-]{36}$/i.test(jobId) || !/^\d{1,12}$/.test(expires) || !/^[0-9a-f]{64}$/i.test(signature))
      throw new NotFound(NOT_FOUND);
    if (!safeEqual(signature.toLowerCase(), this.sign(jobId, Number(expires)))) throw new NotFound(NOT_FOUND);
    const now = this.d.clock.now().getTime();
    if (now >= Number(expires) * 1000) throw new NotFound(NOT_FOUND);
    const job = await this.d.store.jobBySignedId(jobId);
    if (!job || job.status === 'failed' || job.status === 'expired' || now >= job.expiresAt.getTime())
      throw new NotFound(NOT_FOUND);
    const json = await this.d.store.readExport(job.envId, job.id);
    if (json === null) throw new NotFound(NOT_FOUND);
    this.d.log.info({ env: job.envId, job: job.id }, 'privacy: export downloaded');
    return { filename: `rampart-privacy-export-${job.id}.json`, json };
  }

  /**
   * Delete every export past its expiry, mark those jobs `expired`, and fail jobs whose instance
   * stopped while compiling them. Returns the number of jobs expired.
   */
  async sweep(): Promise<number> {
    const now = this.d.clock.now();
    let expired = 0;
    for (;;) {
      const batch = await this.d.store.expiredJobs(now, 100);
      for (const job of batch) {
        await this.d.store.deleteExport(job.envId, job.id);
        await this.d.store.updateJob(job.envId, job.id, { status: 'expired' });
        expired++;
      }
      if (batch.length < 100) break;
    }
    await this.d.store.deleteExpiredExports(now);
    const stale = await this.d.store.stalePendingJobs(
      new Date(now.getTime() - (this.d.staleJobMs ?? 3_600_000)),
      100,
    );
    for (const job of stale) {
      if (this.running.has(job.id)) continue;
      await this.d.store.deleteExport(job.envId, job.id);
      await this.d.store.updateJob(job.envId, job.id, {
        status: 'failed',
        error: 'interrupted: the instance compiling the export stopped',
      });
    }
    if (expired > 0) this.d.log.info({ expired }, 'privacy: expired exports deleted');
    return expired;
  }

  /** Refuse new access requests, and wait for the ones running here. */
  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.allSettled([...this.running.values()].map((r) => r.promise));
  }

  /**
   * Permanently delete the user and every associated record (profile, devices and their keys,
   * events, debugger entries, counter memberships, webhook deliveries and dedupe slots, privacy
   * jobs and exports). Idempotent: an unknown user is not an error and yields zero counts.
   */
  async purge(env: Environment, userId: string): Promise<{ deleted: Record<string, number> }> {
    checkUserId(userId);
    // An access job of this user still compiling here would write its export after the purge.
    const mine = [...this.running.values()].filter((r) => r.envId === env.id && r.userId === userId);
    await Promise.allSettled(mine.map((r) => r.promise));
    // Changes still queued for the user would recreate what is deleted: write them first.
    await this.d.writes.flush();
    const user = (await this.d.users.load(env.id, userId))?.profile;
    const identifiers = [
      ...new Set(
        [userId, user?.email, user?.username, user?.phone].filter(
          (v): v is string => typeof v === 'string' && v.length > 0,
        ),
      ),
    ];
    const names = [
      nameOf('email', user?.email),
      nameOf('username', user?.username),
      nameOf('phone', user?.phone),
    ].filter((v): v is string => v !== null);
    const deleted = await this.d.store.purgeUser(env.id, {
      userId,
      email: user?.email ?? null,
      names,
      identifiers,
    });
    this.d.log.info({ env: env.id, deleted }, 'privacy: user purged');
    return { deleted };
  }

  private sign(jobId: string, expires: number): string {
    return hmacSha256(this.macKey, `${jobId}.${expires}`).toString('hex');
  }

  private link(job: PrivacyJob): string {
    const expires = Math.floor(job.expiresAt.getTime() / 1000);
    return this.d.links.downloadUrl(job.id, { expires, signature: this.sign(job.id, expires) });
  }

  /** Compile, store and mail one export. Never rejects: failures are recorded on the job. */
  private async run(env: Environment, job: PrivacyJob): Promise<void> {
    try {
      const mailer = this.d.mailer;
      await this.d.writes.flush();
      const [state, events, rejected, webhooks, appEvents] = await Promise.all([
        this.d.users.load(env.id, job.userId),
        this.d.store.eventsForUser(env.id, job.userId),
        this.d.store.rejectedForUser(env.id, job.userId),
        this.d.webhooks.listForUser(env.id, job.userId),
        this.d.store.appEventsForUser(env.id, job.userId),
      ]);
      if (!state) throw new Error('the user no longer exists');
      const { profile, devices } = state;
      const json = buildExport({
        env,
        userId: job.userId,
        jobId: job.id,
        generatedAt: this.d.clock.now(),
        expiresAt: job.expiresAt,
        profile,
        devices,
        events,
        rejected,
        webhooks,
        appEvents,
      });
      const bytes = await this.d.store.putExport(env.id, job, json);
      await this.d.store.updateJob(env.id, job.id, { exportBytes: bytes });
      const link = this.link(job);
      const until = job.expiresAt.toISOString();
      await mailer.send({
        to: job.recipient,
        subject: `Rampart data export for user ${job.userId.replace(/[\r\n\t\v\f]+/g, ' ')} (${env.name})`,
        text: [
          `A data access request was made for user "${job.userId}" in the Rampart environment "${env.name}".`,
          '',
          'Download the export (JSON) here:',
          link,
          '',
          `The link works until ${until} (48 hours after the request); the export is then deleted.`,
          'Anyone holding this link can download the export: do not forward it.',
          '',
          `Request id: ${job.id}`,
        ].join('\n'),
      });
      await this.d.store.updateJob(env.id, job.id, { status: 'sent', sentAt: this.d.clock.now() });
      this.d.log.info({ env: env.id, job: job.id, bytes }, 'privacy: export e-mailed');
    } catch (err) {
      const error = message(err);
      this.d.log.warn({ env: env.id, job: job.id, err: error }, 'privacy: access request failed');
      await this.d.store.deleteExport(env.id, job.id).catch(() => undefined);
      await this.d.store
        .updateJob(env.id, job.id, { status: 'failed', error })
        .catch((e) =>
          this.d.log.warn({ job: job.id, err: message(e) }, 'privacy: could not record the failure'),
        );
    }
  }
}
