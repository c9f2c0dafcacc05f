/**
 * A privacy job, once it is done (sent or failed), read through the service's own API: the
 * compilation and the mail run in the background, so tests poll the job (waiting on a condition,
 * never a fixed pause).
 */
import type { EnvId } from '../../src/core/model';
import type { PrivacyJob } from '../../src/core/privacy/model';

export async function jobDone(privacy: { job(env: EnvId, id: string): Promise<PrivacyJob | null> }, env: EnvId, id: string, timeoutMs = 20_000): Promise<PrivacyJob> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const job = await privacy.job(env, id);
    if (!job) throw new Error(`privacy job ${id} not found`);
    if (job.status !== 'pending') return job;
    if (Date.now() > until) throw new Error(`privacy job ${id} still pending after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
