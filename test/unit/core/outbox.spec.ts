/** OutboxLedger: the open webhook deliveries as the dispatcher knows them (core/webhooks/outbox.ts). */
import { OutboxLedger, type OpenDeliveries } from '../../../src/core/webhooks/outbox';

const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s));

describe('the outbox ledger', () => {
  it('counts what is added and claimed, once each, until it is finished', () => {
    const ledger = new OutboxLedger(100);
    ledger.added('a', at(10));
    ledger.added('a', at(10));
    ledger.claimed('b', at(5));
    ledger.claimed('a', at(10));
    expect([ledger.depth, ledger.oldest]).toEqual([2, at(5).getTime()]);
    ledger.finished('b');
    expect([ledger.depth, ledger.oldest]).toEqual([1, at(10).getTime()]);
    ledger.finished('a');
    ledger.finished('a');
    expect([ledger.depth, ledger.oldest]).toEqual([0, null]);
  });

  it('holds at most `cap` ids and counts the rest', () => {
    const ledger = new OutboxLedger(2);
    for (const [id, s] of [
      ['a', 1],
      ['b', 2],
      ['c', 3],
    ] as const)
      ledger.added(id, at(s));
    ledger.claimed('d', at(0));
    expect([ledger.depth, ledger.oldest]).toEqual([3, at(1).getTime()]);
    ledger.finished('c');
    expect(ledger.depth).toBe(2);
    ledger.finished('a');
    ledger.finished('b');
    expect([ledger.depth, ledger.oldest]).toEqual([0, null]);
  });

  it('takes a read of the outbox, keeping what changed while it was read', async () => {
    const ledger = new OutboxLedger(100);
    ledger.added('a', at(1));
    ledger.added('gone', at(0));
    let answer: (found: OpenDeliveries) => void = () => undefined;
    const reading = ledger.reconcile(() => new Promise<OpenDeliveries>((resolve) => (answer = resolve)));
    // While the read is under way: one delivered, one new.
    ledger.finished('a');
    ledger.added('c', at(3));
    answer({
      total: 3,
      oldest: [
        { id: 'a', createdAt: at(1) },
        { id: 'b', createdAt: at(2) },
        { id: 'x', createdAt: at(4) },
      ],
    });
    await reading;
    // `gone` was not in the outbox (purged), `a` was delivered meanwhile, `b` and `x` another
    // instance recorded, `c` was recorded after the read.
    expect([ledger.depth, ledger.oldest]).toEqual([3, at(2).getTime()]);
  });

  it('counts the open deliveries past the ids a read returns', async () => {
    const ledger = new OutboxLedger(2);
    await ledger.reconcile(async (limit) => ({
      total: 5,
      oldest: [
        { id: 'a', createdAt: at(1) },
        { id: 'b', createdAt: at(2) },
      ].slice(0, limit),
    }));
    expect([ledger.depth, ledger.oldest]).toEqual([5, at(1).getTime()]);
  });

  it('changes nothing when the read fails, and reads again when asked', async () => {
    const ledger = new OutboxLedger(100);
    ledger.added('a', at(1));
    await expect(
      ledger.reconcile(async () => Promise.reject(new Error('the database is unreachable'))),
    ).rejects.toThrow('unreachable');
    expect(ledger.depth).toBe(1);
    await ledger.reconcile(async () => ({ total: 0, oldest: [] }));
    expect([ledger.depth, ledger.oldest]).toEqual([0, null]);
  });
});
