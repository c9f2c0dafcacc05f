/**
 * The health probe judges a silent database over a window of pings, not one slow ping
 * (store/health.ts): a ping may go unanswered for three times the slowest of the recent pings,
 * within [stallMs, stallMaxMs] (stallMaxMs until ten pings were answered). On an idle machine that is stallMs; on a busy one, where the
 * database is now and then descheduled for a second, those pauses raise the bar so that the next
 * one does not mark a healthy database down; a hang is still noticed within stallMaxMs.
 */
import { stallBar } from '../../../src/store/health';

const repeat = (n: number, ms: number) => Array.from({ length: n }, () => ms);

it.each([
  ['too few pings answered yet to judge by', 10_000, repeat(9, 1)],
  ['an idle machine (pings of 1 ms)', 300, repeat(50, 1)],
  ['a busy machine (pings of 200 ms)', 600, repeat(50, 200)],
  ['a busy machine where one ping of fifty took 2 s', 6_000, [...repeat(49, 100), 2_000]],
  ['pings slower than the cap allows', 10_000, repeat(50, 10_000)],
] as const)('%s: the bar is %s ms', (_label, bar, recent) => {
  expect(stallBar(recent, 300, 10_000)).toBe(bar);
});
