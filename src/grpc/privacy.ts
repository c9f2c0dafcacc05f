/** rampart.v1.Privacy: access and purge requests, through the same core calls as the REST privacy routes. */
import { privacySubject, purgedAnything, type PrivacySubject } from '../core/privacy/service';
import { unary, type Door } from './call';
import { accessJobMessage } from './mappers';
import type { PrivacyHandlers } from './generated/rampart/v1/Privacy';
import type { PurgeRequest__Output } from './generated/rampart/v1/PurgeRequest';

/** Whom a request names: the member of its `user` oneof that is set. */
const subject = (req: PurgeRequest__Output): PrivacySubject =>
  privacySubject({
    userId: req.user === 'userId' ? req.userId : null,
    email: req.user === 'email' ? req.email : null,
  });

export function privacyHandlers(door: Door): PrivacyHandlers {
  const privacy = door.services.privacy;
  return {
    RequestAccess: unary(door, async (req, { principal, signal }) => ({
      jobs: (await privacy.requestAccessFor(principal.env, subject(req), signal)).map(accessJobMessage),
    })),
    Purge: unary(door, async (req, { principal, signal }) => ({
      purgedUsers: (await privacy.purgeFor(principal.env, subject(req), signal)).filter(purgedAnything)
        .length,
    })),
  };
}
