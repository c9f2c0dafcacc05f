/**
 * One POST to Rampart, JSON in, with a time limit. React Native's fetch has no timeout of its
 * own, and a request that never answers would hold the one flush (or the one registration)
 * forever; past the limit the call fails as a network error would, and the events stay queued.
 * A late answer is ignored: a batch may then be sent twice, never lost.
 */
import type { HttpResponse, Platform } from './platform';

export const REQUEST_TIMEOUT_MS = 30_000;

export function postJson(platform: Platform, url: string, body: unknown): Promise<HttpResponse> {
  const { clock } = platform;
  return new Promise<HttpResponse>((resolve, reject) => {
    const timer = clock.setTimeout(
      () => reject(new Error(`Rampart: no answer within ${REQUEST_TIMEOUT_MS / 1000} s`)),
      REQUEST_TIMEOUT_MS,
    );
    const done = () => clock.clearTimeout(timer);
    platform
      .fetch(url, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify(body),
      })
      .then(
        (res) => {
          done();
          resolve(res);
        },
        (e: unknown) => {
          done();
          reject(e);
        },
      );
  });
}
