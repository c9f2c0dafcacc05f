/**
 * Authentication on the REST door: a hook on the route groups that need the API secret. It reads
 * the credential (`Authorization`, doors/credentials.ts), has the core check it (constant time, the
 * failed-authentication throttle, the environment's state) and puts the caller on the request as
 * `req.principal`; a missing or wrong secret ends the request there, through the error handler.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Principal } from '../core/model';
import type { Services } from '../core/services';
import { secretFromAuthorization } from '../doors/credentials';

declare module 'fastify' {
  interface FastifyRequest {
    /**
     * The authenticated caller. Set by `requireApiSecret`'s hook before the handler runs, on the
     * routes of the contexts that add it (every route the OpenAPI document secures); unset (null)
     * on the others, whose handlers never read it.
     */
    principal: Principal;
  }
}

/** Declares `req.principal` on the listener (once, before the route groups are registered). */
export function decoratePrincipal(app: FastifyInstance): void {
  app.decorateRequest('principal', null as unknown as Principal);
}

/**
 * Makes every route of `app`'s context (a route group's plugin) authenticated. A preHandler hook,
 * so that it runs after the body is read (a body over the limit is refused first, as it always
 * was) and after what the group adds before it (the scoring routes' check that the caller left).
 */
export function requireApiSecret(app: FastifyInstance, services: Services): void {
  app.addHook('preHandler', async (req: FastifyRequest) => {
    req.principal = await services.access.caller(secretFromAuthorization(req.headers.authorization), 'api', {
      source: req.ip ?? null,
    });
  });
}
