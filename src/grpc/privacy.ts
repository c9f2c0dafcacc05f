/** rampart.v1.Privacy: access and purge requests, through PrivacyService as the REST privacy routes. */
import { InvalidParameters } from '../core/errors';
import type { Principal } from '../core/model';
import { unary, type Door } from './call';
import { accessJobMessage } from './mappers';
import type { PrivacyHandlers } from './generated/rampart/v1/Privacy';
import type { PurgeRequest__Output } from './generated/rampart/v1/PurgeRequest';

/** The users a request names: its user id, or every user with its e-mail address. */
async function users(door: Door, p: Principal, req: PurgeRequest__Output): Promise<string[]> {
  if (req.user === 'userId') return [req.userId ?? ''];
  if (req.user === 'email') return door.services.privacy.resolveIdentifier(p.env.id, req.email, '$email');
  throw new InvalidParameters([{ field: 'user_id', message: 'user_id or email is required' }]);
}

export function privacyHandlers(door: Door): PrivacyHandlers {
  const privacy = door.services.privacy;
  return {
    RequestAccess: unary(door, async (req, { principal, signal }) => {
      const jobs = [];
      for (const id of await users(door, principal, req)) {
        if (signal.aborted) break;
        jobs.push(await privacy.requestAccess(principal.env, id));
      }
      return { jobs: jobs.map(accessJobMessage) };
    }),
    Purge: unary(door, async (req, { principal, signal }) => {
      let purged = 0;
      for (const id of await users(door, principal, req)) {
        if (signal.aborted) break;
        await privacy.purge(principal.env, id);
        purged++;
      }
      return { purgedUsers: purged };
    }),
  };
}
