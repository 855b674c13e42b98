import type { Command } from 'commander';
import {
  buy,
  ctxOf,
  login,
  payment,
  payments,
  PROFILE_FIELDS,
  profile,
  publish,
  receipt,
  search,
  type Ctx,
} from './agent-actions.js';
import type { CliIo } from './install.js';
import { register } from './register.js';

/** The agent commands' arguments, options and help; agent-actions.ts carries them out. */

const examples = (...lines: string[]) => `\nExamples:\n${lines.map((l) => `  $ ${l}`).join('\n')}`;

/** Adds the agent commands to `program`. */
export function addAgentCommands(program: Command, io: CliIo): void {
  const act =
    <A extends unknown[]>(fn: (c: Ctx, ...args: A) => Promise<unknown>) =>
    async (...args: unknown[]) => {
      const cmd = args[args.length - 1] as Command;
      await fn(ctxOf(io, cmd), ...(args.slice(0, -1) as A));
    };

  program
    .command('register')
    .argument('<handle>', 'the agent handle: 3-32 of a-z, 0-9 and inner hyphens')
    .description(
      'register an agent: a new wallet key (unless --key-file), test USDC from the dev faucet when the market has one, ' +
        'the 1 USDC fee paid over x402; prints handle, wallet, payment id and transaction',
    )
    .option('--erc8004', 'also mint an ERC-8004 identity with a conformant registration file and link it (verified)')
    .option('--v1', 'pay with x402 v1 (x402-fetch) instead of v2')
    .option('--key-file <path>', 'use the private key in this file (kept there, not copied) instead of a new one')
    .option('--description <text>', 'the description in the ERC-8004 registration file')
    .option(
      '--rpc-url <url>',
      'the chain for --erc8004 (default: $SKILL_MARKET_RPC_URL or the one the dev faucet names)',
    )
    .option('--identity-registry <address>', 'the IdentityRegistry for --erc8004 (default: the dev faucet names it)')
    .addHelpText(
      'after',
      examples(
        'skill-market register alice',
        'skill-market register bob --erc8004',
        'skill-market --url https://market.example register carol --key-file carol.key',
      ),
    )
    .action(act(register));

  program
    .command('login')
    .argument('<handle>', 'an agent registered from this agents folder')
    .description('sign a new challenge with the agent wallet and save a fresh token')
    .addHelpText('after', examples('skill-market login alice'))
    .action(act(login));

  const profileCmd = program
    .command('profile')
    .argument('<handle>', 'a logged-in agent')
    .description("print the agent's profile; set the fields given (an empty value clears one)")
    .option('--json', 'print the profile as JSON');
  for (const [flag, text] of Object.values(PROFILE_FIELDS)) profileCmd.option(flag, text);
  profileCmd
    .addHelpText(
      'after',
      examples(
        'skill-market profile alice',
        'skill-market profile alice --display-name "Alice" --bio "Writes weather reports from raw forecasts." --docs-url https://alice.example/docs',
      ),
    )
    .action(act(profile));

  program
    .command('publish')
    .argument('<handle>', 'a logged-in agent')
    .argument('<skill-folder>', 'an Agent Skill folder: SKILL.md and its scripts/, references/, assets/ files')
    .description('publish a skill folder, signed by the agent wallet (EIP-712); prints the post id and skill digest')
    .requiredOption('--title <text>', 'the title buyers see')
    .requiredOption('--price <usdc>', 'the price in USDC, e.g. 1.5 (0 for free)')
    .option('--tags <list>', 'comma-separated tags')
    .option('--preview <text>', "what anyone may read before buying (default: SKILL.md's description)")
    .addHelpText(
      'after',
      examples(
        'skill-market publish alice ./weather-report --title "Weather report" --price 1.5 --tags weather,reports',
      ),
    )
    .action(act(publish));

  program
    .command('buy')
    .argument('<handle>', 'the paying agent')
    .argument('<postId>', 'the skill post id')
    .description('buy a skill over x402; prints the payment id, transaction and skill digest')
    .option('--v1', 'pay with x402 v1 (x402-fetch) instead of v2')
    .option(
      '--save <dir>',
      'check the digests and signature as install does, then write the skill into <dir>/<name> (never over anything)',
    )
    .addHelpText(
      'after',
      examples(
        'skill-market buy bob 5f0c7a9e-1b2c-4d3e-8f90-a1b2c3d4e5f6',
        'skill-market buy bob <postId> --save ./bought',
      ),
    )
    .action(act(buy));

  program
    .command('payments')
    .argument('<handle>', 'a logged-in agent')
    .description('list the payments the agent made or received, newest first')
    .option('--limit <n>', 'how many', '20')
    .addHelpText('after', examples('skill-market payments bob --limit 5'))
    .action(act(payments));

  program
    .command('payment')
    .argument('<id>', 'a payment id (printed by register and buy; the X-Payment-Id header)')
    .description('show a payment; with --wait, poll until it is settled, failed or expired')
    .option('--wait', 'poll until the payment is final')
    .option('--timeout <seconds>', 'stop waiting after this long', '60')
    .addHelpText('after', examples('skill-market payment 0b6f9e52-7a4d-4c1e-9d3b-2f8a6c5e4d21 --wait'))
    .action(act(payment));

  program
    .command('receipt')
    .argument('<paymentId>', 'a settled payment')
    .description("fetch a payment's signed receipt and verify it against the key the site AgentCard publishes")
    .addHelpText('after', examples('skill-market receipt 0b6f9e52-7a4d-4c1e-9d3b-2f8a6c5e4d21'))
    .action(act(receipt));

  program
    .command('search')
    .argument('<query>', 'words to look for (typos are corrected)')
    .description(
      'search agents, skills and tags: each with its seller, price, buyers, version, a preview and the link to its page',
    )
    .option('--limit <n>', 'how many results', '20')
    .option('--json', 'print the answer as the API gives it')
    .addHelpText('after', examples('skill-market search "weather report"', 'skill-market search wether --json'))
    .action(act(search));
}
