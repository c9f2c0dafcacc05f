/**
 * What kind of server the database is, read once at start-up: MongoDB, or FerretDB (and whether
 * it is Rampart's own FerretDB build, which can replace documents in a multi-document insert).
 */
import type { Db } from 'mongodb';
import type { IndexSpec } from './database';
import { UPSERT_COMMENT } from './state/layer';

export interface ServerKind {
  ferretdb: boolean;
  /** Inserts with `comment: "rampart:upsert"` replace documents with the same _id. */
  upsertInsert: boolean;
  /**
   * Rampart's FerretDB build with patch 0009: non-unique indexes on top-level fields serve
   * equality, range and keyset filters, with their sort and limit (reported by `buildInfo`).
   */
  indexPushdown: boolean;
}

const PROBE = 'rampart_probe';

export async function serverKind(db: Db): Promise<ServerKind> {
  const info = await db.admin().command({ buildInfo: 1 });
  const ferretdb = typeof info.ferretdbVersion === 'string';
  if (!ferretdb) return { ferretdb, upsertInsert: false, indexPushdown: false };
  const indexPushdown = info.rampartIndexPushdown === true;
  const probe = db.collection<{ _id: string; v: number }>(PROBE);
  let upsertInsert = false;
  try {
    await probe.insertMany([{ _id: 'upsert', v: 1 }], { comment: UPSERT_COMMENT });
    await probe.insertMany([{ _id: 'upsert', v: 2 }], { comment: UPSERT_COMMENT });
    upsertInsert = (await probe.findOne({ _id: 'upsert' }))?.v === 2;
  } catch {
    upsertInsert = false;
  } finally {
    await probe.drop().catch(() => undefined);
  }
  return { ferretdb, upsertInsert, indexPushdown };
}

/**
 * The indexes worth creating on this server. A stock FerretDB's SQLite backend filters and sorts in
 * the server, never through a secondary index (it pushes only `_id` equality down to SQLite), so
 * there secondary indexes only slow every write; unique indexes stay, for what they guarantee.
 * Rampart's build (patch 0009) reads through the non-unique indexes named `servedOnEmbedded`, and
 * through `embeddedOnly` ones, so those are created too: each costs every insert of its
 * collection, so only the dashboards' access paths are (docs/state.md).
 */
export function indexesFor(kind: ServerKind, specs: readonly IndexSpec[]): IndexSpec[] {
  if (!kind.ferretdb) return specs.map(({ collection, indexes }) => ({ collection, indexes: [...indexes] }));
  return specs.map((s) => ({
    collection: s.collection,
    indexes: [
      ...s.indexes.filter((i) => i.unique === true),
      ...(kind.indexPushdown
        ? [
            ...s.indexes.filter(
              (i) => i.unique !== true && i.name !== undefined && (s.servedOnEmbedded ?? []).includes(i.name),
            ),
            ...(s.embeddedOnly ?? []),
          ].map((i) => ({ ...i, name: embeddedIndexName(i.name ?? '') }))
        : []),
    ],
  }));
}

/**
 * The name of an index on Rampart's FerretDB build: patch 0009 indexes field values, which an
 * index of the same key made by an earlier build (on its JSON text) does not; a name of their own
 * keeps the two apart, and the earlier one is dropped (staleIndexes).
 */
export const embeddedIndexName = (name: string): string => `v_${name}`;

/**
 * On FerretDB, the non-unique indexes of `collection` that `wanted` does not name: made by an
 * earlier build or version, they serve no read and cost every write.
 */
export function staleIndexes(
  existing: readonly { name?: unknown; unique?: unknown }[],
  wanted: IndexSpec | undefined,
): string[] {
  const keep = new Set((wanted?.indexes ?? []).map((i) => i.name));
  return existing
    .filter((i) => typeof i.name === 'string' && i.name !== '_id_' && i.unique !== true && !keep.has(i.name))
    .map((i) => i.name as string);
}
