import { IDENTITY_REGISTRY_ABI, REGISTRATION_TYPE } from '@skill-market/skill-protocol/identity-registry-abi';
import { createPublicClient, createWalletClient, defineChain, http, parseEventLogs, type Address } from 'viem';
import type { PrivateKeyAccount } from 'viem/accounts';
import { CliError } from './cli-error.js';

export interface IdentityChain {
  rpcUrl: string;
  identityRegistry: Address;
  chainId?: number;
}

export interface MintedIdentity {
  agentId: bigint;
  chainId: number;
  agentRegistry: string;
  registrationTx: string;
  uriTx: string;
}

/**
 * An ERC-8004 registration file for `handle` at `base` (set as a `data:` URI, no hosting needed):
 * the services the market suggests in the agent's identity document: its page (web), its A2A
 * AgentCard and the market's MCP server when it has one. The wallet is not listed: the registry
 * keeps it on chain (`agentWallet`, the owner at registration), and explorers flag an
 * `agentWallet` in the file (8004scan WA083); `_wallet` stays in the signature for callers.
 */
export function registrationFile(
  base: string,
  handle: string,
  description: string,
  agentId: bigint,
  agentRegistry: string,
  _wallet: string,
  mcp: { endpoint: string; version: string } | undefined,
) {
  return {
    type: REGISTRATION_TYPE,
    name: handle,
    description,
    services: [
      { name: 'web', endpoint: `${base}/agents/${handle}` },
      { name: 'A2A', endpoint: `${base}/api/agents/${handle}/agent-card.json`, version: '1.0' },
      ...(mcp ? [{ name: 'MCP', endpoint: mcp.endpoint, version: mcp.version }] : []),
    ],
    x402Support: true,
    active: true,
    supportedTrust: ['reputation'],
    registrations: [{ agentId: Number(agentId), agentRegistry }],
  };
}

const dataUri = (value: unknown) =>
  `data:application/json;base64,${Buffer.from(JSON.stringify(value)).toString('base64')}`;

/**
 * Mints an ERC-8004 identity owned by `account`: `register` (which names the new agent id), then
 * `setAgentURI` with a conformant registration file that lists that id back.
 */
export async function mintIdentity(
  account: PrivateKeyAccount,
  on: IdentityChain,
  file: (agentId: bigint, agentRegistry: string) => unknown,
): Promise<MintedIdentity> {
  const transport = http(on.rpcUrl);
  let chainId: number;
  try {
    chainId = on.chainId ?? (await createPublicClient({ transport }).getChainId());
  } catch (err) {
    throw new CliError(
      'chain_unreachable',
      `cannot reach the chain at ${on.rpcUrl}: ${(err as Error).message}; set --rpc-url`,
    );
  }
  const chain = defineChain({
    id: chainId,
    name: `eip155:${chainId}`,
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [on.rpcUrl] } },
  });
  const wallet = createWalletClient({ account, chain, transport });
  const reader = createPublicClient({ chain, transport });
  try {
    const registrationTx = await wallet.writeContract({
      address: on.identityRegistry,
      abi: IDENTITY_REGISTRY_ABI,
      functionName: 'register',
      args: [dataUri({ type: REGISTRATION_TYPE })],
    });
    const receipt = await reader.waitForTransactionReceipt({ hash: registrationTx });
    const [registered] = parseEventLogs({ abi: IDENTITY_REGISTRY_ABI, logs: receipt.logs, eventName: 'Registered' });
    if (!registered) throw new Error(`the registry ${on.identityRegistry} logged no Registered event`);
    const { agentId } = registered.args;
    const agentRegistry = `eip155:${chainId}:${on.identityRegistry}`;
    const uriTx = await wallet.writeContract({
      address: on.identityRegistry,
      abi: IDENTITY_REGISTRY_ABI,
      functionName: 'setAgentURI',
      args: [agentId, dataUri(file(agentId, agentRegistry))],
    });
    await reader.waitForTransactionReceipt({ hash: uriTx });
    return { agentId, chainId, agentRegistry, registrationTx, uriTx };
  } catch (err) {
    if (err instanceof CliError) throw err;
    throw new CliError(
      'erc8004_failed',
      `registering in the IdentityRegistry ${on.identityRegistry} at ${on.rpcUrl}: ${(err as { shortMessage?: string }).shortMessage ?? (err as Error).message}`,
    );
  }
}
