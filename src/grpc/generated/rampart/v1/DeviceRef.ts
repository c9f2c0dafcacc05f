// Original file: proto/rampart/v1/scoring.proto


/**
 * The device an event came from.
 */
export interface DeviceRef {
  /**
   * The device token; empty when the event had no user.
   */
  'token'?: (string);
}

/**
 * The device an event came from.
 */
export interface DeviceRef__Output {
  /**
   * The device token; empty when the event had no user.
   */
  'token': (string);
}
