import { execFileSync } from 'node:child_process';
import { cpus, hostname, totalmem } from 'node:os';

/**
 * The line every bench prints first, and docs/benchmarks.md quotes with each figure: when, on what
 * machine and on which commit the figures were measured (a figure is comparable only with figures
 * of the same run).
 */
export function runInfo(): string {
  const git = (...args: string[]) => {
    try {
      return execFileSync('git', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    } catch {
      return '';
    }
  };
  const commit = git('rev-parse', '--short=12', 'HEAD') || 'unknown';
  const dirty = git('status', '--porcelain', '--untracked-files=no') ? ' (with uncommitted changes)' : '';
  const cpu = cpus();
  const model = cpu[0]?.model.replace(/\s+/g, ' ').trim() ?? 'unknown CPU';
  const memGiB = (totalmem() / 2 ** 30).toFixed(0);
  return (
    `measured ${new Date().toISOString()} on ${hostname()}: ${cpu.length} × ${model}, ${memGiB} GiB, ` +
    `node ${process.version}; commit ${commit}${dirty}`
  );
}

/** Prints the run line once, at the start of a bench. */
export function printRunInfo(): void {
  console.log(`# ${runInfo()}`);
}
