/**
 * rampart.v1.Scoring: Authenticate, Risk and Filter build the event's command from the message
 * (event-command.ts) and call VerdictService.evaluate; Track and TrackStream call
 * TrackService.receive, as POST /v1/authenticate, /v1/risk, /v1/filter and
 * /v1/track do. VerdictStream carries Authenticate, Risk and Filter calls on one stream, each
 * handled by the same code as its unary RPC.
 */
import {
  Metadata,
  status as Status,
  type handleBidiStreamingCall,
  type handleClientStreamingCall,
  type ServerDuplexStream,
} from '@grpc/grpc-js';
import { performance } from 'node:perf_hooks';
import { DeadlineExceeded, InvalidParameters, Unavailable } from '../core/errors';
import { NotWrittenYet } from '../core/track';
import type { Principal } from '../core/model';
import type { Verdict, VerdictEndpoint } from '../core/verdicts/evaluate';
import type { Caller } from '../core/work-limiter';
import { normaliseError } from '../doors/errors';
import {
  answerError,
  authorised,
  bounded,
  CallCancelled,
  CallSignal,
  deadlineOf,
  principalFrom,
  unary,
  type CallContext,
  type Door,
  type DrainableStream,
} from './call';
import { callError, toStatus } from './errors';
import { callIds, rejection, RejectedMessage } from './guard';
import { codeName } from './observe';
import { authenticateMessage, filterMessage, riskMessage } from './mappers';
import { eventCommand, type EventMessage } from './event-command';
import type { ScoringHandlers } from './generated/rampart/v1/Scoring';
import type { TrackRequest__Output } from './generated/rampart/v1/TrackRequest';
import type { TrackStreamResponse } from './generated/rampart/v1/TrackStreamResponse';
import type { VerdictAnswer } from './generated/rampart/v1/VerdictAnswer';
import type { VerdictCall__Output } from './generated/rampart/v1/VerdictCall';
import type { VerdictStreamRequest__Output } from './generated/rampart/v1/VerdictStreamRequest';
import type { VerdictStreamResponse } from './generated/rampart/v1/VerdictStreamResponse';
import type { AuthenticateResponse } from './generated/rampart/v1/AuthenticateResponse';
import type { RiskResponse } from './generated/rampart/v1/RiskResponse';
import type { FilterResponse } from './generated/rampart/v1/FilterResponse';
import { ACCEPTED_KEY, ACCEPTED_RANGES_KEY, MAX_MESSAGE_BYTES_KEY } from './metadata-keys';
import { acceptedTrailers } from './accepted-ranges';

/** A call as the core's work limiter watches it: gone once cancelled or past its deadline. */
function callerOf(signal: CallSignal): Caller {
  return {
    get gone() {
      return signal.aborted;
    },
    onGone(listener) {
      signal.onAbort(listener);
      return () => signal.offAbort(listener);
    },
  };
}

/** One feedback event, as Track takes it: resolves once it is written. A message the core cannot take goes to the debugger, as on REST. */
function trackOne(
  door: Door,
  principal: Principal,
  m: TrackRequest__Output,
  o: { hold?: boolean } = {},
): Promise<void> {
  // The debugger files rejected payloads by `user_id`, as REST bodies carry it.
  return door.services.track.receive(
    principal,
    { decode: () => eventCommand('track', m), received: { ...m, user_id: m.user?.id || null } },
    o,
  );
}

/** Events of one TrackStream read and not yet written, past which the stream stops reading (HTTP/2 flow control holds the sender). */
export const TRACK_STREAM_WINDOW = 512;
/** How often a stream held back by track's backpressure asks again. */
const BACKPRESSURE_POLL_MS = 20;

/**
 * TrackStream: each event is taken as by Track (written before it counts), in order. The stream
 * reads ahead at most TRACK_STREAM_WINDOW events not yet written, and while track is behind
 * (TrackService.streamBackpressure) it stops reading and holds its next event back, for at most
 * `streamWaitMs`, so that a busy service slows its streams down before it refuses them. The
 * answer counts the events written; when the stream fails part-way (rate limit, a refusal, an
 * event not written in time) its trailers say which were: `rampart-accepted` the count of its
 * first events written, `rampart-accepted-ranges` every one. An event whose write was late is
 * waited for (one more acknowledgement wait) before they are sent, so that the client resends
 * only what was not stored.
 */
function trackStream(door: Door): handleClientStreamingCall<TrackRequest__Output, TrackStreamResponse> {
  return (call, callback) => {
    const track = door.services.track;
    /** One promise per event taken, in order: each settles with whether it was written. */
    const outcomes: Promise<boolean>[] = [];
    const written = () => Promise.all(outcomes);
    bounded(call, async (signal) => {
      // Rate-limited per event below, as each would be one request on REST.
      const principal = await principalFrom(door, call.metadata, call.getPeer(), false);
      return new Promise<TrackStreamResponse>((resolve, reject) => {
        /** Events read and not taken yet, in order (the backpressure holds the first). */
        const inbox: TrackRequest__Output[] = [];
        let unwritten = 0;
        let paused = false;
        let ended = false;
        let finished = false;
        let failed = false;
        /** Since when the first event of the inbox has been held back; null: it is not. */
        let heldSince: number | null = null;
        let poll: NodeJS.Timeout | null = null;
        const pause = () => {
          if (paused) return;
          paused = true;
          call.pause();
        };
        const stop = () => {
          if (poll) clearTimeout(poll);
          poll = null;
          call.removeListener('data', onData);
          call.removeListener('end', onEnd);
          call.removeListener('error', onError);
          signal.offAbort(stop);
        };
        const fail = (err: unknown) => {
          if (failed) return;
          failed = true;
          stop();
          reject(err);
        };
        /** Take the inbox's events, in order, while the window and track's backpressure let it. */
        const take = () => {
          poll = null;
          while (!failed && inbox.length > 0) {
            if (unwritten >= TRACK_STREAM_WINDOW) return pause();
            let why: string | null;
            try {
              why = track.streamBackpressure();
            } catch (err) {
              return fail(err);
            }
            if (why !== null) {
              const now = Date.now();
              heldSince ??= now;
              if (now - heldSince >= track.streamWaitMs) {
                try {
                  track.admitNow();
                } catch (err) {
                  return fail(err);
                }
                return fail(new Unavailable(why));
              }
              pause();
              poll = setTimeout(take, BACKPRESSURE_POLL_MS);
              return;
            }
            heldSince = null;
            const m = inbox.shift() as TrackRequest__Output;
            try {
              const rejected = rejection(m);
              if (rejected) throw rejected;
              door.services.access.take(principal);
            } catch (err) {
              // Refused: none after it is taken, so the trailers stay true.
              return fail(err);
            }
            unwritten++;
            outcomes.push(
              trackOne(door, principal, m, { hold: false })
                .then(
                  () => true,
                  (err: unknown) => {
                    fail(err);
                    return err instanceof NotWrittenYet ? err.written : false;
                  },
                )
                .finally(() => {
                  unwritten--;
                  if (!failed && !finished && !poll && unwritten <= TRACK_STREAM_WINDOW / 2) take();
                }),
            );
          }
          if (failed || finished) return;
          if (inbox.length === 0 && ended) {
            finished = true;
            stop();
            void written().then((w) => (failed ? undefined : resolve({ accepted: w.length })));
          } else if (paused && inbox.length === 0 && unwritten < TRACK_STREAM_WINDOW) {
            paused = false;
            call.resume();
          }
        };
        const onData = (m: TrackRequest__Output) => {
          if (failed) return;
          inbox.push(m);
          if (!poll) take();
        };
        const onEnd = () => {
          ended = true;
          if (!poll) take();
        };
        const onError = (err: Error) => fail(err);
        signal.onAbort(stop);
        call.on('data', onData);
        call.on('end', onEnd);
        call.on('error', onError);
      });
    }).then(
      (res) => callback(null, res),
      (err: unknown) =>
        void written().then((w) =>
          answerError(door, err, (status) => {
            const { first, ranges } = acceptedTrailers(w);
            status.metadata.set(ACCEPTED_KEY, String(first));
            status.metadata.set(ACCEPTED_RANGES_KEY, ranges);
            callback(status);
          }),
        ),
    );
  };
}

type VerdictResult = AuthenticateResponse | RiskResponse | FilterResponse;
type VerdictHandler = (req: EventMessage, ctx: CallContext) => Promise<VerdictResult>;

/** What each verdict RPC does once its caller is known, whichever way the call came. */
function verdictHandlers(door: Door) {
  const handler =
    <Res extends VerdictResult>(endpoint: VerdictEndpoint, encode: (v: Verdict) => Res) =>
    async (req: EventMessage, { principal, signal }: CallContext): Promise<Res> =>
      encode(
        await door.services.verdicts.evaluate(
          principal,
          endpoint,
          eventCommand(endpoint, req),
          callerOf(signal),
        ),
      );
  return {
    authenticate: handler('authenticate', authenticateMessage),
    risk: handler('risk', riskMessage),
    filter: handler('filter', filterMessage),
  };
}

/**
 * Calls in flight at once on one VerdictStream, and answers waiting for the client to take
 * them; beyond either the stream stops reading (HTTP/2 flow control then holds the client back),
 * as `grpc.max_concurrent_streams` bounds unary calls.
 */
export const MAX_CALLS_IN_FLIGHT = 1000;

/** The method the calls of a VerdictStream are counted under in the metrics (one observation per call). */
export const VERDICT_STREAM_METHOD = '/rampart.v1.Scoring/VerdictStream';

/**
 * VerdictStream: each call read is run as its unary RPC would be (guard, authentication with the
 * stream's metadata, rate limit, the call's own deadline, the same handler and error table) and
 * answered in-band with its id as soon as it is done. No timer per call: the deadline is checked
 * before each step, and a call finished after it is answered DEADLINE_EXCEEDED. A cancelled call
 * (every call, when the client cancels the stream) starts nothing more and is not answered.
 *
 * Answers are written as soon as the stream is free: the first at once (at the end of the
 * current microtask queue), those that become ready while a message is being written all
 * together in the next one. A grpc-js stream completes about one message write per event-loop
 * turn, so one message per answer would queue answers behind each other under load.
 *
 * When the client half-closes, or the server drains, the stream reads no further call and ends
 * once every call read is answered; a call it did not read was not started. The initial metadata,
 * sent at once, says how large a message may be (MAX_MESSAGE_BYTES_KEY).
 */
function verdictStream(
  door: Door,
  handlers: Readonly<Record<VerdictEndpoint, VerdictHandler>>,
): handleBidiStreamingCall<VerdictStreamRequest__Output, VerdictStreamResponse> {
  return (call: ServerDuplexStream<VerdictStreamRequest__Output, VerdictStreamResponse>) => {
    const inflight = new Map<number, CallSignal>();
    let closing = false;
    let queued: VerdictAnswer[] = [];
    let writing = false;
    let scheduled = false;
    const over = () => call.cancelled || call.writableEnded;

    const end = () => {
      door.streams?.delete(stream);
      if (!over()) call.end();
    };
    /** Read on only while the calls in flight and the answers not yet written are bounded. */
    const flow = () => {
      if (closing && inflight.size === 0 && queued.length === 0 && !writing) return end();
      const full = inflight.size >= MAX_CALLS_IN_FLIGHT || queued.length >= MAX_CALLS_IN_FLIGHT;
      if (full && !call.isPaused()) call.pause();
      else if (!full && call.isPaused()) call.resume();
    };
    const flush = () => {
      scheduled = false;
      if (writing || over()) return;
      if (queued.length > 0) {
        const answers = queued;
        queued = [];
        writing = true;
        call.write({ answers }, () => {
          writing = false;
          flush();
        });
      }
      flow();
    };
    const answer = (a: VerdictAnswer) => {
      queued.push(a);
      if (!writing && !scheduled) {
        scheduled = true;
        queueMicrotask(flush);
      }
    };
    /** One call of the stream is over (answered, or cancelled): observed as a unary call would be. */
    const observe = (started: number, code: Status) =>
      door.metrics?.call(VERDICT_STREAM_METHOD, codeName(code), (performance.now() - started) / 1000);
    const answerFailure = (id: number, err: unknown, started = performance.now()) => {
      const status = toStatus(normaliseError(err, door.log));
      observe(started, status.code);
      answer({ id, error: callError(status) });
    };

    const stream: DrainableStream = {
      drain: () => {
        closing = true;
        flow();
      },
    };
    const abandon = () => {
      closing = true;
      door.streams?.delete(stream);
      for (const signal of inflight.values()) signal.abort();
      inflight.clear();
    };
    const settle = (id: number, signal: CallSignal) => {
      if (inflight.get(id) !== signal) return;
      inflight.delete(id);
      flow();
    };

    const start = (c: VerdictCall__Output) => {
      const id = c.id;
      if (c.call === 'cancel') {
        const signal = inflight.get(id);
        signal?.abort();
        if (signal) settle(id, signal);
        return;
      }
      const endpoint = c.call;
      const req = endpoint ? c[endpoint] : null;
      if (!endpoint || !req)
        return answerFailure(
          id,
          new InvalidParameters([
            { field: 'call', message: 'is required: authenticate, risk, filter or cancel' },
          ]),
        );
      if (inflight.has(id))
        return answerFailure(
          id,
          new InvalidParameters([{ field: 'id', message: 'is already in flight on this stream' }]),
        );
      const started = performance.now();
      const signal = new CallSignal(c.timeoutMs > 0 ? Date.now() + c.timeoutMs : deadlineOf(call));
      inflight.set(id, signal);
      authorised(door, call, req, signal, handlers[endpoint])
        .then(
          (res) => {
            if (signal.cancelled) return observe(started, Status.CANCELLED);
            if (signal.expired) answerFailure(id, new DeadlineExceeded(), started);
            else {
              observe(started, Status.OK);
              answer({ id, [endpoint]: res });
            }
          },
          (err: unknown) => {
            if (!signal.cancelled && !(err instanceof CallCancelled)) answerFailure(id, err, started);
            else observe(started, Status.CANCELLED);
          },
        )
        .finally(() => settle(id, signal));
    };

    call.on('data', (m: VerdictStreamRequest__Output | RejectedMessage) => {
      if (closing) return; // Not read: not started, not answered; the client may send it again.
      if (m instanceof RejectedMessage) {
        const ids = callIds(m.bytes);
        if (ids) for (const id of ids) answerFailure(id, m.error);
        else {
          // Not even call ids: the stream is not usable.
          abandon();
          if (!over()) call.emit('error', toStatus(m.error));
        }
        return;
      }
      for (const c of m.calls) start(c);
      flow();
    });
    call.on('end', () => stream.drain());
    call.on('cancelled', abandon);
    if (door.maxMessageBytes) {
      const md = new Metadata();
      md.set(MAX_MESSAGE_BYTES_KEY, String(door.maxMessageBytes));
      call.sendMetadata(md);
    }
    door.streams?.add(stream);
    if (door.draining) stream.drain();
  };
}

export function scoringHandlers(door: Door): ScoringHandlers {
  const handlers = verdictHandlers(door);
  return {
    Authenticate: unary(door, handlers.authenticate),
    Risk: unary(door, handlers.risk),
    Filter: unary(door, handlers.filter),
    VerdictStream: verdictStream(door, handlers),
    Track: unary(door, async (req: TrackRequest__Output, { principal }) => {
      await trackOne(door, principal, req);
      return {};
    }),
    TrackStream: trackStream(door),
  };
}
