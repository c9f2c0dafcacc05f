// Original file: proto/rampart/v1/devices.proto


/**
 * Which device to report.
 */
export interface ReportDeviceRequest {
  /**
   * The device token. Required.
   */
  'deviceToken'?: (string);
}

/**
 * Which device to report.
 */
export interface ReportDeviceRequest__Output {
  /**
   * The device token. Required.
   */
  'deviceToken': (string);
}
