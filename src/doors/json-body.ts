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

/**
 * Whether a parsed JSON value nests deeper than `max` (iterative, so hostile input cannot overflow
 * the stack). Only objects and arrays are stacked, each beside its depth.
 */
export function depthExceeds(value: unknown, max: number): boolean {
  if (typeof value !== 'object' || value === null) return false;
  const values: object[] = [value];
  const depths: number[] = [1];
  for (let v = values.pop(); v !== undefined; v = values.pop()) {
    const d = depths.pop() as number;
    if (d > max) return true;
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        const child = v[i] as unknown;
        if (typeof child === 'object' && child !== null) {
          values.push(child);
          depths.push(d + 1);
        }
      }
    } else {
      for (const key in v) {
        if (!Object.prototype.hasOwnProperty.call(v, key)) continue;
        const child = (v as Record<string, unknown>)[key];
        if (typeof child === 'object' && child !== null) {
          values.push(child);
          depths.push(d + 1);
        }
      }
    }
  }
  return false;
}
