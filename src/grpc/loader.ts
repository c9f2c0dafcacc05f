/**
 * Loads the rampart.v1 contract (proto/rampart/v1) at run time with the very options that
 * scripts/generate-grpc.js hands to proto-loader-gen-types (loader-options.json), so that the
 * objects handlers and clients see are the ones the generated types describe.
 */
import path from 'node:path';
import * as protoLoader from '@grpc/proto-loader';
import * as grpc from '@grpc/grpc-js';
import rawOptions from './loader-options.json';
import type { ProtoGrpcType as DevicesProto } from './generated/devices';
import type { ProtoGrpcType as PrivacyProto } from './generated/privacy';
import type { ProtoGrpcType as ScoringProto } from './generated/scoring';
import { PROJECT_ROOT } from '../paths';

/** Every package and service of the contract, typed by the generated code. */
export type RampartProto = ScoringProto & DevicesProto & PrivacyProto;

/** `proto/` at the package root, from src/grpc (ts) and from dist/src/grpc (built). */
export const PROTO_ROOT = path.join(PROJECT_ROOT, 'proto');

export const PROTO_FILES: readonly string[] = [
  'rampart/v1/common.proto',
  'rampart/v1/devices.proto',
  'rampart/v1/privacy.proto',
  'rampart/v1/scoring.proto',
];

/** The fully qualified names of the services Rampart serves (for health and docs). */
export const SERVICE_NAMES = ['rampart.v1.Scoring', 'rampart.v1.Devices', 'rampart.v1.Privacy'] as const;

type JsonOptions = {
  keepCase: boolean;
  longs: 'String' | 'Number';
  enums: 'String';
  defaults: boolean;
  oneofs: boolean;
};

/** loader-options.json as loadSync options: the JSON names the types (`"String"`), loadSync wants the constructors. */
export function loaderOptions(): protoLoader.Options {
  const o = rawOptions as JsonOptions;
  return {
    keepCase: o.keepCase,
    longs: o.longs === 'Number' ? Number : String,
    enums: String,
    defaults: o.defaults,
    oneofs: o.oneofs,
    includeDirs: [PROTO_ROOT],
  };
}

let loaded: { definition: protoLoader.PackageDefinition; proto: RampartProto } | null = null;

/** The package definition (for reflection) and the typed gRPC object tree. Loaded once per process. */
export function loadRampartProto(): { definition: protoLoader.PackageDefinition; proto: RampartProto } {
  if (!loaded) {
    const definition = protoLoader.loadSync([...PROTO_FILES], loaderOptions());
    loaded = { definition, proto: grpc.loadPackageDefinition(definition) as unknown as RampartProto };
  }
  return loaded;
}
