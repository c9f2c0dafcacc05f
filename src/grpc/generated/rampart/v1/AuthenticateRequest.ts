// Original file: proto/rampart/v1/scoring.proto

import type { EventStatus as _rampart_v1_EventStatus, EventStatus__Output as _rampart_v1_EventStatus__Output } from '../../rampart/v1/EventStatus';
import type { User as _rampart_v1_User, User__Output as _rampart_v1_User__Output } from '../../rampart/v1/User';
import type { Context as _rampart_v1_Context, Context__Output as _rampart_v1_Context__Output } from '../../rampart/v1/Context';
import type { Struct as _google_protobuf_Struct, Struct__Output as _google_protobuf_Struct__Output } from '../../google/protobuf/Struct';
import type { Timestamp as _google_protobuf_Timestamp, Timestamp__Output as _google_protobuf_Timestamp__Output } from '../../google/protobuf/Timestamp';

/**
 * An event for Authenticate.
 */
export interface AuthenticateRequest {
  /**
   * Event name, e.g. "$login.succeeded", or an event type combined with `status`.
   */
  'event'?: (string);
  /**
   * The status of the event when `event` is a type ("$login" + SUCCEEDED).
   */
  'status'?: (_rampart_v1_EventStatus);
  /**
   * The user. `$login.succeeded` needs `user.id`, and should carry `user.email`.
   */
  'user'?: (_rampart_v1_User | null);
  /**
   * The end user's request context. `context.ip` is required.
   */
  'context'?: (_rampart_v1_Context | null);
  /**
   * Identifiers the end user submitted: `email`, `username`, `phone` (e.g. `properties.email` on
   * `$login.attempted`), and any other event properties.
   */
  'properties'?: (_google_protobuf_Struct | null);
  /**
   * The fingerprint token from the client libraries (newer name of `context.client_id`).
   */
  'requestToken'?: (string);
  /**
   * When the event happened, if not now (history import, replay). At most 5 minutes ahead.
   */
  'timestamp'?: (_google_protobuf_Timestamp | null);
}

/**
 * An event for Authenticate.
 */
export interface AuthenticateRequest__Output {
  /**
   * Event name, e.g. "$login.succeeded", or an event type combined with `status`.
   */
  'event': (string);
  /**
   * The status of the event when `event` is a type ("$login" + SUCCEEDED).
   */
  'status': (_rampart_v1_EventStatus__Output);
  /**
   * The user. `$login.succeeded` needs `user.id`, and should carry `user.email`.
   */
  'user': (_rampart_v1_User__Output | null);
  /**
   * The end user's request context. `context.ip` is required.
   */
  'context': (_rampart_v1_Context__Output | null);
  /**
   * Identifiers the end user submitted: `email`, `username`, `phone` (e.g. `properties.email` on
   * `$login.attempted`), and any other event properties.
   */
  'properties': (_google_protobuf_Struct__Output | null);
  /**
   * The fingerprint token from the client libraries (newer name of `context.client_id`).
   */
  'requestToken': (string);
  /**
   * When the event happened, if not now (history import, replay). At most 5 minutes ahead.
   */
  'timestamp': (_google_protobuf_Timestamp__Output | null);
}
