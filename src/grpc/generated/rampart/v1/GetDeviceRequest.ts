// Original file: proto/rampart/v1/devices.proto


/**
 * Which device to read.
 */
export interface GetDeviceRequest {
  /**
   * The device token (from Risk, Authenticate or ListUserDevices). Required.
   */
  'deviceToken'?: (string);
}

/**
 * Which device to read.
 */
export interface GetDeviceRequest__Output {
  /**
   * The device token (from Risk, Authenticate or ListUserDevices). Required.
   */
  'deviceToken': (string);
}
