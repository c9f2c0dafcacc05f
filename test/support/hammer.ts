/**
 * Concurrent load from a test: `count` calls, at most `concurrency` in flight, each started as one
 * before it finishes (the drills of test/integration that hammer one user or several instances).
 */

/** Run `one(0)` … `one(count - 1)`, `concurrency` at a time; resolves once every call has. */
export async function hammer(
  count: number,
  concurrency: number,
  one: (i: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (let i = next++; i < count; i = next++) await one(i);
    }),
  );
}
