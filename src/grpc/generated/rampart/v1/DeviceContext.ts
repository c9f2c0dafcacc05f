// Original file: proto/rampart/v1/devices.proto

import type { Location as _rampart_v1_Location, Location__Output as _rampart_v1_Location__Output } from '../../rampart/v1/Location';
import type { UserAgent as _rampart_v1_UserAgent, UserAgent__Output as _rampart_v1_UserAgent__Output } from '../../rampart/v1/UserAgent';
import type { Struct as _google_protobuf_Struct, Struct__Output as _google_protobuf_Struct__Output } from '../../google/protobuf/Struct';
import type { DeviceType as _rampart_v1_DeviceType, DeviceType__Output as _rampart_v1_DeviceType__Output } from '../../rampart/v1/DeviceType';

/**
 * What Rampart knows of the context a device was last seen in.
 */
export interface DeviceContext {
  /**
   * The last IP address the device was seen from; empty when unknown.
   */
  'ip'?: (string);
  /**
   * Where that IP address is; unset when unknown.
   */
  'location'?: (_rampart_v1_Location | null);
  /**
   * The device's parsed User-Agent.
   */
  'userAgent'?: (_rampart_v1_UserAgent | null);
  /**
   * Other properties, e.g. {"identity": "fingerprint"} or "derived" when the device was
   * recognised without a client fingerprint, and `locale`.
   */
  'properties'?: (_google_protobuf_Struct | null);
  /**
   * The device's form factor.
   */
  'type'?: (_rampart_v1_DeviceType);
}

/**
 * What Rampart knows of the context a device was last seen in.
 */
export interface DeviceContext__Output {
  /**
   * The last IP address the device was seen from; empty when unknown.
   */
  'ip': (string);
  /**
   * Where that IP address is; unset when unknown.
   */
  'location': (_rampart_v1_Location__Output | null);
  /**
   * The device's parsed User-Agent.
   */
  'userAgent': (_rampart_v1_UserAgent__Output | null);
  /**
   * Other properties, e.g. {"identity": "fingerprint"} or "derived" when the device was
   * recognised without a client fingerprint, and `locale`.
   */
  'properties': (_google_protobuf_Struct__Output | null);
  /**
   * The device's form factor.
   */
  'type': (_rampart_v1_DeviceType__Output);
}
