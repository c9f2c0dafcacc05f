/**
 * The browser client over HTTP: the script at a stable path (/client/v1/rampart.js, a classic
 * script defining `window.Rampart`, and /client/v1/rampart.mjs, the ES module), and in
 * development a demo login page that uses it, with Rampart itself as the application's backend
 * (it forwards the token to a `$login` verdict in the sandbox environment and shows the answer).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { Services } from '../core/services';
import { PROJECT_ROOT } from '../paths';

export interface ClientPagesOptions {
  services: Services;
  /** Serve the demo page (development only). */
  demo: boolean;
}

const SCRIPTS: Readonly<Record<string, string>> = {
  'rampart.js': 'rampart.js',
  'rampart.mjs': 'rampart.mjs',
};

export async function clientPages(app: FastifyInstance, o: ClientPagesOptions): Promise<void> {
  const dir = path.join(PROJECT_ROOT, 'dist', 'browser');
  const cache = new Map<string, string>();
  app.get('/client/v1/:file', async (req: FastifyRequest, reply: FastifyReply) => {
    const name = SCRIPTS[(req.params as { file: string }).file];
    const file = name ? path.join(dir, name) : null;
    if (!file || !existsSync(file))
      return reply.code(404).send({
        type: 'not_found',
        message: name ? 'the browser client is not built (npm run build)' : 'no such file',
      });
    let body = cache.get(file);
    if (body === undefined) {
      body = readFileSync(file, 'utf8');
      cache.set(file, body);
    }
    return reply
      .code(200)
      .header('content-type', 'text/javascript; charset=utf-8')
      .header('cache-control', 'public, max-age=300')
      .header('access-control-allow-origin', '*')
      .header('x-content-type-options', 'nosniff')
      .send(body);
  });

  if (!o.demo) return;
  app.get('/client/demo', async (_req, reply) => {
    const env = await o.services.environments.byName('sandbox');
    return reply
      .code(200)
      .header('content-type', 'text/html; charset=utf-8')
      .header('cache-control', 'no-store')
      .send(demoPage(env.publishableKey));
  });
  app.post('/client/demo/login', async (req, reply) => {
    const form = new URLSearchParams(Buffer.isBuffer(req.body) ? req.body.toString('utf8') : '');
    const env = await o.services.environments.byName('sandbox');
    const email = (form.get('email') ?? '').slice(0, 200) || 'demo@example.com';
    const token = form.get('rampart_request_token') ?? '';
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers))
      if (typeof v === 'string' && !/^(cookie|authorization)$/i.test(k)) headers[k] = v;
    const verdict = await o.services.verdicts.evaluate(
      { env, kind: 'secret', credentialHash: 'demo-page' },
      'risk',
      {
        event: '$login',
        status: '$succeeded',
        user: { id: email, email },
        ...(token ? { requestToken: token } : {}),
        context: { ip: req.ip, headers },
      },
    );
    const answer = {
      action: verdict.action,
      risk: verdict.risk,
      device_token: verdict.device?.token ?? null,
      signals: verdict.signals,
      token_received: token !== '',
    };
    return reply
      .code(200)
      .header('content-type', 'text/html; charset=utf-8')
      .header('cache-control', 'no-store')
      .send(resultPage(answer));
  });
}

const escape = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function demoPage(publishableKey: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Rampart browser client: demo login</title>
<style>body{font:16px system-ui,sans-serif;max-width:28rem;margin:3rem auto;padding:0 1rem}label{display:block;margin:.8rem 0 .2rem}input{width:100%;padding:.5rem;font:inherit}button{margin-top:1rem;padding:.6rem 1.2rem;font:inherit}</style>
</head><body>
<h1>Demo login</h1>
<p>This page loads <code>/client/v1/rampart.js</code>, gets a request token for the sandbox environment when the form is submitted, and posts it with the form. Rampart then plays the application's backend: it forwards the token to a <code>$login</code> verdict and shows the answer.</p>
<form id="login" method="post" action="/client/demo/login">
<label for="email">E-mail</label><input id="email" name="email" type="email" value="demo@example.com" autocomplete="username">
<label for="password">Password</label><input id="password" name="password" type="password" value="correct horse" autocomplete="current-password">
<button type="submit">Log in</button>
</form>
<script src="/client/v1/rampart.js"></script>
<script>
Rampart.configure({ publishableKey: ${JSON.stringify(escape(publishableKey))} });
Rampart.injectTokenOnSubmit(document.getElementById('login'));
</script>
</body></html>
`;
}

function resultPage(answer: Record<string, unknown>): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>Rampart demo: verdict</title>
<style>body{font:16px system-ui,sans-serif;max-width:40rem;margin:3rem auto;padding:0 1rem}pre{background:#f4f4f4;padding:1rem;overflow:auto}</style></head><body>
<h1>Verdict: ${escape(String(answer.action))}</h1>
<pre id="verdict">${escape(JSON.stringify(answer, null, 2))}</pre>
<p><a href="/client/demo">Back</a></p>
</body></html>
`;
}
