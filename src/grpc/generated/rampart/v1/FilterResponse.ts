// Original file: proto/rampart/v1/scoring.proto

import type { Policy as _rampart_v1_Policy, Policy__Output as _rampart_v1_Policy__Output } from '../../rampart/v1/Policy';
import type { Struct as _google_protobuf_Struct, Struct__Output as _google_protobuf_Struct__Output } from '../../google/protobuf/Struct';

/**
 * The answer of Filter.
 */
export interface FilterResponse {
  /**
   * Risk of the event, in [0, 1].
   */
  'risk'?: (number | string);
  /**
   * The matched policy; its `action` is the recommended action.
   */
  'policy'?: (_rampart_v1_Policy | null);
  /**
   * The signals that fired, by name, each with an optional explanation.
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
 * The answer of Filter.
 */
export interface FilterResponse__Output {
  /**
   * Risk of the event, in [0, 1].
   */
  'risk': (number);
  /**
   * The matched policy; its `action` is the recommended action.
   */
  'policy': (_rampart_v1_Policy__Output | null);
  /**
   * The signals that fired, by name, each with an optional explanation.
   */
  'signals': ({[key: string]: _google_protobuf_Struct__Output});
  /**
   * True when the verdict was computed without all of its state (the user's devices and profile,
   * the velocity counters) because it could not be read within the verdict budget: what was not
   * read counted as unknown.
   */
  'degraded': (boolean);
}
