/**
 * Rampart's gRPC client for internal services: typed promise methods over the generated stubs,
 * the API secret on every call, a default deadline, TLS, keepalive, retries only for idempotent
 * reads (GetDevice, ListUserDevices on UNAVAILABLE, through the channel's retry policy) and for
 * TrackStreams refused part-way (resumed from the first event not taken: track-stream.ts), and
 * errors as RampartError with the fields of google.rpc.BadRequest decoded. Verdict calls
 * (authenticate, risk, filter) travel on a few long-lived VerdictStreams by default
 * (verdict-streams.ts), with the semantics of the unary RPCs and a fraction of their cost.
 *
 *   const rampart = createRampartClient({ address: 'rampart:50051', secret, tls: true });
 *   const { policy } = await rampart.risk({ event: '$login', user: { id: '42' }, context: { ip, headers } });
 */
import * as grpc from '@grpc/grpc-js';
import { service as healthService } from 'grpc-health-check';
import { loadRampartProto } from '../grpc/loader';
import { VerdictStreams, type VerdictEndpoint } from './verdict-streams';
import { trackStream as resumableTrackStream } from './track-stream';
import { decodeStatusDetails, STATUS_DETAILS_KEY, type FieldViolation } from '../grpc/status-details';
import type { AuthenticateRequest } from '../grpc/generated/rampart/v1/AuthenticateRequest';
import type { AuthenticateResponse__Output } from '../grpc/generated/rampart/v1/AuthenticateResponse';
import type { RiskRequest } from '../grpc/generated/rampart/v1/RiskRequest';
import type { RiskResponse__Output } from '../grpc/generated/rampart/v1/RiskResponse';
import type { FilterRequest } from '../grpc/generated/rampart/v1/FilterRequest';
import type { FilterResponse__Output } from '../grpc/generated/rampart/v1/FilterResponse';
import type { TrackRequest } from '../grpc/generated/rampart/v1/TrackRequest';
import type { TrackStreamResponse__Output } from '../grpc/generated/rampart/v1/TrackStreamResponse';
import type { ListUserDevicesRequest } from '../grpc/generated/rampart/v1/ListUserDevicesRequest';
import type { ListUserDevicesResponse__Output } from '../grpc/generated/rampart/v1/ListUserDevicesResponse';
import type { GetDeviceRequest } from '../grpc/generated/rampart/v1/GetDeviceRequest';
import type { ApproveDeviceRequest } from '../grpc/generated/rampart/v1/ApproveDeviceRequest';
import type { ReportDeviceRequest } from '../grpc/generated/rampart/v1/ReportDeviceRequest';
import type { Device__Output } from '../grpc/generated/rampart/v1/Device';
import type { RequestAccessRequest } from '../grpc/generated/rampart/v1/RequestAccessRequest';
import type { RequestAccessResponse__Output } from '../grpc/generated/rampart/v1/RequestAccessResponse';
import type { PurgeRequest } from '../grpc/generated/rampart/v1/PurgeRequest';
import type { PurgeResponse__Output } from '../grpc/generated/rampart/v1/PurgeResponse';
import type { ScoringClient } from '../grpc/generated/rampart/v1/Scoring';
import type { DevicesClient } from '../grpc/generated/rampart/v1/Devices';
import type { PrivacyClient } from '../grpc/generated/rampart/v1/Privacy';

export { toStruct, fromStruct, type JsonObject, type JsonValue } from '../grpc/struct';
export type { FieldViolation } from '../grpc/status-details';
export type {
  AuthenticateRequest,
  AuthenticateResponse__Output as AuthenticateResponse,
  RiskRequest,
  RiskResponse__Output as RiskResponse,
  FilterRequest,
  FilterResponse__Output as FilterResponse,
  TrackRequest,
  TrackStreamResponse__Output as TrackStreamResponse,
  ListUserDevicesRequest,
  ListUserDevicesResponse__Output as ListUserDevicesResponse,
  GetDeviceRequest,
  ApproveDeviceRequest,
  ReportDeviceRequest,
  Device__Output as Device,
  RequestAccessRequest,
  RequestAccessResponse__Output as RequestAccessResponse,
  PurgeRequest,
  PurgeResponse__Output as PurgeResponse,
};

export const DEFAULT_DEADLINE_MS = 2000;
export const DEFAULT_VERDICT_STREAMS = 2;

export interface RampartClientOptions {
  /** host:port of Rampart's gRPC listener. */
  address: string;
  /** The environment's API secret; sent as `authorization: Bearer <secret>` on every call. */
  secret: string;
  /**
   * TLS: `true` verifies the server against the system's roots; an object gives the roots (PEM)
   * and, for tests, the name to expect in the certificate. Absent or false: plaintext, for
   * development on loopback only.
   */
  tls?: boolean | { rootCerts?: Buffer; serverName?: string };
  /** Default deadline of each call in milliseconds (2000 unless given). */
  deadlineMs?: number;
  /** Extra channel options (merged over the client's defaults). */
  channelOptions?: grpc.ChannelOptions;
  /**
   * Verdict calls (authenticate, risk, filter) are multiplexed on at most this many
   * `Scoring/VerdictStream` streams (default 2); 0 sends each as its unary RPC. Same answers,
   * errors, deadlines and cancellation either way; streams cost both sides far less per call.
   */
  verdictStreams?: number;
}

export interface CallOptions {
  /** This call's deadline in milliseconds, instead of the client's default. */
  deadlineMs?: number;
  /** Cancels the call when aborted (the promise rejects with CANCELLED). */
  signal?: AbortSignal;
}

export interface TrackStreamOptions extends CallOptions {
  /** Most events one stream carries (default 10,000): what a retry may send again is held until then. */
  chunk?: number;
  /** Told of each refusal that will be retried: the error, the events taken so far, the wait before the retry. */
  onRetry?: (r: { error: RampartError; accepted: number; delayMs: number }) => void;
}

/** A failed call: the gRPC status plus what Rampart says about it. */
export class RampartError extends Error {
  override name = 'RampartError';
  constructor(
    /** The gRPC status code. */
    readonly code: grpc.status,
    message: string,
    /** Rampart's error type, as REST's `type` (e.g. `invalid_parameters`); null when Rampart did not answer (network, deadline on the client). */
    readonly type: string | null,
    /** The offending fields (google.rpc.BadRequest), as request-message paths. */
    readonly fields: FieldViolation[],
    /** For internal errors: the id under which the server logged the cause. */
    readonly correlationId: string | null,
    /** For rate limits: when to retry. */
    readonly retryAfterSeconds: number | null,
    /** The trailing metadata as received. */
    readonly metadata: grpc.Metadata,
  ) {
    super(message);
  }

  /** The status code's name, e.g. `INVALID_ARGUMENT`. */
  get codeName(): string {
    return grpc.status[this.code] ?? String(this.code);
  }
}

/** A gRPC ServiceError as a RampartError. */
export function toRampartError(err: grpc.ServiceError): RampartError {
  const metadata = err.metadata ?? new grpc.Metadata();
  const text = (key: string): string | null => {
    const v = metadata.get(key)[0];
    return typeof v === 'string' ? v : null;
  };
  const bin = metadata.get(STATUS_DETAILS_KEY)[0];
  const details = Buffer.isBuffer(bin) ? decodeStatusDetails(bin) : null;
  const info = details?.errorInfo?.metadata ?? {};
  const retryAfter = details?.retryDelaySeconds ?? (text('retry-after') ? Number(text('retry-after')) : null);
  return new RampartError(
    err.code,
    err.details || err.message,
    text('rampart-error-type') ?? info.type ?? null,
    details?.fieldViolations ?? [],
    text('rampart-correlation-id') ?? info.correlation_id ?? null,
    retryAfter,
    metadata,
  );
}

export type HealthStatus = 'UNKNOWN' | 'SERVING' | 'NOT_SERVING' | 'SERVICE_UNKNOWN';

export interface RampartClient {
  /** Older-style verdict (POST /v1/authenticate). */
  authenticate(req: AuthenticateRequest, o?: CallOptions): Promise<AuthenticateResponse__Output>;
  /** Risk evaluation (POST /v1/risk). */
  risk(req: RiskRequest, o?: CallOptions): Promise<RiskResponse__Output>;
  /** Filtering (POST /v1/filter). */
  filter(req: FilterRequest, o?: CallOptions): Promise<FilterResponse__Output>;
  /** One feedback event (POST /v1/track). */
  track(req: TrackRequest, o?: CallOptions): Promise<void>;
  /**
   * Many feedback events on TrackStreams, written with backpressure; resolves with the count
   * accepted. A stream Rampart refuses part-way (UNAVAILABLE, RESOURCE_EXHAUSTED) is resumed
   * from the first event it did not take, after its retry-after or a backoff (track-stream.ts).
   */
  trackStream(
    events: Iterable<TrackRequest> | AsyncIterable<TrackRequest>,
    o?: TrackStreamOptions,
  ): Promise<TrackStreamResponse__Output>;
  /** The user's devices; retried on UNAVAILABLE. */
  listUserDevices(req: ListUserDevicesRequest, o?: CallOptions): Promise<ListUserDevicesResponse__Output>;
  /** One device; retried on UNAVAILABLE. */
  getDevice(req: GetDeviceRequest, o?: CallOptions): Promise<Device__Output>;
  approveDevice(req: ApproveDeviceRequest, o?: CallOptions): Promise<Device__Output>;
  reportDevice(req: ReportDeviceRequest, o?: CallOptions): Promise<Device__Output>;
  requestAccess(req: RequestAccessRequest, o?: CallOptions): Promise<RequestAccessResponse__Output>;
  purge(req: PurgeRequest, o?: CallOptions): Promise<PurgeResponse__Output>;
  /** grpc.health.v1 Check; `service` '' is the whole server. */
  health(service?: string, o?: CallOptions): Promise<HealthStatus>;
  /** The generated stubs on the same channel, for anything the methods above do not cover. */
  readonly stubs: { scoring: ScoringClient; devices: DevicesClient; privacy: PrivacyClient };
  /** Close the channel. Calls in flight are cancelled. */
  close(): void;
}

/** Retries for idempotent reads only, as a gRPC service config (grpc-js applies it per call). */
const SERVICE_CONFIG = {
  loadBalancingConfig: [{ round_robin: {} }],
  methodConfig: [
    {
      name: [
        { service: 'rampart.v1.Devices', method: 'GetDevice' },
        { service: 'rampart.v1.Devices', method: 'ListUserDevices' },
      ],
      retryPolicy: {
        maxAttempts: 3,
        initialBackoff: '0.05s',
        maxBackoff: '0.5s',
        backoffMultiplier: 2,
        retryableStatusCodes: ['UNAVAILABLE'],
      },
    },
  ],
};

function channelCredentials(tls: RampartClientOptions['tls']): grpc.ChannelCredentials {
  if (!tls) return grpc.credentials.createInsecure();
  if (tls === true) return grpc.credentials.createSsl();
  return grpc.credentials.createSsl(tls.rootCerts ?? null);
}

type UnaryCallback<Res> = (err: grpc.ServiceError | null, res?: Res) => void;
type UnaryMethod<Req, Res> = (
  req: Req,
  metadata: grpc.Metadata,
  options: grpc.CallOptions,
  callback: UnaryCallback<Res>,
) => grpc.ClientUnaryCall;

/** A Rampart client. One per process is enough: it multiplexes calls on one HTTP/2 channel. */
export function createRampartClient(o: RampartClientOptions): RampartClient {
  const { proto } = loadRampartProto();
  const v1 = proto.rampart.v1;
  const defaultDeadline = o.deadlineMs ?? DEFAULT_DEADLINE_MS;
  const tlsName = typeof o.tls === 'object' ? o.tls.serverName : undefined;
  const options: grpc.ChannelOptions = {
    'grpc.service_config': JSON.stringify(SERVICE_CONFIG),
    // Channelz keeps per-call statistics for a channelz service nobody queries here.
    'grpc.enable_channelz': 0,
    'grpc.keepalive_time_ms': 30_000,
    'grpc.keepalive_timeout_ms': 10_000,
    'grpc.max_receive_message_length': 4 * 1024 * 1024,
    ...(tlsName ? { 'grpc.ssl_target_name_override': tlsName, 'grpc.default_authority': tlsName } : {}),
    ...o.channelOptions,
  };
  const credentials = channelCredentials(o.tls);
  const scoring = new v1.Scoring(o.address, credentials, options);
  const channelOverride = scoring.getChannel();
  const devices = new v1.Devices(o.address, credentials, { ...options, channelOverride });
  const privacy = new v1.Privacy(o.address, credentials, { ...options, channelOverride });
  const HealthClient = grpc.makeGenericClientConstructor(healthService, 'grpc.health.v1.Health');
  const healthClient = new HealthClient(o.address, credentials, { ...options, channelOverride });

  const metadata = () => {
    const md = new grpc.Metadata();
    md.set('authorization', `Bearer ${o.secret}`);
    return md;
  };
  const callOptions = (c?: CallOptions): grpc.CallOptions => ({
    deadline: Date.now() + (c?.deadlineMs ?? defaultDeadline),
  });

  /** A unary call as a promise, cancelled by the caller's signal. */
  function unary<Req, Res>(
    client: grpc.Client,
    method: UnaryMethod<Req, Res>,
    req: Req,
    c?: CallOptions,
  ): Promise<Res> {
    return new Promise<Res>((resolve, reject) => {
      if (c?.signal?.aborted)
        return reject(
          new RampartError(
            grpc.status.CANCELLED,
            'cancelled before it started',
            null,
            [],
            null,
            null,
            new grpc.Metadata(),
          ),
        );
      const call = method.call(client, req, metadata(), callOptions(c), (err, res) => {
        c?.signal?.removeEventListener('abort', cancel);
        if (err) reject(toRampartError(err));
        else resolve(res as Res);
      });
      const cancel = () => call.cancel();
      c?.signal?.addEventListener('abort', cancel, { once: true });
    });
  }

  const unaryVerdict = (
    endpoint: VerdictEndpoint,
    req: unknown,
    deadline: number,
    signal: AbortSignal | undefined,
  ): Promise<unknown> => {
    const c = { deadlineMs: deadline - Date.now(), signal };
    if (endpoint === 'authenticate')
      return unary(scoring, scoring.authenticate, req as AuthenticateRequest, c);
    if (endpoint === 'risk') return unary(scoring, scoring.risk, req as RiskRequest, c);
    return unary(scoring, scoring.filter, req as FilterRequest, c);
  };
  const streamCount = o.verdictStreams ?? DEFAULT_VERDICT_STREAMS;
  const streams =
    streamCount > 0
      ? new VerdictStreams(
          scoring,
          v1.Scoring.service.VerdictStream,
          metadata,
          {
            local: (code, message) =>
              new RampartError(code, message, null, [], null, null, new grpc.Metadata()),
            service: toRampartError,
          },
          unaryVerdict,
          { size: streamCount },
        )
      : null;
  const verdict = <Res>(endpoint: VerdictEndpoint, req: unknown, c?: CallOptions): Promise<Res> => {
    const deadline = Date.now() + (c?.deadlineMs ?? defaultDeadline);
    return (
      streams
        ? streams.call(endpoint, req, deadline, c?.signal)
        : unaryVerdict(endpoint, req, deadline, c?.signal)
    ) as Promise<Res>;
  };

  return {
    authenticate: (req, c) => verdict('authenticate', req, c),
    risk: (req, c) => verdict('risk', req, c),
    filter: (req, c) => verdict('filter', req, c),
    track: async (req, c) => {
      await unary(scoring, scoring.track, req, c);
    },
    trackStream: (events, c) =>
      resumableTrackStream<TrackRequest, RampartError>(
        {
          open: (deadline, callback) =>
            scoring.trackStream(metadata(), { deadline }, (err, res) => callback(err, res)),
          toError: toRampartError,
          cancelled: (message) =>
            new RampartError(grpc.status.CANCELLED, message, null, [], null, null, new grpc.Metadata()),
        },
        events,
        {
          deadline: Date.now() + (c?.deadlineMs ?? defaultDeadline),
          ...(c?.signal ? { signal: c.signal } : {}),
          ...(c?.onRetry ? { onRetry: c.onRetry } : {}),
          ...(c?.chunk ? { chunk: c.chunk } : {}),
        },
      ),
    listUserDevices: (req, c) => unary(devices, devices.listUserDevices, req, c),
    getDevice: (req, c) => unary(devices, devices.getDevice, req, c),
    approveDevice: (req, c) => unary(devices, devices.approveDevice, req, c),
    reportDevice: (req, c) => unary(devices, devices.reportDevice, req, c),
    requestAccess: (req, c) => unary(privacy, privacy.requestAccess, req, c),
    purge: (req, c) => unary(privacy, privacy.purge, req, c),
    health: (service = '', c) =>
      new Promise<HealthStatus>((resolve, reject) => {
        healthClient.makeUnaryRequest(
          '/grpc.health.v1.Health/Check',
          (arg: { service: string }) => healthService.Check.requestSerialize(arg),
          (buf: Buffer) => healthService.Check.responseDeserialize(buf) as { status: HealthStatus },
          { service },
          new grpc.Metadata(),
          callOptions(c),
          (err, res) => (err ? reject(toRampartError(err)) : resolve(res?.status ?? 'UNKNOWN')),
        );
      }),
    stubs: { scoring, devices, privacy },
    close: () => {
      streams?.close();
      scoring.close();
      devices.close();
      privacy.close();
      healthClient.close();
    },
  };
}
