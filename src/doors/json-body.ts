/**
 * The JSON request body of the doors served over HTTP (REST, the console): one object, nested at
 * most MAX_JSON_DEPTH levels, or a `bad_request` saying what is wrong with it. The bytes arrive
 * through Fastify's content-type parsing, within its body limit (one limit for every route).
 */
import { BadRequest } from '../core/errors';

/** How deep a request body may nest. */
export const MAX_JSON_DEPTH = 32;

/** The object a JSON body holds; `raw` is the body's bytes (anything else is no body). */
export function jsonObject(raw: unknown): Record<string, unknown> {
  if (!Buffer.isBuffer(raw) || raw.length === 0) throw new BadRequest('request body must be a JSON object');
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw.toString('utf8'));
  } catch {
    throw new BadRequest('request body is not valid JSON');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new BadRequest('request body must be a JSON object');
  if (depthExceeds(parsed, MAX_JSON_DEPTH))
    throw new BadRequest(`request body is nested deeper than ${MAX_JSON_DEPTH} levels`);
  return parsed as Record<string, unknown>;
}

/** Whether a parsed JSON value nests deeper than `max` (iterative, so hostile input cannot overflow the stack). */
export function depthExceeds(value: unknown, max: number): boolean {
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length) {
    const [v, d] = stack.pop() as [unknown, number];
    if (typeof v !== 'object' || v === null) continue;
    if (d > max) return true;
    for (const child of Object.values(v as Record<string, unknown>)) stack.push([child, d + 1]);
  }
  return false;
}
