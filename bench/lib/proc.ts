/** What /proc says of a process (Linux): CPU time and resident memory, null where there is no /proc. */
import { readFileSync } from 'node:fs';

/** Resident memory of a process in bytes. */
export function rssOf(pid: number): number | null {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : null;
  } catch {
    return null;
  }
}

/** CPU time of a process (user + system) in µs (clock ticks of 10 ms: use over seconds, not calls). */
export function cpuOf(pid: number): number | null {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8')
      .replace(/^.*\) /, '')
      .split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10_000;
  } catch {
    return null;
  }
}
