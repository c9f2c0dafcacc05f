/**
 * The core's HttpPoster on Node's http and https modules: one POST over a keep-alive connection,
 * no redirect followed (a 3xx is the answer), the response body read and discarded, and the whole
 * request (answer included) bounded by its timeout.
 *
 * Not the platform's fetch: on this 2-core machine fetch (undici) cost about 2 ms of CPU per
 * webhook, more than the rest of a delivery's work in Rampart, and a backlog to a healthy receiver
 * is sent as fast as that work allows (`npm run bench -- --only webhooks`).
 */
import http from 'node:http';
import https from 'node:https';
import type { HttpPoster } from '../core/ports';

/** Connections kept open to each receiver: a backlog reuses them rather than opening one per webhook. */
const agents: Record<string, http.Agent> = {
  'http:': new http.Agent({ keepAlive: true, maxSockets: 64 }),
  'https:': new https.Agent({ keepAlive: true, maxSockets: 64 }),
};

export const httpPoster: HttpPoster = {
  post(url, request) {
    return new Promise((resolve, reject) => {
      let target: URL;
      try {
        target = new URL(url);
      } catch (err) {
        reject(err);
        return;
      }
      const agent = agents[target.protocol];
      if (!agent) {
        reject(
          Object.assign(new TypeError(`cannot POST to a ${target.protocol} URL`), {
            code: 'ERR_INVALID_URL',
          }),
        );
        return;
      }
      if (request.signal.aborted) {
        reject(request.signal.reason);
        return;
      }
      let settled = false;
      const settle = (then: () => void) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        request.signal.removeEventListener('abort', onAbort);
        then();
      };
      const body = Buffer.from(request.body, 'utf8');
      const send = target.protocol === 'https:' ? https.request : http.request;
      const req = send(
        target,
        { method: 'POST', agent, headers: { ...request.headers, 'Content-Length': String(body.length) } },
        (res) => {
          res.on('end', () => settle(() => resolve({ status: res.statusCode ?? 0 })));
          res.on('error', (err) => settle(() => reject(err)));
          res.resume();
        },
      );
      const onAbort = () => {
        settle(() => reject(request.signal.reason));
        req.destroy();
      };
      const timer = setTimeout(() => {
        settle(() => resolve({ timedOut: true }));
        req.destroy();
      }, request.timeoutMs);
      request.signal.addEventListener('abort', onAbort, { once: true });
      req.on('error', (err) => settle(() => reject(err)));
      req.end(body);
    });
  },
};
