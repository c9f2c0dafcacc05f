/**
 * Packed documents: on the embedded FerretDB every field of a document is paid for on each write
 * and each read (FerretDB keeps a type schema per field and SQLite parses the JSON it stores),
 * so a user document of a few devices, ~70 nested fields, cost ~0.5 ms to write and ~0.9 ms to
 * read. Written whole by their only writer (the state layer in `snapshots` mode), such documents
 * are stored as the few fields that queries filter on plus one JSON string holding the rest, for
 * a fraction of that. Reading accepts both forms, so a collection may hold either.
 *
 * Pure: no I/O. Dates survive the round trip (`{"$date": <ms>}` inside the string).
 */
import type { Doc } from './delta';

/** The field holding the packed rest of a document. */
export const PACKED = '_p';

/**
 * The value with every Date as `{$date: <ms>}`, copying only the objects and arrays on the way to
 * a Date (the rest is shared). A walk in JavaScript and then the native JSON.stringify cost about
 * half of a replacer function, which JSON.stringify calls back for every key (~100 → ~57 µs for a
 * user document of 8 KB).
 */
function dated(v: unknown): unknown {
  if (v instanceof Date) return { $date: v.getTime() };
  if (Array.isArray(v)) {
    let out: unknown[] | null = null;
    for (let i = 0; i < v.length; i++) {
      const x: unknown = v[i];
      if (x === null || typeof x !== 'object') continue;
      const y = dated(x);
      if (y !== x) (out ??= v.slice())[i] = y;
    }
    return out ?? v;
  }
  if (v !== null && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    let out: Record<string, unknown> | null = null;
    for (const k in o) {
      const x = o[k];
      if (x === null || typeof x !== 'object') continue;
      const y = dated(x);
      if (y !== x) (out ??= { ...o })[k] = y;
    }
    return out ?? v;
  }
  return v;
}

/**
 * Turn every `{$date: <ms>}` in freshly parsed JSON back into a Date, in place. A walk after the
 * native JSON.parse costs a fraction of a reviver, which JSON.parse calls back for every value.
 */
function undate(v: unknown): unknown {
  if (v === null || typeof v !== 'object') return v;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const x: unknown = v[i];
      if (x !== null && typeof x === 'object') v[i] = undate(x);
    }
    return v;
  }
  const o = v as Record<string, unknown>;
  let keys = 0;
  for (const k in o) {
    keys++;
    const x = o[k];
    if (x !== null && typeof x === 'object') o[k] = undate(x);
  }
  return keys === 1 && typeof o.$date === 'number' ? new Date(o.$date) : o;
}

/** The stored form: the `keep` fields as they are, everything else in one JSON string. */
export function pack(doc: Doc, keep: readonly string[]): Doc {
  const out: Doc = {};
  const rest: Doc = {};
  for (const k in doc) {
    const v = doc[k];
    if (keep.includes(k)) out[k] = v;
    // Dated here, field by field: `rest` is this function's own, so it is not copied again.
    else rest[k] = v !== null && typeof v === 'object' ? dated(v) : v;
  }
  out[PACKED] = JSON.stringify(rest);
  return out;
}

/** The document a stored form stands for (a document that is not packed is returned as it is). */
export function unpack(stored: Doc): Doc {
  const packed = stored[PACKED];
  if (typeof packed !== 'string') return stored;
  return unpacked(stored, packed, null);
}

/**
 * `unpack` for a collection's own document type: a document as stored (packed, or plain as an
 * earlier version or MongoDB wrote it) as the document it stands for.
 */
export const unpackAs = <T extends object>(stored: T): T => unpack(stored as unknown as Doc) as unknown as T;

/**
 * The document a stored form read from the database stands for, without its `_id` (the state
 * layer keys its copies by it): the parsed rest takes the kept fields, no copy made of either.
 */
export function unpackRead(stored: Doc): Doc {
  const packed = stored[PACKED];
  if (typeof packed === 'string') return unpacked(stored, packed, '_id');
  const { _id, ...doc } = stored;
  return doc;
}

/** The parsed `packed` text of `stored`, with `stored`'s other fields but `leave` after its own. */
function unpacked(stored: Doc, packed: string, leave: string | null): Doc {
  const parsed = JSON.parse(packed) as Doc;
  // Most packed documents (counters) hold no date: no walk for them.
  const doc = packed.includes('"$date"') ? (undate(parsed) as Doc) : parsed;
  for (const k in stored) if (k !== PACKED && k !== leave) doc[k] = stored[k];
  return doc;
}
