// Original file: proto/rampart/v1/scoring.proto


/**
 * A call of a stream that failed: what the unary call would have answered as its status and
 * trailing metadata. Field paths (google.rpc.BadRequest) are paths of the call's request message
 * (`user.id`, `context.ip`), as for the unary call.
 */
export interface CallError {
  /**
   * The gRPC status code (3 INVALID_ARGUMENT, 16 UNAUTHENTICATED, 8 RESOURCE_EXHAUSTED, ...).
   */
  'code'?: (number);
  /**
   * The status message.
   */
  'message'?: (string);
  /**
   * A google.rpc.Status with its details (ErrorInfo, BadRequest, RetryInfo): the bytes a unary
   * call carries in `grpc-status-details-bin`.
   */
  'details'?: (Buffer | Uint8Array | string);
  /**
   * The unary call's other trailing metadata: `rampart-error-type`, `retry-after`,
   * `rampart-correlation-id`.
   */
  'metadata'?: ({[key: string]: string});
}

/**
 * A call of a stream that failed: what the unary call would have answered as its status and
 * trailing metadata. Field paths (google.rpc.BadRequest) are paths of the call's request message
 * (`user.id`, `context.ip`), as for the unary call.
 */
export interface CallError__Output {
  /**
   * The gRPC status code (3 INVALID_ARGUMENT, 16 UNAUTHENTICATED, 8 RESOURCE_EXHAUSTED, ...).
   */
  'code': (number);
  /**
   * The status message.
   */
  'message': (string);
  /**
   * A google.rpc.Status with its details (ErrorInfo, BadRequest, RetryInfo): the bytes a unary
   * call carries in `grpc-status-details-bin`.
   */
  'details': (Buffer);
  /**
   * The unary call's other trailing metadata: `rampart-error-type`, `retry-after`,
   * `rampart-correlation-id`.
   */
  'metadata': ({[key: string]: string});
}
