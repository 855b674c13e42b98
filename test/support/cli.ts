import { run } from '../../src/cli/main.js';

/** Runs the `skill-market` CLI in-process against a market, with its output and errors captured. */
export async function runCli(
  args: string[],
  at: { cwd: string; url: string },
): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await run(args, {
    cwd: at.cwd,
    env: { SKILL_MARKET_URL: at.url },
    out: (l) => out.push(l),
    err: (l) => err.push(l),
  });
  return { code, out: out.join('\n'), err: err.join('\n') };
}
