/**
 * google.protobuf.Struct to and from plain JSON objects, as proto-loader represents them
 * (`{fields: {name: {kind, stringValue, ...}}}`). Nesting is bounded as on REST, so that hostile
 * input cannot exhaust the stack.
 */
import { BadRequest } from '../core/errors';
import type { Struct, Struct__Output } from './generated/google/protobuf/Struct';
import type { Value, Value__Output } from './generated/google/protobuf/Value';
import type { ListValue__Output } from './generated/google/protobuf/ListValue';

/** The same bound as REST's JSON bodies. */
export const MAX_STRUCT_DEPTH = 32;

export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };

/** Own-property assignment that treats `__proto__` as a plain key, as JSON.parse does. */
export function put(o: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__')
    Object.defineProperty(o, key, { value, enumerable: true, writable: true, configurable: true });
  else o[key] = value;
}

/** A Struct as a plain object; `null` for an unset Struct. Throws BadRequest when nested too deep. */
export function fromStruct(
  s: Struct__Output | null | undefined,
  field: string,
  depth = 1,
): JsonObject | null {
  if (!s) return null;
  if (depth > MAX_STRUCT_DEPTH)
    throw new BadRequest(`${field} is nested deeper than ${MAX_STRUCT_DEPTH} levels`);
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(s.fields ?? {})) put(out, k, fromValue(v, field, depth + 1));
  return out;
}

function fromList(l: ListValue__Output | null | undefined, field: string, depth: number): JsonValue[] {
  if (depth > MAX_STRUCT_DEPTH)
    throw new BadRequest(`${field} is nested deeper than ${MAX_STRUCT_DEPTH} levels`);
  return (l?.values ?? []).map((v) => fromValue(v, field, depth + 1));
}

function fromValue(v: Value__Output, field: string, depth: number): JsonValue {
  switch (v.kind) {
    case 'stringValue':
      return v.stringValue ?? '';
    case 'numberValue':
      return v.numberValue ?? 0;
    case 'boolValue':
      return v.boolValue ?? false;
    case 'structValue':
      return fromStruct(v.structValue, field, depth) ?? {};
    case 'listValue':
      return fromList(v.listValue, field, depth);
    default:
      return null;
  }
}

/** A plain object as a Struct. Values JSON cannot carry (undefined, functions) are left out, Dates become ISO strings. */
export function toStruct(o: Record<string, unknown>): Struct {
  const fields: Record<string, Value> = {};
  for (const [k, v] of Object.entries(o)) {
    const value = toValue(v, 1);
    if (value) fields[k] = value;
  }
  return { fields };
}

function toValue(v: unknown, depth: number): Value | null {
  if (depth > MAX_STRUCT_DEPTH) return { nullValue: 'NULL_VALUE', kind: 'nullValue' };
  if (v === null) return { nullValue: 'NULL_VALUE', kind: 'nullValue' };
  switch (typeof v) {
    case 'string':
      return { stringValue: v, kind: 'stringValue' };
    case 'number':
      return { numberValue: v, kind: 'numberValue' };
    case 'boolean':
      return { boolValue: v, kind: 'boolValue' };
    case 'bigint':
      return { numberValue: Number(v), kind: 'numberValue' };
    case 'object': {
      if (v instanceof Date) return { stringValue: v.toISOString(), kind: 'stringValue' };
      if (Array.isArray(v))
        return {
          listValue: {
            values: v.map((x) => toValue(x, depth + 1) ?? { nullValue: 'NULL_VALUE', kind: 'nullValue' }),
          },
          kind: 'listValue',
        };
      const fields: Record<string, Value> = {};
      for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
        const value = toValue(x, depth + 1);
        if (value) fields[k] = value;
      }
      return { structValue: { fields }, kind: 'structValue' };
    }
    default:
      return null;
  }
}
