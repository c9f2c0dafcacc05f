/**
 * The REST door's decoder: Castle's JSON event body into the core's EventCommand. Only the
 * members move; what they must be (types, lengths, which event needs which) the core checks
 * (core/events/parse.ts), naming fields by their JSON paths.
 */
import { InvalidParameters } from '../core/errors';
import type { EventCommand } from '../core/events/command';

/** Decode an event body (POST /v1/authenticate, /v1/risk, /v1/filter, /v1/track, /v1/log). */
export function eventCommand(body: unknown): EventCommand {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new InvalidParameters([{ field: '(body)', message: 'must be a JSON object' }]);
  const {
    event,
    type,
    status,
    name,
    user_id: userId,
    user_traits: userTraits,
    user,
    params,
    properties,
    context,
    client_id: clientId,
    device_token: deviceToken,
    request_token: requestToken,
    timestamp,
    created_at: createdAt,
    sent_at: sentAt,
    // Read by no rule and not stored (Castle's matching hint for its own user look-up).
    matching_user_id: _matchingUserId,
    ...extra
  } = body as Record<string, unknown>;
  return {
    event,
    type,
    status,
    name,
    userId,
    userTraits,
    user,
    params,
    properties,
    context,
    clientId,
    deviceToken,
    requestToken,
    timestamp,
    createdAt,
    sentAt,
    extra,
  };
}
