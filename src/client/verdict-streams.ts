/**
 * Verdict calls (Authenticate, Risk, Filter) multiplexed on a few long-lived
 * `Scoring/VerdictStream` streams. A unary gRPC call costs client and server an HTTP/2 stream and
 * grpc-js's per-call machinery, several times what a call on an open stream costs
 * (docs/grpc.md, Performance); each call here keeps the unary call's semantics:
 *
 * - its own deadline: sent to the server (`timeout_ms`), and a local timer that rejects with
 *   DEADLINE_EXCEEDED and cancels the call on the server;
 * - cancellation by an AbortSignal (CANCELLED, and the call is cancelled on the server);
 * - the same answers, and the same RampartError for an error answered in-band (status code,
 *   message, `grpc-status-details-bin` and the other trailers rebuilt as metadata);
 * - a stream that fails fails the calls in flight on it, as a broken connection fails unary
 *   calls (nothing that writes is retried). Only calls the server never read, which a stream
 *   ended cleanly (status OK) leaves unanswered, are sent once more on another stream, as grpc-js
 *   does for a unary call the server refused before reading it.
 *
 * Calls are written as soon as their stream is free: at once (at the end of the current
 * microtask queue) when no message is being written, else all together in the next message. A
 * grpc-js stream completes about one message write per event-loop turn, so one message per call
 * would queue calls behind each other under load. No message is larger than the server's
 * request size limit, which it announces when the stream opens (until then, one call per
 * message); a call larger than that limit goes unary, so that it fails as a unary call would.
 *
 * Streams are opened on demand, `size` at most, calls spread round-robin. A stream is retired
 * (takes no new call, is half-closed once its calls are answered) `maxAgeMs` after it opened, so
 * that streams move to new connections when the server recycles its own, and after `idleMs`
 * without calls, so that an idle client holds no stream open (and a process can exit). A server
 * without VerdictStream (UNIMPLEMENTED) turns the pool off: its calls then go unary, as do calls
 * larger than LARGE_CALL_BYTES.
 */
import * as grpc from '@grpc/grpc-js';
import { STATUS_DETAILS_KEY } from '../grpc/status-details';
import type { CallError__Output } from '../grpc/generated/rampart/v1/CallError';
import type { VerdictAnswer__Output } from '../grpc/generated/rampart/v1/VerdictAnswer';
import type { VerdictStreamRequest } from '../grpc/generated/rampart/v1/VerdictStreamRequest';
import type { VerdictStreamResponse__Output } from '../grpc/generated/rampart/v1/VerdictStreamResponse';
import { MAX_MESSAGE_BYTES_KEY } from '../grpc/metadata-keys';

export type VerdictEndpoint = 'authenticate' | 'risk' | 'filter';

/** What a rejected call is rejected with (client/index.ts builds RampartErrors). */
export interface ErrorFactory {
  /** A failure the client itself decided (deadline, cancellation, a stream that ended). */
  local(code: grpc.status, message: string): Error;
  /** A gRPC ServiceError (a failed stream) or its in-band equivalent. */
  service(err: grpc.ServiceError): Error;
}

/** The unary RPC of an endpoint, where calls go when they do not go on a stream. */
export type UnaryVerdict = (
  endpoint: VerdictEndpoint,
  req: unknown,
  deadline: number,
  signal: AbortSignal | undefined,
) => Promise<unknown>;

export interface VerdictStreamsOptions {
  /** At most this many streams open at once. */
  size: number;
  /** Retire a stream this long after it opened (default 20 s). */
  maxAgeMs?: number;
  /** Retire a stream after this long without a call in flight (default 1 s). */
  idleMs?: number;
}

const METHOD = '/rampart.v1.Scoring/VerdictStream';
const DEFAULT_MAX_AGE_MS = 20_000;
const DEFAULT_IDLE_MS = 1_000;
/**
 * Calls larger than this go unary: on a shared stream they would hold its flow-control window
 * and delay the calls behind them. Also the most one stream message carries.
 */
export const LARGE_CALL_BYTES = 64 * 1024;
/**
 * The largest call sent on a stream whose server has not announced its limit yet: the server
 * refuses larger messages outright (grpc-js's hard cap, 4 times its limit of at least 1 KiB),
 * which would fail the whole stream, where a unary call fails alone.
 */
const UNANNOUNCED_CALL_BYTES = 4 * 1024;
/** Ids are uint32 on the wire; wrap before that. */
const MAX_ID = 0xffffffff;

interface Pending {
  endpoint: VerdictEndpoint;
  req: unknown;
  /** The encoded call without its id and timeout (fields 3 to 5 of VerdictCall). */
  body: Buffer;
  deadline: number;
  resolve(res: unknown): void;
  reject(err: unknown): void;
  timer: NodeJS.Timeout | undefined;
  signal: AbortSignal | undefined;
  onAbort: (() => void) | undefined;
  /** The stream it is in flight on, and its id there. */
  stream: Stream | null;
  id: number;
  /** Sent once more already (after a clean end of its stream left it unread). */
  resent: boolean;
}

interface Stream {
  call: grpc.ClientDuplexStream<Buffer, VerdictStreamResponse__Output>;
  pending: Map<number, Pending>;
  nextId: number;
  openedAt: number;
  lastActive: number;
  retiring: boolean;
  failure: grpc.ServiceError | null;
  /** The server's request size limit, once announced. */
  maxBytes: number | null;
  /** Encoded `calls` entries waiting for the stream to be free. */
  queue: Buffer[];
  writing: boolean;
  scheduled: boolean;
}

const varintSize = (n: number) => (n < 0x80 ? 1 : n < 0x4000 ? 2 : n < 0x200000 ? 3 : n < 0x10000000 ? 4 : 5);

/** A varint into `out` at `at`; returns the next position. */
function putVarint(out: Buffer, at: number, n: number): number {
  while (n > 0x7f) {
    out[at++] = (n & 0x7f) | 0x80;
    n = Math.floor(n / 128);
  }
  out[at++] = n;
  return at;
}

/**
 * One `calls` entry of a VerdictStreamRequest (field 1, length-delimited): the VerdictCall's
 * id (field 1) and timeout (field 2), then the encoded call (`body`: fields 3 to 6).
 */
function callEntry(id: number, timeoutMs: number, body: Buffer): Buffer {
  const inner = 1 + varintSize(id) + 1 + varintSize(timeoutMs) + body.length;
  const out = Buffer.allocUnsafe(1 + varintSize(inner) + inner);
  out[0] = 0x0a;
  let at = putVarint(out, 1, inner);
  out[at++] = 0x08;
  at = putVarint(out, at, id);
  out[at++] = 0x10;
  at = putVarint(out, at, timeoutMs);
  body.copy(out, at);
  return out;
}

/** `cancel: true` (VerdictCall field 6), the body of a cancellation. */
const CANCEL = Buffer.from([0x30, 0x01]);

/** An in-band CallError as the ServiceError the unary call would have failed with (its trailers as metadata). */
export function callErrorAsServiceError(e: CallError__Output): grpc.ServiceError {
  const metadata = new grpc.Metadata();
  for (const [key, value] of Object.entries(e.metadata ?? {})) metadata.set(key, value);
  if (e.details && e.details.length > 0) metadata.set(STATUS_DETAILS_KEY, Buffer.from(e.details));
  return Object.assign(new Error(`${e.code} ${grpc.status[e.code] ?? 'UNKNOWN'}: ${e.message}`), {
    code: e.code,
    details: e.message,
    metadata,
  });
}

export class VerdictStreams {
  private readonly streams: Stream[] = [];
  private next = 0;
  private closed = false;
  /** Set when the server does not implement VerdictStream: every call goes unary. */
  disabled = false;
  private sweeper: NodeJS.Timeout | null = null;
  private readonly maxAgeMs: number;
  private readonly idleMs: number;

  constructor(
    private readonly client: grpc.Client,
    /** The encoder and decoder of Scoring/VerdictStream (the generated service definition's). */
    private readonly method: {
      requestSerialize(m: VerdictStreamRequest): Buffer;
      responseDeserialize(b: Buffer): VerdictStreamResponse__Output;
    },
    private readonly metadata: () => grpc.Metadata,
    private readonly errors: ErrorFactory,
    private readonly unary: UnaryVerdict,
    private readonly o: VerdictStreamsOptions,
  ) {
    this.maxAgeMs = o.maxAgeMs ?? DEFAULT_MAX_AGE_MS;
    this.idleMs = o.idleMs ?? DEFAULT_IDLE_MS;
  }

  /** The call of `endpoint` encoded as VerdictCall fields 3 to 5, without id and timeout. */
  private encode(endpoint: VerdictEndpoint, req: unknown): Buffer {
    // A one-call VerdictStreamRequest is [0x0a, varint length, the VerdictCall]; id and timeout
    // are 0, so not encoded: the VerdictCall is the call alone.
    const request = this.method.requestSerialize({ calls: [{ [endpoint]: req }] });
    let at = 1;
    while (request[at] >= 0x80) at++;
    return request.subarray(at + 1);
  }

  /** One call of `endpoint`; resolves with the unary RPC's answer. */
  call(
    endpoint: VerdictEndpoint,
    req: unknown,
    deadline: number,
    signal: AbortSignal | undefined,
  ): Promise<unknown> {
    if (this.disabled || this.closed) return this.unary(endpoint, req, deadline, signal);
    const body = this.encode(endpoint, req);
    if (body.length > LARGE_CALL_BYTES) return this.unary(endpoint, req, deadline, signal);
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(this.errors.local(grpc.status.CANCELLED, 'Cancelled on client'));
      const p: Pending = {
        endpoint,
        req,
        body,
        deadline,
        resolve,
        reject,
        timer: undefined,
        signal,
        onAbort: undefined,
        stream: null,
        id: 0,
        resent: false,
      };
      p.timer = setTimeout(
        () => this.giveUp(p, grpc.status.DEADLINE_EXCEEDED, 'Deadline exceeded'),
        Math.max(0, deadline - Date.now()),
      );
      if (signal) {
        p.onAbort = () => this.giveUp(p, grpc.status.CANCELLED, 'Cancelled on client');
        signal.addEventListener('abort', p.onAbort, { once: true });
      }
      this.send(p);
    });
  }

  /** Cancel every stream: their calls fail with CANCELLED. */
  close(): void {
    this.closed = true;
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = null;
    for (const s of [...this.streams]) s.call.cancel();
  }

  private send(p: Pending): void {
    if (this.disabled || this.closed) return this.sendUnary(p);
    const s = this.pick();
    const now = Date.now();
    const id = s.nextId >= MAX_ID ? 1 : s.nextId + 1;
    const entry = callEntry(id, Math.max(1, p.deadline - now), p.body);
    // Larger than the server takes in one message: as a unary call, it fails as a unary call does.
    if (entry.length > (s.maxBytes ?? UNANNOUNCED_CALL_BYTES)) return this.sendUnary(p);
    s.nextId = id;
    p.id = id;
    p.stream = s;
    s.pending.set(id, p);
    s.lastActive = now;
    this.enqueue(s, entry);
  }

  private enqueue(s: Stream, entry: Buffer): void {
    s.queue.push(entry);
    if (!s.writing && !s.scheduled) {
      s.scheduled = true;
      queueMicrotask(() => this.flush(s));
    }
  }

  /** Write what is queued as one message (or a few, LARGE_CALL_BYTES at most each) when the stream is free. */
  private flush(s: Stream): void {
    s.scheduled = false;
    if (s.writing) return;
    if (s.call.writableEnded) {
      s.queue = [];
      return;
    }
    if (s.queue.length > 0) {
      // One call per message until the server has said how large a message may be.
      const most = s.maxBytes === null ? 0 : Math.min(s.maxBytes, LARGE_CALL_BYTES);
      let bytes = 0;
      let n = 0;
      while (n < s.queue.length && (n === 0 || bytes + s.queue[n].length <= most))
        bytes += s.queue[n++].length;
      const entries = n === s.queue.length ? s.queue : s.queue.slice(0, n);
      s.queue = n === s.queue.length ? [] : s.queue.slice(n);
      s.writing = true;
      s.call.write(entries.length === 1 ? entries[0] : Buffer.concat(entries, bytes), () => {
        s.writing = false;
        this.flush(s);
      });
      return;
    }
    this.maybeEnd(s);
  }

  /** A live stream, round-robin; opens one while fewer than `size` are live. */
  private pick(): Stream {
    let live = 0;
    for (const s of this.streams) if (!s.retiring) live++;
    if (live < this.o.size) return this.open();
    for (let i = 0; i < this.streams.length; i++) {
      const s = this.streams[this.next++ % this.streams.length];
      if (!s.retiring) return s;
    }
    return this.open();
  }

  private open(): Stream {
    const call = this.client.makeBidiStreamRequest<Buffer, VerdictStreamResponse__Output>(
      METHOD,
      (b: Buffer) => b,
      this.method.responseDeserialize,
      this.metadata(),
      {},
    );
    const now = Date.now();
    const s: Stream = {
      call,
      pending: new Map(),
      nextId: 0,
      openedAt: now,
      lastActive: now,
      retiring: false,
      failure: null,
      maxBytes: null,
      queue: [],
      writing: false,
      scheduled: false,
    };
    call.on('metadata', (md: grpc.Metadata) => {
      const announced = Number(md.get(MAX_MESSAGE_BYTES_KEY)[0]);
      if (Number.isInteger(announced) && announced > 0) s.maxBytes = announced;
    });
    call.on('data', (m: VerdictStreamResponse__Output) => {
      for (const a of m.answers) this.answered(s, a);
    });
    call.on('error', (err: grpc.ServiceError) => {
      s.failure = err;
    });
    call.on('status', (status: grpc.StatusObject) => this.ended(s, status));
    this.streams.push(s);
    if (!this.sweeper) {
      this.sweeper = setInterval(() => this.sweep(), Math.min(this.idleMs, this.maxAgeMs));
      this.sweeper.unref();
    }
    return s;
  }

  /** Retire streams past their age, or idle: they take no new call and half-close once answered. */
  private sweep(): void {
    const now = Date.now();
    for (const s of this.streams) {
      if (
        !s.retiring &&
        (now - s.openedAt >= this.maxAgeMs || (s.pending.size === 0 && now - s.lastActive >= this.idleMs))
      ) {
        s.retiring = true;
        this.maybeEnd(s);
      }
    }
  }

  /** Half-close a retiring stream once its calls are answered and its queue written. */
  private maybeEnd(s: Stream): void {
    if (s.retiring && s.pending.size === 0 && s.queue.length === 0 && !s.writing && !s.call.writableEnded)
      s.call.end();
  }

  private answered(s: Stream, a: VerdictAnswer__Output): void {
    const p = s.pending.get(a.id);
    if (!p) return; // Given up already (deadline, cancellation).
    this.settle(p);
    if (a.result === 'error' && a.error) p.reject(this.errors.service(callErrorAsServiceError(a.error)));
    else if (a.result === p.endpoint && a[p.endpoint]) p.resolve(a[p.endpoint]);
    else
      p.reject(
        this.errors.local(
          grpc.status.INTERNAL,
          `VerdictStream answered ${a.result ?? 'nothing'} to a ${p.endpoint} call`,
        ),
      );
  }

  /** Take `p` off its stream; clear its timer and abort listener. */
  private settle(p: Pending): void {
    clearTimeout(p.timer);
    if (p.onAbort) p.signal?.removeEventListener('abort', p.onAbort);
    const s = p.stream;
    p.stream = null;
    if (!s) return;
    s.pending.delete(p.id);
    if (s.retiring) this.maybeEnd(s);
  }

  /** The caller's deadline passed or it cancelled: reject, and cancel the call on the server. */
  private giveUp(p: Pending, code: grpc.status, message: string): void {
    const s = p.stream;
    const id = p.id;
    this.settle(p);
    if (s && !s.call.writableEnded) this.enqueue(s, callEntry(id, 0, CANCEL));
    p.reject(this.errors.local(code, message));
  }

  private ended(s: Stream, status: grpc.StatusObject): void {
    s.retiring = true;
    s.queue = [];
    const at = this.streams.indexOf(s);
    if (at >= 0) this.streams.splice(at, 1);
    if (this.streams.length === 0 && this.sweeper) {
      clearInterval(this.sweeper);
      this.sweeper = null;
    }
    if (status.code === grpc.status.UNIMPLEMENTED) this.disabled = true;
    const left = [...s.pending.values()];
    s.pending.clear();
    // A clean end (the server drained, or answered all and ended) leaves only calls it never
    // read, so never started; with UNIMPLEMENTED, none was started either.
    const unread = status.code === grpc.status.OK || status.code === grpc.status.UNIMPLEMENTED;
    for (const p of left) {
      p.stream = null;
      if (unread && !p.resent) {
        p.resent = true;
        this.send(p);
        continue;
      }
      this.settle(p);
      p.reject(
        status.code === grpc.status.OK
          ? this.errors.local(grpc.status.UNAVAILABLE, 'the VerdictStream ended before answering the call')
          : this.errors.service(
              s.failure ??
                Object.assign(
                  new Error(`${status.code} ${grpc.status[status.code]}: ${status.details}`),
                  status,
                ),
            ),
      );
    }
  }

  /** Send `p` as the unary RPC after all; its own deadline and signal go with it. */
  private sendUnary(p: Pending): void {
    this.settle(p);
    this.unary(p.endpoint, p.req, p.deadline, p.signal).then(p.resolve, p.reject);
  }
}
