/**
 * What a failed TrackStream took, as its trailers say it (metadata-keys.ts): `rampart-accepted`,
 * the count of its first events written, and `rampart-accepted-ranges`, every event written as
 * ranges of positions from 0, inclusive and ascending (`0-36,40-99`). The server writes them
 * (grpc/scoring.ts), the client reads them (client/track-stream.ts): one spelling for both.
 */

/** The ranges are cut past this length: an event not listed counts as not written (sent again). */
export const MAX_ACCEPTED_RANGES_CHARS = 4096;

/** The trailers of a stream whose events were written or not (`written`, in order). */
export function acceptedTrailers(written: readonly boolean[]): { first: number; ranges: string } {
  const firstMissing = written.indexOf(false);
  let ranges = '';
  for (let i = 0; i < written.length;) {
    if (!written[i]) {
      i++;
      continue;
    }
    let j = i;
    while (j + 1 < written.length && written[j + 1]) j++;
    const range = `${ranges ? ',' : ''}${i}-${j}`;
    if (ranges.length + range.length > MAX_ACCEPTED_RANGES_CHARS) break;
    ranges += range;
    i = j + 1;
  }
  return { first: firstMissing < 0 ? written.length : firstMissing, ranges };
}

/**
 * Which of the `sent` events the trailers say were written: those `ranges` lists, else (absent,
 * or not well formed: a server that does not send them) the `first` ones. Null: the count is
 * absent or not a count, and nothing is known.
 */
export function acceptedOf(
  first: string | undefined,
  ranges: string | undefined,
  sent: number,
): boolean[] | null {
  const n = first === undefined ? NaN : Number(first);
  if (!Number.isInteger(n) || n < 0) return null;
  return (
    (ranges === undefined ? null : rangesOf(ranges, sent)) ?? Array.from({ length: sent }, (_, i) => i < n)
  );
}

function rangesOf(v: string, sent: number): boolean[] | null {
  const taken = new Array<boolean>(sent).fill(false);
  let next = 0;
  for (const part of v === '' ? [] : v.split(',')) {
    const m = /^(\d+)-(\d+)$/.exec(part);
    if (!m) return null;
    const from = Number(m[1]);
    const to = Number(m[2]);
    if (from < next || to < from || to >= sent) return null;
    taken.fill(true, from, to + 1);
    next = to + 1;
  }
  return taken;
}
