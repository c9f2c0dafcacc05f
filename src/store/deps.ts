/**
 * What the repositories are built on, as one deps object each (as the core's services take
 * theirs): the database, and for those that write behind, the state layer. A repository tuned
 * by more names those fields beside these (its own `…Deps`).
 */
import type { Db } from 'mongodb';
import type { StateLayer } from './state/layer';

/** A repository on the database alone. */
export interface StoreDeps {
  db: Db;
}

/** A repository that reads and writes through the state layer (its cache and write-behind queue). */
export interface StateStoreDeps extends StoreDeps {
  state: StateLayer;
}
