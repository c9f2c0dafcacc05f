/**
 * What a result was measured on, written into every machine-readable result (`--json`): the
 * commit (and whether the tree had changes), when, and the machine, so that a history of runs
 * (scripts/results-history.js) says what each figure belongs to.
 */
import { execFileSync } from 'node:child_process';
import os from 'node:os';

export interface RunInfo {
  commit: string | null;
  /** The working tree differed from the commit. */
  dirty: boolean;
  at: string;
  machine: { cpus: number; model: string; memoryGiB: number; node: string; platform: string };
}

const git = (args: string[]): string | null => {
  try {
    return execFileSync('git', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return null;
  }
};

export function runInfo(): RunInfo {
  const cpus = os.cpus();
  return {
    commit: git(['rev-parse', 'HEAD']),
    dirty: (git(['status', '--porcelain', '--untracked-files=no']) ?? '') !== '',
    at: new Date().toISOString(),
    machine: {
      cpus: cpus.length,
      model: cpus[0]?.model ?? 'unknown',
      memoryGiB: Math.round(os.totalmem() / 2 ** 30),
      node: process.version,
      platform: `${os.platform()} ${os.arch()}`,
    },
  };
}
