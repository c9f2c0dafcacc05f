import type * as grpc from '@grpc/grpc-js';
import type { EnumTypeDefinition, MessageTypeDefinition } from '@grpc/proto-loader';

import type { ListValue as _google_protobuf_ListValue, ListValue__Output as _google_protobuf_ListValue__Output } from './google/protobuf/ListValue';
import type { Struct as _google_protobuf_Struct, Struct__Output as _google_protobuf_Struct__Output } from './google/protobuf/Struct';
import type { Timestamp as _google_protobuf_Timestamp, Timestamp__Output as _google_protobuf_Timestamp__Output } from './google/protobuf/Timestamp';
import type { Value as _google_protobuf_Value, Value__Output as _google_protobuf_Value__Output } from './google/protobuf/Value';
import type { ApproveDeviceRequest as _rampart_v1_ApproveDeviceRequest, ApproveDeviceRequest__Output as _rampart_v1_ApproveDeviceRequest__Output } from './rampart/v1/ApproveDeviceRequest';
import type { Device as _rampart_v1_Device, Device__Output as _rampart_v1_Device__Output } from './rampart/v1/Device';
import type { DeviceContext as _rampart_v1_DeviceContext, DeviceContext__Output as _rampart_v1_DeviceContext__Output } from './rampart/v1/DeviceContext';
import type { DevicesClient as _rampart_v1_DevicesClient, DevicesDefinition as _rampart_v1_DevicesDefinition } from './rampart/v1/Devices';
import type { GetDeviceRequest as _rampart_v1_GetDeviceRequest, GetDeviceRequest__Output as _rampart_v1_GetDeviceRequest__Output } from './rampart/v1/GetDeviceRequest';
import type { ListUserDevicesRequest as _rampart_v1_ListUserDevicesRequest, ListUserDevicesRequest__Output as _rampart_v1_ListUserDevicesRequest__Output } from './rampart/v1/ListUserDevicesRequest';
import type { ListUserDevicesResponse as _rampart_v1_ListUserDevicesResponse, ListUserDevicesResponse__Output as _rampart_v1_ListUserDevicesResponse__Output } from './rampart/v1/ListUserDevicesResponse';
import type { Location as _rampart_v1_Location, Location__Output as _rampart_v1_Location__Output } from './rampart/v1/Location';
import type { ReportDeviceRequest as _rampart_v1_ReportDeviceRequest, ReportDeviceRequest__Output as _rampart_v1_ReportDeviceRequest__Output } from './rampart/v1/ReportDeviceRequest';
import type { UserAgent as _rampart_v1_UserAgent, UserAgent__Output as _rampart_v1_UserAgent__Output } from './rampart/v1/UserAgent';

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
      ApproveDeviceRequest: MessageTypeDefinition<_rampart_v1_ApproveDeviceRequest, _rampart_v1_ApproveDeviceRequest__Output>
      Device: MessageTypeDefinition<_rampart_v1_Device, _rampart_v1_Device__Output>
      DeviceContext: MessageTypeDefinition<_rampart_v1_DeviceContext, _rampart_v1_DeviceContext__Output>
      DeviceType: EnumTypeDefinition
      /**
       * Lists, reads and gives feedback on devices. Authenticate as for Scoring.
       */
      Devices: SubtypeConstructor<typeof grpc.Client, _rampart_v1_DevicesClient> & { service: _rampart_v1_DevicesDefinition }
      GetDeviceRequest: MessageTypeDefinition<_rampart_v1_GetDeviceRequest, _rampart_v1_GetDeviceRequest__Output>
      ListUserDevicesRequest: MessageTypeDefinition<_rampart_v1_ListUserDevicesRequest, _rampart_v1_ListUserDevicesRequest__Output>
      ListUserDevicesResponse: MessageTypeDefinition<_rampart_v1_ListUserDevicesResponse, _rampart_v1_ListUserDevicesResponse__Output>
      Location: MessageTypeDefinition<_rampart_v1_Location, _rampart_v1_Location__Output>
      ReportDeviceRequest: MessageTypeDefinition<_rampart_v1_ReportDeviceRequest, _rampart_v1_ReportDeviceRequest__Output>
      UserAgent: MessageTypeDefinition<_rampart_v1_UserAgent, _rampart_v1_UserAgent__Output>
    }
  }
}

