/**
 * A bounded memo for the intel look-ups: the last `size` distinct keys' results, the oldest
 * entry forgotten first (a Map keeps insertion order). Results are shared between callers.
 */
export function fifoMemo<T>(size: number, compute: (key: string) => T): (key: string) => T {
  const cache = new Map<string, T>();
  return (key) => {
    const hit = cache.get(key);
    if (hit) return hit;
    const result = compute(key);
    if (cache.size >= size) cache.delete(cache.keys().next().value as string);
    cache.set(key, result);
    return result;
  };
}
