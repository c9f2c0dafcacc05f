/**
 * The embedded database's search planner as pure code: which access path each filter takes (the
 * table of docs/state.md), what is refused, and the check of what the path leaves.
 */
import { accessPath, matchesEvent } from '../../../src/store/embedded-search';
import { toEventDoc } from '../../../src/store/events';
import type { EventFilter } from '../../../src/core/queries/model';
import type { EnvId } from '../../../src/core/model';
import { InvalidParameters } from '../../../src/core/errors';
import { storedEvent } from '../../support/events';

it.each<[string, EventFilter, ReturnType<typeof accessPath>]>([
  ['nothing', {}, { kind: 'time' }],
  ['a time range', { from: new Date(0), to: new Date(1) }, { kind: 'time' }],
  [
    'a user, before everything else',
    { userId: 'u', signal: 's', ip: '1.2.3.4' },
    { kind: 'index', field: 'userId', values: ['u'] },
  ],
  ['a device', { deviceToken: 'd', action: 'deny' }, { kind: 'index', field: 'deviceToken', values: ['d'] }],
  [
    'an e-mail, as sent and in lower case',
    { email: 'A@B.C' },
    { kind: 'index', field: 'email', values: ['A@B.C', 'a@b.c'] },
  ],
  [
    'an e-mail already in lower case, once',
    { email: 'a@b.c' },
    { kind: 'index', field: 'email', values: ['a@b.c'] },
  ],
  ['an address', { ip: '81.2.69.1', country: 'DE' }, { kind: 'index', field: 'ip', values: ['81.2.69.1'] }],
  ['a /24', { network: '81.2.69.0/24' }, { kind: 'index', field: 'net', values: ['81.2.69.'] }],
  ['a policy, before a signal', { policyId: 'p', signal: 's' }, { kind: 'keys', dim: 'policy', value: 'p' }],
  ['a signal', { signal: 'proxy_ip', action: 'deny' }, { kind: 'keys', dim: 'signal', value: 'proxy_ip' }],
  ['an ASN', { asn: 3320 }, { kind: 'keys', dim: 'asn', value: '3320' }],
  ['a country', { country: 'FR', name: '$login' }, { kind: 'keys', dim: 'country', value: 'FR' }],
  ['a name', { name: '$login' }, { kind: 'keys', dim: 'name', value: '$login' }],
  ['an action', { action: 'challenge' }, { kind: 'keys', dim: 'action', value: 'challenge' }],
  [
    'a /16 with an action',
    { network: '81.2.0.0/16', action: 'deny' },
    { kind: 'keys', dim: 'action', value: 'deny' },
  ],
])('%s', (_what, filter, path) => {
  expect(accessPath(filter)).toEqual(path);
});

it.each(['81.2.0.0/16', '81.0.0.0/8'])(
  'refuses a %s alone, naming the filters that are served',
  (network) => {
    expect(() => accessPath({ network })).toThrow(InvalidParameters);
    try {
      accessPath({ network });
    } catch (e) {
      expect((e as InvalidParameters).fields[0]?.field).toBe('filter.network');
      expect((e as InvalidParameters).fields[0]?.message).toContain('a /24 network');
    }
  },
);

describe('the check of what the access path leaves', () => {
  const doc = toEventDoc(
    storedEvent({
      id: 'e',
      envId: 'env' as EnvId,
      occurredAt: new Date(1000),
      userId: 'u',
      email: 'a@b.c',
      ip: '81.2.69.7',
      country: 'DE',
      asn: 3320,
      action: 'deny',
      signals: ['proxy_ip'],
      policy: { id: 'p', revision: 'r', name: 'P', action: 'deny' },
    }),
  );
  it.each<[EventFilter, boolean]>([
    [{}, true],
    [{ userId: 'u', action: 'deny', signal: 'proxy_ip', country: 'DE', asn: 3320, policyId: 'p' }, true],
    [{ email: 'A@B.C' }, true],
    [{ network: '81.2.0.0/16' }, true],
    [{ network: '81.20.0.0/16' }, false],
    [{ signal: 'new_device' }, false],
    [{ from: new Date(1000), to: new Date(1001) }, true],
    [{ to: new Date(1000) }, false],
    [{ policyId: 'q' }, false],
  ])('%j → %s', (filter, matches) => {
    expect(matchesEvent(doc, filter)).toBe(matches);
  });
});
