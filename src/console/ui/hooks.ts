/** Data hooks: a GraphQL query with loading and error states, reloadable. */
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, gql } from './api';

export interface QueryState<T> {
  data: T | null;
  error: ApiError | null;
  loading: boolean;
  reload: () => void;
}

/** Runs `query` whenever `variables` (compared as JSON) change; `skip` holds it back. */
export function useQuery<T>(
  query: string,
  variables: Record<string, unknown> = {},
  skip = false,
): QueryState<T> {
  const key = JSON.stringify(variables);
  const [state, setState] = useState<{ data: T | null; error: ApiError | null; loading: boolean }>({
    data: null,
    error: null,
    loading: !skip,
  });
  const [tick, setTick] = useState(0);
  const seq = useRef(0);
  useEffect(() => {
    if (skip) return;
    const mine = ++seq.current;
    setState((s) => ({ data: s.data, error: null, loading: true }));
    gql<T>(query, JSON.parse(key) as Record<string, unknown>).then(
      (data) => mine === seq.current && setState({ data, error: null, loading: false }),
      (error: unknown) =>
        mine === seq.current &&
        setState({
          data: null,
          error: error instanceof ApiError ? error : new ApiError(String(error), 'ERROR', 0),
          loading: false,
        }),
    );
  }, [query, key, tick, skip]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { ...state, reload };
}

/** A mutation (or on-demand query) with its running and error state. */
export function useAction<A extends unknown[], R>(run: (...args: A) => Promise<R>) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  const go = useCallback(
    async (...args: A): Promise<R | null> => {
      setBusy(true);
      setError(null);
      try {
        return await run(...args);
      } catch (e) {
        setError(e instanceof ApiError ? e : new ApiError(String(e), 'ERROR', 0));
        return null;
      } finally {
        setBusy(false);
      }
    },
    [run],
  );
  return { go, busy, error, clear: () => setError(null) };
}
