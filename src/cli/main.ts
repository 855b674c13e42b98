import { Command, CommanderError, Option } from 'commander';
import { CliError } from './cli-error.js';
import {
  DEFAULT_DIR,
  DEFAULT_MARKET,
  DEFAULT_MAX_PRICE,
  install,
  listInstalled,
  update,
  type CliIo,
  type InstallOptions,
} from './install.js';

/**
 * skill-market: installs Agent Skills bought on a Skill Market into `.agents/skills/<name>`,
 * checking every digest and the seller's signature first. It never runs what it installs.
 */

const withCommon = (cmd: Command) =>
  cmd
    .addOption(new Option('--market <url>', `the marketplace (default: $SKILL_MARKET_URL or ${DEFAULT_MARKET})`))
    .option('--dir <path>', 'the skills folder the skill folders go into', DEFAULT_DIR);

const withPaying = (cmd: Command) =>
  cmd
    .option('--key-file <path>', 'file holding the paying wallet private key (default: $SKILL_MARKET_KEY)')
    .option('--max-price <usdc>', 'pay at most this much in USDC for one skill', DEFAULT_MAX_PRICE)
    .option(
      '--allow-unsigned',
      'install a version its seller has not signed (another wallet signature is still refused)',
    );

export function buildProgram(io: CliIo): Command {
  const program = new Command('skill-market')
    .description(
      'Install Agent Skills from a Skill Market into .agents/skills/<name>: pays over x402 when needed (or reads ' +
        'again what the wallet bought), checks every file digest and the seller signature, and never runs a script.',
    )
    .version('0.1.0')
    .showHelpAfterError()
    .exitOverride()
    .configureOutput({ writeOut: (s) => io.out(s.replace(/\n$/, '')), writeErr: (s) => io.err(s.replace(/\n$/, '')) });

  withPaying(withCommon(program.command('install')))
    .argument('<skill>', 'post id, skill name, or seller/name')
    .description('install a skill, buying it if the wallet has not yet')
    .option('--force', 'replace an installed skill of the same name from another seller')
    .addHelpText(
      'after',
      '\nExamples:\n  skill-market install weather-report\n  skill-market install 5f0c7a9e-1b2c-4d3e-8f90-a1b2c3d4e5f6 --dir .claude/skills --max-price 2.5',
    )
    .action(async (ref: string, opts: InstallOptions) => {
      await install(ref, opts, io);
    });

  withCommon(program.command('list'))
    .description('list installed skills and whether their files still match what was installed')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean; dir?: string }) => {
      const skills = await listInstalled(opts, io);
      if (opts.json) return io.out(JSON.stringify(skills, null, 2));
      if (!skills.length) return io.out('no skills installed');
      for (const s of skills)
        io.out(`${s.name}\t${s.versionLabel} (version ${s.version})\t${s.state}\t${s.skillDigest}\t${s.postId}`);
    });

  withPaying(withCommon(program.command('update')))
    .argument('[skill]', 'the installed skill name (default: every installed skill)')
    .description('update installed skills to the version their market lists now (a purchase covers every version)')
    .action(async (name: string | undefined, opts: InstallOptions) => {
      await update(name, opts, io);
    });

  return program;
}

/** Runs the command line `argv` (without node and the script); resolves to the exit status. */
export async function run(argv: readonly string[], io: CliIo): Promise<number> {
  try {
    await buildProgram(io).parseAsync([...argv], { from: 'user' });
    return 0;
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode;
    if (err instanceof CliError) {
      io.err(`skill-market: ${err.message} [${err.code}]`);
      return 1;
    }
    io.err(`skill-market: ${(err as Error).message ?? String(err)}`);
    return 1;
  }
}
