// Original file: proto/rampart/v1/scoring.proto

import type { VerdictAnswer as _rampart_v1_VerdictAnswer, VerdictAnswer__Output as _rampart_v1_VerdictAnswer__Output } from '../../rampart/v1/VerdictAnswer';

/**
 * Answers on a VerdictStream, to calls of any earlier message, in any order.
 */
export interface VerdictStreamResponse {
  'answers'?: (_rampart_v1_VerdictAnswer)[];
}

/**
 * Answers on a VerdictStream, to calls of any earlier message, in any order.
 */
export interface VerdictStreamResponse__Output {
  'answers': (_rampart_v1_VerdictAnswer__Output)[];
}
