/** Composite `_id`s: tenant first, each part escaped, so hot look-ups are single _id equalities. */
import type { EnvId } from '../core/model';

/**
 * Lone UTF-16 surrogates (which `encodeURIComponent` refuses with an exception) become U+FFFD, so
 * an id built from any request string never throws.
 */
const wellFormed = (s: string): string =>
  s.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd');

/** Text that encodeURIComponent leaves as it is, but for colons (the hot path's counter keys). */
const PLAIN_OR_COLON = /^[\w.!~*'():-]*$/;

/** One part of an id: as encodeURIComponent writes it, without its cost for the common plain text. */
const encodePart = (p: string): string =>
  PLAIN_OR_COLON.test(p)
    ? p.includes(':')
      ? p.replaceAll(':', '%3A')
      : p
    : encodeURIComponent(wellFormed(p));

export function idOf(env: EnvId, ...parts: string[]): string {
  let id: string = env;
  for (const p of parts) id += `:${encodePart(p)}`;
  return id;
}

/**
 * `idOf(env, key)` built once per key while it is among the last `max` kept, all environments
 * together (all are forgotten at once when full, so a service with many tenants holds no more):
 * for the hot path's ids, asked for several times per verdict.
 */
export function keptIds(max: number): (env: EnvId, key: string) => string {
  const byEnv = new Map<EnvId, Map<string, string>>();
  let kept = 0;
  return (env, key) => {
    let ids = byEnv.get(env);
    if (!ids) {
      ids = new Map();
      byEnv.set(env, ids);
    }
    let id = ids.get(key);
    if (id === undefined) {
      if (kept >= max) {
        for (const m of byEnv.values()) m.clear();
        kept = 0;
      }
      id = idOf(env, key);
      ids.set(key, id);
      kept++;
    }
    return id;
  };
}

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
