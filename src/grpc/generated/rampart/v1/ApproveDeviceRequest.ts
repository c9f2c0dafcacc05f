// Original file: proto/rampart/v1/devices.proto


/**
 * Which device to approve.
 */
export interface ApproveDeviceRequest {
  /**
   * The device token. Required.
   */
  'deviceToken'?: (string);
}

/**
 * Which device to approve.
 */
export interface ApproveDeviceRequest__Output {
  /**
   * The device token. Required.
   */
  'deviceToken': (string);
}
