/**
 * Per-call metrics of the gRPC door: each call's full method name (`/rampart.v1.Scoring/Risk`),
 * the name of the status it ended with, and how long it took, handed to `GrpcMetrics` (the
 * runtime's Prometheus metrics). Unary and client-streaming handlers are observed here, around
 * the whole handler (authentication, the outage cut and errors included); VerdictStream observes
 * each call it carries itself (scoring.ts), since a stream lives for as long as its client.
 */
import { status as Status, type Deadline, type ServiceDefinition, type sendUnaryData } from '@grpc/grpc-js';
import { performance } from 'node:perf_hooks';

export interface GrpcMetrics {
  /** One call answered (or cancelled): its method's path, its status code's name, its duration. */
  call(method: string, code: string, seconds: number): void;
}

/** A status code's name (`OK`, `UNAUTHENTICATED`, …). */
export function codeName(code: Status): string {
  return Status[code] ?? 'UNKNOWN';
}

/** What an observed call offers: its deadline, and its `cancelled` event. */
interface ObservedCall {
  getDeadline(): Deadline;
  once(event: 'cancelled', listener: () => void): unknown;
  removeListener(event: 'cancelled', listener: () => void): unknown;
}
type CallbackHandler = (call: ObservedCall, callback: sendUnaryData<unknown>) => void;

/**
 * How a call that was never answered ended: grpc-js answers DEADLINE_EXCEEDED itself when the
 * deadline passes (and tells the handler `cancelled`); otherwise the client cancelled.
 */
function endedWithout(call: ObservedCall): string {
  const d = call.getDeadline();
  const deadline = d instanceof Date ? d.getTime() : d;
  return Number.isFinite(deadline) && deadline <= Date.now() ? 'DEADLINE_EXCEEDED' : 'CANCELLED';
}

/** `handler`, observed once per call: at its answer, or when the call ends unanswered. */
function observeCall(method: string, handler: CallbackHandler, metrics: GrpcMetrics): CallbackHandler {
  return (call, callback) => {
    const started = performance.now();
    let observed = false;
    const observe = (code: string) => {
      if (observed) return;
      observed = true;
      call.removeListener('cancelled', onCancelled);
      metrics.call(method, code, (performance.now() - started) / 1000);
    };
    const onCancelled = () => observe(endedWithout(call));
    call.once('cancelled', onCancelled);
    handler(call, (err, value, trailer, flags) => {
      observe(err ? codeName(err.code ?? Status.UNKNOWN) : 'OK');
      callback(err, value, trailer, flags);
    });
  };
}

/**
 * `handlers` of `service` with every unary and client-streaming handler observed (bidirectional
 * ones observe their own calls); `handlers` as they are without metrics.
 */
export function observed<H extends object>(
  service: ServiceDefinition,
  handlers: H,
  metrics: GrpcMetrics | undefined,
): H {
  if (!metrics) return handlers;
  const out: Record<string, unknown> = { ...(handlers as Record<string, unknown>) };
  for (const [name, method] of Object.entries(service)) {
    const handler: unknown = (handlers as Record<string, unknown>)[name];
    if (method.responseStream || typeof handler !== 'function') continue;
    out[name] = observeCall(method.path, handler as CallbackHandler, metrics);
  }
  return out as H;
}
