// Original file: proto/rampart/v1/devices.proto

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { ApproveDeviceRequest as _rampart_v1_ApproveDeviceRequest, ApproveDeviceRequest__Output as _rampart_v1_ApproveDeviceRequest__Output } from '../../rampart/v1/ApproveDeviceRequest';
import type { Device as _rampart_v1_Device, Device__Output as _rampart_v1_Device__Output } from '../../rampart/v1/Device';
import type { GetDeviceRequest as _rampart_v1_GetDeviceRequest, GetDeviceRequest__Output as _rampart_v1_GetDeviceRequest__Output } from '../../rampart/v1/GetDeviceRequest';
import type { ListUserDevicesRequest as _rampart_v1_ListUserDevicesRequest, ListUserDevicesRequest__Output as _rampart_v1_ListUserDevicesRequest__Output } from '../../rampart/v1/ListUserDevicesRequest';
import type { ListUserDevicesResponse as _rampart_v1_ListUserDevicesResponse, ListUserDevicesResponse__Output as _rampart_v1_ListUserDevicesResponse__Output } from '../../rampart/v1/ListUserDevicesResponse';
import type { ReportDeviceRequest as _rampart_v1_ReportDeviceRequest, ReportDeviceRequest__Output as _rampart_v1_ReportDeviceRequest__Output } from '../../rampart/v1/ReportDeviceRequest';

/**
 * Lists, reads and gives feedback on devices. Authenticate as for Scoring.
 */
export interface DevicesClient extends grpc.Client {
  /**
   * Approve a device: `approved_at` set, risk 0; default policies stop challenging on it.
   */
  ApproveDevice(argument: _rampart_v1_ApproveDeviceRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_rampart_v1_Device__Output>): grpc.ClientUnaryCall;
  ApproveDevice(argument: _rampart_v1_ApproveDeviceRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_rampart_v1_Device__Output>): grpc.ClientUnaryCall;
  ApproveDevice(argument: _rampart_v1_ApproveDeviceRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_rampart_v1_Device__Output>): grpc.ClientUnaryCall;
  ApproveDevice(argument: _rampart_v1_ApproveDeviceRequest, callback: grpc.requestCallback<_rampart_v1_Device__Output>): grpc.ClientUnaryCall;
  /**
   * Approve a device: `approved_at` set, risk 0; default policies stop challenging on it.
   */
  approveDevice(argument: _rampart_v1_ApproveDeviceRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_rampart_v1_Device__Output>): grpc.ClientUnaryCall;
  approveDevice(argument: _rampart_v1_ApproveDeviceRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_rampart_v1_Device__Output>): grpc.ClientUnaryCall;
  approveDevice(argument: _rampart_v1_ApproveDeviceRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_rampart_v1_Device__Output>): grpc.ClientUnaryCall;
  approveDevice(argument: _rampart_v1_ApproveDeviceRequest, callback: grpc.requestCallback<_rampart_v1_Device__Output>): grpc.ClientUnaryCall;
  
  /**
   * One device by its token. NOT_FOUND for an unknown token. Safe to retry.
   */
  GetDevice(argument: _rampart_v1_GetDeviceRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_rampart_v1_Device__Output>): grpc.ClientUnaryCall;
  GetDevice(argument: _rampart_v1_GetDeviceRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_rampart_v1_Device__Output>): grpc.ClientUnaryCall;
  GetDevice(argument: _rampart_v1_GetDeviceRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_rampart_v1_Device__Output>): grpc.ClientUnaryCall;
  GetDevice(argument: _rampart_v1_GetDeviceRequest, callback: grpc.requestCallback<_rampart_v1_Device__Output>): grpc.ClientUnaryCall;
  /**
   * One device by its token. NOT_FOUND for an unknown token. Safe to retry.
   */
  getDevice(argument: _rampart_v1_GetDeviceRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_rampart_v1_Device__Output>): grpc.ClientUnaryCall;
  getDevice(argument: _rampart_v1_GetDeviceRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_rampart_v1_Device__Output>): grpc.ClientUnaryCall;
  getDevice(argument: _rampart_v1_GetDeviceRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_rampart_v1_Device__Output>): grpc.ClientUnaryCall;
  getDevice(argument: _rampart_v1_GetDeviceRequest, callback: grpc.requestCallback<_rampart_v1_Device__Output>): grpc.ClientUnaryCall;
  
  /**
   * The user's devices (devices removed after an incident are left out). NOT_FOUND when the
   * user was never sent in an event. Safe to retry.
   */
  ListUserDevices(argument: _rampart_v1_ListUserDevicesRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_rampart_v1_ListUserDevicesResponse__Output>): grpc.ClientUnaryCall;
  ListUserDevices(argument: _rampart_v1_ListUserDevicesRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_rampart_v1_ListUserDevicesResponse__Output>): grpc.ClientUnaryCall;
  ListUserDevices(argument: _rampart_v1_ListUserDevicesRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_rampart_v1_ListUserDevicesResponse__Output>): grpc.ClientUnaryCall;
  ListUserDevices(argument: _rampart_v1_ListUserDevicesRequest, callback: grpc.requestCallback<_rampart_v1_ListUserDevicesResponse__Output>): grpc.ClientUnaryCall;
  /**
   * The user's devices (devices removed after an incident are left out). NOT_FOUND when the
   * user was never sent in an event. Safe to retry.
   */
  listUserDevices(argument: _rampart_v1_ListUserDevicesRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_rampart_v1_ListUserDevicesResponse__Output>): grpc.ClientUnaryCall;
  listUserDevices(argument: _rampart_v1_ListUserDevicesRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_rampart_v1_ListUserDevicesResponse__Output>): grpc.ClientUnaryCall;
  listUserDevices(argument: _rampart_v1_ListUserDevicesRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_rampart_v1_ListUserDevicesResponse__Output>): grpc.ClientUnaryCall;
  listUserDevices(argument: _rampart_v1_ListUserDevicesRequest, callback: grpc.requestCallback<_rampart_v1_ListUserDevicesResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Report a device: `escalated_at` set, risk 100, an `$incident.confirmed` webhook is sent.
   */
  ReportDevice(argument: _rampart_v1_ReportDeviceRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_rampart_v1_Device__Output>): grpc.ClientUnaryCall;
  ReportDevice(argument: _rampart_v1_ReportDeviceRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_rampart_v1_Device__Output>): grpc.ClientUnaryCall;
  ReportDevice(argument: _rampart_v1_ReportDeviceRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_rampart_v1_Device__Output>): grpc.ClientUnaryCall;
  ReportDevice(argument: _rampart_v1_ReportDeviceRequest, callback: grpc.requestCallback<_rampart_v1_Device__Output>): grpc.ClientUnaryCall;
  /**
   * Report a device: `escalated_at` set, risk 100, an `$incident.confirmed` webhook is sent.
   */
  reportDevice(argument: _rampart_v1_ReportDeviceRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_rampart_v1_Device__Output>): grpc.ClientUnaryCall;
  reportDevice(argument: _rampart_v1_ReportDeviceRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_rampart_v1_Device__Output>): grpc.ClientUnaryCall;
  reportDevice(argument: _rampart_v1_ReportDeviceRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_rampart_v1_Device__Output>): grpc.ClientUnaryCall;
  reportDevice(argument: _rampart_v1_ReportDeviceRequest, callback: grpc.requestCallback<_rampart_v1_Device__Output>): grpc.ClientUnaryCall;
  
}

/**
 * Lists, reads and gives feedback on devices. Authenticate as for Scoring.
 */
export interface DevicesHandlers extends grpc.UntypedServiceImplementation {
  /**
   * Approve a device: `approved_at` set, risk 0; default policies stop challenging on it.
   */
  ApproveDevice: grpc.handleUnaryCall<_rampart_v1_ApproveDeviceRequest__Output, _rampart_v1_Device>;
  
  /**
   * One device by its token. NOT_FOUND for an unknown token. Safe to retry.
   */
  GetDevice: grpc.handleUnaryCall<_rampart_v1_GetDeviceRequest__Output, _rampart_v1_Device>;
  
  /**
   * The user's devices (devices removed after an incident are left out). NOT_FOUND when the
   * user was never sent in an event. Safe to retry.
   */
  ListUserDevices: grpc.handleUnaryCall<_rampart_v1_ListUserDevicesRequest__Output, _rampart_v1_ListUserDevicesResponse>;
  
  /**
   * Report a device: `escalated_at` set, risk 100, an `$incident.confirmed` webhook is sent.
   */
  ReportDevice: grpc.handleUnaryCall<_rampart_v1_ReportDeviceRequest__Output, _rampart_v1_Device>;
  
}

export interface DevicesDefinition extends grpc.ServiceDefinition {
  ApproveDevice: MethodDefinition<_rampart_v1_ApproveDeviceRequest, _rampart_v1_Device, _rampart_v1_ApproveDeviceRequest__Output, _rampart_v1_Device__Output>
  GetDevice: MethodDefinition<_rampart_v1_GetDeviceRequest, _rampart_v1_Device, _rampart_v1_GetDeviceRequest__Output, _rampart_v1_Device__Output>
  ListUserDevices: MethodDefinition<_rampart_v1_ListUserDevicesRequest, _rampart_v1_ListUserDevicesResponse, _rampart_v1_ListUserDevicesRequest__Output, _rampart_v1_ListUserDevicesResponse__Output>
  ReportDevice: MethodDefinition<_rampart_v1_ReportDeviceRequest, _rampart_v1_Device, _rampart_v1_ReportDeviceRequest__Output, _rampart_v1_Device__Output>
}
