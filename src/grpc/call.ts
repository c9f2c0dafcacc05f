/**
 * What every RPC does around its one core call: authenticate the caller from metadata, bound
 * the work by the call's deadline and abandon it when the client cancels, and answer errors
 * through the one table (errors.ts). Handlers only decode, call the core and encode.
 */
import type { Metadata, handleUnaryCall } from '@grpc/grpc-js';
import { DeadlineExceeded } from '../core/errors';
import type { Principal } from '../core/model';
import type { Services } from '../core/services';
import { secretFromAuthorization } from '../app/credentials';
import { normaliseError } from '../app/errors';
import type { Logger } from '../app/logger';
import { toStatus, type FieldPathMapper } from './errors';
import { rejection } from './guard';

/** What the handlers of the gRPC door receive. */
export interface Door {
  services: Services;
  log: Logger;
}

export interface CallContext {
  principal: Principal;
  /** Aborted when the deadline passes or the client cancels: start no further work. */
  signal: CallSignal;
}

/**
 * A minimal abort signal (an AbortController per call costs measurably on the hot path).
 * `aborted` turns true once, when the call's deadline passes or the client cancels.
 */
export class CallSignal {
  aborted = false;
  private listeners: (() => void)[] = [];

  onAbort(listener: () => void): void {
    if (this.aborted) listener();
    else this.listeners.push(listener);
  }

  offAbort(listener: () => void): void {
    this.listeners = this.listeners.filter((l) => l !== listener);
  }

  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
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

/** The caller, from `authorization: Basic …` or `Bearer …` metadata; rate-limited unless told not to. */
export async function principalFrom(door: Door, metadata: Metadata, rateLimit = true): Promise<Principal> {
  const value = metadata.get('authorization')[0];
  return door.services.access.caller(secretFromAuthorization(typeof value === 'string' ? value : undefined), 'api', { rateLimit });
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
export function answerError(door: Door, err: unknown, fieldPath: FieldPathMapper | undefined, send: (status: ReturnType<typeof toStatus>) => void): void {
  if (err instanceof CallCancelled) {
    door.log.debug('grpc call abandoned: cancelled by the client or past its deadline');
    return;
  }
  send(toStatus(normaliseError(err, door.log), fieldPath));
}

/** A unary handler: guard, authenticate, run `handle` within the deadline, answer. */
export function unary<Req, Res>(door: Door, handle: (req: Req, ctx: CallContext) => Promise<Res>, fieldPath?: FieldPathMapper): handleUnaryCall<Req, Res> {
  return (call, callback) => {
    bounded(call, async (signal) => {
      const rejected = rejection(call.request);
      if (rejected) throw rejected;
      const principal = await principalFrom(door, call.metadata);
      if (signal.aborted) throw new CallCancelled();
      return handle(call.request, { principal, signal });
    }).then(
      (res) => callback(null, res),
      (err: unknown) => answerError(door, err, fieldPath, (status) => callback(status)),
    );
  };
}
