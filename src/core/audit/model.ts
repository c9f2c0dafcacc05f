/**
 * The audit log: who changed what, and when. One entry per change an operator or an API caller
 * makes to what decides verdicts (lists and their items today). Entries are written by the use
 * case that made the change and never changed afterwards.
 */
import type { EnvId } from '../model';

/** Who made a change: Castle's `{type, identifier}` (e.g. `$api_secret` and the key's hash prefix, `$analyst_email` and an address). */
export interface Actor {
  type: string;
  identifier: string;
}

export interface AuditEntry {
  id: string;
  envId: EnvId;
  at: Date;
  actor: Actor;
  /** What was done, e.g. `list.create`, `list_item.archive`, `list_item.import`. */
  action: string;
  /** What it was done to. */
  target: { kind: 'list' | 'list_item'; id: string; listId: string | null };
  /** What changed (the new values, counts of an import), small and free of secrets. */
  detail: Record<string, unknown>;
}

/** Where audit entries go (store/audit.ts on MongoDB). */
export interface AuditLog {
  append(entries: readonly AuditEntry[]): Promise<void>;
  /**
   * The environment's newest entries first, optionally of one target (a list or an item), or of
   * one list and every item of it (`listId`).
   */
  recent(env: EnvId, q: { targetId?: string; listId?: string; limit: number }): Promise<AuditEntry[]>;
}
