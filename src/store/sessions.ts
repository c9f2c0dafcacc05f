/**
 * Console sessions, one document per session keyed by the SHA-256 of its token (read by `_id`
 * only). The session token itself is never stored.
 */
import type { Db } from 'mongodb';
import type { EnvId } from '../core/model';
import type { Session, SessionStore } from '../core/sessions/service';
import type { IndexSpec } from './database';
import type { StoreDeps } from './deps';

interface SessionDoc extends Omit<Session, 'id'> {
  _id: string;
}

export const SESSIONS = 'console_sessions';

/** Sessions are read by `_id` only; the sweep finds expired ones by idle expiry (never later than the absolute one). */
export const sessionIndexes: IndexSpec[] = [
  { collection: SESSIONS, indexes: [{ key: { expiresAt: 1 }, name: 'expires' }] },
];

const toSession = ({ _id, ...rest }: SessionDoc): Session => ({
  id: _id,
  ...rest,
  envId: rest.envId as EnvId,
});

export class MongoSessionStore implements SessionStore {
  private readonly db: Db;
  constructor({ db }: StoreDeps) {
    this.db = db;
  }
  private get col() {
    return this.db.collection<SessionDoc>(SESSIONS);
  }
  async insert(s: Session): Promise<void> {
    const { id, ...rest } = s;
    await this.col.insertOne({ _id: id, ...rest });
  }
  async byId(id: string): Promise<Session | null> {
    const d = await this.col.findOne({ _id: id });
    return d ? toSession(d) : null;
  }
  async touch(id: string, lastSeenAt: Date, expiresAt: Date): Promise<void> {
    await this.col.updateOne({ _id: id }, { $set: { lastSeenAt, expiresAt } });
  }
  async delete(id: string): Promise<boolean> {
    return (await this.col.deleteOne({ _id: id })).deletedCount === 1;
  }
  async deleteExpired(now: Date): Promise<number> {
    // expiresAt is never past absoluteExpiresAt (SessionService keeps it so).
    const r = await this.col.deleteMany({ expiresAt: { $lte: now } });
    return r.deletedCount;
  }
}
