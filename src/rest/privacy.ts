/**
 * Privacy requests, with the API secret: access (an export per user, e-mailed or downloaded) and
 * purge, by path (`/v1/privacy/users/{id}`) or by body (`{identifier, identifier_type}`); and the
 * export's download, which takes no secret: its link is signed (rest/privacy-links.ts).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { subjectOfIdentifier, type PrivacySubject } from '../core/privacy/service';
import type { Services } from '../core/services';
import { requireApiSecret } from './auth';
import { privacyAccessJson } from './mappers';
import { EXPORT_ROUTE } from './privacy-links';
import { jsonBody } from './request';

const privacySubject = (req: FastifyRequest): PrivacySubject => {
  const { userId } = (req.params ?? {}) as { userId?: string };
  if (userId !== undefined) return subjectOfIdentifier(userId, '$id', 'user_id');
  const body = jsonBody(req);
  return subjectOfIdentifier(body.identifier, body.identifier_type);
};

export async function privacyRoutes(app: FastifyInstance, o: { services: Services }): Promise<void> {
  const { services } = o;
  await app.register(async (requests) => {
    requireApiSecret(requests, services);
    for (const path of ['/v1/privacy/users/:userId', '/v1/privacy/users']) {
      requests.post(path, async (req, reply) => {
        const jobs = await services.privacy.requestAccessFor(req.principal.env, privacySubject(req));
        return reply.code(202).send(privacyAccessJson(jobs));
      });
      requests.delete(path, async (req, reply) => {
        await services.privacy.purgeFor(req.principal.env, privacySubject(req));
        return reply.code(202).send({ status: 'purged' });
      });
    }
  });

  app.get(EXPORT_ROUTE, async (req, reply) => {
    const { jobId } = req.params as { jobId: string };
    const q = req.query as Record<string, unknown>;
    const file = await services.privacy.download(jobId, String(q.expires ?? ''), String(q.signature ?? ''));
    return reply
      .code(200)
      .header('content-type', 'application/json; charset=utf-8')
      .header('content-disposition', `attachment; filename="${file.filename}"`)
      .header('cache-control', 'no-store')
      .send(file.json);
  });
}
