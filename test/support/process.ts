/** Processes the tests start or signal. */
import { readdirSync, readFileSync } from 'node:fs';
import { waitFor } from './wait';

/** Whether a process is still running (signal 0 checks without signalling). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * Resolves once a process sent SIGSTOP is in the stopped state: every thread of it (one in a
 * system call stops only when the call returns). Linux only (/proc); rejects after `timeoutMs`.
 */
export async function stopped(pid: number, timeoutMs = 5000): Promise<void> {
  await waitFor(
    () => {
      const threads = readdirSync(`/proc/${pid}/task`);
      return threads.every((t) => /^State:\s+T/m.test(readFileSync(`/proc/${pid}/task/${t}/status`, 'utf8')));
    },
    { what: `every thread of process ${pid} to be stopped (SIGSTOP)`, timeoutMs, intervalMs: 10 },
  );
}
