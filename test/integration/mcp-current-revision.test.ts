import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { z } from 'zod';
import type { Client as ModernClient } from '@modelcontextprotocol/client';
import type { PaymentPayload } from '@x402/core/types';
import { eventually, startTestService, type TestService } from '../support/service.js';
import { registerAgent, type Agent } from '../support/agents.js';
import { balanceOf, newBuyer, x402Payer } from '../support/buyers.js';
import { publishSignedSkill, signVersion, skillBody } from '../support/skills.js';
import { FacilitatorDouble } from '../support/facilitator-double.js';
import {
  buyOverMcp,
  buySkill,
  connectCurrentMcp,
  connectMcp,
  paymentRequiredOf,
  TASKS_EXTENSION,
  type WireLog,
  MCP_TOOL_NAMES,
} from '../support/mcp.js';
import { builtinFacilitator } from '../../src/domain/payments/facilitators/builtin-facilitator.js';
import { localChain } from '../../src/platform/chain/clients.js';
import { startDevChain, type DevChain } from '../../src/platform/chain/devchain.js';

const PRICE = 1_200_000n;
const TOOLS = MCP_TOOL_NAMES;

/** A task as tasks/get answers it (SEP-2663), read loosely: the test asserts what it needs. */
const TaskAnswer = z.looseObject({
  taskId: z.string(),
  status: z.string(),
  pollIntervalMs: z.number().optional(),
  result: z.looseObject({}).optional(),
});

type Answer = { result?: Record<string, unknown>; error?: { code: number; message: string; data?: unknown } };

/**
 * MCP 2026-07-28 (the current revision), driven by the official 2.x client: discovery, the cache
 * hints of lists, output schemas checked with a JSON Schema 2020-12 validator, x402 over MCP, and a
 * purchase whose settlement is pending served as a task of the tasks extension. The facilitator is
 * a double speaking the real facilitator API in front of a real facilitator on the test chain, so
 * a settlement can be made to come back without its outcome.
 */
describe('MCP at the current revision (2026-07-28) with the official 2.x client', function () {
  this.timeout(180_000);
  let devChain: DevChain;
  let facilitator: FacilitatorDouble;
  let svc: TestService;
  let seller: Agent;
  let paidId: string;
  /** The task of the purchase the tasks test completes, and its payment. */
  let completed: { taskId: string; paymentId: string } | undefined;
  let freeId: string;
  let mcp: ModernClient;
  let wire: WireLog;
  const schemas = new Map<string, Record<string, unknown>>();
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats.default(ajv);
  const chain = () => svc.service.runtime.chain;

  /** The tool's structured content checked against its advertised outputSchema (JSON Schema 2020-12). */
  function expectConforms(tool: string, structured: unknown) {
    const schema = schemas.get(tool);
    expect(schema, `${tool} has an outputSchema`).to.be.an('object');
    const validate = ajv.compile(schema!);
    expect(validate(structured), `${tool}: ${ajv.errorsText(validate.errors)}`).to.equal(true);
  }

  /** A JSON-RPC request as a 2026-07-28 client sends it by hand: the `_meta` envelope and the routing headers. */
  async function rawCall(
    method: string,
    params: Record<string, unknown>,
    version = '2026-07-28',
    origin?: string,
    headerMethod = method,
  ) {
    const res = await fetch(`${svc.url}/mcp`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': version,
        'mcp-method': headerMethod,
        ...(typeof params.name === 'string' ? { 'mcp-name': params.name } : {}),
        ...(origin ? { origin } : {}),
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method,
        params: {
          ...params,
          _meta: {
            'io.modelcontextprotocol/protocolVersion': version,
            'io.modelcontextprotocol/clientInfo': { name: 'by-hand', version: '1.0.0' },
            'io.modelcontextprotocol/clientCapabilities': {},
          },
        },
      }),
    });
    return res;
  }

  before(async () => {
    devChain = await startDevChain();
    facilitator = await new FacilitatorDouble(
      builtinFacilitator({
        rpcUrl: devChain.rpcUrl,
        chain: localChain(devChain.chainId, devChain.rpcUrl),
        privateKey: devChain.accounts.facilitator.privateKey,
      }),
    ).start();
    svc = await startTestService({
      RPC_URL: devChain.rpcUrl,
      CHAIN_ID: String(devChain.chainId),
      USDC_ADDRESS: devChain.usdc.address,
      IDENTITY_REGISTRY_ADDRESS: devChain.identityRegistry,
      TREASURY_ADDRESS: devChain.accounts.treasury.address,
      FACILITATOR_BUILTIN: 'false',
      FACILITATOR_URLS: facilitator.url,
      FACILITATOR_TIMEOUT_MS: '3000',
    });
    (svc.service.runtime.chain as { faucet?: unknown }).faucet = devChain.faucet;
    seller = await registerAgent(svc, 'mcp-current-seller');
    paidId = await publishSignedSkill(seller, {
      title: 'Tide table reader',
      preview: 'Reads tide tables for a harbour.',
      priceAtomic: PRICE.toString(),
      tags: ['tides'],
      skill: 'tide-table-reader',
    });
    freeId = await publishSignedSkill(seller, {
      title: 'Knot tier',
      preview: 'Explains how to tie sailing knots.',
      priceAtomic: '0',
      tags: ['sailing'],
      skill: 'knot-tier',
    });
    ({ client: mcp, wire } = await connectCurrentMcp(svc.url));
    for (const tool of (await mcp.listTools()).tools) if (tool.outputSchema) schemas.set(tool.name, tool.outputSchema);
  });
  after(async () => {
    await mcp?.close();
    await svc?.stop();
    await facilitator?.stop();
    await devChain?.stop();
  });
  beforeEach(() => {
    facilitator.mode = { kind: 'ok' };
  });

  it('negotiates 2026-07-28 through server/discover (no initialize), which names the tasks extension and its cache hint', async () => {
    expect(mcp.getNegotiatedProtocolVersion()).to.equal('2026-07-28');
    expect(mcp.getProtocolEra()).to.equal('modern');
    const discovered = mcp.getDiscoverResult()!;
    expect(discovered.supportedVersions).to.include('2026-07-28');
    expect(discovered.capabilities.extensions).to.have.property(TASKS_EXTENSION);
    expect(wire.answers.map((a) => a.method)).to.not.include('initialize');
    const answer = wire.last('server/discover') as Answer;
    expect(answer.result).to.include({ ttlMs: 600_000, cacheScope: 'public' });
    // The site card states the revision the server negotiates.
    const card = await eventually(async () => {
      const res = await fetch(`${svc.url}/.well-known/agent-card.json`);
      return res.status === 200 ? res.json() : undefined;
    }, 30_000);
    const entry = card.capabilities.extensions.find((e: { params: { endpoint?: string } }) => e.params.endpoint);
    expect(entry.params.protocolVersion).to.equal('2026-07-28');
    // One version everywhere: the MCP Registry's server.json, the server's serverInfo and the site card.
    const registered = JSON.parse(readFileSync(new URL('../../server.json', import.meta.url), 'utf8')).version;
    expect(mcp.getServerVersion()?.version).to.equal(registered);
    expect(card.version).to.equal(registered);
  });

  it('lists every tool with an outputSchema, and the lists with their cache hints (public; the server keeps no session)', async () => {
    const listed = wire.last('tools/list') as Answer;
    expect(listed.result).to.include({ ttlMs: 600_000, cacheScope: 'public' });
    const tools = (listed.result!.tools as Array<{ name: string; outputSchema?: { type?: string } }>) ?? [];
    expect(tools.map((t) => t.name).sort()).to.deep.equal(TOOLS);
    for (const tool of tools) {
      expect(tool.outputSchema, tool.name).to.be.an('object');
      expect(tool.outputSchema!.type, tool.name).to.equal('object');
      // Each compiles as JSON Schema 2020-12.
      ajv.compile(tool.outputSchema as Record<string, unknown>);
    }
    const resources = await mcp.listResources();
    expect(resources.resources.map((r) => r.uri)).to.include(`skill://${freeId}/knot-tier/SKILL.md`);
    expect(wire.last('resources/list') as Answer).to.have.nested.property('result.ttlMs', 30_000);
    expect(wire.last('resources/list') as Answer).to.have.nested.property('result.cacheScope', 'public');
    // A paid skill's file depends on the caller's token: its read is never shared.
    const file = await mcp.readResource({ uri: `skill://${freeId}/knot-tier/SKILL.md` });
    expect((file.contents[0] as { text: string }).text).to.include('name: knot-tier');
    expect(wire.last('resources/read') as Answer).to.have.nested.property('result.cacheScope', 'private');
  });

  it('search_skills and get_skill_preview answer structured content that validates against their outputSchema', async () => {
    const found = await eventually(async () => {
      const r = await mcp.callTool({ name: 'search_skills', arguments: { query: 'tide tables', limit: 5 } });
      const skills = (r.structuredContent as { skills?: Array<{ postId: string }> } | undefined)?.skills;
      return skills?.some((s) => s.postId === paidId) ? r : undefined;
    }, 30_000);
    expectConforms('search_skills', found.structuredContent);
    const preview = await mcp.callTool({ name: 'get_skill_preview', arguments: { postId: paidId } });
    expect(preview.isError).to.not.equal(true);
    expect(preview.structuredContent).to.include({ name: 'tide-table-reader', entitled: false });
    expectConforms('get_skill_preview', preview.structuredContent);
    // A tool error conforms too: its structured content is {error: {code, message}}.
    const unknown = await mcp.callTool({
      name: 'get_skill_preview',
      arguments: { postId: '00000000-0000-4000-8000-000000000000' },
    });
    expect(unknown.isError).to.equal(true);
    expect(unknown.structuredContent).to.have.nested.property('error.code', 'post_not_found');
    expectConforms('get_skill_preview', unknown.structuredContent);
  });

  it('buy_skill pays with x402 over MCP: the PaymentRequired as a tool error, then the skill with the settlement in _meta', async () => {
    const wallet = await newBuyer(chain());
    const asked = await buySkill(mcp, paidId);
    const required = paymentRequiredOf(asked)!;
    expect(required).to.deep.include({ x402Version: 2, error: 'payment_required' });
    expectConforms('buy_skill', asked.structuredContent);
    const bought = await buyOverMcp(mcp, x402Payer(chain(), wallet.account), paidId);
    expect(bought.result.isError, JSON.stringify(bought.result.content)).to.not.equal(true);
    expectConforms('buy_skill', bought.result.structuredContent);
    const delivered = bought.result.structuredContent as { files: Array<{ path: string }>; paymentId: string };
    expect(delivered.files.map((f) => f.path)).to.include('SKILL.md');
    expect(bought.result._meta?.['x402/payment-response']).to.include({ success: true });
    expect(await balanceOf(chain(), wallet.address)).to.equal(10_000_000n - PRICE);
  });

  it('a purchase whose settlement comes back without an outcome is a task the client polls with tasks/get until the skill is delivered, charged once', async () => {
    const wallet = await newBuyer(chain());
    const payer = x402Payer(chain(), wallet.account);
    const required = paymentRequiredOf(await buySkill(mcp, paidId))!;
    const payment: PaymentPayload = await payer.createPaymentPayload(required);
    // The facilitator sends the transaction but answers before its receipt: the outcome is unknown.
    facilitator.mode = { kind: 'settle-pending' };
    let refused: unknown;
    try {
      await buySkill(mcp, paidId, payment);
    } catch (err) {
      refused = err;
    }
    // The 2.x client does not implement the extension's result kind; the answer is on the wire.
    expect(String(refused)).to.include("Unsupported result type 'task'");
    const created = (wire.last('tools/call') as Answer).result!;
    expect(created).to.include({ resultType: 'task', status: 'working' });
    expect(created.taskId).to.be.a('string');
    expect(created.pollIntervalMs).to.be.a('number');
    const taskId = created.taskId as string;
    facilitator.mode = { kind: 'ok' };

    // A task id is a capability: one we did not issue names no task.
    const forged = `${taskId.split('.')[0]}.${'A'.repeat(32)}`;
    let unknownTask: unknown;
    try {
      await mcp.request({ method: 'tasks/get', params: { taskId: forged } }, TaskAnswer);
    } catch (err) {
      unknownTask = err;
    }
    expect(String(unknownTask)).to.include('Unknown task');

    const statuses: string[] = [];
    const done = await eventually(
      async () => {
        const task = await mcp.request({ method: 'tasks/get', params: { taskId } }, TaskAnswer);
        statuses.push(task.status);
        return task.status === 'working' ? undefined : task;
      },
      60_000,
      (created.pollIntervalMs as number) ?? 1_000,
    );
    expect(done.status).to.equal('completed');
    const result = done.result as { isError?: boolean; structuredContent: unknown; _meta?: Record<string, unknown> };
    expect(result.isError, JSON.stringify(result)).to.not.equal(true);
    expectConforms('buy_skill', result.structuredContent);
    expect((result.structuredContent as { files: Array<{ path: string }> }).files.map((f) => f.path)).to.include(
      'SKILL.md',
    );
    expect(result._meta?.['x402/payment-response']).to.include({ success: true });
    expect(await balanceOf(chain(), wallet.address)).to.equal(10_000_000n - PRICE);
    // Polled again, the completed task answers the same, and cancelling it is acknowledged.
    const again = await mcp.request({ method: 'tasks/get', params: { taskId } }, TaskAnswer);
    expect(again.status).to.equal('completed');
    expect(await mcp.request({ method: 'tasks/cancel', params: { taskId } }, z.looseObject({}))).to.be.an('object');
    completed = { taskId, paymentId: (result.structuredContent as { paymentId: string }).paymentId };
  });

  it('a purchase task delivers the version the payment bought, not one published later, and names no task after its ttlMs', async () => {
    expect(completed, 'the purchase task of the test before').to.not.equal(undefined);
    const { taskId, paymentId } = completed!;
    const taskGet = () => mcp.request({ method: 'tasks/get', params: { taskId } }, TaskAnswer);
    const deliveredVersion = (task: z.infer<typeof TaskAnswer>) =>
      (task.result as { structuredContent: { integrity: { version: number } } }).structuredContent.integrity.version;
    expect(deliveredVersion(await taskGet())).to.equal(1);

    // The seller publishes version 2: the task still delivers version 1, what was paid for.
    const { files } = skillBody('tide-table-reader', '# Tide table reader\n\nNow with tidal streams.');
    const versionSignature = await signVersion(seller.account, {
      postId: paidId,
      version: 2,
      name: 'tide-table-reader',
      files,
    });
    const added = await seller.api(`/api/posts/${paidId}/versions`, {
      method: 'POST',
      json: { body: { files }, version: '1.1.0', versionSignature },
    });
    expect(added.status, await added.clone().text()).to.equal(201);
    const task = await taskGet();
    expect(task.status).to.equal('completed');
    expect(deliveredVersion(task), 'the version bought, not the current one').to.equal(1);
    const delivered = (task.result as { structuredContent: { files: Array<{ path: string; content: string }> } })
      .structuredContent.files;
    expect(delivered.find((f) => f.path === 'SKILL.md')?.content).to.not.include('tidal streams');

    // A day after its creation (the payment's, made a day old here) the id is refused, whoever holds it.
    const { ttlMs } = (await taskGet()) as { ttlMs?: number };
    expect(ttlMs).to.equal(86_400_000);
    await svc.service.runtime.database.db
      .updateTable('payments')
      .set({ created_at: new Date(Date.now() - 86_400_000 - 1_000) })
      .where('id', '=', paymentId)
      .execute();
    for (const method of ['tasks/get', 'tasks/cancel']) {
      let refused: unknown;
      try {
        await mcp.request({ method, params: { taskId } } as never, z.looseObject({}));
      } catch (err) {
        refused = err;
      }
      expect(String(refused), method).to.match(/Unknown task .* expired/);
    }
  });

  it('a client that did not declare the tasks extension never gets a task: a pending settlement is the settlement_pending tool error', async () => {
    const { client: plain } = await connectCurrentMcp(svc.url, { tasks: false });
    try {
      const wallet = await newBuyer(chain());
      const required = paymentRequiredOf(await buySkill(plain, paidId))!;
      const payment = await x402Payer(chain(), wallet.account).createPaymentPayload(required);
      facilitator.mode = { kind: 'settle-pending' };
      const result = await buySkill(plain, paidId, payment);
      expect(result.isError).to.equal(true);
      expect(paymentRequiredOf(result)?.error).to.equal('settlement_pending');
      expectConforms('buy_skill', result.structuredContent);
    } finally {
      facilitator.mode = { kind: 'ok' };
      await plain.close();
    }
  });

  it('a request naming a revision we do not serve gets -32022 with the supported revisions, and headers that disagree with the body -32020', async () => {
    const res = await rawCall('tools/list', {}, '2099-01-01');
    const answer = (await res.json()) as Answer;
    expect(answer.error?.code).to.equal(-32022);
    expect(answer.error?.data).to.deep.include({ requested: '2099-01-01' });
    expect(answer.error).to.have.nested.property('data.supported').that.includes('2026-07-28');
    // Headers that disagree with the body are refused before any handler runs.
    const mismatched = (await (
      await rawCall(
        'tools/call',
        { name: 'buy_skill', arguments: { postId: paidId } },
        '2026-07-28',
        undefined,
        'tools/list',
      )
    ).json()) as Answer;
    expect(mismatched.error?.code).to.equal(-32020);
    // The same request at the current revision is served.
    const served = (await (await rawCall('tools/list', {})).json()) as Answer;
    expect(served.result).to.have.property('tools').with.length(TOOLS.length);
  });

  it('subscriptions/listen is acknowledged with nothing to listen to and ends at once: no stream is held open', async () => {
    expect(mcp.getDiscoverResult()!.capabilities.tools).to.deep.include({ listChanged: false });
    const res = await fetch(`${svc.url}/mcp`, {
      method: 'POST',
      signal: AbortSignal.timeout(5_000),
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2026-07-28',
        'mcp-method': 'subscriptions/listen',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'subscriptions/listen',
        params: {
          notifications: { toolsListChanged: true, resourcesListChanged: true },
          _meta: {
            'io.modelcontextprotocol/protocolVersion': '2026-07-28',
            'io.modelcontextprotocol/clientInfo': { name: 'listener', version: '1.0.0' },
            'io.modelcontextprotocol/clientCapabilities': {},
          },
        },
      }),
    });
    // The whole body arrives (the stream ends) well before the 5 s the request is given.
    const events = (await res.text())
      .split('\n')
      .filter((line) => line.startsWith('data: '))
      .map((line) => JSON.parse(line.slice(6)));
    expect(events[0]).to.deep.include({ method: 'notifications/subscriptions/acknowledged' });
    expect(events[0].params.notifications).to.deep.equal({});
    expect(events.at(-1)).to.have.nested.property('result.resultType', 'complete');
  });

  it('a cross-site browser page is refused before any revision is looked at; the previous revision is still served', async () => {
    const res = await rawCall('tools/list', {}, '2026-07-28', 'https://evil.example');
    expect(res.status).to.equal(403);
    expect((await res.json()).code).to.equal('origin_not_allowed');
    let refused: unknown;
    try {
      await connectCurrentMcp(svc.url, { origin: 'https://evil.example' });
    } catch (err) {
      refused = err;
    }
    expect(String(refused)).to.match(/403|Forbidden/i);
    // A 2025-11-25 client (SDK 1.x: initialize, no envelope) on the same endpoint.
    const previous = await connectMcp(svc.url);
    try {
      expect(previous.getServerVersion()?.name).to.equal('skill-market');
      const listed = await previous.listTools();
      expect(listed.tools.map((t) => t.name).sort()).to.deep.equal(TOOLS);
      expect(listed).to.not.have.property('ttlMs');
      const preview = await previous.callTool({ name: 'get_skill_preview', arguments: { postId: freeId } });
      expect(preview.structuredContent).to.include({ name: 'knot-tier', entitled: true });
    } finally {
      await previous.close();
    }
  });
});
