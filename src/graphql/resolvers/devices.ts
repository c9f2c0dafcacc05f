/** Devices: look-up, search, review (approve/report through the core), and their relations. */
import { reviewState } from '../../core/devices/service';
import type { MutationResolvers, QueryResolvers, Resolvers } from '../generated/types';
import { compact, connection, envOf, freshEnv } from './common';

export const query: QueryResolvers = {
  device: (_p, { token }, ctx) => ctx.loaders.device.load(token),
  devices: (_p, { filter, first, after }, ctx) => {
    const { minRisk, maxRisk, ...rest } = compact(filter);
    return ctx.services.queries.devices(
      envOf(ctx),
      { ...rest, minRiskScore: minRisk, maxRiskScore: maxRisk },
      { first, after },
    );
  },
};

export const mutation: MutationResolvers = {
  approveDevice: (_p, { token }, ctx) => ctx.services.devices.approve(envOf(ctx), token),
  reportDevice: async (_p, { token }, ctx) => ctx.services.devices.report(await freshEnv(ctx), token),
};

export const types: Resolvers = {
  Device: {
    user: (d, _a, ctx) => ctx.loaders.user.load(d.userId),
    risk: (d) => d.riskScore,
    reviewState: (d) => reviewState(d),
    type: (d) => d.context.type,
    ip: (d) => d.context.ip,
    location: (d) => d.context.location,
    userAgent: (d) => d.context.userAgent,
    properties: (d) => d.context.properties,
    app: (d) => deviceApp(d.context.properties),
    events: (d, { first }, ctx) => ctx.loaders.deviceEvents(first).load(d.token),
  },
  Location: {
    countryCode: (l) => l.country_code,
    regionCode: (l) => l.region_code,
  },
  DeviceConnection: connection,
};

/** The app and phone a mobile client session described (core/client/mobile.ts mobileProperties), or null. */
function deviceApp(p: Record<string, unknown>) {
  const text = (k: string) => (typeof p[k] === 'string' ? (p[k] as string) : null);
  const platform = text('platform');
  const id = text('app_id');
  const version = text('app_version');
  const model = text('model');
  const os = text('os');
  if (!platform || !id || !version || !model || !os) return null;
  return { platform, id, version, build: text('app_build'), model, manufacturer: text('manufacturer'), os };
}
