import { expect } from 'chai';
import { keccak256, parseEventLogs, toBytes, zeroAddress, type Address, type Hash, type Hex } from 'viem';
import { generatePrivateKey } from 'viem/accounts';
import { IDENTITY_REGISTRY_ABI } from '@skill-market/skill-protocol/identity-registry-abi';
import { REPUTATION_REGISTRY_ABI } from '@skill-market/skill-protocol/reputation-registry-abi';
import { localClients, type ChainContext } from '../../src/platform/chain/clients.js';
import { startDevChain, type DevChain } from '../../src/platform/chain/devchain.js';

/** Both registries' ABIs, so a revert raised by the identity registry inside a feedback call decodes too. */
const BOTH_ABIS = [...REPUTATION_REGISTRY_ABI, ...IDENTITY_REGISTRY_ABI];

describe('ERC-8004 ReputationRegistry on the dev chain', () => {
  let dc: DevChain;
  /** Registers the agent; may not rate it. */
  let owner: ChainContext;
  /** Holds setApprovalForAll over the owner's agents; may not rate them either. */
  let operator: ChainContext;
  let alice: ChainContext;
  let bob: ChainContext;
  /** Appends responses to feedback, as an aggregator would. */
  let carol: ChainContext;
  let agentId: bigint;

  const addressOf = (c: ChainContext): Address => c.walletClient.account.address;
  const reputation = () => ({ address: dc.reputationRegistry, abi: REPUTATION_REGISTRY_ABI }) as const;

  /** A funded wallet with a fresh key (the faucet also tops up its gas). */
  async function wallet(): Promise<ChainContext> {
    const ctx = localClients(dc.chain, generatePrivateKey());
    await dc.faucet(ctx.walletClient.account.address, 1n);
    return ctx;
  }

  async function mined(hash: Hash) {
    const receipt = await dc.publicClient.waitForTransactionReceipt({ hash });
    expect(receipt.status).to.equal('success');
    return receipt;
  }

  /** The error a call would revert with, as viem renders it (the call is simulated, not sent). */
  async function revertOf(from: ChainContext, functionName: string, args: readonly unknown[]): Promise<string> {
    try {
      await dc.publicClient.simulateContract({
        address: dc.reputationRegistry,
        abi: BOTH_ABIS,
        functionName,
        args,
        account: from.walletClient.account,
      } as never);
    } catch (err) {
      return String(err);
    }
    throw new Error(`${functionName} did not revert`);
  }

  function giveFeedback(
    from: ChainContext,
    value: bigint,
    valueDecimals: number,
    tag1: string,
    tag2: string,
    extra: { endpoint?: string; feedbackURI?: string; feedbackHash?: Hex } = {},
  ): Promise<Hash> {
    return from.walletClient.writeContract({
      ...reputation(),
      functionName: 'giveFeedback',
      args: [
        agentId,
        value,
        valueDecimals,
        tag1,
        tag2,
        extra.endpoint ?? '',
        extra.feedbackURI ?? '',
        extra.feedbackHash ?? `0x${'0'.repeat(64)}`,
      ],
    });
  }

  before(async () => {
    dc = await startDevChain();
    [owner, operator, alice, bob, carol] = await Promise.all([wallet(), wallet(), wallet(), wallet(), wallet()]);

    const registered = await mined(
      await owner.walletClient.writeContract({
        address: dc.identityRegistry,
        abi: IDENTITY_REGISTRY_ABI,
        functionName: 'register',
        args: ['https://example.test/agents/rated.json'],
      }),
    );
    const [event] = parseEventLogs({ abi: IDENTITY_REGISTRY_ABI, logs: registered.logs, eventName: 'Registered' });
    agentId = event!.args.agentId;

    await mined(
      await owner.walletClient.writeContract({
        address: dc.identityRegistry,
        abi: IDENTITY_REGISTRY_ABI,
        functionName: 'setApprovalForAll',
        args: [addressOf(operator), true],
      }),
    );
  });

  after(async () => {
    await dc?.stop();
  });

  it('is deployed bound to the identity registry, owned by the deployer', async () => {
    const read = dc.publicClient.readContract;
    expect(await read({ ...reputation(), functionName: 'getIdentityRegistry' })).to.equal(dc.identityRegistry);
    expect(await read({ ...reputation(), functionName: 'owner' })).to.equal(dc.accounts.deployer.address);
    expect(await read({ ...reputation(), functionName: 'getVersion' }))
      .to.be.a('string')
      .and.not.equal('');
  });

  it('records feedback from a client, numbered from 1, and emits NewFeedback with every field', async () => {
    const feedbackHash = keccak256(toBytes('{"value":87}'));
    const receipt = await mined(
      await giveFeedback(alice, 87n, 0, 'starred', 'quality', {
        endpoint: 'https://agent.example.test/mcp',
        feedbackURI: 'https://example.test/feedback/1.json',
        feedbackHash,
      }),
    );

    const events = parseEventLogs({ abi: REPUTATION_REGISTRY_ABI, logs: receipt.logs, eventName: 'NewFeedback' });
    expect(events).to.have.length(1);
    expect(events[0]!.address).to.equal(dc.reputationRegistry.toLowerCase());
    expect(events[0]!.args).to.deep.equal({
      agentId,
      clientAddress: addressOf(alice),
      feedbackIndex: 1n,
      value: 87n,
      valueDecimals: 0,
      // An indexed string is a topic: only its hash is in the log.
      indexedTag1: keccak256(toBytes('starred')),
      tag1: 'starred',
      tag2: 'quality',
      endpoint: 'https://agent.example.test/mcp',
      feedbackURI: 'https://example.test/feedback/1.json',
      feedbackHash,
    });

    const read = dc.publicClient.readContract;
    expect(
      await read({ ...reputation(), functionName: 'readFeedback', args: [agentId, addressOf(alice), 1n] }),
    ).to.deep.equal([87n, 0, 'starred', 'quality', false]);
    expect(await read({ ...reputation(), functionName: 'getLastIndex', args: [agentId, addressOf(alice)] })).to.equal(
      1n,
    );
    expect(await read({ ...reputation(), functionName: 'getClients', args: [agentId] })).to.deep.equal([
      addressOf(alice),
    ]);
  });

  it('lists, filters and summarizes feedback from several clients', async () => {
    await mined(await giveFeedback(alice, 9977n, 2, 'uptime', ''));
    await mined(await giveFeedback(bob, 93n, 0, 'starred', 'speed'));
    const read = dc.publicClient.readContract;

    expect(await read({ ...reputation(), functionName: 'getLastIndex', args: [agentId, addressOf(alice)] })).to.equal(
      2n,
    );
    expect(await read({ ...reputation(), functionName: 'getLastIndex', args: [agentId, addressOf(bob)] })).to.equal(1n);
    expect(await read({ ...reputation(), functionName: 'getClients', args: [agentId] })).to.deep.equal([
      addressOf(alice),
      addressOf(bob),
    ]);

    // No client list: every client, in the order they first gave feedback, then by index.
    expect(
      await read({ ...reputation(), functionName: 'readAllFeedback', args: [agentId, [], '', '', false] }),
    ).to.deep.equal([
      [addressOf(alice), addressOf(alice), addressOf(bob)],
      [1n, 2n, 1n],
      [87n, 9977n, 93n],
      [0, 2, 0],
      ['starred', 'uptime', 'starred'],
      ['quality', '', 'speed'],
      [false, false, false],
    ]);
    const [clients, indexes] = await read({
      ...reputation(),
      functionName: 'readAllFeedback',
      args: [agentId, [addressOf(bob)], 'starred', '', false],
    });
    expect(clients).to.deep.equal([addressOf(bob)]);
    expect(indexes).to.deep.equal([1n]);

    // (87 + 93) / 2 on the `starred` tag.
    expect(
      await read({
        ...reputation(),
        functionName: 'getSummary',
        args: [agentId, [addressOf(alice), addressOf(bob)], 'starred', ''],
      }),
    ).to.deep.equal([2n, 90n, 0]);
    expect(
      await read({
        ...reputation(),
        functionName: 'getSummary',
        args: [agentId, [addressOf(alice), addressOf(bob)], 'starred', 'speed'],
      }),
    ).to.deep.equal([1n, 93n, 0]);
    // Mixed decimals: averaged at 18 decimals ((87 + 99.77) / 2 = 93.385), returned at the most
    // used decimals, the fewest on a tie.
    expect(
      await read({ ...reputation(), functionName: 'getSummary', args: [agentId, [addressOf(alice)], '', ''] }),
    ).to.deep.equal([2n, 93n, 0]);
    // A summary over anyone's feedback is refused (Sybil clients).
    expect(await revertOf(alice, 'getSummary', [agentId, [], '', ''])).to.match(/clientAddresses required/);
  });

  it("refuses feedback from the agent's owner and operators, for unknown agents, and with over 18 decimals", async () => {
    const args = (id: bigint, valueDecimals: number) => [
      id,
      100n,
      valueDecimals,
      'starred',
      '',
      '',
      '',
      `0x${'0'.repeat(64)}`,
    ];
    expect(await revertOf(owner, 'giveFeedback', args(agentId, 0))).to.match(/Self-feedback not allowed/);
    expect(await revertOf(operator, 'giveFeedback', args(agentId, 0))).to.match(/Self-feedback not allowed/);
    expect(await revertOf(alice, 'giveFeedback', args(10_000n, 0))).to.match(/ERC721NonexistentToken/);
    expect(await revertOf(alice, 'giveFeedback', args(agentId, 19))).to.match(/too many decimals/);
    // 18 decimals is the maximum, and allowed.
    await mined(await giveFeedback(carol, 5n * 10n ** 17n, 18, 'ratio', ''));
  });

  it('lets a client revoke its own feedback; reads without revoked feedback drop it', async () => {
    expect(await revertOf(bob, 'revokeFeedback', [agentId, 2n])).to.match(/index out of bounds/);
    const receipt = await mined(
      await alice.walletClient.writeContract({ ...reputation(), functionName: 'revokeFeedback', args: [agentId, 1n] }),
    );
    const [revoked] = parseEventLogs({
      abi: REPUTATION_REGISTRY_ABI,
      logs: receipt.logs,
      eventName: 'FeedbackRevoked',
    });
    expect(revoked!.args).to.deep.equal({ agentId, clientAddress: addressOf(alice), feedbackIndex: 1n });
    expect(await revertOf(alice, 'revokeFeedback', [agentId, 1n])).to.match(/Already revoked/);

    const read = dc.publicClient.readContract;
    expect(
      await read({ ...reputation(), functionName: 'readFeedback', args: [agentId, addressOf(alice), 1n] }),
    ).to.deep.equal([87n, 0, 'starred', 'quality', true]);

    const [clients, indexes] = await read({
      ...reputation(),
      functionName: 'readAllFeedback',
      args: [agentId, [addressOf(alice)], '', '', false],
    });
    expect(clients).to.deep.equal([addressOf(alice)]);
    expect(indexes).to.deep.equal([2n]);
    const all = await read({
      ...reputation(),
      functionName: 'readAllFeedback',
      args: [agentId, [addressOf(alice)], '', '', true],
    });
    expect(all[1]).to.deep.equal([1n, 2n]);
    expect(all[6]).to.deep.equal([true, false]);

    // Only bob's 93 is left on the `starred` tag.
    expect(
      await read({
        ...reputation(),
        functionName: 'getSummary',
        args: [agentId, [addressOf(alice), addressOf(bob)], 'starred', ''],
      }),
    ).to.deep.equal([1n, 93n, 0]);
  });

  it('counts appended responses per feedback and per responder', async () => {
    const respond = (from: ChainContext, client: Address, index: bigint, uri: string) =>
      from.walletClient.writeContract({
        ...reputation(),
        functionName: 'appendResponse',
        args: [agentId, client, index, uri, keccak256(toBytes(uri))],
      });
    const receipt = await mined(
      await respond(owner, addressOf(alice), 2n, 'https://example.test/responses/refund.json'),
    );
    const [appended] = parseEventLogs({
      abi: REPUTATION_REGISTRY_ABI,
      logs: receipt.logs,
      eventName: 'ResponseAppended',
    });
    expect(appended!.args).to.deep.equal({
      agentId,
      clientAddress: addressOf(alice),
      feedbackIndex: 2n,
      responder: addressOf(owner),
      responseURI: 'https://example.test/responses/refund.json',
      responseHash: keccak256(toBytes('https://example.test/responses/refund.json')),
    });
    await mined(await respond(owner, addressOf(alice), 2n, 'https://example.test/responses/again.json'));
    await mined(await respond(carol, addressOf(alice), 2n, 'https://example.test/responses/spam.json'));
    await mined(await respond(carol, addressOf(bob), 1n, 'https://example.test/responses/ok.json'));

    const count = (client: Address, index: bigint, responders: Address[]) =>
      dc.publicClient.readContract({
        ...reputation(),
        functionName: 'getResponseCount',
        args: [agentId, client, index, responders],
      });
    expect(await count(addressOf(alice), 2n, [])).to.equal(3n);
    expect(await count(addressOf(alice), 2n, [addressOf(owner)])).to.equal(2n);
    expect(await count(addressOf(alice), 2n, [addressOf(carol)])).to.equal(1n);
    expect(await count(addressOf(alice), 1n, [])).to.equal(0n);
    expect(await count(addressOf(alice), 0n, [])).to.equal(3n); // every feedback of alice
    expect(await count(zeroAddress, 0n, [])).to.equal(4n); // every client's
    expect(await count(zeroAddress, 0n, [addressOf(carol)])).to.equal(2n);

    expect(await revertOf(carol, 'appendResponse', [agentId, addressOf(bob), 2n, 'x', `0x${'0'.repeat(64)}`])).to.match(
      /index out of bounds/,
    );
    expect(await revertOf(carol, 'appendResponse', [agentId, addressOf(bob), 1n, '', `0x${'0'.repeat(64)}`])).to.match(
      /Empty URI/,
    );
  });
});
