// Original file: proto/rampart/v1/scoring.proto

import type { AuthenticateRequest as _rampart_v1_AuthenticateRequest, AuthenticateRequest__Output as _rampart_v1_AuthenticateRequest__Output } from '../../rampart/v1/AuthenticateRequest';
import type { RiskRequest as _rampart_v1_RiskRequest, RiskRequest__Output as _rampart_v1_RiskRequest__Output } from '../../rampart/v1/RiskRequest';
import type { FilterRequest as _rampart_v1_FilterRequest, FilterRequest__Output as _rampart_v1_FilterRequest__Output } from '../../rampart/v1/FilterRequest';

/**
 * One call on a VerdictStream, or the cancellation of one.
 */
export interface VerdictCall {
  /**
   * Chosen by the client, unique among its calls in flight on the stream; the answer carries it.
   */
  'id'?: (number);
  /**
   * The call's deadline, in milliseconds after the server reads the call (what `grpc-timeout`
   * says for a unary call); 0 means none. A call whose deadline has passed starts no further
   * step and is answered DEADLINE_EXCEEDED.
   */
  'timeoutMs'?: (number);
  'authenticate'?: (_rampart_v1_AuthenticateRequest | null);
  'risk'?: (_rampart_v1_RiskRequest | null);
  'filter'?: (_rampart_v1_FilterRequest | null);
  /**
   * Cancels the call in flight with this `id`: no further step of it starts, and it is not
   * answered.
   */
  'cancel'?: (boolean);
  /**
   * The call: the request of the unary RPC of the same name, or a cancellation.
   */
  'call'?: "authenticate"|"risk"|"filter"|"cancel";
}

/**
 * One call on a VerdictStream, or the cancellation of one.
 */
export interface VerdictCall__Output {
  /**
   * Chosen by the client, unique among its calls in flight on the stream; the answer carries it.
   */
  'id': (number);
  /**
   * The call's deadline, in milliseconds after the server reads the call (what `grpc-timeout`
   * says for a unary call); 0 means none. A call whose deadline has passed starts no further
   * step and is answered DEADLINE_EXCEEDED.
   */
  'timeoutMs': (number);
  'authenticate'?: (_rampart_v1_AuthenticateRequest__Output | null);
  'risk'?: (_rampart_v1_RiskRequest__Output | null);
  'filter'?: (_rampart_v1_FilterRequest__Output | null);
  /**
   * Cancels the call in flight with this `id`: no further step of it starts, and it is not
   * answered.
   */
  'cancel'?: (boolean);
  /**
   * The call: the request of the unary RPC of the same name, or a cancellation.
   */
  'call'?: "authenticate"|"risk"|"filter"|"cancel";
}
