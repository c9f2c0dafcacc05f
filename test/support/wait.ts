/** Wait for a condition: polls `probe` until it answers something truthy, or fails naming `what`. */
export async function waitFor<T>(probe: () => T | Promise<T>, o: { timeoutMs?: number; intervalMs?: number; what: string }): Promise<NonNullable<T>> {
  const deadline = Date.now() + (o.timeoutMs ?? 10_000);
  for (;;) {
    const v = await probe();
    if (v) return v as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${o.what}`);
    await new Promise((r) => setTimeout(r, o.intervalMs ?? 20));
  }
}
