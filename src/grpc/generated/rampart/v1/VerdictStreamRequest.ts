// Original file: proto/rampart/v1/scoring.proto

import type { VerdictCall as _rampart_v1_VerdictCall, VerdictCall__Output as _rampart_v1_VerdictCall__Output } from '../../rampart/v1/VerdictCall';

/**
 * Calls on a VerdictStream: one or more (a client sends at once the calls its callers made
 * while its previous message was being written). Each is handled and answered on its own. A
 * message over the request size limit (100 KiB) is refused as a whole: each of its calls is
 * answered INVALID_ARGUMENT (`payload_too_large`).
 */
export interface VerdictStreamRequest {
  'calls'?: (_rampart_v1_VerdictCall)[];
}

/**
 * Calls on a VerdictStream: one or more (a client sends at once the calls its callers made
 * while its previous message was being written). Each is handled and answered on its own. A
 * message over the request size limit (100 KiB) is refused as a whole: each of its calls is
 * answered INVALID_ARGUMENT (`payload_too_large`).
 */
export interface VerdictStreamRequest__Output {
  'calls': (_rampart_v1_VerdictCall__Output)[];
}
