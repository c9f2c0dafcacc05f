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
}

const PROBE = 'rampart_probe';

export async function serverKind(db: Db): Promise<ServerKind> {
  const info = await db.admin().command({ buildInfo: 1 });
  const ferretdb = typeof info.ferretdbVersion === 'string';
  if (!ferretdb) return { ferretdb, upsertInsert: false };
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
  return { ferretdb, upsertInsert };
}

/**
 * The indexes worth creating on this server. FerretDB's SQLite backend filters and sorts in the
 * server, never through a secondary index (it pushes only `_id` equality down to SQLite), so there
 * secondary indexes only slow every write; unique indexes stay, for what they guarantee.
 */
export function indexesFor(kind: ServerKind, specs: readonly IndexSpec[]): IndexSpec[] {
  if (!kind.ferretdb) return [...specs];
  return specs.map((s) => ({ ...s, indexes: s.indexes.filter((i) => i.unique === true) }));
}
