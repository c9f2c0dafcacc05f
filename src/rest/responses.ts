/**
 * The bodies the REST door answers, as zod schemas. The mappers (mappers.ts) are typed with them,
 * so that a field a mapper adds or drops fails the type-check until the schema (and with it the
 * OpenAPI document, openapi.ts) says the same.
 */
import { z } from 'zod';
import { ACTIONS } from '../core/model';

const timestamp = z.string().describe('ISO 8601 UTC timestamp with milliseconds');
const action = z.enum(ACTIONS as unknown as [string, ...string[]]).describe('allow, challenge or deny');

export const errorBody = z
  .object({
    type: z
      .string()
      .describe(
        'bad_request, unauthorized, forbidden, not_found, route_not_found, payload_too_large, invalid_parameters, invalid_request_token, rate_limited, server_error, service_unavailable',
      ),
    message: z.string(),
    fields: z
      .array(z.object({ field: z.string(), message: z.string() }))
      .optional()
      .describe('invalid_parameters: every offending field'),
    correlation_id: z.string().optional().describe('server_error: the id under which the error was logged'),
    reason: z
      .enum([
        'environment_disabled',
        'read_only_key',
        'origin_not_allowed',
        'no_origins_listed',
        'app_not_allowed',
        'no_apps_listed',
      ])
      .optional()
      .describe('forbidden: why (each operation lists the reasons it can answer)'),
  })
  .passthrough();

const location = z.object({
  country_code: z.string().nullable(),
  country: z.string().nullable(),
  region: z.string().nullable(),
  region_code: z.string().nullable(),
  city: z.string().nullable(),
  lat: z.number().nullable(),
  lon: z.number().nullable(),
});

const userAgent = z.object({
  raw: z.string(),
  browser: z.string(),
  version: z.string(),
  os: z.string(),
  mobile: z.boolean(),
  platform: z.string(),
  device: z.string(),
  family: z.string(),
});

export const deviceBody = z.object({
  token: z.string(),
  created_at: timestamp,
  last_seen_at: timestamp,
  user_id: z.string(),
  approved_at: timestamp.nullable(),
  escalated_at: timestamp.nullable(),
  mitigated_at: timestamp.nullable(),
  risk: z.number().min(0).max(100).describe('0 after approval, 100 after a report'),
  context: z.object({
    ip: z.string().nullable(),
    location: location.nullable(),
    user_agent: userAgent,
    properties: z.record(z.unknown()),
    type: z.enum(['desktop', 'mobile', 'tablet', 'other']),
  }),
  is_current_device: z.boolean().describe('true only when `cid` (or `client_id`) matched this device'),
});

export const devicesBody = z.object({ total_count: z.number().int().min(0), data: z.array(deviceBody) });

const policy = z.object({
  action,
  name: z.string(),
  id: z.string().describe('UUID'),
  revision: z.string().describe('UUID'),
});
const signals = z
  .record(z.record(z.union([z.string(), z.number(), z.boolean(), z.null()])))
  .describe('The signals that fired, each with what explains it');
const risk = z.number().min(0).max(1);
const degraded = z.boolean().describe('true when the verdict was computed without all of its state');

export const authenticateBody = z.object({
  action,
  user_id: z.string().nullable(),
  device_token: z.string().nullable(),
  risk,
  policy,
  signals,
  degraded,
});
export const riskBody = z.object({
  risk,
  policy,
  signals,
  device: z.object({ token: z.string().nullable() }),
  degraded,
});
export const filterBody = z.object({ risk, policy, signals, degraded });

export const clientTokenBody = z.object({
  token: z.string(),
  expires_in: z.number().int().describe('seconds'),
  session: z.string().optional().describe("A native app's session (docs/mobile.md)"),
  session_key: z.string().optional().describe('The key the app signs its tokens with'),
  session_expires_in: z.number().int().optional().describe('seconds'),
  server_time: z.number().int().optional().describe("Rampart's clock, ms since the epoch"),
});
export const clientEventsBody = z.object({
  accepted: z.number().int().min(0).describe('events kept'),
  dropped: z
    .number()
    .int()
    .min(0)
    .describe('events not kept: older than a year (docs/mobile.md, "Event times")'),
  signed: z
    .number()
    .int()
    .min(0)
    .describe('kept events that named their user with `user_signature` or `user_jwt`'),
  verified: z
    .number()
    .int()
    .min(0)
    .describe(
      "of those, the ones whose signature or JWT verified under one of the environment's live API secrets",
    ),
});
export const clientChallengeBody = z.object({
  challenge: z
    .string()
    .describe("The signed challenge, to send back unchanged in the token request's `proof.challenge`"),
  salt: z
    .string()
    .describe('What the nonce is appended to: SHA-256(salt ‖ nonce) must begin with `difficulty` zero bits'),
  difficulty: z.number().int().min(0).describe('leading zero bits'),
  expires_in: z.number().int().describe('seconds; the challenge answers one token request'),
});
const privacyJobStatus = z.enum(['pending', 'sent', 'failed', 'expired']);
export const privacyJobBody = z.object({
  id: z.string(),
  status: privacyJobStatus,
  expires_at: timestamp,
  user_id: z.string(),
});
export const privacyAccessBody = z.object({
  id: z.string().describe('The first job (of the first user found)'),
  status: privacyJobStatus,
  expires_at: timestamp,
  jobs: z
    .array(privacyJobBody)
    .min(1)
    .describe('One job per user the request names (an e-mail address may name several)'),
});
export const privacyPurgeBody = z.object({ status: z.literal('purged') });
export const healthBody = z.object({ status: z.literal('ok') });
export const readyBody = z.object({ status: z.enum(['ready', 'unavailable']) });

export type DeviceBody = z.infer<typeof deviceBody>;
export type AuthenticateBody = z.infer<typeof authenticateBody>;
export type RiskBody = z.infer<typeof riskBody>;
export type FilterBody = z.infer<typeof filterBody>;
export type PrivacyJobBody = z.infer<typeof privacyJobBody>;
export type PrivacyAccessBody = z.infer<typeof privacyAccessBody>;
