/**
 * TrackStream, resumed where the server stopped. Rampart refuses a stream part-way when it cannot
 * take more for now (UNAVAILABLE: its write queue is full, or it holds more than its database
 * writes for good, or an event was not written in time; RESOURCE_EXHAUSTED: the environment's
 * rate limit) and says in its trailers which of the stream's events it wrote: every one in
 * `rampart-accepted-ranges` (events are written concurrently, so a late one may leave later ones
 * written), the count of its first ones in `rampart-accepted`. The client waits (the server's
 * retry-after, else a doubling backoff) and opens a new stream that carries the events not
 * written, in order: every event is sent until taken, none is taken twice.
 *
 * Events go out in streams of at most `chunk` events, so that what a retry may have to send again
 * (everything sent on the current stream) stays bounded however long the caller's iterable is.
 *
 * A failure without the trailer (the connection dropped, the deadline passed) is not retried: the
 * client cannot know what the server took. The error then carries, in the same trailer, the
 * events taken by the streams before it.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import * as grpc from '@grpc/grpc-js';
import { ACCEPTED_KEY, ACCEPTED_RANGES_KEY } from '../grpc/metadata-keys';
import { acceptedOf } from '../grpc/accepted-ranges';

/** The client's error as this module reads it (RampartError). */
export type RampartLikeError = Error & {
  code: grpc.status;
  retryAfterSeconds: number | null;
  metadata: grpc.Metadata;
};

/** What one TrackStream call needs from the client: open a stream, turn its error into the caller's. */
export interface TrackStreamDeps<Req, Err extends RampartLikeError> {
  open: (
    deadline: number,
    callback: (err: grpc.ServiceError | null, res?: { accepted: number }) => void,
  ) => grpc.ClientWritableStream<Req>;
  toError: (err: grpc.ServiceError) => Err;
  /** The error of a call the caller cancelled between two streams. */
  cancelled: (message: string) => Err;
}

export interface TrackStreamSettings<Err> {
  /** Absolute deadline (epoch ms) of the whole call, retries and waits included. */
  deadline: number;
  signal?: AbortSignal;
  /** Most events one stream carries (default TRACK_STREAM_CHUNK). */
  chunk?: number;
  /** Told of each refusal before the wait that follows it. */
  onRetry?: (r: { error: Err; accepted: number; delayMs: number }) => void;
}

export const TRACK_STREAM_CHUNK = 10_000;
const RETRYABLE: ReadonlySet<grpc.status> = new Set([
  grpc.status.UNAVAILABLE,
  grpc.status.RESOURCE_EXHAUSTED,
]);
/** Retries in a row without an event taken; the next refusal is the caller's. */
const RETRIES = 8;
/** The first wait after a refusal without retry-after (doubling, starting again after progress). */
const BACKOFF_MS = 100;
const MAX_BACKOFF_MS = 2_000;

interface Sent<Req> {
  /** Every event written on the stream (or pulled for it after it ended), in order. */
  sent: Req[];
  /** The caller's iterable has no more events. */
  drained: boolean;
}

/** Which of the `sent` events the failed stream's server took, from its trailers (null: it did not say). */
function takenBy(md: grpc.Metadata, sent: number): boolean[] | null {
  const text = (key: string) => {
    const v = md.get(key)[0];
    return typeof v === 'string' ? v : undefined;
  };
  return acceptedOf(text(ACCEPTED_KEY), text(ACCEPTED_RANGES_KEY), sent);
}

/** A stream the server ended with an error, and what was sent on it. */
interface Refused<Req, Err> extends Sent<Req> {
  error: Err;
}

/**
 * One stream: `carry` first (events a refused stream did not take), then events from `source`
 * until the stream holds `chunk` or the source ends. Resolves with what the server took and what
 * was sent; rejects with a Refused.
 */
function oneStream<Req, Err extends RampartLikeError>(
  deps: TrackStreamDeps<Req, Err>,
  s: TrackStreamSettings<Err>,
  carry: readonly Req[],
  source: AsyncIterator<Req> | Iterator<Req> | null,
  chunk: number,
): Promise<{ accepted: number } & Sent<Req>> {
  const sent: Req[] = [];
  let drained = source === null;
  return new Promise((resolve, reject) => {
    let finished = false;
    let wake: (() => void) | null = null;
    const call = deps.open(s.deadline, (err, res) => {
      finished = true;
      wake?.();
      s.signal?.removeEventListener('abort', cancel);
      // Once the writer has stopped pulling, so that `sent` holds every event taken from the source.
      void writing.then(() => {
        if (err) reject({ error: deps.toError(err), sent, drained } satisfies Refused<Req, Err>);
        else resolve({ accepted: res?.accepted ?? 0, sent, drained });
      });
    });
    const cancel = () => call.cancel();
    s.signal?.addEventListener('abort', cancel, { once: true });
    /** Write one event; false once the stream has ended (the event stays in `sent`, to be carried). */
    const write = async (event: Req): Promise<boolean> => {
      sent.push(event);
      if (finished) return false;
      if (!call.write(event) && !finished) {
        // Until the stream takes more, or ends (a refused stream never drains).
        await new Promise<void>((r) => {
          wake = r;
          call.once('drain', r);
        });
        if (wake) call.off('drain', wake);
        wake = null;
      }
      return !finished;
    };
    const writing = (async () => {
      try {
        for (const event of carry) if (!(await write(event))) return;
        while (source && sent.length < chunk && !finished) {
          const next = await source.next();
          if (next.done) {
            drained = true;
            break;
          }
          if (!(await write(next.value))) return;
        }
        if (!finished) call.end();
      } catch {
        // The caller's iterable threw: the stream ends as cancelled.
        call.cancel();
      }
    })();
  });
}

/** Send every event of `events` on as many TrackStreams as it takes; resolves with how many Rampart took. */
export async function trackStream<Req, Err extends RampartLikeError>(
  deps: TrackStreamDeps<Req, Err>,
  events: Iterable<Req> | AsyncIterable<Req>,
  s: TrackStreamSettings<Err>,
): Promise<{ accepted: number }> {
  const source: AsyncIterator<Req> | Iterator<Req> =
    Symbol.asyncIterator in events
      ? (events as AsyncIterable<Req>)[Symbol.asyncIterator]()
      : (events as Iterable<Req>)[Symbol.iterator]();
  const chunk = Math.max(1, s.chunk ?? TRACK_STREAM_CHUNK);
  let total = 0;
  let carry: Req[] = [];
  let drained = false;
  let refusals = 0;
  while (!drained || carry.length > 0) {
    if (s.signal?.aborted) {
      const err = deps.cancelled('cancelled by the caller');
      err.metadata.set(ACCEPTED_KEY, String(total));
      throw err;
    }
    try {
      const r: { accepted: number } & Sent<Req> = await oneStream(
        deps,
        s,
        carry,
        drained ? null : source,
        chunk,
      );
      total += r.accepted;
      drained = r.drained;
      carry = [];
      refusals = 0;
    } catch (caught) {
      const { error: err, sent, drained: ended } = caught as Refused<Req, Err>;
      drained = ended;
      const taken = takenBy(err.metadata, sent.length);
      if (taken !== null) {
        const count = taken.filter(Boolean).length;
        total += count;
        carry = sent.filter((_, i) => !taken[i]);
        if (count > 0) refusals = 0;
      }
      const delayMs =
        err.code === grpc.status.RESOURCE_EXHAUSTED && err.retryAfterSeconds !== null
          ? Math.max(0, err.retryAfterSeconds * 1000)
          : Math.min(MAX_BACKOFF_MS, BACKOFF_MS * 2 ** refusals);
      refusals++;
      const retry =
        taken !== null &&
        RETRYABLE.has(err.code) &&
        refusals <= RETRIES &&
        !s.signal?.aborted &&
        Date.now() + delayMs < s.deadline;
      if (!retry) {
        // The trailer says what the whole call took, the streams before this one included.
        err.metadata.set(ACCEPTED_KEY, String(total));
        throw err;
      }
      s.onRetry?.({ error: err, accepted: total, delayMs });
      // An abort ends the wait; the loop then answers CANCELLED.
      await sleep(delayMs, undefined, s.signal ? { signal: s.signal } : {}).catch(() => undefined);
    }
  }
  return { accepted: total };
}
