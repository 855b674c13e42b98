import { resolve } from 'node:path';
import { privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { type Ctx, usdc, x402Of } from './agent-actions.js';
import { type AgentFile, readKeyFile } from './agent-home.js';
import { CliError } from './cli-error.js';
import { mintIdentity, registrationFile } from './erc8004-identity.js';
import type { FaucetAnswer } from './market-api.js';
import { shown } from './terminal-text.js';

/** `skill-market register`: a new agent pays its fee, and mints an ERC-8004 identity if asked. */

/** Test USDC a registration asks the development faucet for: the fee and a few purchases. */
const FAUCET_USDC = 50_000_000n;

export async function register(
  c: Ctx,
  handle: string,
  opts: {
    erc8004?: boolean;
    v1?: boolean;
    keyFile?: string;
    rpcUrl?: string;
    identityRegistry?: string;
    description?: string;
  },
) {
  const { io, api, home } = c;
  const known = await home.read(handle);
  const source = opts.keyFile
    ? { key: await readKeyFile(io.cwd, opts.keyFile), keyFile: resolve(io.cwd, opts.keyFile) }
    : known
      ? { key: await readKeyFile(home.dir, known.keyFile), keyFile: known.keyFile }
      : await home.newKey(handle);
  const wallet = privateKeyToAccount(source.key);
  const challenge = await api.challenge(wallet.address, handle);
  if (challenge.action === 'login') {
    io.out(
      shown`@${challenge.handle} is already registered at ${api.base} with wallet ${wallet.address}; nothing was paid.`,
    );
    if (!known)
      await home.save({ handle: challenge.handle, address: wallet.address, market: api.base, keyFile: source.keyFile });
    // An agent registered without an identity (or whose minting stopped) gets one now, for gas only.
    if (opts.erc8004 && known?.token && !known.erc8004AgentId)
      return linkIdentity(c, known, wallet, await api.faucet(wallet.address, 1n), opts);
    io.out(shown`Log in with: skill-market login ${challenge.handle}`);
    return;
  }
  // The key is kept before paying: a registration that stops half-way is retried with the same wallet.
  const file = await home.save({
    ...known,
    handle,
    address: wallet.address,
    market: api.base,
    keyFile: source.keyFile,
  });
  const minted = await api.faucet(wallet.address, FAUCET_USDC);
  if (minted) io.out(`faucet: ${usdc(FAUCET_USDC)} and gas to ${wallet.address}`);
  const fee = challenge.registrationFee;
  const done = await api.signIn(wallet, challenge, x402Of(opts));
  const agent: AgentFile = { ...(await home.load(handle)), token: done.token, agentId: done.agent.id };
  await home.save(agent);
  io.out(shown`registered @${done.agent.handle} at ${api.base}`);
  io.out(`  wallet       ${wallet.address}`);
  io.out(`  paid         ${fee ? usdc(fee.amount) : 'nothing'} over x402 v${x402Of(opts)}`);
  io.out(shown`  payment      ${done.paymentId ?? '(none)'}`);
  io.out(shown`  transaction  ${done.transaction ?? '(none)'}`);
  io.out(shown`  saved        ${file} and its key file ${resolve(home.dir, source.keyFile)} (mode 0600)`);
  if (opts.erc8004) await linkIdentity(c, agent, wallet, minted, opts);
}

type RegisterOptions = Parameters<typeof register>[2];

/**
 * Mints the agent's ERC-8004 identity from its wallet, with a conformant registration file, and
 * links it to the agent. The chain is --rpc-url / --identity-registry, or the one the dev faucet names.
 */
async function linkIdentity(
  c: Ctx,
  agent: AgentFile,
  wallet: PrivateKeyAccount,
  faucet: FaucetAnswer | undefined,
  opts: RegisterOptions,
) {
  const { io, api, home } = c;
  const handle = agent.handle;
  if (!agent.token) throw new CliError('not_logged_in', `@${handle} has no token: run "skill-market login ${handle}"`);
  const rpcUrl = opts.rpcUrl ?? io.env.SKILL_MARKET_RPC_URL ?? faucet?.rpcUrl;
  const registry = opts.identityRegistry ?? io.env.SKILL_MARKET_IDENTITY_REGISTRY ?? faucet?.identityRegistry;
  if (!rpcUrl || !registry)
    throw new CliError(
      'chain_unknown',
      `${api.base} has no development faucet naming its chain: pass --rpc-url and --identity-registry for --erc8004`,
    );
  const description = opts.description ?? `@${handle} on Skill Market`;
  const mcp = await api.mcpService();
  const identity = await mintIdentity(
    wallet,
    { rpcUrl, identityRegistry: registry as `0x${string}`, chainId: faucet?.chainId },
    (agentId, agentRegistry) =>
      registrationFile(api.base, handle, description, agentId, agentRegistry, wallet.address, mcp),
  );
  await api.editProfile(agent.token, { erc8004AgentId: identity.agentId.toString() });
  await home.save({ ...agent, erc8004AgentId: identity.agentId.toString() });
  io.out(shown`ERC-8004 identity ${identity.agentId} in ${identity.agentRegistry}, linked to @${handle}`);
  io.out(shown`  registration file  data: URI (set in transaction ${identity.uriTx})`);
  io.out(shown`  identity document  ${api.base}/api/agents/${handle}/identity`);
}
