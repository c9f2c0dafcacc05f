// Original file: proto/rampart/v1/privacy.proto

import type { AccessJobStatus as _rampart_v1_AccessJobStatus, AccessJobStatus__Output as _rampart_v1_AccessJobStatus__Output } from '../../rampart/v1/AccessJobStatus';
import type { Timestamp as _google_protobuf_Timestamp, Timestamp__Output as _google_protobuf_Timestamp__Output } from '../../google/protobuf/Timestamp';

/**
 * A data access job.
 */
export interface AccessJob {
  /**
   * The job's identifier.
   */
  'id'?: (string);
  /**
   * Where the job is. Jobs are answered at once, as PENDING.
   */
  'status'?: (_rampart_v1_AccessJobStatus);
  /**
   * When the download link and the export expire.
   */
  'expiresAt'?: (_google_protobuf_Timestamp | null);
  /**
   * The user whose data the job exports.
   */
  'userId'?: (string);
}

/**
 * A data access job.
 */
export interface AccessJob__Output {
  /**
   * The job's identifier.
   */
  'id': (string);
  /**
   * Where the job is. Jobs are answered at once, as PENDING.
   */
  'status': (_rampart_v1_AccessJobStatus__Output);
  /**
   * When the download link and the export expire.
   */
  'expiresAt': (_google_protobuf_Timestamp__Output | null);
  /**
   * The user whose data the job exports.
   */
  'userId': (string);
}
