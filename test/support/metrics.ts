/** Reading Prometheus exposition text in tests (GET /metrics). */
import { waitFor } from './wait';

/** The value of the sample `series` (name and labels exactly as exposed); `absent` when it is not. */
export function sampleValue(text: string, series: string, absent = 0): number {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line ? Number(line.slice(series.length + 1)) : absent;
}

/**
 * Scrape until `done` holds, returning that scrape; rejects after 20 s, naming `what` and quoting
 * the last scrape's `rampart_` samples (what the metrics said instead).
 */
export async function scrapeUntil(
  scrape: () => Promise<string>,
  done: (text: string) => boolean,
  what = 'a scrape that satisfies the condition',
): Promise<string> {
  let last = '';
  try {
    return await waitFor(
      async () => {
        last = await scrape();
        return done(last) && last;
      },
      { what, timeoutMs: 20_000, intervalMs: 100 },
    );
  } catch (err) {
    const samples = last.split('\n').filter((l) => l.startsWith('rampart_'));
    throw new Error(`${(err as Error).message}; the last scrape said:\n${samples.join('\n')}`);
  }
}
