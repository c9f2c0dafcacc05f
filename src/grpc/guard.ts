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
  constructor(readonly error: DomainError) {}
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
        if (buf.length > maxBytes) return new RejectedMessage(new PayloadTooLarge(`request message is larger than ${maxBytes} bytes`));
        try {
          return decode(buf);
        } catch {
          return new RejectedMessage(new BadRequest('request message is not a valid protobuf encoding of the request type'));
        }
      },
    };
  }
  return guarded as unknown as S;
}
