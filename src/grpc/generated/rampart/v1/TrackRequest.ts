// Original file: proto/rampart/v1/scoring.proto

import type { EventStatus as _rampart_v1_EventStatus, EventStatus__Output as _rampart_v1_EventStatus__Output } from '../../rampart/v1/EventStatus';
import type { User as _rampart_v1_User, User__Output as _rampart_v1_User__Output } from '../../rampart/v1/User';
import type { Context as _rampart_v1_Context, Context__Output as _rampart_v1_Context__Output } from '../../rampart/v1/Context';
import type { Struct as _google_protobuf_Struct, Struct__Output as _google_protobuf_Struct__Output } from '../../google/protobuf/Struct';
import type { Timestamp as _google_protobuf_Timestamp, Timestamp__Output as _google_protobuf_Timestamp__Output } from '../../google/protobuf/Timestamp';

/**
 * A feedback event for Track and TrackStream, e.g. "$challenge.succeeded", "$login.failed",
 * "$password_reset.succeeded", "$review.escalated", "$incident.mitigated".
 */
export interface TrackRequest {
  /**
   * Event name, or an event type combined with `status`.
   */
  'event'?: (string);
  /**
   * The status of the event when `event` is a type.
   */
  'status'?: (_rampart_v1_EventStatus);
  /**
   * For "$custom" events, the application's own event name.
   */
  'name'?: (string);
  /**
   * The user, when known.
   */
  'user'?: (_rampart_v1_User | null);
  /**
   * The end user's request context.
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
   * When the event happened, if not now.
   */
  'timestamp'?: (_google_protobuf_Timestamp | null);
  /**
   * Addresses a device directly, e.g. for "$challenge.succeeded" or "$review.escalated".
   */
  'deviceToken'?: (string);
}

/**
 * A feedback event for Track and TrackStream, e.g. "$challenge.succeeded", "$login.failed",
 * "$password_reset.succeeded", "$review.escalated", "$incident.mitigated".
 */
export interface TrackRequest__Output {
  /**
   * Event name, or an event type combined with `status`.
   */
  'event': (string);
  /**
   * The status of the event when `event` is a type.
   */
  'status': (_rampart_v1_EventStatus__Output);
  /**
   * For "$custom" events, the application's own event name.
   */
  'name': (string);
  /**
   * The user, when known.
   */
  'user': (_rampart_v1_User__Output | null);
  /**
   * The end user's request context.
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
   * When the event happened, if not now.
   */
  'timestamp': (_google_protobuf_Timestamp__Output | null);
  /**
   * Addresses a device directly, e.g. for "$challenge.succeeded" or "$review.escalated".
   */
  'deviceToken': (string);
}
