// Original file: proto/rampart/v1/scoring.proto

import type { AuthenticateResponse as _rampart_v1_AuthenticateResponse, AuthenticateResponse__Output as _rampart_v1_AuthenticateResponse__Output } from '../../rampart/v1/AuthenticateResponse';
import type { RiskResponse as _rampart_v1_RiskResponse, RiskResponse__Output as _rampart_v1_RiskResponse__Output } from '../../rampart/v1/RiskResponse';
import type { FilterResponse as _rampart_v1_FilterResponse, FilterResponse__Output as _rampart_v1_FilterResponse__Output } from '../../rampart/v1/FilterResponse';
import type { CallError as _rampart_v1_CallError, CallError__Output as _rampart_v1_CallError__Output } from '../../rampart/v1/CallError';

/**
 * The answer to one call of a VerdictStream.
 */
export interface VerdictAnswer {
  /**
   * The `id` of the call.
   */
  'id'?: (number);
  'authenticate'?: (_rampart_v1_AuthenticateResponse | null);
  'risk'?: (_rampart_v1_RiskResponse | null);
  'filter'?: (_rampart_v1_FilterResponse | null);
  'error'?: (_rampart_v1_CallError | null);
  /**
   * The unary RPC's answer, or its error.
   */
  'result'?: "authenticate"|"risk"|"filter"|"error";
}

/**
 * The answer to one call of a VerdictStream.
 */
export interface VerdictAnswer__Output {
  /**
   * The `id` of the call.
   */
  'id': (number);
  'authenticate'?: (_rampart_v1_AuthenticateResponse__Output | null);
  'risk'?: (_rampart_v1_RiskResponse__Output | null);
  'filter'?: (_rampart_v1_FilterResponse__Output | null);
  'error'?: (_rampart_v1_CallError__Output | null);
  /**
   * The unary RPC's answer, or its error.
   */
  'result'?: "authenticate"|"risk"|"filter"|"error";
}
