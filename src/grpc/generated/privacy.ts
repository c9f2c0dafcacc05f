import type * as grpc from '@grpc/grpc-js';
import type { EnumTypeDefinition, MessageTypeDefinition } from '@grpc/proto-loader';

import type { Timestamp as _google_protobuf_Timestamp, Timestamp__Output as _google_protobuf_Timestamp__Output } from './google/protobuf/Timestamp';
import type { AccessJob as _rampart_v1_AccessJob, AccessJob__Output as _rampart_v1_AccessJob__Output } from './rampart/v1/AccessJob';
import type { PrivacyClient as _rampart_v1_PrivacyClient, PrivacyDefinition as _rampart_v1_PrivacyDefinition } from './rampart/v1/Privacy';
import type { PurgeRequest as _rampart_v1_PurgeRequest, PurgeRequest__Output as _rampart_v1_PurgeRequest__Output } from './rampart/v1/PurgeRequest';
import type { PurgeResponse as _rampart_v1_PurgeResponse, PurgeResponse__Output as _rampart_v1_PurgeResponse__Output } from './rampart/v1/PurgeResponse';
import type { RequestAccessRequest as _rampart_v1_RequestAccessRequest, RequestAccessRequest__Output as _rampart_v1_RequestAccessRequest__Output } from './rampart/v1/RequestAccessRequest';
import type { RequestAccessResponse as _rampart_v1_RequestAccessResponse, RequestAccessResponse__Output as _rampart_v1_RequestAccessResponse__Output } from './rampart/v1/RequestAccessResponse';

type SubtypeConstructor<Constructor extends new (...args: any) => any, Subtype> = {
  new(...args: ConstructorParameters<Constructor>): Subtype;
};

export interface ProtoGrpcType {
  google: {
    protobuf: {
      Timestamp: MessageTypeDefinition<_google_protobuf_Timestamp, _google_protobuf_Timestamp__Output>
    }
  }
  rampart: {
    v1: {
      AccessJob: MessageTypeDefinition<_rampart_v1_AccessJob, _rampart_v1_AccessJob__Output>
      AccessJobStatus: EnumTypeDefinition
      /**
       * Data subject requests. Authenticate as for Scoring.
       */
      Privacy: SubtypeConstructor<typeof grpc.Client, _rampart_v1_PrivacyClient> & { service: _rampart_v1_PrivacyDefinition }
      PurgeRequest: MessageTypeDefinition<_rampart_v1_PurgeRequest, _rampart_v1_PurgeRequest__Output>
      PurgeResponse: MessageTypeDefinition<_rampart_v1_PurgeResponse, _rampart_v1_PurgeResponse__Output>
      RequestAccessRequest: MessageTypeDefinition<_rampart_v1_RequestAccessRequest, _rampart_v1_RequestAccessRequest__Output>
      RequestAccessResponse: MessageTypeDefinition<_rampart_v1_RequestAccessResponse, _rampart_v1_RequestAccessResponse__Output>
    }
  }
}

