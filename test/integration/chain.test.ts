import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import {
  createWalletClient,
  decodeEventLog,
  encodeFunctionData,
  erc20Abi,
  http,
  toHex,
  zeroAddress,
  type Abi,
  type Address,
  type Hex,
} from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { MULTICALL3_ADDRESS, localClients } from '../../src/platform/chain/clients.js';
import { startDevChain, type DevChain } from '../../src/platform/chain/devchain.js';
import { identityRegistryAbi } from '../../src/platform/chain/identity-registry.js';
import { multicall3Abi } from '../../src/platform/chain/multicall3.js';
import { usdcAbi } from '../../src/platform/chain/usdc.js';

describe('dev chain (anvil + USDC + ERC-8004 + Multicall3)', () => {
  let dc: DevChain;
  let startupMs: number;

  before(async () => {
    const t0 = performance.now();
    dc = await startDevChain();
    startupMs = performance.now() - t0;
  });

  after(async () => {
    await dc?.stop();
  });

  const usdcBalance = (who: Address) =>
    dc.publicClient.readContract({ address: dc.usdc.address, abi: erc20Abi, functionName: 'balanceOf', args: [who] });

  it('starts quickly on Base Sepolia chain id with the documented accounts', async () => {
    expect(startupMs).to.be.below(3000);
    expect(dc.chainId).to.equal(84532);
    expect(await dc.publicClient.getChainId()).to.equal(84532);
    const nodeAccounts = await createWalletClient({ transport: http(dc.rpcUrl) }).getAddresses(); // eth_accounts
    const ours = Object.values(dc.accounts).map((a) => a.address.toLowerCase());
    expect(nodeAccounts.slice(0, 3).map((a) => a.toLowerCase())).to.deep.equal(ours);
    for (const a of Object.values(dc.accounts)) expect(privateKeyToAccount(a.privateKey).address).to.equal(a.address);
  });

  it('deploys USDC with the Base Sepolia EIP-712 domain', async () => {
    const read = (functionName: string) =>
      dc.publicClient.readContract({ address: dc.usdc.address, abi: usdcAbi, functionName });
    expect(dc.usdc).to.include({ name: 'USDC', version: '2', decimals: 6 });
    expect(await read('name')).to.equal('USDC');
    expect(await read('symbol')).to.equal('USDC');
    expect(await read('version')).to.equal('2');
    expect(await read('decimals')).to.equal(6);
  });

  it('names USDC "USD Coin" on the Base mainnet chain id, as Circle does', async () => {
    const base = await startDevChain({ chainId: 8453 });
    try {
      expect(base.usdc).to.include({ name: 'USD Coin', version: '2', decimals: 6 });
      const name = await base.publicClient.readContract({
        address: base.usdc.address,
        abi: usdcAbi,
        functionName: 'name',
      });
      expect(name).to.equal('USD Coin');
    } finally {
      await base.stop();
    }
  });

  it('faucet mints and balanceOf moves', async () => {
    const to = privateKeyToAccount(generatePrivateKey()).address;
    await dc.faucet(to, 1_500_000n);
    await dc.faucet(to, 500_000n);
    expect(await usdcBalance(to)).to.equal(2_000_000n);
  });

  it('settles a signed EIP-3009 transferWithAuthorization once and refuses its replay', async () => {
    const payer = privateKeyToAccount(generatePrivateKey());
    const payTo = dc.accounts.treasury.address;
    await dc.faucet(payer.address, 3_000_000n);
    const before = await usdcBalance(payTo);

    const now = BigInt(Math.floor(Date.now() / 1000));
    const message = {
      from: payer.address,
      to: payTo,
      value: 1_000_000n,
      validAfter: now - 60n,
      validBefore: now + 600n,
      nonce: toHex(crypto.getRandomValues(new Uint8Array(32))),
    };
    const signature = await payer.signTypedData({
      domain: { name: dc.usdc.name, version: dc.usdc.version, chainId: dc.chainId, verifyingContract: dc.usdc.address },
      types: {
        TransferWithAuthorization: [
          { name: 'from', type: 'address' },
          { name: 'to', type: 'address' },
          { name: 'value', type: 'uint256' },
          { name: 'validAfter', type: 'uint256' },
          { name: 'validBefore', type: 'uint256' },
          { name: 'nonce', type: 'bytes32' },
        ],
      },
      primaryType: 'TransferWithAuthorization',
      message,
    });

    // The facilitator submits (and pays gas); the payer never sends a transaction.
    const facilitator = localClients(dc.chain, dc.accounts.facilitator.privateKey);
    const args = [
      message.from,
      message.to,
      message.value,
      message.validAfter,
      message.validBefore,
      message.nonce,
      signature,
    ] as const;
    const call = { address: dc.usdc.address, abi: usdcAbi, functionName: 'transferWithAuthorization', args } as const;
    const hash = await facilitator.walletClient.writeContract(call);
    const receipt = await dc.publicClient.waitForTransactionReceipt({ hash });
    expect(receipt.status).to.equal('success');
    expect(await usdcBalance(payTo)).to.equal(before + 1_000_000n);
    expect(await usdcBalance(payer.address)).to.equal(2_000_000n);
    const used = await dc.publicClient.readContract({
      address: dc.usdc.address,
      abi: usdcAbi,
      functionName: 'authorizationState',
      args: [payer.address, message.nonce],
    });
    expect(used).to.equal(true);

    // Same authorization again: rejected in simulation, and reverted if forced on chain.
    let simError: unknown;
    await dc.publicClient
      .simulateContract({ ...call, account: facilitator.walletClient.account })
      .catch((e) => (simError = e));
    expect(String(simError)).to.match(/authorization is used or canceled/);
    const replay = await facilitator.walletClient.writeContract({ ...call, gas: 200_000n });
    expect((await dc.publicClient.waitForTransactionReceipt({ hash: replay })).status).to.equal('reverted');
    expect(await usdcBalance(payer.address)).to.equal(2_000_000n);
  });

  it('has Multicall3 at its canonical address (aggregate3 and tryAggregate)', async () => {
    const code = await dc.publicClient.getCode({ address: MULTICALL3_ADDRESS });
    expect(code?.length).to.be.greaterThan(2);

    const treasury = dc.accounts.treasury.address;
    const [balance, decimals] = await dc.publicClient.multicall({
      allowFailure: false,
      contracts: [
        { address: dc.usdc.address, abi: erc20Abi, functionName: 'balanceOf', args: [treasury] },
        { address: dc.usdc.address, abi: erc20Abi, functionName: 'decimals' },
      ],
    });
    expect(balance).to.equal(await usdcBalance(treasury));
    expect(decimals).to.equal(6);

    // The x402 v2 facilitator's diagnostics call tryAggregate(false, …); a failing call must not revert the batch.
    const results = (await dc.publicClient.readContract({
      address: MULTICALL3_ADDRESS,
      abi: multicall3Abi,
      functionName: 'tryAggregate',
      args: [
        false,
        [
          { target: dc.usdc.address, callData: encodeFunctionData({ abi: erc20Abi, functionName: 'totalSupply' }) },
          { target: dc.usdc.address, callData: '0xdeadbeef' },
        ],
      ],
    })) as { success: boolean; returnData: Hex }[];
    expect(results.map((r) => r.success)).to.deep.equal([true, false]);
  });

  describe('ERC-8004 IdentityRegistry', () => {
    const registry = () => ({ address: dc.identityRegistry, abi: identityRegistryAbi });
    const read = (functionName: string, args: readonly unknown[]) =>
      dc.publicClient.readContract({ ...registry(), functionName, args });
    let agentId: bigint;

    before(async () => {
      const owner = localClients(dc.chain, dc.accounts.treasury.privateKey);
      const hash = await owner.walletClient.writeContract({
        ...registry(),
        functionName: 'register',
        args: ['https://example.test/agents/1.json'],
      });
      const receipt = await dc.publicClient.waitForTransactionReceipt({ hash });
      expect(receipt.status).to.equal('success');
      const registered = receipt.logs
        .map((log) => {
          try {
            return decodeEventLog({ abi: identityRegistryAbi, ...log });
          } catch {
            return undefined;
          }
        })
        .find((e) => e?.eventName === 'Registered');
      const args = registered?.args as unknown as { agentId: bigint; agentURI: string; owner: Address };
      expect(args.owner).to.equal(dc.accounts.treasury.address);
      expect(args.agentURI).to.equal('https://example.test/agents/1.json');
      agentId = args.agentId;
    });

    it('resolves ownerOf, tokenURI and getAgentWallet', async () => {
      expect(await read('ownerOf', [agentId])).to.equal(dc.accounts.treasury.address);
      expect(await read('tokenURI', [agentId])).to.equal('https://example.test/agents/1.json');
      expect(await read('getAgentWallet', [agentId])).to.equal(dc.accounts.treasury.address);
      expect(await read('getMetadata', [agentId, 'agentWallet'])).to.equal(dc.accounts.treasury.address.toLowerCase());
    });

    it('updates the URI and refuses the reserved agentWallet metadata key', async () => {
      const owner = localClients(dc.chain, dc.accounts.treasury.privateKey);
      const hash = await owner.walletClient.writeContract({
        ...registry(),
        functionName: 'setAgentURI',
        args: [agentId, 'ipfs://new'],
      });
      await dc.publicClient.waitForTransactionReceipt({ hash });
      expect(await read('tokenURI', [agentId])).to.equal('ipfs://new');
      let err: unknown;
      await dc.publicClient
        .simulateContract({
          ...registry(),
          functionName: 'setMetadata',
          args: [agentId, 'agentWallet', '0x01'],
          account: owner.walletClient.account,
        })
        .catch((e) => (err = e));
      expect(String(err)).to.match(/reserved key/);
    });

    it('sets a new wallet only with its EIP-712 consent, and clears it on transfer', async () => {
      const owner = localClients(dc.chain, dc.accounts.treasury.privateKey);
      const wallet = privateKeyToAccount(generatePrivateKey());
      const deadline = BigInt(Math.floor(Date.now() / 1000) + 120);
      const signature: Hex = await wallet.signTypedData({
        domain: {
          name: 'ERC8004IdentityRegistry',
          version: '1',
          chainId: dc.chainId,
          verifyingContract: dc.identityRegistry,
        },
        types: {
          AgentWalletSet: [
            { name: 'agentId', type: 'uint256' },
            { name: 'newWallet', type: 'address' },
            { name: 'owner', type: 'address' },
            { name: 'deadline', type: 'uint256' },
          ],
        },
        primaryType: 'AgentWalletSet',
        message: { agentId, newWallet: wallet.address, owner: dc.accounts.treasury.address, deadline },
      });
      const set = await owner.walletClient.writeContract({
        ...registry(),
        functionName: 'setAgentWallet',
        args: [agentId, wallet.address, deadline, signature],
      });
      expect((await dc.publicClient.waitForTransactionReceipt({ hash: set })).status).to.equal('success');
      expect(await read('getAgentWallet', [agentId])).to.equal(wallet.address);

      // A signature by anyone else is refused.
      let err: unknown;
      await dc.publicClient
        .simulateContract({
          ...registry(),
          functionName: 'setAgentWallet',
          args: [agentId, dc.accounts.facilitator.address, deadline, signature],
          account: owner.walletClient.account,
        })
        .catch((e) => (err = e));
      expect(String(err)).to.match(/invalid wallet sig/);

      const newOwner = dc.accounts.facilitator.address;
      const transfer = await owner.walletClient.writeContract({
        ...registry(),
        functionName: 'transferFrom',
        args: [dc.accounts.treasury.address, newOwner, agentId],
      });
      expect((await dc.publicClient.waitForTransactionReceipt({ hash: transfer })).status).to.equal('success');
      expect(await read('ownerOf', [agentId])).to.equal(newOwner);
      expect(await read('getAgentWallet', [agentId])).to.equal(zeroAddress);
      expect(await read('getMetadata', [agentId, 'agentWallet'])).to.equal('0x');
    });

    it('reverts reads for unknown agents with ERC721NonexistentToken', async () => {
      let err: unknown;
      await read('ownerOf', [10_000n]).catch((e) => (err = e));
      expect(String(err)).to.match(/ERC721NonexistentToken/);
    });

    it('serves callers that use the official ERC-8004 ABI', async () => {
      const official = JSON.parse(
        readFileSync(new URL('../../data/erc8004/IdentityRegistry.abi.json', import.meta.url), 'utf8'),
      ) as Abi;
      const readOfficial = (functionName: string, args: readonly unknown[]) =>
        dc.publicClient.readContract({ address: dc.identityRegistry, abi: official, functionName, args });
      expect(await readOfficial('ownerOf', [agentId])).to.equal(dc.accounts.facilitator.address);
      expect(await readOfficial('tokenURI', [agentId])).to.equal('ipfs://new');
      expect(await readOfficial('getAgentWallet', [agentId])).to.equal(zeroAddress);
      expect(await readOfficial('name', [])).to.equal('AgentIdentity');
    });
  });

  it('does not move the clock: block time tracks the wall clock', async () => {
    const block = await dc.publicClient.getBlock();
    expect(Math.abs(Number(block.timestamp) - Date.now() / 1000)).to.be.below(30);
  });
});
