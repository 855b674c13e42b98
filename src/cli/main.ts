import { Command, CommanderError, Option } from 'commander';
import type { GlobalOptions } from './agent-actions.js';
import { addAgentCommands } from './agent-commands.js';
import { addWebhookCommands } from './webhooks.js';
import { AgentHome, DEFAULT_HOME } from './agent-home.js';
import { CliError } from './cli-error.js';
import {
  DEFAULT_DIR,
  DEFAULT_MAX_PRICE,
  install,
  listInstalled,
  update,
  type CliIo,
  type InstallOptions,
} from './install.js';
import { printable, printableJson, shown } from './terminal-text.js';

/**
 * skill-market: the marketplace's command-line client. Agents register (optionally with an
 * ERC-8004 identity), log in, edit their profile, publish signed skills, buy, follow payments and
 * verify receipts; `install` puts Agent Skills into `.agents/skills/<name>`, checking every digest
 * and the seller's signature first, and never runs what it installs.
 */

const withCommon = (cmd: Command) =>
  cmd.option('--dir <path>', 'the skills folder the skill folders go into', DEFAULT_DIR);

/** The install options with the market the global --url (or its alias --market) names, if given, and the agents folder. */
const withMarket = <T extends object>(
  opts: T,
  cmd: Command,
): T & { market?: string; home?: string; maxPriceDefault?: boolean } => {
  const g = cmd.optsWithGlobals() as GlobalOptions;
  return {
    ...opts,
    ...(cmd.getOptionValueSource('maxPrice') === 'default' ? { maxPriceDefault: true } : {}),
    ...(g.url || g.market ? { market: (g.url ?? g.market) as string } : {}),
    ...(g.home ? { home: g.home } : {}),
  };
};

const withPaying = (cmd: Command) =>
  cmd
    .option(
      '--key-file <path>',
      "file holding the paying wallet private key (default: the named agent's key in the agents folder, else $SKILL_MARKET_KEY)",
    )
    .option('--max-price <usdc>', 'pay at most this much in USDC for one skill', DEFAULT_MAX_PRICE)
    .option(
      '--allow-unsigned',
      'install a version its seller has not signed (another wallet signature is still refused)',
    )
    .option('--allow-audit-fail', 'install a version whose audit failed (read its report first: it is printed)');

/** Whether `name` is an agent of the agents folder (a name that is not a handle never is). */
async function isAgentOf(io: CliIo, home: string | undefined, name: string): Promise<boolean> {
  const agents = AgentHome.of(io.cwd, io.env, home);
  try {
    return (await agents.read(name)) !== undefined;
  } catch (err) {
    if (err instanceof CliError && err.code === 'invalid_handle') return false;
    throw err;
  }
}

export function buildProgram(io: CliIo): Command {
  const program = new Command('skill-market')
    .description(
      'The Skill Market client: register agents (with an ERC-8004 identity if asked), publish signed Agent Skills, ' +
        'buy them over x402, follow payments and verify receipts, and install skills into .agents/skills/<name> ' +
        'with every file digest and the seller signature checked (no script is ever run).',
    )
    .version('0.1.0')
    .option(
      '--url <url>',
      'the marketplace: https, or http to a loopback host (default: $SKILL_MARKET_URL or http://localhost:3000)',
    )
    .addOption(new Option('--market <url>', 'the marketplace (same as --url)').hideHelp())
    .option('--home <dir>', `the agents folder: keys and tokens (default: $SKILL_MARKET_HOME or ./${DEFAULT_HOME})`)
    // A command is listed as its usage reads (install: [handle] <skill>).
    .configureHelp({ showGlobalOptions: true, subcommandTerm: (cmd) => `${cmd.name()} ${cmd.usage()}` })
    .addHelpText(
      'after',
      '\nEnvironment:\n  SKILL_MARKET_URL   the marketplace (--url)\n  SKILL_MARKET_HOME  the agents folder (--home)\n' +
        '  SKILL_MARKET_KEY   the paying wallet key of install and update without an agent (--key-file)\n' +
        '\nExamples:\n  $ skill-market register alice\n  $ skill-market --url https://market.example search weather\n' +
        '  $ skill-market install alice weather-report\n  $ skill-market update alice',
    )
    .showHelpAfterError()
    .exitOverride()
    .configureOutput({ writeOut: (s) => io.out(s.replace(/\n$/, '')), writeErr: (s) => io.err(s.replace(/\n$/, '')) });

  withPaying(withCommon(program.command('install')))
    .usage('[options] [handle] <skill>')
    .argument(
      '<handle-or-skill>',
      'the paying agent as buy names it (its key is read from the agents folder), then the skill; ' +
        'or the skill alone (free, or paid with --key-file or $SKILL_MARKET_KEY)',
    )
    .argument('[skill]', 'post id, skill name, or seller/name')
    .description('install a skill, buying it with the agent wallet if it has not yet (as buy does)')
    .option('--force', 'replace an installed skill of the same name from another seller')
    .addHelpText(
      'after',
      '\nExamples:\n  skill-market install alice 5f0c7a9e-1b2c-4d3e-8f90-a1b2c3d4e5f6\n  skill-market install alice weather-report --max-price 2.5' +
        '\n  skill-market install free-skill-name\n  skill-market install 5f0c7a9e-1b2c-4d3e-8f90-a1b2c3d4e5f6 --key-file wallet.key --dir .claude/skills',
    )
    .action(async (first: string, second: string | undefined, opts: InstallOptions, cmd: Command) => {
      // Two arguments: the agent then the skill, as buy takes them; one: the skill alone.
      const [handle, ref] = second === undefined ? [undefined, first] : [first, second];
      await install(ref, withMarket({ ...opts, ...(handle ? { handle } : {}) }, cmd), io);
    });

  withCommon(program.command('list'))
    .description('list installed skills and whether their files still match what was installed')
    .option('--json', 'print JSON')
    .addHelpText('after', '\nExamples:\n  skill-market list\n  skill-market list --json --dir .claude/skills')
    .action(async (opts: { json?: boolean; dir?: string }, cmd: Command) => {
      const skills = await listInstalled(withMarket(opts, cmd), io);
      if (opts.json) return io.out(printableJson(skills));
      if (!skills.length) return io.out('no skills installed');
      for (const s of skills) io.out(shown`${s.name}\t${s.versionLabel}\t${s.state}\t${s.skillDigest}\t${s.postId}`);
    });

  withPaying(withCommon(program.command('update')))
    .usage('[options] [handle] [skill]')
    .argument(
      '[handle-or-skill]',
      'the paying agent as install and buy name it (its key is read from the agents folder), then the skill; ' +
        'or the skill alone (a name that is an agent of the agents folder is the agent)',
    )
    .argument('[skill]', 'the installed skill name (default: every installed skill)')
    .description('update installed skills to the version their market lists now (a purchase covers every version)')
    .addHelpText(
      'after',
      '\nExamples:\n  skill-market update alice\n  skill-market update alice weather-report\n  skill-market update' +
        '\n  skill-market update weather-report --key-file wallet.key',
    )
    .action(async (first: string | undefined, second: string | undefined, opts: InstallOptions, cmd: Command) => {
      const market = withMarket(opts, cmd);
      // Two arguments: the agent then the skill, as install takes them; one: the agent when the
      // agents folder knows it, else the skill.
      const [handle, name] =
        second !== undefined
          ? [first, second]
          : first !== undefined && (await isAgentOf(io, market.home, first))
            ? [first, undefined]
            : [undefined, first];
      await update(name, { ...market, ...(handle ? { handle } : {}) }, io);
    });

  addAgentCommands(program, io);
  addWebhookCommands(program, io);

  return program;
}

/**
 * Runs the command line `argv` (without node and the script); resolves to the exit status. Each
 * command escapes the remote values it prints (terminal-text.ts); every line is filtered here
 * once more, keeping only the client's own line breaks and tabs, so that no remote text reaches
 * the terminal as control characters even through a print that forgot to escape it.
 */
export async function run(argv: readonly string[], io: CliIo): Promise<number> {
  const guarded: CliIo = {
    ...io,
    out: (line) => io.out(printable(line, '\n\t')),
    err: (line) => io.err(printable(line, '\n\t')),
  };
  try {
    await buildProgram(guarded).parseAsync([...argv], { from: 'user' });
    return 0;
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode;
    // A refusal's message quotes the market (a problem's code and detail): one line, all escaped.
    if (err instanceof CliError) {
      guarded.err(`skill-market: ${printable(err.message)} [${printable(err.code)}]`);
      return 1;
    }
    guarded.err(`skill-market: ${(err as Error).message ?? String(err)}`);
    return 1;
  }
}
