// Original file: proto/rampart/v1/scoring.proto


/**
 * Track's answer: the event was received (not necessarily valid; see the debugger log).
 */
export interface TrackResponse {
}

/**
 * Track's answer: the event was received (not necessarily valid; see the debugger log).
 */
export interface TrackResponse__Output {
}
