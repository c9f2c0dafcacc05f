/**
 * Retention (core/retention.ts): the bounds of a retention, each environment's cutoff from its own
 * retention (or the default), deletes bounded to 1,000 with a pause on the scheduler between two,
 * and a pass that ends early once stopped. Fake time, an in-memory store of dated records.
 */
import { EnvironmentService } from '../../../src/core/environments';
import { InvalidParameters } from '../../../src/core/errors';
import { Sealer } from '../../../src/core/crypto';
import type { EnvId } from '../../../src/core/model';
import { PolicyService } from '../../../src/core/policies/service';
import {
  DAY_MS,
  DEFAULT_RETENTION_DAYS,
  RetentionService,
  retentionDaysOf,
  type RetentionStore,
  type RetentionSweepOptions,
} from '../../../src/core/retention';
import { createFakeLog } from '../../support/fakes/log';
import {
  createFakeCredentialStore,
  createFakeEnvironmentStore,
  createFakePolicyStore,
} from '../../support/fakes/stores';
import { createFakeTime } from '../../support/fakes/time';

/** Events as (environment, time) pairs; the sweep deletes, batch by batch, those before their environment's cutoff. */
function datedStore() {
  const events: { env: EnvId; at: number }[] = [];
  const batches: number[] = [];
  const store: RetentionStore = {
    async sweep(cutoffs, o: RetentionSweepOptions) {
      let deleted = 0;
      for (;;) {
        if (o.stopped()) break;
        const old = events
          .filter((e) => e.at < (cutoffs.get(e.env)?.getTime() ?? -Infinity))
          .slice(0, o.batchSize);
        if (old.length === 0) break;
        for (const e of old) events.splice(events.indexOf(e), 1);
        batches.push(old.length);
        deleted += old.length;
        await o.pause();
      }
      return { events: deleted, debugger: 0, privacyJobs: 0, rollups: 0, webhooks: 0, audit: 0 };
    },
  };
  return { events, batches, store };
}

async function setup(batchSize?: number) {
  const time = createFakeTime();
  const environments = createFakeEnvironmentStore();
  const envs = new EnvironmentService({
    environments,
    credentials: createFakeCredentialStore(),
    policies: new PolicyService({ store: createFakePolicyStore(), clock: time.clock }),
    sealer: new Sealer('11'.repeat(32)),
    clock: time.clock,
    authCacheMs: 0,
  });
  const dated = datedStore();
  const retention = new RetentionService({
    environments,
    store: dated.store,
    clock: time.clock,
    scheduler: time.scheduler,
    log: createFakeLog(),
    batchSize,
    pauseMs: 50,
  });
  return { time, envs, retention, ...dated };
}

describe('a retention', () => {
  it('is a whole number of days from 1 to 3650; anything else is refused naming retentionDays', async () => {
    const { envs } = await setup();
    const { env } = await envs.create('shop');
    expect(retentionDaysOf(env)).toBe(DEFAULT_RETENTION_DAYS);
    for (const bad of [0, -1, 3651, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      const err: unknown = await envs.setRetentionDays(env.id, bad).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(InvalidParameters);
      expect((err as InvalidParameters).fields).toEqual([
        { field: 'retentionDays', message: 'must be a whole number of days from 1 to 3650' },
      ]);
    }
    expect(retentionDaysOf(await envs.require(env.id))).toBe(DEFAULT_RETENTION_DAYS);
    expect(retentionDaysOf(await envs.setRetentionDays(env.id, 1))).toBe(1);
    expect(retentionDaysOf(await envs.setRetentionDays(env.id, 3650))).toBe(3650);
  });
});

describe('the retention sweep', () => {
  it('gives each environment the cutoff of its own retention, the default where none was set', async () => {
    const { envs, retention, time } = await setup();
    const a = (await envs.create('a')).env;
    const b = (await envs.create('b')).env;
    await envs.setRetentionDays(b.id, 7);
    const cutoffs = await retention.cutoffs();
    const now = time.clock.now().getTime();
    expect(cutoffs.get(a.id)?.getTime()).toBe(now - DEFAULT_RETENTION_DAYS * DAY_MS);
    expect(cutoffs.get(b.id)?.getTime()).toBe(now - 7 * DAY_MS);
  });

  it('deletes in batches of at most 1,000, waiting on the scheduler between two, and only past each cutoff', async () => {
    const { envs, retention, time, events, batches } = await setup(5_000);
    const a = (await envs.create('a')).env;
    const b = (await envs.create('b')).env;
    await envs.setRetentionDays(a.id, 1);
    const now = time.clock.now().getTime();
    for (let i = 0; i < 2_500; i++) events.push({ env: a.id, at: now - 2 * DAY_MS });
    for (let i = 0; i < 10; i++)
      events.push({ env: a.id, at: now - DAY_MS / 2 }, { env: b.id, at: now - 2 * DAY_MS });

    let done = false;
    const pass = retention.sweep().then((c) => {
      done = true;
      return c;
    });
    await time.settle();
    // One batch went, and the next waits for the pause.
    expect(batches).toEqual([1_000]);
    expect(done).toBe(false);
    await time.advance(50);
    expect(batches).toEqual([1_000, 1_000]);
    await time.advance(50);
    await time.advance(50);
    expect(await pass).toEqual({
      events: 2_500,
      debugger: 0,
      privacyJobs: 0,
      rollups: 0,
      webhooks: 0,
      audit: 0,
    });
    expect(batches).toEqual([1_000, 1_000, 500]);
    // The recent ones of `a` and all of `b` (90 days) stay.
    expect(events.filter((e) => e.env === a.id)).toHaveLength(10);
    expect(events.filter((e) => e.env === b.id)).toHaveLength(10);
  });

  it('ends a pass after the delete under way once stopped', async () => {
    const { envs, retention, time, events, batches } = await setup(10);
    const a = (await envs.create('a')).env;
    await envs.setRetentionDays(a.id, 1);
    for (let i = 0; i < 100; i++) events.push({ env: a.id, at: time.clock.now().getTime() - 2 * DAY_MS });
    const pass = retention.sweep();
    await time.settle();
    retention.stop();
    await time.advance(50);
    expect(await pass).toEqual({
      events: 10,
      debugger: 0,
      privacyJobs: 0,
      rollups: 0,
      webhooks: 0,
      audit: 0,
    });
    expect(batches).toEqual([10]);
  });
});
