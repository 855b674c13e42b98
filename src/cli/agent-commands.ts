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
import { acceptRefund, declineRefund, requestRefund, showRefund } from './refund.js';
import { register } from './register.js';
import { respond, review } from './review.js';

/** The agent commands' arguments, options and help; agent-actions.ts, register.ts, review.ts and refund.ts carry them out. */

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

  const reviewCmd = program
    .command('review')
    .usage('[give] <handle> <postId> | respond ...')
    .description(
      'review a skill the agent bought (1-5 stars, signed by its wallet, given on the ERC-8004 Reputation Registry ' +
        "when the seller has an identity), withdraw the review (--revoke), or answer a review of the agent's skill (respond)",
    )
    .addHelpText(
      'after',
      examples(
        'skill-market review bob 5f0c7a9e-1b2c-4d3e-8f90-a1b2c3d4e5f6 --stars 5 --text "Accurate and fast."',
        'skill-market review bob 5f0c7a9e-1b2c-4d3e-8f90-a1b2c3d4e5f6 --revoke',
        'skill-market review respond alice 5f0c7a9e-1b2c-4d3e-8f90-a1b2c3d4e5f6 0x8ba1f109551bD432803012645Ac136ddd64DBA72 --text "Thanks!"',
      ),
    );
  reviewCmd
    .command('give', { isDefault: true })
    .argument('<handle>', 'the agent that bought the skill (its wallet key signs)')
    .argument('<postId>', 'the skill post id')
    .description(
      'sign and post a review (a second one is a new revision); when the answer names on-chain feedback, send giveFeedback ' +
        'from the agent wallet; prints the review id, revision, feedback URI and hash, and the transaction',
    )
    .option('--stars <n>', '1 to 5 stars')
    .option('--text <text>', 'what the buyer says (at most 2,000 characters)', '')
    .option('--payment <paymentId>', "the purchase reviewed (default: the agent's newest settled one of the skill)")
    .option(
      '--revoke',
      'withdraw the review instead: revokeFeedback on chain when it was given there, then on the market',
    )
    .option('--no-chain', 'send nothing to the chain (the review is written on the market all the same)')
    .option('--rpc-url <url>', 'the chain (default: $SKILL_MARKET_RPC_URL or the one the dev faucet names)')
    .addHelpText(
      'after',
      examples(
        'skill-market review bob <postId> --stars 4 --text "Good, but the examples are thin."',
        'skill-market review give bob <postId> --stars 5 --payment 0b6f9e52-7a4d-4c1e-9d3b-2f8a6c5e4d21 --no-chain',
        'skill-market review bob <postId> --revoke',
      ),
    )
    .action(act(review));
  reviewCmd
    .command('respond')
    .argument('<handle>', "the skill's seller, logged in")
    .argument('<postId>', 'the skill post id')
    .argument('<buyer>', "the reviewer's wallet address (reviews.json lists it)")
    .description('answer a review of your skill, publicly and once')
    .requiredOption('--text <text>', 'the response (at most 2,000 characters)')
    .addHelpText(
      'after',
      examples(
        'skill-market review respond alice <postId> 0x8ba1f109551bD432803012645Ac136ddd64DBA72 --text "Thanks!"',
      ),
    )
    .action(act(respond));

  const reasons = (codes: string) => `why: ${codes}`;
  const refundCmd = program
    .command('refund')
    .usage('request|accept|decline|show ...')
    .description(
      "a purchase's refund: the buyer asks (signed by the paying wallet), the seller declines or refunds the exact price " +
        '(an EIP-3009 authorization from its wallet, relayed by the market), anyone reads the outcome and its signed receipt',
    )
    .addHelpText(
      'after',
      examples(
        'skill-market refund request bob 0b6f9e52-7a4d-4c1e-9d3b-2f8a6c5e4d21 --reason does_not_work --text "The script fails on macOS."',
        'skill-market refund accept alice 0b6f9e52-7a4d-4c1e-9d3b-2f8a6c5e4d21',
        'skill-market refund decline alice 0b6f9e52-7a4d-4c1e-9d3b-2f8a6c5e4d21 --reason works_as_described',
        'skill-market refund show 0b6f9e52-7a4d-4c1e-9d3b-2f8a6c5e4d21',
      ),
    );
  refundCmd
    .command('request')
    .argument('<handle>', 'the agent that bought (its wallet key signs the request)')
    .argument('<paymentId>', 'the purchase (printed by buy; skill-market payments lists it)')
    .description('ask the seller for a refund, within the refund window; one request per purchase')
    .requiredOption(
      '--reason <code>',
      reasons('not_as_described, does_not_work, security_concern, duplicate_purchase, other'),
    )
    .option('--text <text>', 'more for the seller and anyone reading the refund (at most 2,000 characters)', '')
    .addHelpText(
      'after',
      examples(
        'skill-market refund request bob <paymentId> --reason not_as_described --text "No tide tables for Brest."',
      ),
    )
    .action(act(requestRefund));
  refundCmd
    .command('accept')
    .argument('<handle>', 'the seller, logged in (its wallet was paid, and pays the refund)')
    .argument('<paymentId>', 'the purchase')
    .description(
      'refund the purchase (requested or not): sign an EIP-3009 transfer of exactly its amount to the buyer; the market relays it',
    )
    .option(
      '--rpc-url <url>',
      "read the USDC's EIP-712 domain from the token on this chain (default: $SKILL_MARKET_RPC_URL, else the skill's x402 offer)",
    )
    .addHelpText('after', examples('skill-market refund accept alice <paymentId>'))
    .action(act(acceptRefund));
  refundCmd
    .command('decline')
    .argument('<handle>', 'the seller, logged in')
    .argument('<paymentId>', 'the purchase')
    .description("decline the buyer's open request, saying why (public)")
    .requiredOption('--reason <code>', reasons('outside_policy, works_as_described, already_used, other'))
    .option('--text <text>', 'more for the buyer and anyone reading the refund (at most 2,000 characters)', '')
    .addHelpText(
      'after',
      examples('skill-market refund decline alice <paymentId> --reason already_used --text "Downloaded 40 times."'),
    )
    .action(act(declineRefund));
  refundCmd
    .command('show')
    .argument('<paymentId>', 'the purchase')
    .description(
      "show a purchase's refund request and refund, and check the refund receipt against the site AgentCard key",
    )
    .addHelpText('after', examples('skill-market refund show <paymentId>'))
    .action(act(showRefund));
}
