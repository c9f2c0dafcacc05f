import type * as grpc from '@grpc/grpc-js';
import type { EnumTypeDefinition, MessageTypeDefinition } from '@grpc/proto-loader';

import type { ListValue as _google_protobuf_ListValue, ListValue__Output as _google_protobuf_ListValue__Output } from './google/protobuf/ListValue';
import type { Struct as _google_protobuf_Struct, Struct__Output as _google_protobuf_Struct__Output } from './google/protobuf/Struct';
import type { Timestamp as _google_protobuf_Timestamp, Timestamp__Output as _google_protobuf_Timestamp__Output } from './google/protobuf/Timestamp';
import type { Value as _google_protobuf_Value, Value__Output as _google_protobuf_Value__Output } from './google/protobuf/Value';
import type { Context as _rampart_v1_Context, Context__Output as _rampart_v1_Context__Output } from './rampart/v1/Context';
import type { Policy as _rampart_v1_Policy, Policy__Output as _rampart_v1_Policy__Output } from './rampart/v1/Policy';
import type { User as _rampart_v1_User, User__Output as _rampart_v1_User__Output } from './rampart/v1/User';

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
      Context: MessageTypeDefinition<_rampart_v1_Context, _rampart_v1_Context__Output>
      EventStatus: EnumTypeDefinition
      Policy: MessageTypeDefinition<_rampart_v1_Policy, _rampart_v1_Policy__Output>
      User: MessageTypeDefinition<_rampart_v1_User, _rampart_v1_User__Output>
    }
  }
}

