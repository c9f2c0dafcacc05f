// Original file: proto/rampart/v1/devices.proto

import type { Device as _rampart_v1_Device, Device__Output as _rampart_v1_Device__Output } from '../../rampart/v1/Device';

/**
 * A user's devices.
 */
export interface ListUserDevicesResponse {
  /**
   * How many devices follow.
   */
  'totalCount'?: (number);
  /**
   * The devices, oldest first as stored.
   */
  'devices'?: (_rampart_v1_Device)[];
}

/**
 * A user's devices.
 */
export interface ListUserDevicesResponse__Output {
  /**
   * How many devices follow.
   */
  'totalCount': (number);
  /**
   * The devices, oldest first as stored.
   */
  'devices': (_rampart_v1_Device__Output)[];
}
