/**
 * Ports of the privacy use cases: job and export storage, the user's records the export reads,
 * the purge across every collection, and outgoing mail. No driver types; tenant-scoped methods
 * take the EnvId first. One store implements all four storage ports (PrivacyStore).
 */
import type { EnvId, RejectedPayload, StoredEvent } from '../model';
import type { PrivacyJob } from './model';
import type { ClientEvent } from '../client/events';

export type PrivacyJobPatch = Partial<Pick<PrivacyJob, 'status' | 'sentAt' | 'exportBytes' | 'error'>>;

export interface PrivacyJobStore {
  insertJob(job: PrivacyJob): Promise<void>;
  getJob(env: EnvId, id: string): Promise<PrivacyJob | null>;
  /**
   * Look a job up by id alone. Only for the download link, whose HMAC signature is the authority
   * (the link carries no credential and no environment).
   */
  jobBySignedId(id: string): Promise<PrivacyJob | null>;
  updateJob(env: EnvId, id: string, patch: PrivacyJobPatch): Promise<void>;
  /** Newest first; only user `userId`'s when given. */
  listJobs(env: EnvId, limit: number, userId?: string): Promise<PrivacyJob[]>;
  /** Jobs (all tenants) past `expiresAt` that are still `pending` or `sent`. */
  expiredJobs(now: Date, limit: number): Promise<PrivacyJob[]>;
  /** Jobs (all tenants) still `pending` although created before `before`. */
  stalePendingJobs(before: Date, limit: number): Promise<PrivacyJob[]>;
}

export interface PrivacyExportStore {
  /** Store the export text (split into chunks as needed); returns its size in bytes. */
  putExport(env: EnvId, job: Pick<PrivacyJob, 'id' | 'userId' | 'expiresAt'>, json: string): Promise<number>;
  /** The export text, or null when there is none (never stored, deleted, or incomplete). */
  readExport(env: EnvId, jobId: string): Promise<string | null>;
  /** Delete one export; returns the chunks deleted. */
  deleteExport(env: EnvId, jobId: string): Promise<number>;
  /** Delete every export chunk (all tenants) that expired at or before `now`. */
  deleteExpiredExports(now: Date): Promise<number>;
}

/** The user's records beyond profile and devices (which the core's UserStateStore gives). */
export interface PrivacyDataStore {
  /** Every stored event of the user, oldest first. */
  eventsForUser(env: EnvId, userId: string): Promise<StoredEvent[]>;
  /** Every rejected track payload (debugger entry) attributed to the user. */
  rejectedForUser(env: EnvId, userId: string): Promise<RejectedPayload[]>;
  /** Every app event (core/client/events.ts) of the user's installs that named the user, oldest first. */
  appEventsForUser(env: EnvId, userId: string): Promise<ClientEvent[]>;
  /** Ids of the users whose profile e-mail is `email` (case-insensitive), for `identifier_type: "$email"`. */
  userIdsByEmail(env: EnvId, email: string, limit: number): Promise<string[]>;
}

/** Who to purge: the user id, and the identifiers that anonymous records may hold instead. */
export interface PurgeSubject {
  userId: string;
  /** Profile e-mail (lower-cased): its account link in the counters goes too. */
  email: string | null;
  /**
   * The profile's e-mail, user name and phone. The store adds those the user's own events gave
   * as the user's (privacy/names.ts `ownNames`) and deletes every record without a user id that
   * names one of them: anonymous events and rejected payloads.
   */
  names: string[];
  /** Strings (user id, e-mail, username, phone) to remove from velocity-counter member sets. */
  identifiers: string[];
}

export interface PurgeStore {
  /** Permanently delete every record of the subject; returns deleted (or modified) counts per collection. */
  purgeUser(env: EnvId, subject: PurgeSubject): Promise<Record<string, number>>;
}

/** Everything the privacy use cases store and read, in one repository. */
export interface PrivacyStore extends PrivacyJobStore, PrivacyExportStore, PrivacyDataStore, PurgeStore {}

export interface MailMessage {
  to: string;
  subject: string;
  text: string;
  html?: string;
}

export interface Mailer {
  /** Send one message; rejects when the server refuses it. */
  send(message: MailMessage): Promise<void>;
}
