/**
 * What names a user in the records Rampart keeps without a user id (anonymous events, rejected
 * payloads), so that a purge finds them: the e-mail addresses (lower-cased and trimmed, as events
 * keep them), user names and phone numbers they carry, wherever they carry them. docs/privacy.md
 * ("Purge") says exactly what a purge matches.
 */
import type { EventInput, StoredEvent } from '../model';

/** The members that name a person. */
const IDENTITY_MEMBERS = ['email', 'username', 'phone'] as const;
/** At most this many names are kept per record. */
const MAX_NAMES = 16;

/** An identifier as it is compared: an e-mail lower-cased and trimmed, anything else as sent; null when empty. */
export function nameOf(member: string, value: unknown): string | null {
  if (typeof value !== 'string' || value.length === 0 || value.length > 320) return null;
  if (member === 'email') {
    const email = value.trim().toLowerCase();
    return email.length > 0 ? email : null;
  }
  return value;
}

function add(names: string[], name: string | null): void {
  if (name !== null && names.length < MAX_NAMES && !names.includes(name)) names.push(name);
}

function addMembers(names: string[], record: Readonly<Record<string, unknown>>): void {
  for (const member of IDENTITY_MEMBERS) add(names, nameOf(member, record[member]));
}

/**
 * Every e-mail, user name and phone an event names: the identity it was read for (`email`,
 * `username`, `phone`), its user (`user_traits`, `user`) and what its form submitted (`params`,
 * `properties`). What a purge matches an anonymous event by.
 */
export function namesOfEvent(
  e: Pick<EventInput, 'email' | 'username' | 'phone' | 'userTraits' | 'properties'>,
): string[] {
  const names: string[] = [];
  add(names, nameOf('email', e.email));
  add(names, nameOf('username', e.username));
  add(names, nameOf('phone', e.phone));
  addMembers(names, e.userTraits);
  addMembers(names, e.properties);
  return names;
}

/**
 * The identifiers a user's own event gives as the user's: its e-mail and its user (`user_traits`,
 * `user`), not its form, which may name another account (a failed login typed the wrong one).
 */
export function ownNames(e: Pick<StoredEvent, 'email' | 'userTraits'>): string[] {
  const names: string[] = [];
  add(names, nameOf('email', e.email));
  addMembers(names, e.userTraits);
  return names;
}

/** Text searched for names (a rejected payload can be as large as the body limit). */
const MAX_NAME_SEARCH = 256 * 1024;
/** `user_id` (`userId`) quoted in any way or not at all, then a quoted value. */
const USER_ID = /(?<![\w$.-])\\?["'`]?user_?id\\?["'`]?\s*[:=]\s*\\?["'`]([^"'`\\\r\n]{1,320})\\?["'`]/i;
/** `user: {…` and what follows, up to the next brace. */
const USER_OBJECT = /(?<![\w$.-])\\?["'`]?user\\?["'`]?\s*[:=]\s*\{([^{}]{0,1024})/i;
const ID_MEMBER = /(?<![\w$.-])\\?["'`]?id\\?["'`]?\s*[:=]\s*\\?["'`]([^"'`\\\r\n]{1,320})\\?["'`]/;
const IDENTITY_MEMBER =
  /(?<![\w$.-])\\?["'`]?(email|username|phone)\\?["'`]?\s*[:=]\s*\\?["'`]([^"'`\\\r\n]{1,320})\\?["'`]/gi;

/**
 * Whom a payload kept as text names, by pattern, whatever its syntax (a cut body, single quotes,
 * no quotes around names): the user id (`user_id`, `userId`, `user: {id}`) and the e-mails, user
 * names and phones of its `email`, `username` and `phone` members, in its first 256 KB.
 */
export function namedInText(text: string): { userId: string | null; names: string[] } {
  const t = text.length > MAX_NAME_SEARCH ? text.slice(0, MAX_NAME_SEARCH) : text;
  const direct = USER_ID.exec(t)?.[1];
  const object = direct === undefined ? USER_OBJECT.exec(t)?.[1] : undefined;
  const userId = direct ?? (object !== undefined ? ID_MEMBER.exec(object)?.[1] : undefined) ?? null;
  const names: string[] = [];
  for (const m of t.matchAll(IDENTITY_MEMBER)) add(names, nameOf((m[1] as string).toLowerCase(), m[2]));
  return { userId, names };
}
