// Original file: proto/rampart/v1/scoring.proto


/**
 * TrackStream's answer.
 */
export interface TrackStreamResponse {
  /**
   * How many events of the stream were accepted.
   */
  'accepted'?: (number);
}

/**
 * TrackStream's answer.
 */
export interface TrackStreamResponse__Output {
  /**
   * How many events of the stream were accepted.
   */
  'accepted': (number);
}
