import { expect } from 'chai';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { PaymentPayload, SettleResponse } from '@x402/core/types';
import { startTestService, eventually, type TestService } from '../support/service.js';
import { registerAgent, type Agent } from '../support/agents.js';
import { balanceOf, newBuyer, signAuthorization, x402Payer } from '../support/buyers.js';
import { buyOverMcp, buySkill, connectMcp, MCP_TOOL_NAMES, paymentRequiredOf } from '../support/mcp.js';
import { fileDigest, skillDigest } from '@skill-market/skill-protocol/skill-digest';
import { isVersionSignedBy } from '@skill-market/skill-protocol/version-signature';
import { signVersion } from '../support/skills.js';

const PRICE = 1_500_000n;
const WEATHER_FILES = [
  {
    path: 'SKILL.md',
    content:
      '---\nname: weather-report\ndescription: Writes a weather report for a city from the forecast.\n---\n# Weather report\nRead the forecast, then write three sentences.\n',
  },
  { path: 'scripts/fetch.sh', content: '#!/bin/sh\ncurl -s "https://forecast.example/$1"\n' },
];
const FREE_FILES = [
  {
    path: 'SKILL.md',
    content: '---\nname: unit-converter\ndescription: Converts units of measure.\n---\n# Unit converter\n',
  },
];

type Delivered = {
  id: string;
  files: { path: string; content: string }[];
  integrity: {
    name: string;
    version: number;
    skillDigest: string;
    files: { path: string; digest: string }[];
    signature: { signer: `0x${string}`; value: `0x${string}`; scheme: string } | null;
  };
  paymentId?: string;
};

describe('MCP server: search, preview and buy skills over x402, agent scores', function () {
  this.timeout(120_000);
  let svc: TestService;
  let seller: Agent;
  let buyer: Agent;
  let paidId: string;
  let freeId: string;
  let mcp: Client;
  const chain = () => svc.service.runtime.chain;
  const db = () => svc.service.runtime.database.db;

  const settledPaymentsFor = async (postId: string) =>
    (
      await db()
        .selectFrom('payments')
        .select(['id', 'status', 'payer'])
        .where('post_id', '=', postId)
        .where('status', '=', 'settled')
        .execute()
    ).length;

  async function publish(title: string, files: typeof WEATHER_FILES, priceAtomic: bigint): Promise<string> {
    const created = await seller.api('/api/posts', {
      method: 'POST',
      json: {
        title,
        preview: `${title}: a skill sold over MCP.`,
        priceAtomic: priceAtomic.toString(),
        tags: ['weather', 'reports'],
        body: { files },
      },
    });
    expect(created.status, await created.clone().text()).to.equal(201);
    const { id, integrity } = await created.json();
    // The seller signs what it sells: the version's name and skill digest, with its wallet.
    const versionSignature = await signVersion(seller.account, { postId: id, version: 1, name: integrity.name, files });
    const published = await seller.api(`/api/posts/${id}/publish`, { method: 'POST', json: { versionSignature } });
    expect(published.status, await published.clone().text()).to.equal(200);
    return id;
  }

  /** What the buyer received checks out: each file's digest and the skill digest, recomputed here. */
  function expectVerified(delivered: Delivered) {
    for (const file of delivered.files) {
      const stated = delivered.integrity.files.find((f) => f.path === file.path);
      expect(stated?.digest, file.path).to.equal(fileDigest(file.content));
    }
    expect(delivered.integrity.files).to.have.length(delivered.files.length);
    expect(delivered.integrity.skillDigest).to.equal(skillDigest(delivered.files));
  }

  before(async () => {
    svc = await startTestService();
    seller = await registerAgent(svc, 'mcp-weather-seller');
    buyer = await registerAgent(svc, 'mcp-weather-buyer');
    paidId = await publish('Weather report writer', WEATHER_FILES, PRICE);
    freeId = await publish('Unit converter', FREE_FILES, 0n);
    mcp = await connectMcp(svc.url);
  });
  after(async () => {
    await mcp?.close();
    await svc?.stop();
  });

  it('lists its tools, each with an input schema', async () => {
    const { tools } = await mcp.listTools();
    expect(tools.map((t) => t.name).sort()).to.deep.equal(MCP_TOOL_NAMES);
    const buy = tools.find((t) => t.name === 'buy_skill')!;
    expect(buy.inputSchema.required).to.deep.equal(['postId']);
  });

  it('search_skills finds a published skill with its price and seller', async () => {
    const found = await eventually(async () => {
      const result = (await mcp.callTool({
        name: 'search_skills',
        arguments: { query: 'weather report' },
      })) as CallToolResult;
      const skills = (result.structuredContent as { skills: { postId: string }[] }).skills;
      return skills.find((s) => s.postId === paidId);
    });
    expect(found).to.deep.include({ title: 'Weather report writer' });
    expect(found).to.have.nested.property('price.amount', PRICE.toString());
    expect(found).to.have.nested.property('author.handle', 'mcp-weather-seller');
  });

  it('get_skill_preview states the Agent Skill name, its files and its skill:// URI, not the content', async () => {
    const result = (await mcp.callTool({ name: 'get_skill_preview', arguments: { postId: paidId } })) as CallToolResult;
    expect(result.isError).to.not.equal(true);
    const preview = result.structuredContent as Record<string, unknown>;
    expect(preview).to.include({
      name: 'weather-report',
      description: 'Writes a weather report for a city from the forecast.',
      skillUri: `skill://${paidId}/weather-report/SKILL.md`,
      entitled: false,
    });
    expect(preview.files).to.deep.equal(['SKILL.md', 'scripts/fetch.sh']);
    expect(JSON.stringify(preview)).to.not.include('three sentences');
  });

  it('bad input is a tool error naming the field, and an unknown skill is post_not_found', async () => {
    const bad = (await mcp.callTool({ name: 'buy_skill', arguments: { postId: 'not-a-uuid' } })) as CallToolResult;
    expect(bad.isError).to.equal(true);
    expect(JSON.stringify(bad.content)).to.include('postId').and.include('must be a skill id');
    const short = (await mcp.callTool({ name: 'search_skills', arguments: { query: 'x' } })) as CallToolResult;
    expect(short.isError).to.equal(true);
    expect(JSON.stringify(short.content)).to.include('at least 2 characters');
    const unknown = (await mcp.callTool({
      name: 'get_skill_preview',
      arguments: { postId: '00000000-0000-4000-8000-000000000000' },
    })) as CallToolResult;
    expect(unknown.isError).to.equal(true);
    expect(unknown.structuredContent).to.have.nested.property('error.code', 'post_not_found');
  });

  describe('buy_skill: x402 over MCP', () => {
    let payment: PaymentPayload;
    let delivered: Delivered;

    it('without a payment answers the x402 PaymentRequired as the structured content of a tool error', async () => {
      const result = await buySkill(mcp, paidId);
      expect(result.isError).to.equal(true);
      const required = paymentRequiredOf(result)!;
      expect(required).to.deep.include({ x402Version: 2, error: 'payment_required' });
      expect(required.accepts).to.have.length(1);
      expect(required.accepts[0]).to.include({
        scheme: 'exact',
        network: chain().network,
        amount: PRICE.toString(),
        asset: chain().usdc.address,
        payTo: seller.address,
      });
      expect(required.resource.url).to.equal(`${svc.service.runtime.site.baseUrl}/api/posts/${paidId}?view=full`);
      expect(JSON.parse((result.content[0] as { text: string }).text)).to.deep.equal(result.structuredContent);
    });

    it("paid with an official x402 signer: the skill with verified digests and the seller's signature, the settlement in _meta, one charge on chain", async () => {
      const buyerBefore = await balanceOf(chain(), buyer.address);
      const sellerBefore = await balanceOf(chain(), seller.address);
      const bought = await buyOverMcp(mcp, x402Payer(chain(), buyer.account), paidId);
      payment = bought.payment;
      expect(bought.result.isError, JSON.stringify(bought.result.content)).to.not.equal(true);
      delivered = bought.result.structuredContent as unknown as Delivered;
      expect(delivered.files.map((f) => f.path).sort()).to.deep.equal(['SKILL.md', 'scripts/fetch.sh']);
      expect(delivered.files.find((f) => f.path === 'SKILL.md')?.content).to.equal(WEATHER_FILES[0]!.content);
      expect(delivered.integrity).to.include({ name: 'weather-report', version: 1 });
      expectVerified(delivered);
      // The seller's signature over what was delivered, checked offline against the seller's wallet.
      const signature = delivered.integrity.signature!;
      expect(signature).to.include({ signer: seller.address, scheme: 'eip712' });
      const statement = { postId: paidId, version: 1, name: 'weather-report', digest: skillDigest(delivered.files) };
      expect(await isVersionSignedBy(seller.address, statement, signature.value)).to.equal(true);
      const settlement = bought.result._meta?.['x402/payment-response'] as SettleResponse;
      expect(settlement).to.include({ success: true, network: chain().network });
      expect(settlement.payer?.toLowerCase()).to.equal(buyer.address.toLowerCase());
      const receipt = await chain().publicClient.getTransactionReceipt({
        hash: settlement.transaction as `0x${string}`,
      });
      expect(receipt.status).to.equal('success');
      expect(await balanceOf(chain(), buyer.address)).to.equal(buyerBefore - PRICE);
      expect(await balanceOf(chain(), seller.address)).to.equal(sellerBefore + PRICE);
      expect(await settledPaymentsFor(paidId)).to.equal(1);
    });

    it('a replayed payment is refused with payment_already_used and charges nothing', async () => {
      const before = await balanceOf(chain(), buyer.address);
      const result = await buySkill(mcp, paidId, payment);
      expect(result.isError).to.equal(true);
      expect(paymentRequiredOf(result)?.error).to.equal('payment_already_used');
      expect(JSON.stringify(result.content)).to.include('Buyers keep access');
      expect(result.structuredContent).to.not.have.property('files');
      expect(await balanceOf(chain(), buyer.address)).to.equal(before);
      expect(await settledPaymentsFor(paidId)).to.equal(1);
    });

    it('a bad payment is refused with a clear reason and charges nothing', async () => {
      const other = await newBuyer(chain());
      const required = paymentRequiredOf(await buySkill(mcp, paidId))!;
      const accepted = required.accepts[0]!;
      const cheap = await signAuthorization(other.account, chain(), { to: seller.address, value: PRICE - 1n });
      const underpaid = {
        x402Version: 2,
        accepted,
        payload: {
          signature: cheap.signature,
          authorization: {
            ...cheap.authorization,
            value: cheap.authorization.value.toString(),
            validAfter: cheap.authorization.validAfter.toString(),
            validBefore: cheap.authorization.validBefore.toString(),
          },
        },
      } as unknown as PaymentPayload;
      const refused = await buySkill(mcp, paidId, underpaid);
      expect(refused.isError).to.equal(true);
      expect(paymentRequiredOf(refused)?.error).to.equal('invalid_exact_evm_payload_authorization_value_mismatch');
      expect(JSON.stringify(refused.content)).to.include(`the price is exactly ${PRICE}`);

      const garbage = await buySkill(mcp, paidId, { hello: 'world' } as unknown as PaymentPayload);
      expect(paymentRequiredOf(garbage)?.error).to.equal('invalid_payment_header');
      expect(JSON.stringify(garbage.content)).to.include('_meta[\\"x402/payment\\"] is not an x402 v2 payment payload');

      expect(await balanceOf(chain(), other.address)).to.equal(10_000_000n);
      expect(await settledPaymentsFor(paidId)).to.equal(1);
    });

    it('a retry with the same payment identifier gets the skill again without a second charge', async () => {
      const wallet = await newBuyer(chain());
      const payer = x402Payer(chain(), wallet.account, `mcp-retry-${Date.now()}-0001`);
      const first = await buyOverMcp(mcp, payer, paidId);
      expect(first.result.isError, JSON.stringify(first.result.content)).to.not.equal(true);
      const afterFirst = await balanceOf(chain(), wallet.address);
      expect(afterFirst).to.equal(10_000_000n - PRICE);
      const again = await buySkill(mcp, paidId, first.payment);
      expect(again.isError, JSON.stringify(again.content)).to.not.equal(true);
      const redelivered = again.structuredContent as unknown as Delivered;
      expectVerified(redelivered);
      expect(redelivered.paymentId).to.equal((first.result.structuredContent as unknown as Delivered).paymentId);
      expect(again._meta?.['x402/payment-response']).to.have.property('success', true);
      expect(await balanceOf(chain(), wallet.address)).to.equal(afterFirst);
      expect(await settledPaymentsFor(paidId)).to.equal(2);
    });

    it('the buyer signed in with its agent token gets the skill again for free, and its files as skill:// resources', async () => {
      const signedIn = await connectMcp(svc.url, buyer.token);
      try {
        const before = await balanceOf(chain(), buyer.address);
        const again = await buySkill(signedIn, paidId);
        expect(again.isError).to.not.equal(true);
        expectVerified(again.structuredContent as unknown as Delivered);
        expect(await balanceOf(chain(), buyer.address)).to.equal(before);
        const read = await signedIn.readResource({ uri: `skill://${paidId}/weather-report/scripts/fetch.sh` });
        expect(read.contents[0]).to.deep.include({ text: WEATHER_FILES[1]!.content });
        expect(read.contents[0]?._meta).to.deep.equal({ digest: fileDigest(WEATHER_FILES[1]!.content) });
      } finally {
        await signedIn.close();
      }
    });
  });

  describe('skill:// resources', () => {
    it('lists published skills by their SKILL.md and an index', async () => {
      const { resources } = await mcp.listResources();
      const uris = resources.map((r) => r.uri);
      expect(uris).to.include.members([
        'skill://index.json',
        `skill://${paidId}/weather-report/SKILL.md`,
        `skill://${freeId}/unit-converter/SKILL.md`,
      ]);
      const weather = resources.find((r) => r.uri.startsWith(`skill://${paidId}`))!;
      expect(weather.description).to.equal('Writes a weather report for a city from the forecast.');
      const index = await mcp.readResource({ uri: 'skill://index.json' });
      const { skills } = JSON.parse((index.contents[0] as { text: string }).text);
      expect(skills.map((s: { url: string }) => s.url)).to.include(`skill://${freeId}/unit-converter/SKILL.md`);
    });

    it("a free skill's files are anyone's; a paid skill's are refused with how to buy it", async () => {
      const free = await mcp.readResource({ uri: `skill://${freeId}/unit-converter/SKILL.md` });
      expect(free.contents[0]).to.deep.include({ text: FREE_FILES[0]!.content, mimeType: 'text/markdown' });
      let refused: unknown;
      try {
        await mcp.readResource({ uri: `skill://${paidId}/weather-report/SKILL.md` });
      } catch (err) {
        refused = err;
      }
      expect(String(refused)).to.include('buy_skill');
      let missing: unknown;
      try {
        await mcp.readResource({ uri: `skill://${freeId}/unit-converter/references/none.md` });
      } catch (err) {
        missing = err;
      }
      expect(String(missing)).to.include('no file references/none.md');
    });
  });

  it("get_agent_score answers the seller's score and its best-practices checklist", async () => {
    const scored = await eventually(async () => {
      const result = (await mcp.callTool({
        name: 'get_agent_score',
        arguments: { handle: 'mcp-weather-seller' },
      })) as CallToolResult;
      return result.isError ? undefined : (result.structuredContent as Record<string, unknown>);
    }, 30_000);
    expect(scored.handle).to.equal('mcp-weather-seller');
    expect(scored.score).to.be.a('number').within(0, 100);
    expect(scored).to.have.nested.property('checklist.items').that.is.an('array').that.is.not.empty;
    const unknown = (await mcp.callTool({
      name: 'get_agent_score',
      arguments: { handle: 'nobody-here' },
    })) as CallToolResult;
    expect(unknown.structuredContent).to.have.nested.property('error.code', 'agent_not_found');
    // The handle rules of registration: a handle no agent can have is refused by name and rule.
    const malformed = (await mcp.callTool({
      name: 'get_agent_score',
      arguments: { handle: 'two--hyphens' },
    })) as CallToolResult;
    expect(malformed.isError).to.equal(true);
    expect(JSON.stringify(malformed.content)).to.include('consecutive hyphens');
  });

  it("the site AgentCard and each agent's ERC-8004 registration file name the MCP endpoint", async () => {
    const endpoint = `${svc.service.runtime.site.baseUrl}/mcp`;
    const card = await eventually(async () => {
      const res = await fetch(`${svc.url}/.well-known/agent-card.json`);
      return res.status === 200 ? res.json() : undefined;
    }, 30_000);
    const mcpEntry = card.capabilities.extensions.find((e: { params: { endpoint?: string } }) => e.params.endpoint);
    expect(mcpEntry.params).to.include({ endpoint, transport: 'streamable-http' });
    const identity = await eventually(async () => {
      const res = await fetch(`${svc.url}/api/agents/mcp-weather-seller/identity`);
      return res.status === 200 ? res.json() : undefined;
    }, 30_000);
    expect(identity.registrationFile.services).to.deep.include({
      name: 'MCP',
      endpoint,
      version: '2026-07-28',
    });
  });

  it('a request that is not MCP is a 4xx problem+json, never a 500', async () => {
    const post = (body: string, headers: Record<string, string> = {}) =>
      fetch(`${svc.url}/mcp`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
        body,
      });
    const problem = async (res: Response, status: number, code: string) => {
      expect(res.status).to.equal(status);
      expect(res.headers.get('content-type')).to.match(/^application\/problem\+json/);
      expect((await res.json()).code).to.equal(code);
    };
    await problem(await post('{"hello": 1}'), 400, 'invalid_jsonrpc');
    await problem(await post('[]'), 400, 'invalid_jsonrpc');
    await problem(await post('{not json'), 400, 'malformed_json');
    const list = '{"jsonrpc":"2.0","id":1,"method":"tools/list"}';
    await problem(await post(list, { accept: 'text/html' }), 406, 'not_acceptable');
    await problem(await post(list, { 'content-type': 'text/plain' }), 415, 'unsupported_media_type');
    // A client that takes JSON is answered in JSON, event stream in its Accept or not.
    for (const accept of ['application/json', '*/*']) {
      const res = await post(list, { accept });
      expect(res.status, accept).to.equal(200);
      expect((await res.json()).result.tools.length).to.be.greaterThan(3);
    }
    const badToken = await post('{"jsonrpc":"2.0","id":1,"method":"tools/list"}', { authorization: 'Bearer nope' });
    expect(badToken.status).to.equal(401);
    const unknownTool = await (
      await post('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"steal_skill","arguments":{}}}')
    ).json();
    expect(unknownTool.result).to.deep.include({ isError: true });
    expect(JSON.stringify(unknownTool.result.content)).to.include('Tool steal_skill not found');
  });

  it('GET and DELETE /mcp answer 405: the server keeps no sessions', async () => {
    for (const method of ['GET', 'DELETE']) {
      const res = await fetch(`${svc.url}/mcp`, { method });
      expect(res.status, method).to.equal(405);
      expect(res.headers.get('allow')).to.include('POST');
    }
  });
});
