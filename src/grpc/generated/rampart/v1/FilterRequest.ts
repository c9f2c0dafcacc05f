// Original file: proto/rampart/v1/scoring.proto

import type { EventStatus as _rampart_v1_EventStatus, EventStatus__Output as _rampart_v1_EventStatus__Output } from '../../rampart/v1/EventStatus';
import type { User as _rampart_v1_User, User__Output as _rampart_v1_User__Output } from '../../rampart/v1/User';
import type { Context as _rampart_v1_Context, Context__Output as _rampart_v1_Context__Output } from '../../rampart/v1/Context';
import type { Struct as _google_protobuf_Struct, Struct__Output as _google_protobuf_Struct__Output } from '../../google/protobuf/Struct';
import type { Timestamp as _google_protobuf_Timestamp, Timestamp__Output as _google_protobuf_Timestamp__Output } from '../../google/protobuf/Timestamp';

/**
 * An event for Filter.
 */
export interface FilterRequest {
  /**
   * Event name, e.g. "$registration", "$login.failed", or a type with `status`.
   */
  'event'?: (string);
  /**
   * The status of the event when `event` is a type ("$registration" + ATTEMPTED).
   */
  'status'?: (_rampart_v1_EventStatus);
  /**
   * For "$custom" events, the application's own event name.
   */
  'name'?: (string);
  /**
   * The user, when known (often only `email` at registration).
   */
  'user'?: (_rampart_v1_User | null);
  /**
   * The end user's request context. `ip` and the `User-Agent` header are required.
   */
  'context'?: (_rampart_v1_Context | null);
  /**
   * Event properties and submitted identifiers (`email`, `username`, `phone`).
   */
  'properties'?: (_google_protobuf_Struct | null);
  /**
   * The fingerprint token from the client libraries.
   */
  'requestToken'?: (string);
  /**
   * When the event happened, if not now. At most 5 minutes ahead.
   */
  'timestamp'?: (_google_protobuf_Timestamp | null);
}

/**
 * An event for Filter.
 */
export interface FilterRequest__Output {
  /**
   * Event name, e.g. "$registration", "$login.failed", or a type with `status`.
   */
  'event': (string);
  /**
   * The status of the event when `event` is a type ("$registration" + ATTEMPTED).
   */
  'status': (_rampart_v1_EventStatus__Output);
  /**
   * For "$custom" events, the application's own event name.
   */
  'name': (string);
  /**
   * The user, when known (often only `email` at registration).
   */
  'user': (_rampart_v1_User__Output | null);
  /**
   * The end user's request context. `ip` and the `User-Agent` header are required.
   */
  'context': (_rampart_v1_Context__Output | null);
  /**
   * Event properties and submitted identifiers (`email`, `username`, `phone`).
   */
  'properties': (_google_protobuf_Struct__Output | null);
  /**
   * The fingerprint token from the client libraries.
   */
  'requestToken': (string);
  /**
   * When the event happened, if not now. At most 5 minutes ahead.
   */
  'timestamp': (_google_protobuf_Timestamp__Output | null);
}
