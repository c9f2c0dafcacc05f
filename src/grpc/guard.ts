/**
 * Message-level guards applied while decoding, before a handler runs. grpc-js answers INTERNAL
 * when a deserializer throws, and RESOURCE_EXHAUSTED with no details when a message is over its
 * transport limit. To answer both through the one error table instead, each request decoder is
 * wrapped: a message over `maxBytes`, or one that is not valid protobuf (including one nested so
 * deep that decoding overflows), decodes to a RejectedMessage that the handler turns into
 * payload_too_large or bad_request. The transport limit stays as a hard cap above `maxBytes`.
 */
import type { MethodDefinition, ServiceDefinition } from '@grpc/grpc-js';
import { BadRequest, DomainError, PayloadTooLarge } from '../core/errors';

export class RejectedMessage {
  constructor(
    readonly error: DomainError,
    /** The message as received, for streams that answer its calls in-band (callIds). */
    readonly bytes: Buffer,
  ) {}
}

/** A varint at `at`: [value, next position], or null past the end or beyond 2^32. */
function varint(b: Buffer, at: number): [number, number] | null {
  let value = 0;
  for (let shift = 0; at < b.length && shift < 35; shift += 7) {
    const byte = b[at++];
    value += (byte & 0x7f) * 2 ** shift;
    if (byte < 0x80) return value <= 0xffffffff ? [value, at] : null;
  }
  return null;
}

/**
 * The call ids of a VerdictStreamRequest the guard rejected, read without decoding the calls
 * (each `calls` entry's field 1, which encoders write first; absent means 0), so that each call
 * can still be answered in-band. Null when the bytes are not such a message at all.
 */
export function callIds(bytes: Buffer): number[] | null {
  const ids: number[] = [];
  let at = 0;
  while (at < bytes.length) {
    if (bytes[at] !== 0x0a) return null;
    const len = varint(bytes, at + 1);
    if (!len || len[1] + len[0] > bytes.length) return null;
    const [size, start] = len;
    const id = size > 0 && bytes[start] === 0x08 ? varint(bytes.subarray(start, start + size), 1) : [0, 0];
    if (!id) return null;
    ids.push(id[0]);
    at = start + size;
  }
  return ids;
}

/** The error a decoded request stands for, if the guard rejected it. */
export function rejection(message: unknown): DomainError | null {
  return message instanceof RejectedMessage ? message.error : null;
}

/** A copy of `service` whose request decoders apply the size limit and catch decoding failures. */
export function guardService<S extends ServiceDefinition>(service: S, maxBytes: number): S {
  const guarded: Record<string, MethodDefinition<unknown, unknown>> = {};
  for (const [name, method] of Object.entries(service) as [string, MethodDefinition<unknown, unknown>][]) {
    const decode = method.requestDeserialize;
    guarded[name] = {
      ...method,
      requestDeserialize: (buf: Buffer): unknown => {
        if (buf.length > maxBytes)
          return new RejectedMessage(
            new PayloadTooLarge(`request message is larger than ${maxBytes} bytes`),
            buf,
          );
        try {
          return decode(buf);
        } catch {
          return new RejectedMessage(
            new BadRequest('request message is not a valid protobuf encoding of the request type'),
            buf,
          );
        }
      },
    };
  }
  return guarded as unknown as S;
}
