/**
 * A privacy job, once it is done (sent or failed), read through the service's own API: the
 * compilation and the mail run in the background, so tests poll the job (waiting on a condition,
 * never a fixed pause).
 */
import type { EnvId } from '../../src/core/model';
import type { PrivacyJob } from '../../src/core/privacy/model';
import { waitFor } from './wait';

export async function jobDone(
  privacy: { job(env: EnvId, id: string): Promise<PrivacyJob | null> },
  env: EnvId,
  id: string,
  timeoutMs = 20_000,
): Promise<PrivacyJob> {
  return waitFor(
    async () => {
      const job = await privacy.job(env, id);
      if (!job) throw new Error(`privacy job ${id} not found`);
      return job.status !== 'pending' && job;
    },
    { what: `privacy job ${id} to be sent or failed`, timeoutMs, intervalMs: 10 },
  );
}
