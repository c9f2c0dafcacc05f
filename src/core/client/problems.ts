/**
 * The clients' strict bodies (the collector's components and `mobile` object, app events) name
 * every problem the way InvalidParameters does: one field per problem, by its path, an unknown
 * member by its own name. Pure.
 */
import type { ZodIssue } from 'zod';
import { InvalidParameters, type FieldProblem } from '../errors';

export interface ProblemNaming {
  /** What the paths are under (`components`), or null when they are named from the body's root. */
  prefix: string | null;
  /** How many members of a path name the field (`mobile.app.id`: 2). */
  depth: (path: readonly (string | number)[]) => number;
  /** List indexes are part of the name (`events.3.name`); without, a list's problem is the list's. */
  indexes?: boolean;
  /** At most this many fields (a batch of bad events need not name them all). */
  limit?: number;
}

/** The issues of a failed validation, as the InvalidParameters to throw. */
export function invalidParameters(issues: readonly ZodIssue[], o: ProblemNaming): InvalidParameters {
  const problems: FieldProblem[] = [];
  for (const issue of issues) {
    const unknown = issue.code === 'unrecognized_keys';
    const full = unknown ? [...issue.path, issue.keys[0] ?? ''] : issue.path;
    const path = o.indexes === false ? full.filter((p) => typeof p === 'string') : full;
    const named = path.slice(0, o.depth(path)).join('.');
    const field = o.prefix === null ? named : named ? `${o.prefix}.${named}` : o.prefix;
    const message = unknown ? `unknown member (${issue.keys.join(', ')})` : issue.message;
    if (!problems.some((p) => p.field === field) && problems.length < (o.limit ?? Infinity))
      problems.push({ field, message });
  }
  return new InvalidParameters(problems);
}
