/** The names lists give: an item's id, and who made a change. */
import type { Actor } from '../audit/model';
import { sha256Hex } from '../crypto';
import type { Principal } from '../model';

/** Who changed something through an API secret: the secret's hash prefix, never the secret. */
export const actorOf = (p: Principal): Actor => ({
  type: p.kind === 'secret' ? '$api_secret' : '$analyst_key',
  identifier: p.credentialHash.slice(0, 12),
});

/** The id of an item: derived from its list and values, so a value is in a list at most once. */
export const itemIdOf = (listId: string, primary: string, secondary: string | null): string =>
  sha256Hex(`${listId}\u0000${primary}\u0000${secondary ?? ''}`).slice(0, 24);
