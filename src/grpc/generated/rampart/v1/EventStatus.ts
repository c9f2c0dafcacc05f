// Original file: proto/rampart/v1/common.proto

/**
 * The newer Castle event form names an event by a type (in `event`) and a status.
 */
export const EventStatus = {
  /**
   * No status: `event` carries the full dotted name, e.g. "$login.succeeded".
   */
  EVENT_STATUS_UNSPECIFIED: 'EVENT_STATUS_UNSPECIFIED',
  /**
   * "$attempted": `event` "$registration" becomes "$registration.attempted".
   */
  EVENT_STATUS_ATTEMPTED: 'EVENT_STATUS_ATTEMPTED',
  /**
   * "$succeeded".
   */
  EVENT_STATUS_SUCCEEDED: 'EVENT_STATUS_SUCCEEDED',
  /**
   * "$failed".
   */
  EVENT_STATUS_FAILED: 'EVENT_STATUS_FAILED',
  /**
   * "$requested" (e.g. `$challenge` + requested).
   */
  EVENT_STATUS_REQUESTED: 'EVENT_STATUS_REQUESTED',
} as const;

/**
 * The newer Castle event form names an event by a type (in `event`) and a status.
 */
export type EventStatus =
  /**
   * No status: `event` carries the full dotted name, e.g. "$login.succeeded".
   */
  | 'EVENT_STATUS_UNSPECIFIED'
  | 0
  /**
   * "$attempted": `event` "$registration" becomes "$registration.attempted".
   */
  | 'EVENT_STATUS_ATTEMPTED'
  | 1
  /**
   * "$succeeded".
   */
  | 'EVENT_STATUS_SUCCEEDED'
  | 2
  /**
   * "$failed".
   */
  | 'EVENT_STATUS_FAILED'
  | 3
  /**
   * "$requested" (e.g. `$challenge` + requested).
   */
  | 'EVENT_STATUS_REQUESTED'
  | 4

/**
 * The newer Castle event form names an event by a type (in `event`) and a status.
 */
export type EventStatus__Output = typeof EventStatus[keyof typeof EventStatus]
