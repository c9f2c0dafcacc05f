/** Reading Prometheus exposition text in tests (GET /metrics). */

/** The value of the sample `series` (name and labels exactly as exposed); `absent` when it is not. */
export function sampleValue(text: string, series: string, absent = 0): number {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line ? Number(line.slice(series.length + 1)) : absent;
}

/** Scrape until `done` holds (at most ~20 s), returning the last scrape. */
export async function scrapeUntil(scrape: () => Promise<string>, done: (text: string) => boolean): Promise<string> {
  let text = await scrape();
  for (let i = 0; i < 200 && !done(text); i++) {
    await new Promise((r) => setTimeout(r, 100));
    text = await scrape();
  }
  return text;
}
