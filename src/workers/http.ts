/**
 * The core's HttpPoster on the platform's fetch: one POST, no redirect followed, the response
 * body discarded, and the whole request (answer included) bounded by its timeout.
 */
import type { HttpPoster } from '../core/ports';

/** Why a request was aborted by its own timeout (as opposed to the caller's signal). */
const TIMED_OUT = new Error('timed out');

export const fetchPoster: HttpPoster = {
  async post(url, request) {
    const abort = new AbortController();
    const onAbort = () => abort.abort(request.signal.reason);
    if (request.signal.aborted) onAbort();
    else request.signal.addEventListener('abort', onAbort, { once: true });
    const timer = setTimeout(() => abort.abort(TIMED_OUT), request.timeoutMs);
    try {
      const res = await fetch(url, { method: 'POST', headers: request.headers, body: request.body, redirect: 'manual', signal: abort.signal });
      await res.body?.cancel().catch(() => undefined);
      return { status: res.status };
    } catch (err) {
      if (abort.signal.reason === TIMED_OUT) return { timedOut: true };
      throw err;
    } finally {
      clearTimeout(timer);
      request.signal.removeEventListener('abort', onAbort);
    }
  },
};
