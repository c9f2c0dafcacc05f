/**
 * The browser and mobile clients' endpoints: the collector (`/v1/client/token`, its optional
 * `/v1/client/challenge`) and client events (`/v1/client/events`). They are called from the
 * application's pages (another origin) and apps with the environment's publishable key, never a
 * secret: the core checks the key, the page's origin and the app (a 403 names the rule). The
 * script posts `text/plain` so that the browser needs no preflight; a preflight is answered anyway
 * for clients that send JSON.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Services } from '../core/services';
import { jsonBody } from './request';

/** The largest body POST /v1/client/events takes, whatever the service's own limit (an endpoint any page or app may call). */
export const CLIENT_EVENTS_BODY_LIMIT = 256 * 1024;

export interface CollectorOptions {
  services: Services;
  /** The service's body limit. */
  bodyLimit: number;
}

const cors = (req: FastifyRequest, reply: FastifyReply) => {
  const origin = req.headers.origin;
  if (typeof origin === 'string' && origin.length <= 512)
    reply.header('access-control-allow-origin', origin).header('vary', 'Origin');
};

/** A page's call to the collector (no secret): CORS for it, its body, the page's origin and address. */
const collectorCall = (req: FastifyRequest, reply: FastifyReply) => {
  cors(req, reply);
  return {
    body: jsonBody(req),
    origin: typeof req.headers.origin === 'string' ? req.headers.origin : null,
    ip: req.ip ?? null,
  };
};

export async function collectorRoutes(app: FastifyInstance, o: CollectorOptions): Promise<void> {
  const { services } = o;
  for (const path of ['/v1/client/token', '/v1/client/challenge', '/v1/client/events']) {
    app.options(path, async (req, reply) => {
      cors(req, reply);
      return reply
        .code(204)
        .header('access-control-allow-methods', 'POST')
        .header('access-control-allow-headers', 'content-type')
        .header('access-control-max-age', '600')
        .send();
    });
  }

  // A challenge for the next token (docs/client.md, "What a token costs"): optional, a second step
  // before /v1/client/token for clients that prove work.
  app.post('/v1/client/challenge', async (req, reply) => {
    const { body, origin, ip } = collectorCall(req, reply);
    const c = await services.client.challenge({
      publishableKey: body.publishable_key,
      origin,
      ip,
      app: body.app,
    });
    return reply.code(201).header('cache-control', 'no-store').send({
      challenge: c.challenge,
      salt: c.salt,
      difficulty: c.difficulty,
      expires_in: c.expiresInSeconds,
    });
  });

  app.post('/v1/client/token', async (req, reply) => {
    const { body, origin, ip } = collectorCall(req, reply);
    const collected = await services.client.collect({
      publishableKey: body.publishable_key,
      origin,
      ip,
      components: body.components,
      mobile: body.mobile,
      proof: body.proof,
      behaviour: body.behaviour,
    });
    const session = collected.session
      ? {
          session: collected.session.session,
          session_key: collected.session.key,
          session_expires_in: collected.session.expiresInSeconds,
          server_time: collected.session.serverTime,
        }
      : {};
    return reply
      .code(201)
      .header('cache-control', 'no-store')
      .send({ token: collected.token, expires_in: collected.expiresInSeconds, ...session });
  });

  // Client events: native apps' batches (docs/mobile.md), with the publishable key and the session
  // the collector gave the install; pages' castle-js 2.x events (docs/client.md), with a request
  // token the collector gave the page, CORS as for the collector. A body is at most the service's
  // limit, and never more than 256 KiB.
  app.post(
    '/v1/client/events',
    { bodyLimit: Math.min(CLIENT_EVENTS_BODY_LIMIT, o.bodyLimit) },
    async (req, reply) => {
      const { body, origin, ip } = collectorCall(req, reply);
      const received = await services.clientEvents.receive({ body, ip, origin });
      return reply.code(202).send({
        accepted: received.accepted,
        dropped: received.dropped,
        signed: received.signed,
        verified: received.verified,
      });
    },
  );
}
