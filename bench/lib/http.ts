/** HTTP for the benchmarks: JSON POSTs with the API secret over a keep-alive agent. */
import http from 'node:http';
import { performance } from 'node:perf_hooks';

/** What a JSON POST answered. */
export interface JsonAnswer {
  status: number;
  /** From the send to the end of the answer (read and parsed). */
  ms: number;
  /** The parsed body; undefined when there was none or it was not JSON (`unparsed`). */
  body: unknown;
  unparsed: boolean;
}

/**
 * A JSON POST with the secret (HTTP Basic, empty user) over `agent`: the answer is read and
 * parsed, as a caller would. Rejects on a transport error.
 */
export function jsonPoster(
  agent: http.Agent,
  secret: string,
): (url: URL, body: unknown) => Promise<JsonAnswer> {
  const authorization = `Basic ${Buffer.from(`:${secret}`).toString('base64')}`;
  return (url, body) =>
    new Promise((resolve, reject) => {
      const text = JSON.stringify(body);
      const started = performance.now();
      const req = http.request(
        {
          host: url.hostname,
          port: url.port,
          path: url.pathname,
          method: 'POST',
          agent,
          headers: {
            authorization,
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(text),
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            let parsed: unknown;
            let unparsed = false;
            if (chunks.length) {
              try {
                parsed = JSON.parse(Buffer.concat(chunks).toString('utf8'));
              } catch {
                unparsed = true;
              }
            }
            resolve({ status: res.statusCode ?? 0, ms: performance.now() - started, body: parsed, unparsed });
          });
        },
      );
      req.on('error', reject);
      req.end(text);
    });
}
