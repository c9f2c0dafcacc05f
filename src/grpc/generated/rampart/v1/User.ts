// Original file: proto/rampart/v1/common.proto

import type { Timestamp as _google_protobuf_Timestamp, Timestamp__Output as _google_protobuf_Timestamp__Output } from '../../google/protobuf/Timestamp';
import type { Struct as _google_protobuf_Struct, Struct__Output as _google_protobuf_Struct__Output } from '../../google/protobuf/Struct';

/**
 * The user an event is about.
 */
export interface User {
  /**
   * The application's identifier of the user. Required on Risk and on `$login.succeeded`;
   * without it no device is recorded and no webhook is sent.
   */
  'id'?: (string);
  /**
   * The user's e-mail address. Recommended on Authenticate for `$login.succeeded`: without it
   * the verdict is scored on less evidence and names it in its `missing_fields` signal.
   */
  'email'?: (string);
  /**
   * The user's name in the application.
   */
  'username'?: (string);
  /**
   * The user's phone number (E.164 recommended).
   */
  'phone'?: (string);
  /**
   * When the user registered. Devices seen within 60 minutes of registration are approved.
   */
  'registeredAt'?: (_google_protobuf_Timestamp | null);
  /**
   * Other traits of the user (name, plan, ...), stored as given.
   */
  'traits'?: (_google_protobuf_Struct | null);
}

/**
 * The user an event is about.
 */
export interface User__Output {
  /**
   * The application's identifier of the user. Required on Risk and on `$login.succeeded`;
   * without it no device is recorded and no webhook is sent.
   */
  'id': (string);
  /**
   * The user's e-mail address. Recommended on Authenticate for `$login.succeeded`: without it
   * the verdict is scored on less evidence and names it in its `missing_fields` signal.
   */
  'email': (string);
  /**
   * The user's name in the application.
   */
  'username': (string);
  /**
   * The user's phone number (E.164 recommended).
   */
  'phone': (string);
  /**
   * When the user registered. Devices seen within 60 minutes of registration are approved.
   */
  'registeredAt': (_google_protobuf_Timestamp__Output | null);
  /**
   * Other traits of the user (name, plan, ...), stored as given.
   */
  'traits': (_google_protobuf_Struct__Output | null);
}
