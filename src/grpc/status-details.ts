/**
 * The standard rich error model of gRPC: a google.rpc.Status carried in the
 * `grpc-status-details-bin` trailer, with google.rpc.BadRequest (offending fields),
 * google.rpc.ErrorInfo (Rampart's error type and correlation id) and google.rpc.RetryInfo.
 * Any gRPC client can decode it with the published google/rpc protos; Rampart's client uses
 * `decodeStatusDetails`. The messages are declared here rather than loaded from .proto files:
 * they are small, frozen, and only needed on this path.
 */
import * as protobuf from 'protobufjs';

export const STATUS_DETAILS_KEY = 'grpc-status-details-bin';
export const ERROR_DOMAIN = 'rampart';

const TYPE_PREFIX = 'type.googleapis.com/';

/** The google.rpc messages as protobufjs JSON (also served by reflection, see reflection.ts). */
export const STATUS_DESCRIPTOR = {
  nested: {
    google: {
      nested: {
        protobuf: {
          nested: {
            Any: { fields: { typeUrl: { type: 'string', id: 1 }, value: { type: 'bytes', id: 2 } } },
            Duration: { fields: { seconds: { type: 'int64', id: 1 }, nanos: { type: 'int32', id: 2 } } },
          },
        },
        rpc: {
          nested: {
            Status: {
              fields: {
                code: { type: 'int32', id: 1 },
                message: { type: 'string', id: 2 },
                details: { rule: 'repeated', type: 'google.protobuf.Any', id: 3 },
              },
            },
            BadRequest: {
              fields: { fieldViolations: { rule: 'repeated', type: 'FieldViolation', id: 1 } },
              nested: {
                FieldViolation: {
                  fields: { field: { type: 'string', id: 1 }, description: { type: 'string', id: 2 } },
                },
              },
            },
            ErrorInfo: {
              fields: {
                reason: { type: 'string', id: 1 },
                domain: { type: 'string', id: 2 },
                metadata: { keyType: 'string', type: 'string', id: 3 },
              },
            },
            RetryInfo: { fields: { retryDelay: { type: 'google.protobuf.Duration', id: 1 } } },
          },
        },
      },
    },
  },
};

const root = protobuf.Root.fromJSON(STATUS_DESCRIPTOR);
const StatusType = root.lookupType('google.rpc.Status');
const BadRequestType = root.lookupType('google.rpc.BadRequest');
const ErrorInfoType = root.lookupType('google.rpc.ErrorInfo');
const RetryInfoType = root.lookupType('google.rpc.RetryInfo');

export interface FieldViolation {
  field: string;
  description: string;
}

export interface ErrorInfo {
  /** Rampart's error type in upper case, e.g. `INVALID_PARAMETERS`. */
  reason: string;
  domain: string;
  metadata: Record<string, string>;
}

/** What a google.rpc.Status trailer says, in the parts Rampart sends. */
export interface StatusDetails {
  code: number;
  message: string;
  fieldViolations: FieldViolation[];
  errorInfo: ErrorInfo | null;
  retryDelaySeconds: number | null;
}

const pack = (type: protobuf.Type, value: object) => ({
  typeUrl: `${TYPE_PREFIX}${type.fullName.replace(/^\./, '')}`,
  value: type.encode(type.fromObject(value)).finish(),
});

export function encodeStatusDetails(d: StatusDetails): Buffer {
  const details: { typeUrl: string; value: Uint8Array }[] = [];
  if (d.errorInfo) details.push(pack(ErrorInfoType, d.errorInfo));
  if (d.fieldViolations.length > 0)
    details.push(pack(BadRequestType, { fieldViolations: d.fieldViolations }));
  if (d.retryDelaySeconds !== null)
    details.push(pack(RetryInfoType, { retryDelay: { seconds: d.retryDelaySeconds, nanos: 0 } }));
  const status = StatusType.fromObject({ code: d.code, message: d.message, details });
  return Buffer.from(StatusType.encode(status).finish());
}

interface DecodedAny {
  typeUrl?: string;
  value?: Uint8Array;
}

/** Decode a `grpc-status-details-bin` value; unknown detail types are skipped. Null when undecodable. */
export function decodeStatusDetails(buf: Buffer): StatusDetails | null {
  let status: { code?: number; message?: string; details?: DecodedAny[] };
  try {
    status = StatusType.toObject(StatusType.decode(buf), { defaults: true }) as typeof status;
  } catch {
    return null;
  }
  const out: StatusDetails = {
    code: status.code ?? 0,
    message: status.message ?? '',
    fieldViolations: [],
    errorInfo: null,
    retryDelaySeconds: null,
  };
  for (const any of status.details ?? []) {
    const name = (any.typeUrl ?? '').slice((any.typeUrl ?? '').lastIndexOf('/') + 1);
    const value = any.value ?? new Uint8Array();
    try {
      if (name === 'google.rpc.BadRequest') {
        const br = BadRequestType.toObject(BadRequestType.decode(value), { defaults: true }) as {
          fieldViolations: FieldViolation[];
        };
        out.fieldViolations.push(
          ...br.fieldViolations.map((f) => ({ field: f.field ?? '', description: f.description ?? '' })),
        );
      } else if (name === 'google.rpc.ErrorInfo') {
        const ei = ErrorInfoType.toObject(ErrorInfoType.decode(value), { defaults: true }) as ErrorInfo;
        out.errorInfo = { reason: ei.reason, domain: ei.domain, metadata: { ...ei.metadata } };
      } else if (name === 'google.rpc.RetryInfo') {
        const ri = RetryInfoType.toObject(RetryInfoType.decode(value), { longs: Number, defaults: true }) as {
          retryDelay?: { seconds: number; nanos: number };
        };
        if (ri.retryDelay) out.retryDelaySeconds = ri.retryDelay.seconds + ri.retryDelay.nanos / 1e9;
      }
    } catch {
      // A detail we cannot read does not hide the others.
    }
  }
  return out;
}
