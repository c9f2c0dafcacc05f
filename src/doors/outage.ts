/**
 * What the two doors on the HTTP listener (REST and GraphQL) share about database outages: the
 * requests that need the database answer 503 while it is down, in each door's own error shape.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Unavailable } from '../core/errors';

/** Whether the database answers now, and a way to hear when it stops (store/health.ts). */
export interface DatabaseStatus {
  down(): string | null;
  onDown(listener: (why: string) => void): () => void;
}

/**
 * While the database is down, the requests `applies` picks answer 503 (through `send`) before
 * their handler runs; one already waiting on the database when it goes down answers 503 then, and
 * what its handler sends later is dropped (its double send is not worth a warning).
 */
export function cutOnOutage(
  app: FastifyInstance,
  database: DatabaseStatus,
  applies: (req: FastifyRequest) => boolean,
  send: (reply: FastifyReply, e: Unavailable) => unknown,
): void {
  app.addHook('preHandler', async (req, reply) => {
    if (!applies(req)) return;
    const down = database.down();
    if (down) return send(reply, new Unavailable(down));
    const off = database.onDown((why) => {
      if (reply.sent) return;
      send(reply, new Unavailable(why));
      req.log = req.log.child({}, { level: 'error' });
    });
    reply.raw.once('close', off);
  });
}
