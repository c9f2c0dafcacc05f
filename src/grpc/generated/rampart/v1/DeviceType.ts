// Original file: proto/rampart/v1/devices.proto

/**
 * The form factor of a device.
 */
export const DeviceType = {
  /**
   * Never sent by Rampart.
   */
  DEVICE_TYPE_UNSPECIFIED: 'DEVICE_TYPE_UNSPECIFIED',
  /**
   * A desktop or laptop computer.
   */
  DEVICE_TYPE_DESKTOP: 'DEVICE_TYPE_DESKTOP',
  /**
   * A phone.
   */
  DEVICE_TYPE_MOBILE: 'DEVICE_TYPE_MOBILE',
  /**
   * A tablet.
   */
  DEVICE_TYPE_TABLET: 'DEVICE_TYPE_TABLET',
  /**
   * Anything else (TVs, consoles, scripts, unknown).
   */
  DEVICE_TYPE_OTHER: 'DEVICE_TYPE_OTHER',
} as const;

/**
 * The form factor of a device.
 */
export type DeviceType =
  /**
   * Never sent by Rampart.
   */
  | 'DEVICE_TYPE_UNSPECIFIED'
  | 0
  /**
   * A desktop or laptop computer.
   */
  | 'DEVICE_TYPE_DESKTOP'
  | 1
  /**
   * A phone.
   */
  | 'DEVICE_TYPE_MOBILE'
  | 2
  /**
   * A tablet.
   */
  | 'DEVICE_TYPE_TABLET'
  | 3
  /**
   * Anything else (TVs, consoles, scripts, unknown).
   */
  | 'DEVICE_TYPE_OTHER'
  | 4

/**
 * The form factor of a device.
 */
export type DeviceType__Output = typeof DeviceType[keyof typeof DeviceType]
