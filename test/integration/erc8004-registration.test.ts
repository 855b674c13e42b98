import { expect } from 'chai';
import { startTestService, eventually, type TestService } from '../support/service.js';
import { registerAgent, type Agent } from '../support/agents.js';
import { testClient } from '../support/anvil.js';
import { mintIdentity } from '../../src/cli/erc8004-identity.js';

type Registration = { agentId: number | string; agentRegistry: string };

/**
 * ERC-8004 as explorers read it: the registration file an agent's identity document suggests
 * (services[], no agentWallet, x402Support, active), what the document says of the file an agent
 * actually links (our codes beside 8004scan's), and the marketplace domain's proof
 * (`/.well-known/agent-registration.json`) listing only agents whose wallet holds their token.
 */
describe('ERC-8004 registration files and the endpoint-domain proof', function () {
  this.timeout(90_000);
  let svc: TestService;
  let current: Agent;
  let legacy: Agent;
  let thief: Agent;
  const chain = () => svc.service.runtime.chain;
  const agentRegistry = () => `eip155:${chain().chainId}:${chain().identityRegistry}`;
  const published = (path: string, ready: (body: any) => boolean) =>
    eventually(
      async () => {
        const res = await fetch(`${svc.url}${path}`);
        if (res.status !== 200 || !res.headers.get('last-modified')) return undefined;
        const body = await res.json();
        return ready(body) ? body : undefined;
      },
      20_000,
      100,
    );
  const proof = async () => {
    const res = await fetch(`${svc.url}/.well-known/agent-registration.json`);
    expect(res.status).to.equal(200);
    return { res, body: (await res.json()) as { registrations: Registration[] } };
  };
  /** Mints a token owned by `agent` whose file is `file(agentId, agentRegistry)`, then links it. */
  const mintAndLink = async (agent: Agent, file: (id: bigint, registry: string) => unknown) => {
    await testClient(chain()).setBalance({ address: agent.address, value: 10n ** 18n });
    const minted = await mintIdentity(
      agent.account,
      { rpcUrl: chain().rpcUrl, identityRegistry: chain().identityRegistry, chainId: chain().chainId },
      file,
    );
    const linked = await agent.api('/api/agents/me', {
      method: 'PATCH',
      json: { erc8004AgentId: minted.agentId.toString() },
    });
    expect(linked.status, await linked.clone().text()).to.equal(200);
    return minted.agentId;
  };

  before(async () => {
    svc = await startTestService();
    [current, legacy, thief] = await Promise.all([
      registerAgent(svc, 'erc-current'),
      registerAgent(svc, 'erc-legacy'),
      registerAgent(svc, 'erc-thief'),
    ]);
  });
  after(async () => svc?.stop());

  it('an agent that publishes the suggested file is clean: services[], x402Support, active, no agentWallet in the file', async () => {
    const unlinked = await published('/api/agents/erc-current/identity', () => true);
    const suggested = unlinked.registrationFile;
    expect(suggested).to.include({
      type: 'https://eips.ethereum.org/EIPS/eip-8004#registration-v1',
      x402Support: true,
      active: true,
    });
    expect(suggested).to.not.have.property('endpoints');
    expect(suggested.services.map((s: { name: string }) => s.name)).to.deep.equal(['web', 'A2A', 'MCP']);
    const agentId = await mintAndLink(current, (id, registry) => ({
      ...suggested,
      registrations: [{ agentId: Number(id), agentRegistry: registry }],
    }));
    const identity = await published('/api/agents/erc-current/identity', (i) => i.erc8004?.tokenId === `${agentId}`);
    expect(identity.erc8004).to.include({ ownerMatchesWallet: true });
    expect(identity.erc8004.agentWallet, 'the wallet is on chain').to.equal(current.address);
    expect(identity.erc8004.registrationErrors).to.deep.equal([]);
    expect(identity.erc8004.registrationFindings).to.deep.equal([]);
    expect(identity.registrationFile.registrations).to.deep.equal([
      { agentId: Number(agentId), agentRegistry: agentRegistry() },
    ]);
  });

  it('a file with the older endpoints[] and an agentWallet entry is reported as 8004scan would: WA031 and WA083', async () => {
    const agentId = await mintAndLink(legacy, (id, registry) => ({
      type: 'https://eips.ethereum.org/EIPS/eip-8004#registration-v1',
      name: 'erc-legacy',
      description: 'Older registration file',
      endpoints: [{ name: 'agentWallet', endpoint: `eip155:${chain().chainId}:${legacy.address}` }],
      active: true,
      registrations: [{ agentId: Number(id), agentRegistry: registry }],
    }));
    const identity = await published('/api/agents/erc-legacy/identity', (i) => i.erc8004?.tokenId === `${agentId}`);
    expect(
      identity.erc8004.registrationFindings.map((f: { code: string; scanCode: string }) => [f.code, f.scanCode]),
    ).to.deep.equal([
      ['endpoints_deprecated', 'WA031'],
      ['agent_wallet_off_chain', 'WA083'],
    ]);
    expect(identity.erc8004.registrationErrors).to.deep.equal([
      'uses the deprecated "endpoints"; rename it to "services"',
    ]);
  });

  it("the marketplace domain's /.well-known/agent-registration.json lists the linked agents' registrations, cacheably", async () => {
    const tokenOf = async (handle: string) =>
      (await published(`/api/agents/${handle}/identity`, (i) => Boolean(i.erc8004))).erc8004.tokenId as string;
    const expected = [await tokenOf('erc-current'), await tokenOf('erc-legacy')].map((id) => ({
      agentId: Number(id),
      agentRegistry: agentRegistry(),
    }));
    const body = await eventually(
      async () => {
        const { body } = await proof();
        return expected.every((e) => body.registrations.some((r) => r.agentId === e.agentId)) ? body : undefined;
      },
      80_000,
      500,
    );
    for (const e of expected) expect(body.registrations).to.deep.include(e);
    const { res } = await proof();
    expect(res.headers.get('cache-control')).to.match(/^public, max-age=\d+/);
    expect(res.headers.get('access-control-allow-origin')).to.equal('*');
    const again = await fetch(`${svc.url}/.well-known/agent-registration.json`, {
      headers: { 'if-none-match': res.headers.get('etag')! },
    });
    expect(again.status).to.equal(304);
  });

  it("an agent cannot get someone else's token vouched for: linking it is refused and it is never listed", async () => {
    const victimToken = (await published('/api/agents/erc-current/identity', (i) => Boolean(i.erc8004))).erc8004
      .tokenId;
    const stolen = await thief.api('/api/agents/me', { method: 'PATCH', json: { erc8004AgentId: victimToken } });
    expect(stolen.status).to.equal(422);
    const { body } = await proof();
    const listed = body.registrations.filter((r) => String(r.agentId) === victimToken);
    expect(listed, 'listed once, for its owner').to.have.length(1);
  });
});
