// Original file: proto/rampart/v1/devices.proto

import type { Timestamp as _google_protobuf_Timestamp, Timestamp__Output as _google_protobuf_Timestamp__Output } from '../../google/protobuf/Timestamp';
import type { DeviceContext as _rampart_v1_DeviceContext, DeviceContext__Output as _rampart_v1_DeviceContext__Output } from '../../rampart/v1/DeviceContext';

/**
 * A device of a user.
 */
export interface Device {
  /**
   * The device token: opaque, stable, never expires. Never show it to end users.
   */
  'token'?: (string);
  /**
   * When the device was first seen.
   */
  'createdAt'?: (_google_protobuf_Timestamp | null);
  /**
   * When the device was last seen (event time).
   */
  'lastSeenAt'?: (_google_protobuf_Timestamp | null);
  /**
   * The user the device belongs to.
   */
  'userId'?: (string);
  /**
   * When the device was approved; unset when it is not approved.
   */
  'approvedAt'?: (_google_protobuf_Timestamp | null);
  /**
   * When the device was reported; unset when it is not reported.
   */
  'escalatedAt'?: (_google_protobuf_Timestamp | null);
  /**
   * When the threat from this device was mitigated (password reset); unset otherwise.
   */
  'mitigatedAt'?: (_google_protobuf_Timestamp | null);
  /**
   * The device's risk, 0 to 100: exactly 0 after approval and 100 after a report.
   */
  'risk'?: (number);
  /**
   * The context the device was last seen in.
   */
  'context'?: (_rampart_v1_DeviceContext | null);
  /**
   * Whether `client_id` of ListUserDevices matched this device. Always false elsewhere.
   */
  'isCurrentDevice'?: (boolean);
}

/**
 * A device of a user.
 */
export interface Device__Output {
  /**
   * The device token: opaque, stable, never expires. Never show it to end users.
   */
  'token': (string);
  /**
   * When the device was first seen.
   */
  'createdAt': (_google_protobuf_Timestamp__Output | null);
  /**
   * When the device was last seen (event time).
   */
  'lastSeenAt': (_google_protobuf_Timestamp__Output | null);
  /**
   * The user the device belongs to.
   */
  'userId': (string);
  /**
   * When the device was approved; unset when it is not approved.
   */
  'approvedAt': (_google_protobuf_Timestamp__Output | null);
  /**
   * When the device was reported; unset when it is not reported.
   */
  'escalatedAt': (_google_protobuf_Timestamp__Output | null);
  /**
   * When the threat from this device was mitigated (password reset); unset otherwise.
   */
  'mitigatedAt': (_google_protobuf_Timestamp__Output | null);
  /**
   * The device's risk, 0 to 100: exactly 0 after approval and 100 after a report.
   */
  'risk': (number);
  /**
   * The context the device was last seen in.
   */
  'context': (_rampart_v1_DeviceContext__Output | null);
  /**
   * Whether `client_id` of ListUserDevices matched this device. Always false elsewhere.
   */
  'isCurrentDevice': (boolean);
}
