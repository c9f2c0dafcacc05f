/**
 * App Attest keys on the real database (store/attested-keys.ts), and the fake the unit tier uses
 * held to the same promises: a key kept once (attesting it again does not reset its counter), its
 * counter raised only upwards (a replayed assertion, or a race lost to one, is refused), tenants
 * apart, and keys no assertion used for a year swept.
 */
import { testDatabase, type TestDatabase } from '../support/db';
import { createFakeAttestedKeyStore } from '../support/fakes/stores';
import { ATTESTED_KEY_UNUSED_MS, MongoAttestedKeyStore } from '../../src/store/attested-keys';
import type { AttestedKeyRecord, AttestedKeyStore } from '../../src/core/client/attestation/verifier';
import { asEnvId } from '../../src/core/model';

let database: TestDatabase;
beforeAll(async () => {
  database = await testDatabase();
});
afterAll(async () => {
  await database?.drop();
});

const A = asEnvId('env-a');
const B = asEnvId('env-b');
const at = new Date('2026-11-28T00:00:00Z');
const key = (envId = A, keyId = 'k1'): AttestedKeyRecord => ({
  envId,
  keyId,
  appId: 'TEAM123456.com.example.shop',
  publicKey: 'MFkw',
  counter: 0,
  development: false,
  receipt: null,
  createdAt: at,
  usedAt: at,
});

describe.each<[string, () => AttestedKeyStore]>([
  ['MongoAttestedKeyStore', () => new MongoAttestedKeyStore({ db: database.db })],
  ['the fake', () => createFakeAttestedKeyStore()],
])('%s', (_name, make) => {
  it('keeps a key once, raises its counter only upwards, and keeps tenants apart', async () => {
    const s = make();
    const keyId = `k-${Math.random()}`;
    await s.add(key(A, keyId));
    expect(await s.get(A, keyId)).toEqual(key(A, keyId));
    expect(await s.get(B, keyId)).toBeNull();
    expect(await s.advance(A, keyId, 3, new Date(at.getTime() + 1000))).toBe(true);
    expect(await s.advance(A, keyId, 3, new Date(at.getTime() + 2000))).toBe(false);
    expect(await s.advance(A, keyId, 2, new Date(at.getTime() + 2000))).toBe(false);
    expect(await s.advance(B, keyId, 9, at)).toBe(false);
    // Attested again (a retry): the record, and its counter, stay.
    await s.add({ ...key(A, keyId), publicKey: 'other' });
    expect(await s.get(A, keyId)).toMatchObject({
      counter: 3,
      publicKey: 'MFkw',
      usedAt: new Date(at.getTime() + 1000),
    });
  });
});

it('sweeps keys no assertion used for a year, and only those', async () => {
  const s = new MongoAttestedKeyStore({ db: database.db });
  await s.add(key(A, 'old'));
  await s.add({ ...key(A, 'recent'), usedAt: new Date(at.getTime() + 10 * 86_400_000) });
  const deleted = await s.sweep(new Date(at.getTime() + ATTESTED_KEY_UNUSED_MS + 86_400_000));
  expect(deleted).toBeGreaterThanOrEqual(1);
  expect(await s.get(A, 'old')).toBeNull();
  expect(await s.get(A, 'recent')).not.toBeNull();
});
