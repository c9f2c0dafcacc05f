/**
 * The signed-user form of an identify (core/client/user-jwt.ts): a JWT signed by the application's
 * backend with the API secret (HS256), made here with node:crypto as a backend's JWT library would.
 */
import { createHmac } from 'node:crypto';
import { userIdOfJwt, verifyUserJwt } from '../../../src/core/client/user-jwt';

const SECRET = 'sk_test_secret_1';
const NOW = Date.parse('2026-11-25T20:00:00Z');
const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
function jwt(
  payload: Record<string, unknown>,
  secret = SECRET,
  header: Record<string, unknown> = { alg: 'HS256', typ: 'JWT' },
): string {
  const signed = `${b64(header)}.${b64(payload)}`;
  return `${signed}.${createHmac('sha256', secret).update(signed).digest('base64url')}`;
}
const s = NOW / 1000;

describe('a user JWT', () => {
  it.each<[string, string, string | null]>([
    ['names the user by id', jwt({ id: '42', email: 'a@example.com' }), '42'],
    ['names the user by sub when it has no id', jwt({ sub: 'u-7' }), 'u-7'],
    ['takes a numeric id as its decimal digits', jwt({ id: 42 }), '42'],
    ['within its lifetime', jwt({ id: '42', iat: s - 60, exp: s + 60 }), '42'],
    ['expired less than 30 s ago (clock skew)', jwt({ id: '42', exp: s - 20 }), '42'],
    ['signed with another live secret (rotation)', jwt({ id: '42' }, 'sk_test_secret_2'), '42'],
  ])('verifies: %s', (_name, token, user) => {
    expect(verifyUserJwt([SECRET, 'sk_test_secret_2'], token, NOW)).toBe(user);
  });

  it.each<[string, () => string]>([
    ['signed with a secret that is not live', () => jwt({ id: '42' }, 'sk_old')],
    ['expired', () => jwt({ id: '42', exp: s - 31 })],
    ['not yet valid', () => jwt({ id: '42', nbf: s + 31 })],
    ['an exp that is not a number', () => jwt({ id: '42', exp: 'tomorrow' })],
    ['alg none, unsigned', () => `${b64({ alg: 'none' })}.${b64({ id: '42' })}.`],
    ['alg none, with a signature', () => jwt({ id: '42' }, SECRET, { alg: 'none' })],
    ['another algorithm', () => jwt({ id: '42' }, SECRET, { alg: 'HS512' })],
    [
      'a payload altered after signing',
      () => {
        const [h, , sig] = jwt({ id: '42' }).split('.');
        return `${h}.${b64({ id: 'admin' })}.${sig}`;
      },
    ],
    ['no user in it', () => jwt({ email: 'a@example.com' })],
    ['a user id too long', () => jwt({ id: 'x'.repeat(129) })],
    ['a payload that is not an object', () => jwt(['42'] as unknown as Record<string, unknown>)],
    ['two parts', () => jwt({ id: '42' }).split('.').slice(0, 2).join('.')],
    ['longer than 4096 characters', () => jwt({ id: '42', pad: 'x'.repeat(4096) })],
    ['not base64url', () => `${jwt({ id: '42' })}!`],
  ])('is refused: %s', (_name, make) => {
    expect(verifyUserJwt([SECRET], make(), NOW)).toBeNull();
  });

  it('names its user unverified, as the app reads it', () => {
    expect(userIdOfJwt(jwt({ id: '42' }, 'anything'))).toBe('42');
    expect(userIdOfJwt('not.a.jwt')).toBeNull();
  });
});
