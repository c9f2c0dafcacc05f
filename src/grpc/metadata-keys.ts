/** Metadata keys Rampart's gRPC service and its client both read: one spelling for both sides. */

/** Trailer of a failed TrackStream: how many of its events were accepted before the failure. */
export const ACCEPTED_KEY = 'rampart-accepted';

/**
 * Initial metadata of a VerdictStream: the largest message the server takes (its request size
 * limit), so that a client sends no message the server would refuse as a whole.
 */
export const MAX_MESSAGE_BYTES_KEY = 'rampart-max-message-bytes';
