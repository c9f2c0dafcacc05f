/**
 * The gRPC door: rampart.v1 Scoring, Devices and Privacy on @grpc/grpc-js, beside the standard
 * health service (grpc.health.v1) and server reflection, with message-size limits, keepalive,
 * TLS when configured, and a graceful drain on stop. Handlers live in scoring.ts, devices.ts
 * and privacy.ts; what they share (auth, deadlines, errors) in call.ts.
 */
import * as grpc from '@grpc/grpc-js';
import path from 'node:path';
import { HealthImplementation, protoPath as healthProtoPath, type ServingStatusMap } from 'grpc-health-check';
import { ReflectionService } from '@grpc/reflection';
import type { Services } from '../core/services';
import type { Logger } from '../doors/logger';
import { proxyTrust, type TrustedProxies } from '../doors/proxies';
import { needingDatabase, type Door } from './call';
import type { DatabaseStatus } from '../doors/outage';
import { devicesHandlers } from './devices';
import { guardService } from './guard';
import { loadRampartProto, SERVICE_NAMES } from './loader';
import { observed, type GrpcMetrics } from './observe';
import { reflectionPackage } from './reflection';
import { privacyHandlers } from './privacy';
import { scoringHandlers } from './scoring';

export interface GrpcServerOptions {
  services: Services;
  log: Logger;
  host: string;
  port: number;
  tls: { cert: Buffer; key: Buffer } | undefined;
  /** Largest request message accepted, in bytes (REST's body limit; default 100 KiB). */
  maxMessageBytes?: number;
  /** How long stop() lets calls in flight finish before cutting them (default 10 s). */
  drainTimeoutMs?: number;
  /** Whether the database answers: Devices and Privacy answer UNAVAILABLE at once while it is down. */
  database?: DatabaseStatus;
  /** Prometheus metrics: one observation per call (method, status code, duration). */
  metrics?: GrpcMetrics;
  /** Proxies whose `x-forwarded-for` metadata names the caller (as on REST); none: the peer is the caller. */
  trustProxy?: TrustedProxies | false;
}

export interface GrpcServerHandle {
  /** host:port actually bound. */
  address: string;
  port: number;
  /** Graceful drain (health NOT_SERVING, no new calls, calls in flight finish), then force after a timeout. */
  stop(): Promise<void>;
}

export const DEFAULT_MAX_MESSAGE_BYTES = 100 * 1024;
const DEFAULT_DRAIN_TIMEOUT_MS = 10_000;

/** Channel options of the server: limits and keepalive. */
export function serverChannelOptions(maxMessageBytes: number): grpc.ServerOptions {
  return {
    // The guard (guard.ts) answers INVALID_ARGUMENT above maxMessageBytes; this is the hard cap
    // above which grpc-js refuses to buffer a message at all (RESOURCE_EXHAUSTED).
    'grpc.max_receive_message_length': 4 * maxMessageBytes,
    'grpc.max_send_message_length': 4 * 1024 * 1024,
    // Ping idle connections so that dead peers (and NAT/LB timeouts) are noticed.
    'grpc.keepalive_time_ms': 60_000,
    'grpc.keepalive_timeout_ms': 20_000,
    // Close connections idle for 10 minutes; recycle connections after an hour so that load
    // spreads again behind a balancer, letting calls in flight finish for 30 s.
    'grpc.max_connection_idle_ms': 10 * 60_000,
    'grpc.max_connection_age_ms': 60 * 60_000,
    'grpc.max_connection_age_grace_ms': 30_000,
    'grpc.max_concurrent_streams': 1000,
    // Not 'grpc.enable_channelz': 0, although Rampart serves no channelz: in grpc-js 1.14 the
    // server then stops tracking its sessions, and forceShutdown() (the end of the drain) no
    // longer cuts the calls still running.
  };
}

const hostForAddress = (h: string) => (h.includes(':') && !h.startsWith('[') ? `[${h}]` : h);

export async function startGrpcServer(o: GrpcServerOptions): Promise<GrpcServerHandle> {
  const maxMessageBytes = o.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
  const { proto } = loadRampartProto();
  const v1 = proto.rampart.v1;
  const door: Door = {
    services: o.services,
    log: o.log,
    streams: new Set(),
    draining: false,
    maxMessageBytes,
    database: o.database,
    metrics: o.metrics,
  };
  if (o.trustProxy && o.trustProxy.length > 0) door.trustedProxy = proxyTrust(o.trustProxy);

  const server = new grpc.Server(serverChannelOptions(maxMessageBytes));
  // Observed outermost, so that what the outage cut answers is counted too.
  server.addService(
    guardService(v1.Scoring.service, maxMessageBytes),
    observed(v1.Scoring.service, scoringHandlers(door), o.metrics),
  );
  server.addService(
    guardService(v1.Devices.service, maxMessageBytes),
    observed(v1.Devices.service, needingDatabase(door, devicesHandlers(door)), o.metrics),
  );
  server.addService(
    guardService(v1.Privacy.service, maxMessageBytes),
    observed(v1.Privacy.service, needingDatabase(door, privacyHandlers(door)), o.metrics),
  );

  // '' is the whole server, as grpc_health_probe asks by default.
  const statuses: ServingStatusMap = { '': 'SERVING' };
  for (const name of SERVICE_NAMES) statuses[name] = 'SERVING';
  const health = new HealthImplementation(statuses);
  health.addToServer(server);
  // Reflection describes the health service too, so that grpcurl can call it without protos.
  new ReflectionService(
    reflectionPackage([{ dir: path.dirname(healthProtoPath), files: [path.basename(healthProtoPath)] }]),
  ).addToServer(server);

  const credentials = o.tls
    ? grpc.ServerCredentials.createSsl(null, [{ cert_chain: o.tls.cert, private_key: o.tls.key }], false)
    : grpc.ServerCredentials.createInsecure();
  const host = hostForAddress(o.host);
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync(`${host}:${o.port}`, credentials, (err, bound) => (err ? reject(err) : resolve(bound)));
  });

  let stopping: Promise<void> | null = null;
  const stop = () =>
    (stopping ??= new Promise<void>((resolve) => {
      for (const name of Object.keys(statuses)) health.setStatus(name, 'NOT_SERVING');
      // Long-lived VerdictStreams would keep the drain waiting: they take no new call and end
      // once the calls in flight are answered.
      door.draining = true;
      for (const stream of [...(door.streams ?? [])]) stream.drain();
      const timer = setTimeout(() => {
        o.log.warn('grpc: calls still in flight after the drain timeout; cutting them');
        server.forceShutdown();
        resolve();
      }, o.drainTimeoutMs ?? DEFAULT_DRAIN_TIMEOUT_MS);
      server.tryShutdown(() => {
        clearTimeout(timer);
        resolve();
      });
    }));

  return { address: `${host}:${port}`, port, stop };
}
