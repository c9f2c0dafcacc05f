// Original file: proto/rampart/v1/common.proto

import type { Action as _rampart_v1_Action, Action__Output as _rampart_v1_Action__Output } from '../../rampart/v1/Action';

/**
 * The policy that decided a verdict.
 */
export interface Policy {
  /**
   * The policy's identifier (UUID). The environment's catch-all policy when none matched.
   */
  'id'?: (string);
  /**
   * The revision of the policy that was evaluated (UUID); every edit makes a new revision.
   */
  'revision'?: (string);
  /**
   * The policy's name.
   */
  'name'?: (string);
  /**
   * The policy's action (equal to the verdict's action).
   */
  'action'?: (_rampart_v1_Action);
}

/**
 * The policy that decided a verdict.
 */
export interface Policy__Output {
  /**
   * The policy's identifier (UUID). The environment's catch-all policy when none matched.
   */
  'id': (string);
  /**
   * The revision of the policy that was evaluated (UUID); every edit makes a new revision.
   */
  'revision': (string);
  /**
   * The policy's name.
   */
  'name': (string);
  /**
   * The policy's action (equal to the verdict's action).
   */
  'action': (_rampart_v1_Action__Output);
}
