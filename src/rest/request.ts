/**
 * What the REST door's route groups read from a request besides its credential (rest/auth.ts):
 * its JSON body, and its connection, as the core watches it (a caller that left gets no work).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Duplex } from 'node:stream';
import type { Caller } from '../core/work-limiter';
import { jsonObject } from '../doors/json-body';

/**
 * The request's JSON object (doors/json-body.ts). Bodies reach the routes as raw bytes, parsed
 * here by the handler: track keeps a body it cannot read in the debugger.
 */
export const jsonBody = (req: FastifyRequest): Record<string, unknown> => jsonObject(req.body);

/** Whether the client of `req` has gone: its socket closed, or its side of it ended. */
export function gone(req: FastifyRequest): boolean {
  const socket = req.raw.socket as (Duplex & { readableEnded?: boolean }) | null;
  // (Not the request stream's own `destroyed`: Node destroys it once its body is read.)
  return !socket || socket.destroyed || socket.readableEnded === true;
}

/** Drops a request whose client is gone: no answer (nobody would read it), its connection closed. True when it did. */
export function droppedIfGone(req: FastifyRequest, reply: FastifyReply): boolean {
  if (!gone(req)) return false;
  reply.hijack();
  req.raw.socket?.destroy();
  return true;
}

/**
 * A preHandler hook that drops the request once its client is seen to have left. A client that
 * gave up while its request waited to be read (an overloaded process reads late) has its FIN right
 * behind the request, and Node reads it one turn of the event loop after the request: two turns are
 * given before any work (credentials, parsing, the verdict), so that such a request costs next to
 * nothing instead of a verdict nobody reads.
 */
export async function dropIfLeft(req: FastifyRequest, reply: FastifyReply): Promise<void> {
  await new Promise<void>((resolve) => setImmediate(() => setImmediate(resolve)));
  droppedIfGone(req, reply);
}

/**
 * The connection a request came on, as the core watches it: gone once the client closed its
 * side (a caller that timed out; Node aborts a request whose client sent its FIN) or the socket
 * is closed. An overloaded process reads requests late, and those whose callers left get no work.
 */
export function callerOf(req: FastifyRequest): Caller {
  const socket = req.raw.socket;
  return {
    get gone() {
      return gone(req);
    },
    onGone(listener) {
      let called = false;
      const once = () => {
        if (called) return;
        called = true;
        listener();
      };
      socket.once('end', once);
      socket.once('close', once);
      return () => {
        socket.off('end', once);
        socket.off('close', once);
      };
    },
  };
}
