// Original file: proto/rampart/v1/scoring.proto

import type { Action as _rampart_v1_Action, Action__Output as _rampart_v1_Action__Output } from '../../rampart/v1/Action';
import type { Policy as _rampart_v1_Policy, Policy__Output as _rampart_v1_Policy__Output } from '../../rampart/v1/Policy';
import type { Struct as _google_protobuf_Struct, Struct__Output as _google_protobuf_Struct__Output } from '../../google/protobuf/Struct';

/**
 * The verdict of Authenticate.
 */
export interface AuthenticateResponse {
  /**
   * The recommended action.
   */
  'action'?: (_rampart_v1_Action);
  /**
   * The user the verdict is about; empty when none was sent.
   */
  'userId'?: (string);
  /**
   * The token of the device the event came from; empty when no user was sent. Accepted
   * wherever a device token is (Devices, Track).
   */
  'deviceToken'?: (string);
  /**
   * Risk of the event, in [0, 1]. Low < 0.6 <= medium < 0.9 <= high.
   */
  'risk'?: (number | string);
  /**
   * The policy that decided the action.
   */
  'policy'?: (_rampart_v1_Policy | null);
  /**
   * The signals that fired, by name (`bot_behavior`, `proxy_ip`, `new_device`, ...). Each value
   * may explain the signal, e.g. {"accounts": 7}.
   */
  'signals'?: ({[key: string]: _google_protobuf_Struct});
  /**
   * True when the verdict was computed without all of its state (the user's devices and profile,
   * the velocity counters) because it could not be read within the verdict budget: what was not
   * read counted as unknown.
   */
  'degraded'?: (boolean);
}

/**
 * The verdict of Authenticate.
 */
export interface AuthenticateResponse__Output {
  /**
   * The recommended action.
   */
  'action': (_rampart_v1_Action__Output);
  /**
   * The user the verdict is about; empty when none was sent.
   */
  'userId': (string);
  /**
   * The token of the device the event came from; empty when no user was sent. Accepted
   * wherever a device token is (Devices, Track).
   */
  'deviceToken': (string);
  /**
   * Risk of the event, in [0, 1]. Low < 0.6 <= medium < 0.9 <= high.
   */
  'risk': (number);
  /**
   * The policy that decided the action.
   */
  'policy': (_rampart_v1_Policy__Output | null);
  /**
   * The signals that fired, by name (`bot_behavior`, `proxy_ip`, `new_device`, ...). Each value
   * may explain the signal, e.g. {"accounts": 7}.
   */
  'signals': ({[key: string]: _google_protobuf_Struct__Output});
  /**
   * True when the verdict was computed without all of its state (the user's devices and profile,
   * the velocity counters) because it could not be read within the verdict budget: what was not
   * read counted as unknown.
   */
  'degraded': (boolean);
}
