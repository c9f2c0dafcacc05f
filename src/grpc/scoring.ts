/**
 * rampart.v1.Scoring: Authenticate, Risk and Filter call VerdictService.evaluate; Track and
 * TrackStream call TrackService.accept, as POST /v1/authenticate, /v1/risk, /v1/filter and
 * /v1/track do.
 */
import type { handleClientStreamingCall } from '@grpc/grpc-js';
import { DomainError } from '../core/errors';
import type { Principal } from '../core/model';
import type { Verdict, VerdictEndpoint } from '../core/verdicts/evaluate';
import { answerError, bounded, principalFrom, unary, type Door } from './call';
import { rejection } from './guard';
import { authenticateMessage, filterMessage, riskMessage } from './mappers';
import { eventBody, eventFieldPath, type EventMessage } from './translate';
import type { ScoringHandlers } from './generated/rampart/v1/Scoring';
import type { TrackRequest__Output } from './generated/rampart/v1/TrackRequest';
import type { TrackStreamResponse } from './generated/rampart/v1/TrackStreamResponse';

/** Trailer of a failed TrackStream: how many of its events were accepted before the failure. */
export const ACCEPTED_KEY = 'rampart-accepted';

/** Queue one feedback event. A message the core cannot take goes to the debugger, as on REST. */
function track(door: Door, principal: Principal, m: TrackRequest__Output): void {
  let body: Record<string, unknown>;
  try {
    body = eventBody('track', m);
  } catch (err) {
    if (!(err instanceof DomainError)) throw err;
    // The debugger files rejected payloads by `user_id`, as REST bodies carry it.
    door.services.track.reject(principal, { ...m, user_id: m.user?.id || null }, undefined, err);
    return;
  }
  door.services.track.accept(principal, body);
}

function trackStream(door: Door): handleClientStreamingCall<TrackRequest__Output, TrackStreamResponse> {
  return (call, callback) => {
    let accepted = 0;
    bounded(call, async (signal) => {
      // Rate-limited per event below, as each would be one request on REST.
      const principal = await principalFrom(door, call.metadata, false);
      return new Promise<TrackStreamResponse>((resolve, reject) => {
        const stop = () => {
          call.removeListener('data', onData);
          call.removeListener('end', onEnd);
          call.removeListener('error', onError);
          signal.offAbort(stop);
        };
        const onData = (m: TrackRequest__Output) => {
          try {
            const rejected = rejection(m);
            if (rejected) throw rejected;
            door.services.access.take(principal);
            track(door, principal, m);
            accepted++;
          } catch (err) {
            stop();
            reject(err);
          }
        };
        const onEnd = () => {
          stop();
          resolve({ accepted });
        };
        const onError = (err: Error) => {
          stop();
          reject(err);
        };
        signal.onAbort(stop);
        call.on('data', onData);
        call.on('end', onEnd);
        call.on('error', onError);
      });
    }).then(
      (res) => callback(null, res),
      (err: unknown) =>
        answerError(door, err, eventFieldPath('track'), (status) => {
          status.metadata.set(ACCEPTED_KEY, String(accepted));
          callback(status);
        }),
    );
  };
}

export function scoringHandlers(door: Door): ScoringHandlers {
  const verdict = <Req extends EventMessage, Res>(endpoint: VerdictEndpoint, encode: (v: Verdict) => Res) =>
    unary<Req, Res>(door, async (req, { principal }) => encode(await door.services.verdicts.evaluate(principal, endpoint, eventBody(endpoint, req))), eventFieldPath(endpoint));
  return {
    Authenticate: verdict('authenticate', authenticateMessage),
    Risk: verdict('risk', riskMessage),
    Filter: verdict('filter', filterMessage),
    Track: unary(door, async (req: TrackRequest__Output, { principal }) => {
      track(door, principal, req);
      return {};
    }),
    TrackStream: trackStream(door),
  };
}
