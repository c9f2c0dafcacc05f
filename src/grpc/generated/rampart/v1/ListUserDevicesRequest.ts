// Original file: proto/rampart/v1/devices.proto


/**
 * Which user's devices to list.
 */
export interface ListUserDevicesRequest {
  /**
   * The application's identifier of the user. Required.
   */
  'userId'?: (string);
  /**
   * Optional fingerprint token (`client_id`/`cid`) of the device the user is on now: that device
   * gets `is_current_device` true.
   */
  'clientId'?: (string);
}

/**
 * Which user's devices to list.
 */
export interface ListUserDevicesRequest__Output {
  /**
   * The application's identifier of the user. Required.
   */
  'userId': (string);
  /**
   * Optional fingerprint token (`client_id`/`cid`) of the device the user is on now: that device
   * gets `is_current_device` true.
   */
  'clientId': (string);
}
