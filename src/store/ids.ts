/** Composite `_id`s: tenant first, each part escaped, so hot look-ups are single _id equalities. */
import type { EnvId } from '../core/model';

/**
 * Lone UTF-16 surrogates (which `encodeURIComponent` refuses with an exception) become U+FFFD, so
 * an id built from any request string never throws.
 */
const wellFormed = (s: string): string => s.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd');

export const idOf = (env: EnvId, ...parts: string[]): string => [env, ...parts.map((p) => encodeURIComponent(wellFormed(p)))].join(':');

/** A string matched literally inside a `$regex`. */
export const escapeRegex = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Free-form objects are stored as JSON text: keys like `$where` or `a.b` never reach the query language. */
export const toJson = (v: unknown): string => JSON.stringify(v ?? {});
export function fromJson<T>(s: unknown, fallback: T): T {
  if (typeof s !== 'string') return fallback;
  try {
    return JSON.parse(s) as T;
  } catch {
    return fallback;
  }
}
