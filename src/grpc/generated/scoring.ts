import type * as grpc from '@grpc/grpc-js';
import type { EnumTypeDefinition, MessageTypeDefinition } from '@grpc/proto-loader';

import type { ListValue as _google_protobuf_ListValue, ListValue__Output as _google_protobuf_ListValue__Output } from './google/protobuf/ListValue';
import type { Struct as _google_protobuf_Struct, Struct__Output as _google_protobuf_Struct__Output } from './google/protobuf/Struct';
import type { Timestamp as _google_protobuf_Timestamp, Timestamp__Output as _google_protobuf_Timestamp__Output } from './google/protobuf/Timestamp';
import type { Value as _google_protobuf_Value, Value__Output as _google_protobuf_Value__Output } from './google/protobuf/Value';
import type { AuthenticateRequest as _rampart_v1_AuthenticateRequest, AuthenticateRequest__Output as _rampart_v1_AuthenticateRequest__Output } from './rampart/v1/AuthenticateRequest';
import type { AuthenticateResponse as _rampart_v1_AuthenticateResponse, AuthenticateResponse__Output as _rampart_v1_AuthenticateResponse__Output } from './rampart/v1/AuthenticateResponse';
import type { CallError as _rampart_v1_CallError, CallError__Output as _rampart_v1_CallError__Output } from './rampart/v1/CallError';
import type { Context as _rampart_v1_Context, Context__Output as _rampart_v1_Context__Output } from './rampart/v1/Context';
import type { DeviceRef as _rampart_v1_DeviceRef, DeviceRef__Output as _rampart_v1_DeviceRef__Output } from './rampart/v1/DeviceRef';
import type { FilterRequest as _rampart_v1_FilterRequest, FilterRequest__Output as _rampart_v1_FilterRequest__Output } from './rampart/v1/FilterRequest';
import type { FilterResponse as _rampart_v1_FilterResponse, FilterResponse__Output as _rampart_v1_FilterResponse__Output } from './rampart/v1/FilterResponse';
import type { Policy as _rampart_v1_Policy, Policy__Output as _rampart_v1_Policy__Output } from './rampart/v1/Policy';
import type { RiskRequest as _rampart_v1_RiskRequest, RiskRequest__Output as _rampart_v1_RiskRequest__Output } from './rampart/v1/RiskRequest';
import type { RiskResponse as _rampart_v1_RiskResponse, RiskResponse__Output as _rampart_v1_RiskResponse__Output } from './rampart/v1/RiskResponse';
import type { ScoringClient as _rampart_v1_ScoringClient, ScoringDefinition as _rampart_v1_ScoringDefinition } from './rampart/v1/Scoring';
import type { TrackRequest as _rampart_v1_TrackRequest, TrackRequest__Output as _rampart_v1_TrackRequest__Output } from './rampart/v1/TrackRequest';
import type { TrackResponse as _rampart_v1_TrackResponse, TrackResponse__Output as _rampart_v1_TrackResponse__Output } from './rampart/v1/TrackResponse';
import type { TrackStreamResponse as _rampart_v1_TrackStreamResponse, TrackStreamResponse__Output as _rampart_v1_TrackStreamResponse__Output } from './rampart/v1/TrackStreamResponse';
import type { User as _rampart_v1_User, User__Output as _rampart_v1_User__Output } from './rampart/v1/User';
import type { VerdictAnswer as _rampart_v1_VerdictAnswer, VerdictAnswer__Output as _rampart_v1_VerdictAnswer__Output } from './rampart/v1/VerdictAnswer';
import type { VerdictCall as _rampart_v1_VerdictCall, VerdictCall__Output as _rampart_v1_VerdictCall__Output } from './rampart/v1/VerdictCall';
import type { VerdictStreamRequest as _rampart_v1_VerdictStreamRequest, VerdictStreamRequest__Output as _rampart_v1_VerdictStreamRequest__Output } from './rampart/v1/VerdictStreamRequest';
import type { VerdictStreamResponse as _rampart_v1_VerdictStreamResponse, VerdictStreamResponse__Output as _rampart_v1_VerdictStreamResponse__Output } from './rampart/v1/VerdictStreamResponse';

type SubtypeConstructor<Constructor extends new (...args: any) => any, Subtype> = {
  new(...args: ConstructorParameters<Constructor>): Subtype;
};

export interface ProtoGrpcType {
  google: {
    protobuf: {
      ListValue: MessageTypeDefinition<_google_protobuf_ListValue, _google_protobuf_ListValue__Output>
      NullValue: EnumTypeDefinition
      Struct: MessageTypeDefinition<_google_protobuf_Struct, _google_protobuf_Struct__Output>
      Timestamp: MessageTypeDefinition<_google_protobuf_Timestamp, _google_protobuf_Timestamp__Output>
      Value: MessageTypeDefinition<_google_protobuf_Value, _google_protobuf_Value__Output>
    }
  }
  rampart: {
    v1: {
      Action: EnumTypeDefinition
      AuthenticateRequest: MessageTypeDefinition<_rampart_v1_AuthenticateRequest, _rampart_v1_AuthenticateRequest__Output>
      AuthenticateResponse: MessageTypeDefinition<_rampart_v1_AuthenticateResponse, _rampart_v1_AuthenticateResponse__Output>
      CallError: MessageTypeDefinition<_rampart_v1_CallError, _rampart_v1_CallError__Output>
      Context: MessageTypeDefinition<_rampart_v1_Context, _rampart_v1_Context__Output>
      DeviceRef: MessageTypeDefinition<_rampart_v1_DeviceRef, _rampart_v1_DeviceRef__Output>
      EventStatus: EnumTypeDefinition
      FilterRequest: MessageTypeDefinition<_rampart_v1_FilterRequest, _rampart_v1_FilterRequest__Output>
      FilterResponse: MessageTypeDefinition<_rampart_v1_FilterResponse, _rampart_v1_FilterResponse__Output>
      Policy: MessageTypeDefinition<_rampart_v1_Policy, _rampart_v1_Policy__Output>
      RiskRequest: MessageTypeDefinition<_rampart_v1_RiskRequest, _rampart_v1_RiskRequest__Output>
      RiskResponse: MessageTypeDefinition<_rampart_v1_RiskResponse, _rampart_v1_RiskResponse__Output>
      /**
       * Scores user events. Authenticate with the environment's API secret in metadata:
       * `authorization: Bearer <secret>` or `authorization: Basic base64(":<secret>")`.
       */
      Scoring: SubtypeConstructor<typeof grpc.Client, _rampart_v1_ScoringClient> & { service: _rampart_v1_ScoringDefinition }
      TrackRequest: MessageTypeDefinition<_rampart_v1_TrackRequest, _rampart_v1_TrackRequest__Output>
      TrackResponse: MessageTypeDefinition<_rampart_v1_TrackResponse, _rampart_v1_TrackResponse__Output>
      TrackStreamResponse: MessageTypeDefinition<_rampart_v1_TrackStreamResponse, _rampart_v1_TrackStreamResponse__Output>
      User: MessageTypeDefinition<_rampart_v1_User, _rampart_v1_User__Output>
      VerdictAnswer: MessageTypeDefinition<_rampart_v1_VerdictAnswer, _rampart_v1_VerdictAnswer__Output>
      VerdictCall: MessageTypeDefinition<_rampart_v1_VerdictCall, _rampart_v1_VerdictCall__Output>
      VerdictStreamRequest: MessageTypeDefinition<_rampart_v1_VerdictStreamRequest, _rampart_v1_VerdictStreamRequest__Output>
      VerdictStreamResponse: MessageTypeDefinition<_rampart_v1_VerdictStreamResponse, _rampart_v1_VerdictStreamResponse__Output>
    }
  }
}

