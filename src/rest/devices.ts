/** A user's devices and one device by its token, with the API secret: reads, approval and report. */
import type { FastifyInstance } from 'fastify';
import type { Services } from '../core/services';
import { requireApiSecret } from './auth';
import { deviceJson } from './mappers';

export async function deviceRoutes(app: FastifyInstance, o: { services: Services }): Promise<void> {
  const { services } = o;
  requireApiSecret(app, services);

  app.get('/v1/users/:userId/devices', async (req, reply) => {
    const { userId } = req.params as { userId: string };
    const q = req.query as Record<string, unknown>;
    const devices = await services.devices.listForUser(req.principal.env, userId, [q.cid, q.client_id]);
    return reply
      .code(200)
      .send({ total_count: devices.length, data: devices.map((d) => deviceJson(d.device, d.current)) });
  });

  app.get('/v1/devices/:token', async (req, reply) => {
    const { token } = req.params as { token: string };
    return reply.code(200).send(deviceJson(await services.devices.get(req.principal.env.id, token)));
  });
  app.put('/v1/devices/:token/approve', async (req, reply) => {
    const { token } = req.params as { token: string };
    return reply.code(200).send(deviceJson(await services.devices.approve(req.principal.env.id, token)));
  });
  app.put('/v1/devices/:token/report', async (req, reply) => {
    const { token } = req.params as { token: string };
    return reply.code(200).send(deviceJson(await services.devices.report(req.principal.env, token)));
  });
}
