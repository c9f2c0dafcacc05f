// Original file: proto/rampart/v1/common.proto

/**
 * The recommended action of a verdict and of a policy.
 */
export const Action = {
  /**
   * Never sent by Rampart.
   */
  ACTION_UNSPECIFIED: 'ACTION_UNSPECIFIED',
  /**
   * Let the user in, or process the request.
   */
  ACTION_ALLOW: 'ACTION_ALLOW',
  /**
   * Ask for a stronger second factor, then report the outcome with Track.
   */
  ACTION_CHALLENGE: 'ACTION_CHALLENGE',
  /**
   * Block the attempt.
   */
  ACTION_DENY: 'ACTION_DENY',
} as const;

/**
 * The recommended action of a verdict and of a policy.
 */
export type Action =
  /**
   * Never sent by Rampart.
   */
  | 'ACTION_UNSPECIFIED'
  | 0
  /**
   * Let the user in, or process the request.
   */
  | 'ACTION_ALLOW'
  | 1
  /**
   * Ask for a stronger second factor, then report the outcome with Track.
   */
  | 'ACTION_CHALLENGE'
  | 2
  /**
   * Block the attempt.
   */
  | 'ACTION_DENY'
  | 3

/**
 * The recommended action of a verdict and of a policy.
 */
export type Action__Output = typeof Action[keyof typeof Action]
