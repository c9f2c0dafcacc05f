// Original file: proto/rampart/v1/privacy.proto

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { PurgeRequest as _rampart_v1_PurgeRequest, PurgeRequest__Output as _rampart_v1_PurgeRequest__Output } from '../../rampart/v1/PurgeRequest';
import type { PurgeResponse as _rampart_v1_PurgeResponse, PurgeResponse__Output as _rampart_v1_PurgeResponse__Output } from '../../rampart/v1/PurgeResponse';
import type { RequestAccessRequest as _rampart_v1_RequestAccessRequest, RequestAccessRequest__Output as _rampart_v1_RequestAccessRequest__Output } from '../../rampart/v1/RequestAccessRequest';
import type { RequestAccessResponse as _rampart_v1_RequestAccessResponse, RequestAccessResponse__Output as _rampart_v1_RequestAccessResponse__Output } from '../../rampart/v1/RequestAccessResponse';

/**
 * Data subject requests. Authenticate as for Scoring.
 */
export interface PrivacyClient extends grpc.Client {
  /**
   * Permanently delete the user (or every user with the e-mail address) and every associated
   * record. Afterwards ListUserDevices answers NOT_FOUND for the user. Idempotent: purging an
   * unknown user, or an address no user has, is not an error (`purged_users` 0).
   */
  Purge(argument: _rampart_v1_PurgeRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_rampart_v1_PurgeResponse__Output>): grpc.ClientUnaryCall;
  Purge(argument: _rampart_v1_PurgeRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_rampart_v1_PurgeResponse__Output>): grpc.ClientUnaryCall;
  Purge(argument: _rampart_v1_PurgeRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_rampart_v1_PurgeResponse__Output>): grpc.ClientUnaryCall;
  Purge(argument: _rampart_v1_PurgeRequest, callback: grpc.requestCallback<_rampart_v1_PurgeResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Permanently delete the user (or every user with the e-mail address) and every associated
   * record. Afterwards ListUserDevices answers NOT_FOUND for the user. Idempotent: purging an
   * unknown user, or an address no user has, is not an error (`purged_users` 0).
   */
  purge(argument: _rampart_v1_PurgeRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_rampart_v1_PurgeResponse__Output>): grpc.ClientUnaryCall;
  purge(argument: _rampart_v1_PurgeRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_rampart_v1_PurgeResponse__Output>): grpc.ClientUnaryCall;
  purge(argument: _rampart_v1_PurgeRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_rampart_v1_PurgeResponse__Output>): grpc.ClientUnaryCall;
  purge(argument: _rampart_v1_PurgeRequest, callback: grpc.requestCallback<_rampart_v1_PurgeResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Compile every record of the user into an export and e-mail a signed download link (valid
   * 48 hours) to the environment's verified privacy address. Answers at once with the pending
   * jobs, one per user. NOT_FOUND for an unknown user id, or an e-mail address no user has;
   * INVALID_ARGUMENT (field `privacy_email`) when the environment has no privacy address.
   */
  RequestAccess(argument: _rampart_v1_RequestAccessRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_rampart_v1_RequestAccessResponse__Output>): grpc.ClientUnaryCall;
  RequestAccess(argument: _rampart_v1_RequestAccessRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_rampart_v1_RequestAccessResponse__Output>): grpc.ClientUnaryCall;
  RequestAccess(argument: _rampart_v1_RequestAccessRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_rampart_v1_RequestAccessResponse__Output>): grpc.ClientUnaryCall;
  RequestAccess(argument: _rampart_v1_RequestAccessRequest, callback: grpc.requestCallback<_rampart_v1_RequestAccessResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Compile every record of the user into an export and e-mail a signed download link (valid
   * 48 hours) to the environment's verified privacy address. Answers at once with the pending
   * jobs, one per user. NOT_FOUND for an unknown user id, or an e-mail address no user has;
   * INVALID_ARGUMENT (field `privacy_email`) when the environment has no privacy address.
   */
  requestAccess(argument: _rampart_v1_RequestAccessRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_rampart_v1_RequestAccessResponse__Output>): grpc.ClientUnaryCall;
  requestAccess(argument: _rampart_v1_RequestAccessRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_rampart_v1_RequestAccessResponse__Output>): grpc.ClientUnaryCall;
  requestAccess(argument: _rampart_v1_RequestAccessRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_rampart_v1_RequestAccessResponse__Output>): grpc.ClientUnaryCall;
  requestAccess(argument: _rampart_v1_RequestAccessRequest, callback: grpc.requestCallback<_rampart_v1_RequestAccessResponse__Output>): grpc.ClientUnaryCall;
  
}

/**
 * Data subject requests. Authenticate as for Scoring.
 */
export interface PrivacyHandlers extends grpc.UntypedServiceImplementation {
  /**
   * Permanently delete the user (or every user with the e-mail address) and every associated
   * record. Afterwards ListUserDevices answers NOT_FOUND for the user. Idempotent: purging an
   * unknown user, or an address no user has, is not an error (`purged_users` 0).
   */
  Purge: grpc.handleUnaryCall<_rampart_v1_PurgeRequest__Output, _rampart_v1_PurgeResponse>;
  
  /**
   * Compile every record of the user into an export and e-mail a signed download link (valid
   * 48 hours) to the environment's verified privacy address. Answers at once with the pending
   * jobs, one per user. NOT_FOUND for an unknown user id, or an e-mail address no user has;
   * INVALID_ARGUMENT (field `privacy_email`) when the environment has no privacy address.
   */
  RequestAccess: grpc.handleUnaryCall<_rampart_v1_RequestAccessRequest__Output, _rampart_v1_RequestAccessResponse>;
  
}

export interface PrivacyDefinition extends grpc.ServiceDefinition {
  Purge: MethodDefinition<_rampart_v1_PurgeRequest, _rampart_v1_PurgeResponse, _rampart_v1_PurgeRequest__Output, _rampart_v1_PurgeResponse__Output>
  RequestAccess: MethodDefinition<_rampart_v1_RequestAccessRequest, _rampart_v1_RequestAccessResponse, _rampart_v1_RequestAccessRequest__Output, _rampart_v1_RequestAccessResponse__Output>
}
