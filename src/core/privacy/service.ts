/**
 * Privacy use cases (POST/DELETE /v1/privacy/users/{id} and their gRPC/GraphQL twins).
 * Access: a job compiles every record of the user into an export, stores it, and e-mails a
 * signed link to the environment's privacy address; the link and the export end 48 hours after
 * the request, checked on every download and swept periodically (no reliance on TTL indexes).
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
import type { Mailer, PrivacyStore } from './ports';

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
  /** Null when SMTP is not configured: access requests are then recorded as failed. */
  mailer: Mailer | null;
  /** The Sealer: `macKey('privacy-export')` signs the links. */
  sealer: { macKey(purpose: string): Buffer };
  clock: Clock;
  /** Base URL the links point at (RAMPART_PUBLIC_URL), e.g. `https://rampart.example.com`. */
  publicUrl: string;
  log: PrivacyLog;
  /** Link and export lifetime. Default 48 h; the interface fixes it, tests may not need to. */
  linkTtlMs?: number;
  /** Sweep period. Default 10 min. */
  sweepMs?: number;
  /** A job still pending after this long was interrupted (its instance stopped). Default 1 h. */
  staleJobMs?: number;
}

interface RunningJob {
  envId: EnvId;
  userId: string;
  promise: Promise<void>;
}

const NOT_FOUND = 'export not found, or the link has expired';

function checkUserId(userId: string): void {
  if (typeof userId !== 'string' || userId.length === 0 || userId.length > 1024) {
    throw new InvalidParameters([{ field: 'user_id', message: 'must be a non-empty string of at most 1024 characters' }]);
  }
}

const message = (err: unknown): string => (err instanceof Error ? err.message : String(err));

export class PrivacyService {
  private readonly macKey: Buffer;
  private readonly ttlMs: number;
  private readonly running = new Map<string, RunningJob>();
  private timer: NodeJS.Timeout | null = null;
  private sweeping: Promise<unknown> | null = null;
  private stopped = false;

  constructor(private readonly d: PrivacyServiceDeps) {
    this.macKey = d.sealer.macKey(EXPORT_MAC_PURPOSE);
    this.ttlMs = d.linkTtlMs ?? EXPORT_LINK_TTL_MS;
    if (!/^https?:\/\//.test(d.publicUrl)) throw new Error('publicUrl must be an absolute http(s) URL');
  }

  /**
   * Accept a data access request and return the pending job at once (the 202). The export is
   * compiled and mailed in the background; poll `job()` or await `waitForJob()`.
   * Throws InvalidParameters (`privacy_email`) when the environment has no privacy address,
   * NotFound when the user is unknown.
   */
  async requestAccess(env: Environment, userId: string): Promise<PrivacyJob> {
    checkUserId(userId);
    if (this.stopped) throw new Unavailable('shutting down');
    if (!env.privacyEmail) {
      throw new InvalidParameters([
        { field: 'privacy_email', message: 'this environment has no privacy e-mail address; set one with `npx rampart env set-privacy-email <env> <address>`' },
      ]);
    }
    if (!(await this.d.users.load(env.id, userId))) throw new NotFound('user not found');
    const now = this.d.clock.now();
    const job: PrivacyJob = {
      id: uuid(),
      envId: env.id,
      userId,
      status: 'pending',
      recipient: env.privacyEmail,
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
   * The users a newer-SDK privacy body names: `{identifier, identifier_type}` with type `$id`
   * (the default) or `$email` (every user whose profile e-mail matches, case-insensitively).
   * An e-mail that matches nobody yields an empty list.
   */
  async resolveIdentifier(env: EnvId, identifier: unknown, identifierType: unknown): Promise<string[]> {
    const r = privacyIdentifierSchema.safeParse({ identifier, identifier_type: identifierType });
    if (!r.success) throw new InvalidParameters(r.error.issues.map((i) => ({ field: i.path.join('.'), message: i.message })));
    const { identifier: id, identifier_type: type } = r.data;
    if (type === '$email') {
      // Profiles are written behind: a user seen a moment ago must be found by its e-mail too.
      await this.d.writes.flush();
      return this.d.store.userIdsByEmail(env, id, 100);
    }
    return [id];
  }

  /** Wait until a job started by this instance is done (sent or failed), and return it. */
  async waitForJob(env: EnvId, id: string): Promise<PrivacyJob> {
    await this.running.get(id)?.promise;
    const job = await this.d.store.getJob(env, id);
    if (!job) throw new NotFound('privacy job not found');
    return job;
  }

  /** One job of the environment, or null. */
  job(env: EnvId, id: string): Promise<PrivacyJob | null> {
    return this.d.store.getJob(env, id);
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
  async download(jobId: string, expires: string, signature: string): Promise<{ filename: string; json: string }> {
    if (!/^[0-9a-f-]{36}$/i.test(jobId) || !/^\d{1,12}$/.test(expires) || !/^[0-9a-f]{64}$/i.test(signature)) throw new NotFound(NOT_FOUND);
    if (!safeEqual(signature.toLowerCase(), this.sign(jobId, Number(expires)))) throw new NotFound(NOT_FOUND);
    const now = this.d.clock.now().getTime();
    if (now >= Number(expires) * 1000) throw new NotFound(NOT_FOUND);
    const job = await this.d.store.jobBySignedId(jobId);
    if (!job || job.status === 'failed' || job.status === 'expired' || now >= job.expiresAt.getTime()) throw new NotFound(NOT_FOUND);
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
    const stale = await this.d.store.stalePendingJobs(new Date(now.getTime() - (this.d.staleJobMs ?? 3_600_000)), 100);
    for (const job of stale) {
      if (this.running.has(job.id)) continue;
      await this.d.store.deleteExport(job.envId, job.id);
      await this.d.store.updateJob(job.envId, job.id, { status: 'failed', error: 'interrupted: the instance compiling the export stopped' });
    }
    return expired;
  }

  /** Sweep now and then every `sweepMs` (default 10 minutes). */
  start(): void {
    if (this.timer) return;
    this.stopped = false;
    const tick = () => {
      if (this.sweeping) return;
      this.sweeping = this.sweep()
        .then((n) => {
          if (n > 0) this.d.log.info({ expired: n }, 'privacy: expired exports deleted');
        })
        .catch((err) => this.d.log.warn({ err: message(err) }, 'privacy: sweep failed'))
        .finally(() => {
          this.sweeping = null;
        });
    };
    this.timer = setInterval(tick, this.d.sweepMs ?? 10 * 60_000);
    this.timer.unref();
    tick();
  }

  /** Stop sweeping and wait for running sweeps and access jobs. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.sweeping;
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
    const identifiers = [...new Set([userId, user?.email, user?.username, user?.phone].filter((v): v is string => typeof v === 'string' && v.length > 0))];
    const deleted = await this.d.store.purgeUser(env.id, { userId, email: user?.email ?? null, identifiers });
    this.d.log.info({ env: env.id, deleted }, 'privacy: user purged');
    return { deleted };
  }

  private sign(jobId: string, expires: number): string {
    return hmacSha256(this.macKey, `${jobId}.${expires}`).toString('hex');
  }

  private link(job: PrivacyJob): string {
    const expires = Math.floor(job.expiresAt.getTime() / 1000);
    const base = this.d.publicUrl.replace(/\/+$/, '');
    return `${base}/v1/privacy/exports/${encodeURIComponent(job.id)}?expires=${expires}&signature=${this.sign(job.id, expires)}`;
  }

  /** Compile, store and mail one export. Never rejects: failures are recorded on the job. */
  private async run(env: Environment, job: PrivacyJob): Promise<void> {
    try {
      const mailer = this.d.mailer;
      if (!mailer) throw new Error('SMTP is not configured (set RAMPART_SMTP_URL)');
      await this.d.writes.flush();
      const [state, events, rejected, webhooks] = await Promise.all([
        this.d.users.load(env.id, job.userId),
        this.d.store.eventsForUser(env.id, job.userId),
        this.d.store.rejectedForUser(env.id, job.userId),
        this.d.webhooks.listForUser(env.id, job.userId),
      ]);
      if (!state) throw new Error('the user no longer exists');
      const { profile, devices } = state;
      const json = buildExport({ env, userId: job.userId, jobId: job.id, generatedAt: this.d.clock.now(), expiresAt: job.expiresAt, profile, devices, events, rejected, webhooks });
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
      await this.d.store.updateJob(env.id, job.id, { status: 'failed', error }).catch((e) => this.d.log.warn({ job: job.id, err: message(e) }, 'privacy: could not record the failure'));
    }
  }
}
