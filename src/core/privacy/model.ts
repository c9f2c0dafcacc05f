/** Privacy jobs: one data access request of one user, from its 202 to the e-mailed link's expiry. */
import type { EnvId } from '../model';

/**
 * `pending`: the export is being compiled and mailed; `sent`: the link was e-mailed and works
 * until `expiresAt`; `failed`: see `error`; `expired`: past 48 h, the export is deleted.
 */
export type PrivacyJobStatus = 'pending' | 'sent' | 'failed' | 'expired';

export interface PrivacyJob {
  /** UUID; also in the download link. */
  id: string;
  envId: EnvId;
  userId: string;
  status: PrivacyJobStatus;
  /** The environment's privacy address the link was (or is to be) sent to. */
  recipient: string;
  createdAt: Date;
  /** createdAt + 48 h: the link and the export end here. */
  expiresAt: Date;
  sentAt: Date | null;
  /** Size of the export in bytes (UTF-8), once stored. */
  exportBytes: number | null;
  error: string | null;
}
