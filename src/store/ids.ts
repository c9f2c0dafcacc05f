/** Composite `_id`s: tenant first, each part escaped, so hot look-ups are single _id equalities. */
import type { EnvId } from '../core/model';

export const idOf = (env: EnvId, ...parts: string[]): string => [env, ...parts.map((p) => encodeURIComponent(p))].join(':');

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
