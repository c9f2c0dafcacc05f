/**
 * What every RPC does around its one core call: authenticate the caller from metadata, bound
 * the work by the call's deadline and abandon it when the client cancels, and answer errors
 * through the one table (errors.ts). Handlers only decode, call the core and encode.
 */
import type { Metadata, handleUnaryCall } from '@grpc/grpc-js';
import { isIP } from 'node:net';
import { DeadlineExceeded, Unauthorized, Unavailable } from '../core/errors';
import type { Principal } from '../core/model';
import type { Services } from '../core/services';
import { secretFromAuthorization } from '../doors/credentials';
import { normaliseError } from '../doors/errors';
import type { Logger } from '../doors/logger';
import { clientAddress } from '../doors/proxies';
import { toStatus } from './errors';
import { rejection } from './guard';
import type { DatabaseStatus } from '../doors/outage';
import type { GrpcMetrics } from './observe';

/** What the handlers of the gRPC door receive. */
export interface Door {
  services: Services;
  log: Logger;
  /** Long-lived streams that serve calls (VerdictStream), told to finish when the server drains. */
  streams?: Set<DrainableStream>;
  /** Set when the server drains: a stream opened now takes no call. */
  draining?: boolean;
  /** Authentications in flight, by secret (principalFrom). */
  authentications?: Map<string, Promise<Principal>>;
  /** The request size limit (startGrpcServer's maxMessageBytes), advertised to VerdictStream clients. */
  maxMessageBytes?: number;
  /** Whether the database answers: calls that need it answer UNAVAILABLE while it is down. */
  database?: DatabaseStatus;
  /** Per-call metrics (observe.ts); VerdictStream reports each of its calls here. */
  metrics?: GrpcMetrics;
  /** Whether a peer is a trusted proxy, whose `x-forwarded-for` metadata names the client (doors/proxies.ts). */
  trustedProxy?: (address: string) => boolean;
}

/** A stream that serves calls and can be told to take no new ones (server.ts, on stop). */
export interface DrainableStream {
  /** Read no further call, answer the ones in flight, then end the stream. */
  drain(): void;
}

export interface CallContext {
  principal: Principal;
  /** Aborted when the deadline passes or the client cancels: start no further work. */
  signal: CallSignal;
}

/**
 * A minimal abort signal (an AbortController per call costs measurably on the hot path).
 * `aborted` turns true when the call is cancelled (`abort()`: the client cancelled, or grpc-js
 * reached the deadline of a unary or streaming RPC) or, for a call of a VerdictStream, when its
 * own `deadline` (epoch ms) has passed; that last one is checked when read, with no timer, and
 * fires no listener.
 */
export class CallSignal {
  /** True once the call was cancelled (or ended by grpc-js at its deadline). */
  cancelled = false;
  private listeners: (() => void)[] = [];

  constructor(readonly deadline = Infinity) {}

  /** The call is over: cancelled, or past its own deadline. */
  get aborted(): boolean {
    return this.cancelled || this.expired;
  }

  /** The call's own deadline has passed. */
  get expired(): boolean {
    return this.deadline !== Infinity && Date.now() >= this.deadline;
  }

  onAbort(listener: () => void): void {
    if (this.cancelled) listener();
    else this.listeners.push(listener);
  }

  offAbort(listener: () => void): void {
    this.listeners = this.listeners.filter((l) => l !== listener);
  }

  abort(): void {
    if (this.cancelled) return;
    this.cancelled = true;
    const listeners = this.listeners;
    this.listeners = [];
    for (const l of listeners) l();
  }
}

/** Thrown inside `bounded` work when the client went away or the deadline passed; nothing more is answered. */
export class CallCancelled extends Error {
  constructor() {
    super('cancelled by the client or at its deadline');
  }
}

/** What unary and streaming server calls have in common, as far as bounding them goes. */
interface SurfaceCall {
  readonly cancelled: boolean;
  getDeadline(): Date | number;
  once(event: 'cancelled', listener: () => void): unknown;
  removeListener(event: 'cancelled', listener: () => void): unknown;
}

/** The call's deadline in epoch milliseconds (Infinity when the client set none). */
export function deadlineOf(call: Pick<SurfaceCall, 'getDeadline'>): number {
  const d = call.getDeadline();
  return d instanceof Date ? d.getTime() : d;
}

/**
 * The caller, from `authorization: Basic …` or `Bearer …` metadata; rate-limited unless told not
 * to. Calls that present the same secret while its authentication is in flight share it (and its
 * outcome), then each takes its own token of the rate limit: when the core's cache of verified
 * secrets expires under load, one database look-up serves them instead of one per call. Nothing
 * is kept once the look-up settles, so revocation and disabling take effect as they do on REST.
 */
export async function principalFrom(
  door: Door,
  metadata: Metadata,
  peer: string | null,
  rateLimit = true,
): Promise<Principal> {
  const value = metadata.get('authorization')[0];
  const secret = secretFromAuthorization(typeof value === 'string' ? value : undefined);
  // Failed authentications are counted per caller's address, as on REST (the look-up itself is
  // shared by the calls presenting one secret, so each caller counts its own failure).
  const source = callerAddress(door, metadata, peer);
  let principal: Principal;
  try {
    principal = await authenticate(door, secret);
  } catch (err) {
    if (err instanceof Unauthorized) throw door.services.access.failedFrom(source, err);
    throw err;
  }
  if (rateLimit) door.services.access.take(principal);
  return principal;
}

/**
 * The caller's address: the peer's, or behind a trusted proxy the right-most `x-forwarded-for`
 * hop that is not a trusted proxy, as on REST.
 */
export function callerAddress(
  door: Pick<Door, 'trustedProxy'>,
  metadata: Metadata,
  peer: string | null,
): string | null {
  const address = addressOfPeer(peer);
  if (!door.trustedProxy || !address) return address;
  const forwarded = metadata.get('x-forwarded-for').filter((v): v is string => typeof v === 'string');
  return clientAddress(address, forwarded.length ? forwarded : undefined, door.trustedProxy);
}

/**
 * The address of a gRPC peer without its port: grpc-js servers give `1.2.3.4:5678` or
 * `::1:5678` (the socket's address and port), channels `ipv4:1.2.3.4:5678` or `ipv6:[::1]:5678`.
 */
export function addressOfPeer(peer: string | null): string | null {
  if (!peer) return null;
  const bracketed = /^(?:ipv6:)?\[([^\]]+)\](?::\d+)?$/.exec(peer);
  if (bracketed) return isIP(bracketed[1] ?? '') ? (bracketed[1] as string) : null;
  // Unbracketed, the port always comes last: strip it first (`2001:db8::7:443` is an address
  // with a port), and take the whole only when what is left is not an address.
  const bare = peer.replace(/^ipv4:/, '');
  const withoutPort = bare.replace(/:\d+$/, '');
  if (withoutPort !== bare && isIP(withoutPort)) return withoutPort;
  return isIP(bare) ? bare : null;
}

function authenticate(door: Door, secret: string | null): Promise<Principal> {
  if (!secret) return door.services.access.caller(secret, 'api', { rateLimit: false });
  const inflight = (door.authentications ??= new Map());
  let lookup = inflight.get(secret);
  if (!lookup) {
    const p = door.services.access.caller(secret, 'api', { rateLimit: false });
    const settled = () => {
      if (inflight.get(secret) === p) inflight.delete(secret);
    };
    p.then(settled, settled);
    inflight.set(secret, p);
    lookup = p;
  }
  return lookup;
}

/**
 * Run `work` until it settles, or until the call is over for the client, whichever comes first.
 * A call whose deadline has already passed starts nothing and answers DEADLINE_EXCEEDED. At a
 * later deadline, grpc-js itself answers DEADLINE_EXCEEDED and emits `cancelled`, as it does when
 * the client cancels: the signal handed to `work` is then aborted so that it starts nothing new,
 * and the promise rejects with CallCancelled. A core call already under way finishes in the
 * background and its answer is dropped.
 */
export function bounded<T>(call: SurfaceCall, work: (signal: CallSignal) => Promise<T>): Promise<T> {
  if (deadlineOf(call) <= Date.now()) return Promise.reject(new DeadlineExceeded());
  const signal = new CallSignal();
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    const onCancel = () => {
      if (settled) return;
      settled = true;
      signal.abort();
      reject(new CallCancelled());
    };
    if (call.cancelled) return onCancel();
    call.once('cancelled', onCancel);
    work(signal).then(
      (value) => {
        if (settled) return;
        settled = true;
        call.removeListener('cancelled', onCancel);
        resolve(value);
      },
      (err: unknown) => {
        if (settled) return;
        settled = true;
        call.removeListener('cancelled', onCancel);
        reject(err);
      },
    );
  });
}

/** Answer an error: a cancelled call gets nothing, anything else goes through the table. */
export function answerError(
  door: Door,
  err: unknown,
  send: (status: ReturnType<typeof toStatus>) => void,
): void {
  if (err instanceof CallCancelled) {
    door.log.debug('grpc call abandoned: cancelled by the client or past its deadline');
    return;
  }
  send(toStatus(normaliseError(err, door.log)));
}

/**
 * What every call does between its transport and its handler, whether it came as a unary RPC or
 * as a call of a VerdictStream: refuse a message the guard rejected, authenticate the caller
 * (rate-limited), start nothing more if the call is over by then, handle.
 */
export async function authorised<Req, Res>(
  door: Door,
  call: { metadata: Metadata; getPeer(): string },
  req: Req,
  signal: CallSignal,
  handle: (req: Req, ctx: CallContext) => Promise<Res>,
): Promise<Res> {
  const rejected = rejection(req);
  if (rejected) throw rejected;
  const principal = await principalFrom(door, call.metadata, call.getPeer());
  if (signal.cancelled) throw new CallCancelled();
  if (signal.expired) throw new DeadlineExceeded();
  return handle(req, { principal, signal });
}

/** A unary handler: guard, authenticate, run `handle` within the deadline, answer. */
export function unary<Req, Res>(
  door: Door,
  handle: (req: Req, ctx: CallContext) => Promise<Res>,
): handleUnaryCall<Req, Res> {
  return (call, callback) => {
    bounded(call, (signal) => authorised(door, call, call.request, signal, handle)).then(
      (res) => callback(null, res),
      (err: unknown) => answerError(door, err, (status) => callback(status)),
    );
  };
}

/**
 * The unary handlers of a service that cannot answer without the database (devices, privacy):
 * each answers UNAVAILABLE at once while the database is down, and when it goes down while the
 * call waits on it; the late answer of the handler is dropped. (The REST door does the same:
 * doors/outage.ts.)
 */
export function needingDatabase<H extends object>(door: Door, handlers: H): H {
  const database = door.database;
  if (!database) return handlers;
  const unavailable = (why: string, callback: (status: ReturnType<typeof toStatus>) => void) =>
    answerError(door, new Unavailable(why), callback);
  const wrapped = Object.entries(handlers).map(([name, handler]) => {
    const guarded: handleUnaryCall<unknown, unknown> = (call, callback) => {
      const down = database.down();
      if (down) return unavailable(down, (status) => callback(status));
      let answered = false;
      const off = database.onDown((why) => {
        if (answered) return;
        answered = true;
        unavailable(why, (status) => callback(status));
      });
      (handler as handleUnaryCall<unknown, unknown>)(call, (err, value) => {
        off();
        if (answered) return;
        answered = true;
        callback(err, value);
      });
    };
    return [name, guarded];
  });
  return Object.fromEntries(wrapped) as H;
}
