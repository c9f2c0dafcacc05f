/** Metadata keys Rampart's gRPC service and its client both read: one spelling for both sides. */

/** Trailer of a failed TrackStream: how many of its events were accepted before the failure. */
export const ACCEPTED_KEY = 'rampart-accepted';

/**
 * Trailer of a failed TrackStream beside ACCEPTED_KEY: every event of the stream that was
 * written, as ranges of positions from 0, inclusive and ascending (`0-36,40-99`). Events are
 * taken in order but written concurrently, so one refused or late may leave later ones written:
 * a client that resends only the events not listed stores none twice (accepted-ranges.ts).
 */
export const ACCEPTED_RANGES_KEY = 'rampart-accepted-ranges';

/**
 * Initial metadata of a VerdictStream: the largest message the server takes (its request size
 * limit), so that a client sends no message the server would refuse as a whole.
 */
export const MAX_MESSAGE_BYTES_KEY = 'rampart-max-message-bytes';
