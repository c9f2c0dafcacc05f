/**
 * What lists cost a verdict, as pure code in this process: ten lists of 100,000 items each (three
 * of addresses: IPv4 hosts, IPv4 networks from /24 to /30, IPv6 /64s; and e-mails,
 * user ids, e-mail domains, AS numbers, devices, machines and request shapes), compiled as a
 * verdict's lists are (core/lists/matcher.ts), then matched against the bench's varied logins (a
 * share of them listed). It prints the compile time, the heap the compiled lists hold, and the µs
 * a verdict spends matching them beside what it spends enriching and scoring the same event, so
 * the ratio a verdict costs with these lists to one without is read against the whole verdict's
 * CPU that `--only closed` prints. Part of `npm run bench` (`--only scoring`).
 */
import { performance } from 'node:perf_hooks';
import type { Actor } from '../src/core/audit/model';
import type { EnvId } from '../src/core/model';
import { CompiledList, CompiledLists, matchLists } from '../src/core/lists/matcher';
import { LIST_FIELDS, type List, type ListItem } from '../src/core/lists/model';
import { buildItem } from '../src/core/lists/validation';
import type { FieldProblem } from '../src/core/errors';
import { validateEvent } from '../src/core/events/parse';
import { enrich, type Enriched } from '../src/core/verdicts/observe';
import { eventValues } from '../src/core/verdicts/list-evidence';
import { eventCommand } from '../src/rest/event-command';
import { offlineIntel } from '../src/intel';
import { riskBody, Traffic } from './lib/traffic';

const ITEMS = 100_000;
const ENV = 'bench-lists' as EnvId;

/** Each list's field and its i-th value. */
const SPECS: readonly [string, (i: number) => string][] = [
  ['ip', (i) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`],
  ['ip', (i) => `${100 + (i % 100)}.${(i >> 8) & 255}.${i & 255}.0/${24 + (i % 7)}`],
  ['ip', (i) => `2001:db8:${(i >> 16).toString(16)}:${(i & 0xffff).toString(16)}::/64`],
  ['user.email', (i) => `listed${i}@bench-lists.example`],
  ['user.id', (i) => `listed-user-${i}`],
  ['email.domain', (i) => `d${i}.bench-lists.example`],
  ['ip.asn', (i) => String(200_000 + i)],
  ['device.token', (i) => `listed-device-${i}`],
  ['machine_key', (i) => `machine-${i}`],
  ['request_shape', (i) => `shape-${i}`],
];

export interface ListsBench {
  lists: number;
  items: number;
  compileSeconds: number;
  /** The longest one list took to compile from its items (validated already, as stored ones are). */
  longestListMs: number;
  heapMB: number;
  events: number;
  matched: number;
  /** µs per event: matching every list, and enriching + scoring inputs without lists. */
  matchMicros: number;
  enrichMicros: number;
}

/** The lists, and the longest any one of them took to compile (a synchronous step of a reload). */
function compile(): { lists: CompiledLists; longestMs: number } {
  const actor: Actor = { type: '$api_secret', identifier: 'bench' };
  const now = new Date();
  let longestMs = 0;
  const compiled = SPECS.map(([field, value], n) => {
    const list: List = {
      id: `list-${n}`,
      envId: ENV,
      name: `bench ${field} ${n}`,
      color: '$red',
      description: null,
      primaryField: field,
      type: LIST_FIELDS[field] as List['type'],
      secondaryField: null,
      secondaryType: null,
      createdAt: now,
      updatedAt: now,
    };
    const problems: FieldProblem[] = [];
    const items: ListItem[] = [];
    for (let i = 0; i < ITEMS; i++) {
      const item = buildItem(list, { primaryValue: value(i), comment: 'bench' }, actor, now, problems, '');
      if (item) items.push(item);
    }
    if (problems.length)
      throw new Error(`bench list ${field}: ${problems[0]?.field} ${problems[0]?.message}`);
    const t = performance.now();
    const one = new CompiledList(list, items);
    longestMs = Math.max(longestMs, performance.now() - t);
    return one;
  });
  return { lists: new CompiledLists(1, compiled), longestMs };
}

export function benchLists(count = 20_000): ListsBench {
  global.gc?.();
  const heap0 = process.memoryUsage().heapUsed;
  const t0 = performance.now();
  const { lists, longestMs } = compile();
  const compileSeconds = (performance.now() - t0) / 1000;
  global.gc?.();
  const heapMB = (process.memoryUsage().heapUsed - heap0) / 2 ** 20;

  offlineIntel.load();
  const traffic = new Traffic(10_000);
  const opts = { sandbox: false, now: new Date() };
  // The bench's logins, one in 25 from a listed address or network.
  const events: Enriched[] = [];
  const e0 = performance.now();
  for (let i = 0; i < count; i++) {
    const body = riskBody(traffic.next());
    if (i % 50 === 0) body.context.ip = `10.0.${(i >> 8) & 255}.${i & 255}`;
    if (i % 50 === 1) body.context.ip = `${100 + (i % 100)}.${(i >> 8) & 255}.${i & 255}.1`;
    events.push(enrich(validateEvent('risk', eventCommand(body), opts), offlineIntel));
  }
  const enrichMicros = ((performance.now() - e0) * 1000) / count;
  const values = events.map((x) => eventValues(x, null));
  const now = Date.now();
  let matched = 0;
  // Warm up, then time.
  for (const v of values.slice(0, 2000)) matchLists(lists, v, now);
  const m0 = performance.now();
  for (const v of values) if (matchLists(lists, v, now).length > 0) matched++;
  const matchMicros = ((performance.now() - m0) * 1000) / count;
  return {
    lists: SPECS.length,
    items: SPECS.length * ITEMS,
    compileSeconds,
    longestListMs: longestMs,
    heapMB,
    events: count,
    matched,
    matchMicros,
    enrichMicros,
  };
}

export function listsReport(b: ListsBench): string {
  return (
    `\nLists as pure code: ${b.lists} lists of ${(b.items / b.lists).toLocaleString('en-GB')} items (${b.items.toLocaleString('en-GB')}), IPv4 and IPv6 networks included\n` +
    `  built and checked in ${b.compileSeconds.toFixed(2)} s; compiling a list of 100,000 stored items at once takes up to ${b.longestListMs.toFixed(0)} ms (a reload compiles them 5,000 at a time, between reads); the compiled lists hold ${b.heapMB.toFixed(0)} MB of heap\n` +
    `  matching every list: ${b.matchMicros.toFixed(2)} µs per event (${b.matched} of ${b.events} events listed), against ${b.enrichMicros.toFixed(1)} µs to enrich the event alone\n` +
    `  a verdict with these lists ÷ one without: 1 + ${b.matchMicros.toFixed(2)} µs ÷ the verdict's CPU (--only closed prints it; at 1,800 µs: ×${(1 + b.matchMicros / 1800).toFixed(4)})\n`
  );
}
