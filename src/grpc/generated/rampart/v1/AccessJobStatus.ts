// Original file: proto/rampart/v1/privacy.proto

/**
 * Where a data access job is.
 */
export const AccessJobStatus = {
  /**
   * Never sent by Rampart.
   */
  ACCESS_JOB_STATUS_UNSPECIFIED: 'ACCESS_JOB_STATUS_UNSPECIFIED',
  /**
   * The export is being compiled and mailed.
   */
  ACCESS_JOB_STATUS_PENDING: 'ACCESS_JOB_STATUS_PENDING',
  /**
   * The link was e-mailed and works until `expires_at`.
   */
  ACCESS_JOB_STATUS_SENT: 'ACCESS_JOB_STATUS_SENT',
  /**
   * The export could not be compiled or mailed; see the service's log.
   */
  ACCESS_JOB_STATUS_FAILED: 'ACCESS_JOB_STATUS_FAILED',
  /**
   * Past `expires_at`: the export is deleted.
   */
  ACCESS_JOB_STATUS_EXPIRED: 'ACCESS_JOB_STATUS_EXPIRED',
} as const;

/**
 * Where a data access job is.
 */
export type AccessJobStatus =
  /**
   * Never sent by Rampart.
   */
  | 'ACCESS_JOB_STATUS_UNSPECIFIED'
  | 0
  /**
   * The export is being compiled and mailed.
   */
  | 'ACCESS_JOB_STATUS_PENDING'
  | 1
  /**
   * The link was e-mailed and works until `expires_at`.
   */
  | 'ACCESS_JOB_STATUS_SENT'
  | 2
  /**
   * The export could not be compiled or mailed; see the service's log.
   */
  | 'ACCESS_JOB_STATUS_FAILED'
  | 3
  /**
   * Past `expires_at`: the export is deleted.
   */
  | 'ACCESS_JOB_STATUS_EXPIRED'
  | 4

/**
 * Where a data access job is.
 */
export type AccessJobStatus__Output = typeof AccessJobStatus[keyof typeof AccessJobStatus]
