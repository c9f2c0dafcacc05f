// Original file: proto/rampart/v1/scoring.proto

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { AuthenticateRequest as _rampart_v1_AuthenticateRequest, AuthenticateRequest__Output as _rampart_v1_AuthenticateRequest__Output } from '../../rampart/v1/AuthenticateRequest';
import type { AuthenticateResponse as _rampart_v1_AuthenticateResponse, AuthenticateResponse__Output as _rampart_v1_AuthenticateResponse__Output } from '../../rampart/v1/AuthenticateResponse';
import type { FilterRequest as _rampart_v1_FilterRequest, FilterRequest__Output as _rampart_v1_FilterRequest__Output } from '../../rampart/v1/FilterRequest';
import type { FilterResponse as _rampart_v1_FilterResponse, FilterResponse__Output as _rampart_v1_FilterResponse__Output } from '../../rampart/v1/FilterResponse';
import type { RiskRequest as _rampart_v1_RiskRequest, RiskRequest__Output as _rampart_v1_RiskRequest__Output } from '../../rampart/v1/RiskRequest';
import type { RiskResponse as _rampart_v1_RiskResponse, RiskResponse__Output as _rampart_v1_RiskResponse__Output } from '../../rampart/v1/RiskResponse';
import type { TrackRequest as _rampart_v1_TrackRequest, TrackRequest__Output as _rampart_v1_TrackRequest__Output } from '../../rampart/v1/TrackRequest';
import type { TrackResponse as _rampart_v1_TrackResponse, TrackResponse__Output as _rampart_v1_TrackResponse__Output } from '../../rampart/v1/TrackResponse';
import type { TrackStreamResponse as _rampart_v1_TrackStreamResponse, TrackStreamResponse__Output as _rampart_v1_TrackStreamResponse__Output } from '../../rampart/v1/TrackStreamResponse';
import type { VerdictStreamRequest as _rampart_v1_VerdictStreamRequest, VerdictStreamRequest__Output as _rampart_v1_VerdictStreamRequest__Output } from '../../rampart/v1/VerdictStreamRequest';
import type { VerdictStreamResponse as _rampart_v1_VerdictStreamResponse, VerdictStreamResponse__Output as _rampart_v1_VerdictStreamResponse__Output } from '../../rampart/v1/VerdictStreamResponse';

/**
 * Scores user events. Authenticate with the environment's API secret in metadata:
 * `authorization: Bearer <secret>` or `authorization: Basic base64(":<secret>")`.
 */
export interface ScoringClient extends grpc.Client {
  /**
   * Older-style verdict (POST /v1/authenticate): `$login.succeeded`, `$login.attempted`,
   * `$registration.attempted`, `$password_reset_request.succeeded`.
   */
  Authenticate(argument: _rampart_v1_AuthenticateRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_rampart_v1_AuthenticateResponse__Output>): grpc.ClientUnaryCall;
  Authenticate(argument: _rampart_v1_AuthenticateRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_rampart_v1_AuthenticateResponse__Output>): grpc.ClientUnaryCall;
  Authenticate(argument: _rampart_v1_AuthenticateRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_rampart_v1_AuthenticateResponse__Output>): grpc.ClientUnaryCall;
  Authenticate(argument: _rampart_v1_AuthenticateRequest, callback: grpc.requestCallback<_rampart_v1_AuthenticateResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Older-style verdict (POST /v1/authenticate): `$login.succeeded`, `$login.attempted`,
   * `$registration.attempted`, `$password_reset_request.succeeded`.
   */
  authenticate(argument: _rampart_v1_AuthenticateRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_rampart_v1_AuthenticateResponse__Output>): grpc.ClientUnaryCall;
  authenticate(argument: _rampart_v1_AuthenticateRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_rampart_v1_AuthenticateResponse__Output>): grpc.ClientUnaryCall;
  authenticate(argument: _rampart_v1_AuthenticateRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_rampart_v1_AuthenticateResponse__Output>): grpc.ClientUnaryCall;
  authenticate(argument: _rampart_v1_AuthenticateRequest, callback: grpc.requestCallback<_rampart_v1_AuthenticateResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Early filtering of bots and bad traffic, typically at registration (POST /v1/filter).
   */
  Filter(argument: _rampart_v1_FilterRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_rampart_v1_FilterResponse__Output>): grpc.ClientUnaryCall;
  Filter(argument: _rampart_v1_FilterRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_rampart_v1_FilterResponse__Output>): grpc.ClientUnaryCall;
  Filter(argument: _rampart_v1_FilterRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_rampart_v1_FilterResponse__Output>): grpc.ClientUnaryCall;
  Filter(argument: _rampart_v1_FilterRequest, callback: grpc.requestCallback<_rampart_v1_FilterResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Early filtering of bots and bad traffic, typically at registration (POST /v1/filter).
   */
  filter(argument: _rampart_v1_FilterRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_rampart_v1_FilterResponse__Output>): grpc.ClientUnaryCall;
  filter(argument: _rampart_v1_FilterRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_rampart_v1_FilterResponse__Output>): grpc.ClientUnaryCall;
  filter(argument: _rampart_v1_FilterRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_rampart_v1_FilterResponse__Output>): grpc.ClientUnaryCall;
  filter(argument: _rampart_v1_FilterRequest, callback: grpc.requestCallback<_rampart_v1_FilterResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Risk evaluation of an event of a known user, typically a login (POST /v1/risk).
   */
  Risk(argument: _rampart_v1_RiskRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_rampart_v1_RiskResponse__Output>): grpc.ClientUnaryCall;
  Risk(argument: _rampart_v1_RiskRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_rampart_v1_RiskResponse__Output>): grpc.ClientUnaryCall;
  Risk(argument: _rampart_v1_RiskRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_rampart_v1_RiskResponse__Output>): grpc.ClientUnaryCall;
  Risk(argument: _rampart_v1_RiskRequest, callback: grpc.requestCallback<_rampart_v1_RiskResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Risk evaluation of an event of a known user, typically a login (POST /v1/risk).
   */
  risk(argument: _rampart_v1_RiskRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_rampart_v1_RiskResponse__Output>): grpc.ClientUnaryCall;
  risk(argument: _rampart_v1_RiskRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_rampart_v1_RiskResponse__Output>): grpc.ClientUnaryCall;
  risk(argument: _rampart_v1_RiskRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_rampart_v1_RiskResponse__Output>): grpc.ClientUnaryCall;
  risk(argument: _rampart_v1_RiskRequest, callback: grpc.requestCallback<_rampart_v1_RiskResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * One feedback event (POST /v1/track). Answers as soon as the event is queued. A malformed
   * event is not an error: it is kept, with the reason, in the environment's debugger log.
   */
  Track(argument: _rampart_v1_TrackRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_rampart_v1_TrackResponse__Output>): grpc.ClientUnaryCall;
  Track(argument: _rampart_v1_TrackRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_rampart_v1_TrackResponse__Output>): grpc.ClientUnaryCall;
  Track(argument: _rampart_v1_TrackRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_rampart_v1_TrackResponse__Output>): grpc.ClientUnaryCall;
  Track(argument: _rampart_v1_TrackRequest, callback: grpc.requestCallback<_rampart_v1_TrackResponse__Output>): grpc.ClientUnaryCall;
  /**
   * One feedback event (POST /v1/track). Answers as soon as the event is queued. A malformed
   * event is not an error: it is kept, with the reason, in the environment's debugger log.
   */
  track(argument: _rampart_v1_TrackRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_rampart_v1_TrackResponse__Output>): grpc.ClientUnaryCall;
  track(argument: _rampart_v1_TrackRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_rampart_v1_TrackResponse__Output>): grpc.ClientUnaryCall;
  track(argument: _rampart_v1_TrackRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_rampart_v1_TrackResponse__Output>): grpc.ClientUnaryCall;
  track(argument: _rampart_v1_TrackRequest, callback: grpc.requestCallback<_rampart_v1_TrackResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Many feedback events on one stream, each handled as by Track. The answer counts the events
   * accepted. If the stream fails part-way (rate limit, overload, shutdown), trailing metadata
   * says which were accepted: `rampart-accepted-ranges` every one, as ranges of positions from 0
   * (`0-36,40-99`), and `rampart-accepted` the count of the stream's first ones.
   */
  TrackStream(metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_rampart_v1_TrackStreamResponse__Output>): grpc.ClientWritableStream<_rampart_v1_TrackRequest>;
  TrackStream(metadata: grpc.Metadata, callback: grpc.requestCallback<_rampart_v1_TrackStreamResponse__Output>): grpc.ClientWritableStream<_rampart_v1_TrackRequest>;
  TrackStream(options: grpc.CallOptions, callback: grpc.requestCallback<_rampart_v1_TrackStreamResponse__Output>): grpc.ClientWritableStream<_rampart_v1_TrackRequest>;
  TrackStream(callback: grpc.requestCallback<_rampart_v1_TrackStreamResponse__Output>): grpc.ClientWritableStream<_rampart_v1_TrackRequest>;
  /**
   * Many feedback events on one stream, each handled as by Track. The answer counts the events
   * accepted. If the stream fails part-way (rate limit, overload, shutdown), trailing metadata
   * says which were accepted: `rampart-accepted-ranges` every one, as ranges of positions from 0
   * (`0-36,40-99`), and `rampart-accepted` the count of the stream's first ones.
   */
  trackStream(metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_rampart_v1_TrackStreamResponse__Output>): grpc.ClientWritableStream<_rampart_v1_TrackRequest>;
  trackStream(metadata: grpc.Metadata, callback: grpc.requestCallback<_rampart_v1_TrackStreamResponse__Output>): grpc.ClientWritableStream<_rampart_v1_TrackRequest>;
  trackStream(options: grpc.CallOptions, callback: grpc.requestCallback<_rampart_v1_TrackStreamResponse__Output>): grpc.ClientWritableStream<_rampart_v1_TrackRequest>;
  trackStream(callback: grpc.requestCallback<_rampart_v1_TrackStreamResponse__Output>): grpc.ClientWritableStream<_rampart_v1_TrackRequest>;
  
  /**
   * Authenticate, Risk and Filter calls multiplexed on one long-lived stream, for callers that
   * score at high rates: a call on an open stream costs client and server a fraction of what a
   * unary call costs in HTTP/2 stream set-up and gRPC call machinery, and calls made at the same
   * moment share one message. Each call is handled exactly as the unary RPC of the same name
   * (authenticated with the stream's metadata, rate-limited, bounded by its own deadline, same
   * answers and errors) and answered, in any order, by one VerdictAnswer with the call's `id`; a
   * cancelled call is not answered. The server ends the stream (status OK) when the client
   * half-closes it or the server drains, once every call it read is answered; calls it did not
   * read were not started and are not answered, so they can be sent again on a new stream.
   */
  VerdictStream(metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientDuplexStream<_rampart_v1_VerdictStreamRequest, _rampart_v1_VerdictStreamResponse__Output>;
  VerdictStream(options?: grpc.CallOptions): grpc.ClientDuplexStream<_rampart_v1_VerdictStreamRequest, _rampart_v1_VerdictStreamResponse__Output>;
  /**
   * Authenticate, Risk and Filter calls multiplexed on one long-lived stream, for callers that
   * score at high rates: a call on an open stream costs client and server a fraction of what a
   * unary call costs in HTTP/2 stream set-up and gRPC call machinery, and calls made at the same
   * moment share one message. Each call is handled exactly as the unary RPC of the same name
   * (authenticated with the stream's metadata, rate-limited, bounded by its own deadline, same
   * answers and errors) and answered, in any order, by one VerdictAnswer with the call's `id`; a
   * cancelled call is not answered. The server ends the stream (status OK) when the client
   * half-closes it or the server drains, once every call it read is answered; calls it did not
   * read were not started and are not answered, so they can be sent again on a new stream.
   */
  verdictStream(metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientDuplexStream<_rampart_v1_VerdictStreamRequest, _rampart_v1_VerdictStreamResponse__Output>;
  verdictStream(options?: grpc.CallOptions): grpc.ClientDuplexStream<_rampart_v1_VerdictStreamRequest, _rampart_v1_VerdictStreamResponse__Output>;
  
}

/**
 * Scores user events. Authenticate with the environment's API secret in metadata:
 * `authorization: Bearer <secret>` or `authorization: Basic base64(":<secret>")`.
 */
export interface ScoringHandlers extends grpc.UntypedServiceImplementation {
  /**
   * Older-style verdict (POST /v1/authenticate): `$login.succeeded`, `$login.attempted`,
   * `$registration.attempted`, `$password_reset_request.succeeded`.
   */
  Authenticate: grpc.handleUnaryCall<_rampart_v1_AuthenticateRequest__Output, _rampart_v1_AuthenticateResponse>;
  
  /**
   * Early filtering of bots and bad traffic, typically at registration (POST /v1/filter).
   */
  Filter: grpc.handleUnaryCall<_rampart_v1_FilterRequest__Output, _rampart_v1_FilterResponse>;
  
  /**
   * Risk evaluation of an event of a known user, typically a login (POST /v1/risk).
   */
  Risk: grpc.handleUnaryCall<_rampart_v1_RiskRequest__Output, _rampart_v1_RiskResponse>;
  
  /**
   * One feedback event (POST /v1/track). Answers as soon as the event is queued. A malformed
   * event is not an error: it is kept, with the reason, in the environment's debugger log.
   */
  Track: grpc.handleUnaryCall<_rampart_v1_TrackRequest__Output, _rampart_v1_TrackResponse>;
  
  /**
   * Many feedback events on one stream, each handled as by Track. The answer counts the events
   * accepted. If the stream fails part-way (rate limit, overload, shutdown), trailing metadata
   * says which were accepted: `rampart-accepted-ranges` every one, as ranges of positions from 0
   * (`0-36,40-99`), and `rampart-accepted` the count of the stream's first ones.
   */
  TrackStream: grpc.handleClientStreamingCall<_rampart_v1_TrackRequest__Output, _rampart_v1_TrackStreamResponse>;
  
  /**
   * Authenticate, Risk and Filter calls multiplexed on one long-lived stream, for callers that
   * score at high rates: a call on an open stream costs client and server a fraction of what a
   * unary call costs in HTTP/2 stream set-up and gRPC call machinery, and calls made at the same
   * moment share one message. Each call is handled exactly as the unary RPC of the same name
   * (authenticated with the stream's metadata, rate-limited, bounded by its own deadline, same
   * answers and errors) and answered, in any order, by one VerdictAnswer with the call's `id`; a
   * cancelled call is not answered. The server ends the stream (status OK) when the client
   * half-closes it or the server drains, once every call it read is answered; calls it did not
   * read were not started and are not answered, so they can be sent again on a new stream.
   */
  VerdictStream: grpc.handleBidiStreamingCall<_rampart_v1_VerdictStreamRequest__Output, _rampart_v1_VerdictStreamResponse>;
  
}

export interface ScoringDefinition extends grpc.ServiceDefinition {
  Authenticate: MethodDefinition<_rampart_v1_AuthenticateRequest, _rampart_v1_AuthenticateResponse, _rampart_v1_AuthenticateRequest__Output, _rampart_v1_AuthenticateResponse__Output>
  Filter: MethodDefinition<_rampart_v1_FilterRequest, _rampart_v1_FilterResponse, _rampart_v1_FilterRequest__Output, _rampart_v1_FilterResponse__Output>
  Risk: MethodDefinition<_rampart_v1_RiskRequest, _rampart_v1_RiskResponse, _rampart_v1_RiskRequest__Output, _rampart_v1_RiskResponse__Output>
  Track: MethodDefinition<_rampart_v1_TrackRequest, _rampart_v1_TrackResponse, _rampart_v1_TrackRequest__Output, _rampart_v1_TrackResponse__Output>
  TrackStream: MethodDefinition<_rampart_v1_TrackRequest, _rampart_v1_TrackStreamResponse, _rampart_v1_TrackRequest__Output, _rampart_v1_TrackStreamResponse__Output>
  VerdictStream: MethodDefinition<_rampart_v1_VerdictStreamRequest, _rampart_v1_VerdictStreamResponse, _rampart_v1_VerdictStreamRequest__Output, _rampart_v1_VerdictStreamResponse__Output>
}
