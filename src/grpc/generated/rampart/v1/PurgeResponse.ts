// Original file: proto/rampart/v1/privacy.proto


/**
 * The result of a purge.
 */
export interface PurgeResponse {
  /**
   * How many users were purged.
   */
  'purgedUsers'?: (number);
}

/**
 * The result of a purge.
 */
export interface PurgeResponse__Output {
  /**
   * How many users were purged.
   */
  'purgedUsers': (number);
}
