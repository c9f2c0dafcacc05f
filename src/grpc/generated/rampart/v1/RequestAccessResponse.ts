// Original file: proto/rampart/v1/privacy.proto

import type { AccessJob as _rampart_v1_AccessJob, AccessJob__Output as _rampart_v1_AccessJob__Output } from '../../rampart/v1/AccessJob';

/**
 * The access jobs started, one per user found.
 */
export interface RequestAccessResponse {
  /**
   * One job per user (a user id names one user; an e-mail address may name several).
   * Never empty: a request that names nobody answers NOT_FOUND.
   */
  'jobs'?: (_rampart_v1_AccessJob)[];
}

/**
 * The access jobs started, one per user found.
 */
export interface RequestAccessResponse__Output {
  /**
   * One job per user (a user id names one user; an e-mail address may name several).
   * Never empty: a request that names nobody answers NOT_FOUND.
   */
  'jobs': (_rampart_v1_AccessJob__Output)[];
}
