/**
 * The risk engine's cost as pure code, in this process, with no I/O: for varied logins of users
 * with thirty logins of history, the time to score an event from what a verdict has read (the
 * user's behaviour, population and window snapshots), and apart from it the time to enrich the
 * event (IP and user-agent look-ups, features) and to validate it alone (its fields read and
 * checked, what it carries scrubbed: core/events/scrub.ts). Part of `npm run bench` (`--only scoring`).
 */
import { performance } from 'node:perf_hooks';
import { validateEvent, type ParseOptions } from '../src/core/events/parse';
import { scrubRecord } from '../src/core/events/scrub';
import type { Endpoint } from '../src/core/model';
import { eventCommand } from '../src/rest/event-command';
import { enrich, type Enriched, type EventState } from '../src/core/verdicts/observe';
import { assessEvent } from '../src/core/verdicts/evaluate';
import { emptyBehaviour, epochWeight, type Behaviour } from '../src/core/scoring/behaviour';
import { counterBumps, keysToRead } from '../src/core/scoring/population';
import type { CounterSnapshot } from '../src/core/ports';
import { offlineIntel } from '../src/intel';
import { riskBody, Traffic } from './lib/traffic';

/** A Castle JSON body validated as the REST door validates it. */
const parseEvent = (endpoint: Endpoint, body: unknown, opts: ParseOptions) =>
  validateEvent(endpoint, eventCommand(body), opts);

const DAY = 86_400_000;

/** Fold a legitimate event into an in-memory behaviour, as the store's deltas would. */
function learn(b: Behaviour, x: Enriched): void {
  const at = x.event.occurredAt.getTime();
  const w = epochWeight(at);
  b.n += w;
  for (const [level, value] of Object.entries(x.features.values)) {
    if (value === null) continue;
    const table = (b.tables[level as keyof Behaviour['tables']] ??= {});
    const e = (table[value] ??= { c: 0, l: 0 });
    e.c += w;
    e.l = Math.max(e.l, at);
  }
}

/** Fold counter bumps into snapshots (increments and set-adds). */
function count(s: Map<string, CounterSnapshot>, x: Enriched, account: string): void {
  const outcome = {
    attempt: true,
    failure: false,
    success: true,
    registration: false,
    unknownAccount: false,
    stopped: false,
    challengeFeedback: false,
    account,
  };
  for (const b of counterBumps(x.features, outcome, s, x.event.occurredAt.getTime(), {
    acceptLanguage: true,
    secFetch: false,
    clientHints: false,
  })) {
    let doc = s.get(b.key);
    if (!doc) s.set(b.key, (doc = { counts: {}, sets: {} }));
    for (const [k, v] of Object.entries(b.inc ?? {})) doc.counts[k] = (doc.counts[k] ?? 0) + v;
    for (const [k, v] of Object.entries(b.min ?? {})) doc.counts[k] = Math.min(doc.counts[k] ?? Infinity, v);
    for (const [k, v] of Object.entries(b.add ?? {})) (doc.sets[k] ??= []).push(v);
  }
}

export interface ScoringFigures {
  events: number;
  scoreMicros: number;
  enrichMicros: number;
  /** Validation alone (parse.ts, its scrubbing included), of a login carrying traits and properties: the best of five rounds. */
  validateMicros: number;
  /** Of which the scrubbing rule (scrub.ts) over what the event carries, which had nothing to scrub: the best of five rounds. */
  scrubMicros: number;
}

export function benchScoring(events = 20_000, users = 500): ScoringFigures {
  const traffic = new Traffic(users, 7, 'score');
  const now = Date.now();
  const behaviours = new Map<string, Behaviour>();
  const snapshots = new Map<string, CounterSnapshot>();
  const parse = (body: Record<string, unknown>, at: number) =>
    parseEvent(
      'risk',
      { ...body, timestamp: new Date(at).toISOString() },
      { sandbox: false, now: new Date(at + 1000) },
    );
  // Thirty days of history for every user, and the environment's population from it.
  for (let i = 0; i < users * 30; i++) {
    const login = traffic.next();
    const x = enrich(parse(riskBody(login), now - 30 * DAY + (i / (users * 30)) * 30 * DAY), offlineIntel);
    let b = behaviours.get(login.userId);
    if (!b) behaviours.set(login.userId, (b = emptyBehaviour()));
    learn(b, x);
    count(snapshots, x, login.userId);
  }
  const inputs = Array.from({ length: 2000 }, () => {
    const login = traffic.next();
    return { body: riskBody(login), userId: login.userId };
  });

  // Validation alone, of a login as applications send it: the user's traits, the form's properties.
  const bodies = inputs.map(({ body }) => ({
    ...body,
    user: { ...body.user, traits: { name: 'Ann Example', plan: 'pro', locale: 'en-GB' } },
    properties: { remember_me: true, form: 'login', referrer: 'https://shop.example/cart?step=2' },
  }));
  let validateMicros = Infinity;
  for (let round = 0; round < 5; round++) {
    const v0 = performance.now();
    for (let i = 0; i < events; i++) parse(bodies[i % bodies.length]!, now);
    validateMicros = Math.min(validateMicros, ((performance.now() - v0) * 1000) / events);
  }
  // What validation spends on the scrubbing rule: the four records it scrubs, clean as most are.
  const validated = bodies.map((body) => parse(body, now));
  let scrubMicros = Infinity;
  let kept = 0;
  for (let round = 0; round < 5; round++) {
    const s0 = performance.now();
    for (let i = 0; i < events; i++) {
      const e = validated[i % validated.length]!;
      if (
        scrubRecord(e.userTraits) === e.userTraits &&
        scrubRecord(e.properties) === e.properties &&
        scrubRecord(e.context.extra) === e.context.extra &&
        scrubRecord(e.extra) === e.extra
      )
        kept++;
    }
    scrubMicros = Math.min(scrubMicros, ((performance.now() - s0) * 1000) / events);
  }
  if (kept !== 5 * events) throw new Error('the scrubbing rule copied a record that had nothing to scrub');

  const enriched: Enriched[] = [];
  let t0 = performance.now();
  for (let i = 0; i < events; i++) {
    const input = inputs[i % inputs.length]!;
    const x = enrich(parse(input.body, now), offlineIntel);
    if (i < inputs.length) enriched.push(x);
  }
  const enrichMicros = ((performance.now() - t0) * 1000) / events;

  // Each verdict scores from the counter documents it read (keysToRead), as the store returns them.
  const read = (x: Enriched): Map<string, CounterSnapshot> => {
    const out = new Map<string, CounterSnapshot>();
    for (const k of keysToRead(x.features, x.emailHash, x.event.client?.jti ?? null)) {
      const doc = snapshots.get(k);
      if (doc) out.set(k, doc);
    }
    return out;
  };
  const states: EventState[] = inputs.map((input, i) => ({
    userId: input.userId,
    state: {
      profile: null as never,
      devices: [],
      behaviour: behaviours.get(input.userId) ?? emptyBehaviour(),
    },
    counters: read(enriched[i]!),
    unknownAccount: false,
  }));
  let sink = 0;
  // Warm the JIT, then measure.
  for (let i = 0; i < 2000; i++)
    sink += assessEvent(enriched[i % enriched.length]!, states[i % states.length]!, null).risk;
  t0 = performance.now();
  for (let i = 0; i < events; i++)
    sink += assessEvent(enriched[i % enriched.length]!, states[i % states.length]!, null).risk;
  const scoreMicros = ((performance.now() - t0) * 1000) / events;
  if (Number.isNaN(sink)) throw new Error('scoring produced NaN');
  return { events, scoreMicros, enrichMicros, validateMicros, scrubMicros };
}

export function scoringReport(f: ScoringFigures): string {
  return (
    `\nScoring as pure code (no I/O), ${f.events} varied logins of users with 30 logins of history:\n` +
    `  score from what was read (behaviour, population, windows): ${f.scoreMicros.toFixed(1)} µs/event\n` +
    `  enrich (address and user-agent look-ups, features):       ${f.enrichMicros.toFixed(1)} µs/event\n` +
    `  validate alone (a login with traits and properties):      ${f.validateMicros.toFixed(1)} µs/event (best of 5 rounds)\n` +
    `    of which the scrubbing rule, nothing to scrub:           ${f.scrubMicros.toFixed(2)} µs/event (best of 5 rounds; no record copied)\n`
  );
}
