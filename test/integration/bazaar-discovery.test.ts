import { expect } from 'chai';
import { privateKeyToAccount, generatePrivateKey } from 'viem/accounts';
import { HTTPFacilitatorClient, decodePaymentRequiredHeader } from '@x402/core/http';
import { validateDiscoveryExtension, validateDiscoveryExtensionSpec, withBazaar } from '@x402/extensions/bazaar';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { buySkill, paymentRequiredOf } from '../support/mcp.js';
import { startTestService, eventually, type TestService } from '../support/service.js';
import { registerAgent, type Agent } from '../support/agents.js';
import { newBuyer } from '../support/buyers.js';
import { postVerify, signedVerifyBody } from '../support/sign-in.js';
import { skillBody, skillName } from '../support/skills.js';

const skill = (
  title: string,
  preview: string,
  tags: string[],
  price: string,
  oasf: { skills?: string[]; domains?: string[] },
) => ({
  title,
  preview,
  tags,
  priceAtomic: price,
  oasfSkills: oasf.skills ?? [],
  oasfDomains: oasf.domains ?? [],
  body: skillBody(skillName(title), `# ${title}`),
});

type Item = {
  resource: string;
  type: string;
  x402Version: number;
  accepts: Array<Record<string, unknown> & { payTo: string; amount: string; network: string }>;
  lastUpdated: string;
  description?: string;
  mimeType?: string;
  serviceName?: string;
  tags?: string[];
  extensions?: Record<string, unknown>;
};

describe('x402 Bazaar discovery: /discovery/resources and /discovery/search', function () {
  this.timeout(120_000);
  let svc: TestService;
  let seller: Agent;
  let other: Agent;
  let bazaar: ReturnType<typeof withBazaar<HTTPFacilitatorClient>>['extensions']['bazaar'];
  const ids: Record<'auditor' | 'parser' | 'free' | 'draft', string> = { auditor: '', parser: '', free: '', draft: '' };
  // Resources are named by the service's base URL; requests go to the address it listens on.
  const base = () => svc.service.runtime.site.baseUrl;
  const url = (id: string) => `${base()}/api/posts/${id}?view=full`;
  const mcpUrl = (id: string) => `${base()}/mcp?skill=${id}`;
  const registrationUrl = () => `${base()}/api/agents/verify`;
  const local = (resource: string) => resource.replace(base(), svc.url);
  const get = async (path: string, headers: Record<string, string> = {}) => {
    const res = await fetch(`${svc.url}${path}`, { headers });
    return { res, status: res.status, body: res.status === 304 ? undefined : await res.json() };
  };
  /** The resources a list answers, in order. */
  const listed = async (query: string) => {
    const { status, body } = await get(`/discovery/resources?limit=100&type=http&${query}`);
    expect(status, JSON.stringify(body)).to.equal(200);
    return (body.items as Item[]).map((i) => i.resource);
  };
  const create = async (agent: Agent, body: ReturnType<typeof skill>, publish = true) => {
    const post = await (await agent.api('/api/posts', { method: 'POST', json: body })).json();
    if (publish) expect((await agent.api(`/api/posts/${post.id}/publish`, { method: 'POST' })).status).to.equal(200);
    return post.id as string;
  };

  before(async () => {
    svc = await startTestService();
    seller = await registerAgent(svc, 'ledger-smith');
    other = await registerAgent(svc, 'free-poet');
    ids.auditor = await create(
      seller,
      skill(
        'Spreadsheet formula auditor',
        'Checks every ledger formula for broken references.',
        ['spreadsheets', 'audit'],
        '500000',
        {
          skills: ['natural_language_processing/information_retrieval_synthesis'],
          domains: ['technology/software_engineering'],
        },
      ),
    );
    ids.parser = await create(
      seller,
      skill('Invoice parser', 'Reads ledger invoices into structured JSON.', ['invoices'], '2000000', {
        domains: ['finance_and_business/banking'],
      }),
    );
    ids.free = await create(
      other,
      skill('Rhyme helper', 'Suggests rhymes for a ledger of verses.', ['poetry'], '0', {}),
    );
    ids.draft = await create(other, skill('Unfinished ledger tool', 'Not ready yet.', ['draft'], '100000', {}), false);
    bazaar = withBazaar(new HTTPFacilitatorClient({ url: svc.url })).extensions.bazaar;
    // The listings are written by the feed indexer's pass after the skills changed.
    // Each paid skill is listed twice (its HTTP full view, its MCP tool), the registration once.
    await eventually(async () => (await bazaar.listResources()).pagination.total === 5, 15_000);
  });
  after(async () => svc?.stop());

  it('the official client lists the published paid skills and the registration, nothing free or unpublished', async () => {
    const page = await bazaar.listResources();
    expect(page.x402Version).to.equal(2);
    expect(page.pagination).to.deep.equal({ limit: 20, offset: 0, total: 5 });
    const resources = page.items.map((i) => i.resource);
    expect(resources).to.have.members([
      registrationUrl(),
      url(ids.auditor),
      mcpUrl(ids.auditor),
      url(ids.parser),
      mcpUrl(ids.parser),
    ]);
    expect(resources[0]).to.equal(registrationUrl());
    const auditor = page.items.find((i) => i.resource === url(ids.auditor))!;
    expect(auditor).to.include({ type: 'http', x402Version: 2, mimeType: 'application/json' });
    expect(auditor.description).to.equal('Full access to the skill "Spreadsheet formula auditor" by @ledger-smith');
    expect(auditor.serviceName).to.equal('Spreadsheet formula auditor');
    expect(auditor.tags).to.deep.equal(['spreadsheets', 'audit']);
    expect(new Date(auditor.lastUpdated).getTime()).to.be.closeTo(Date.now(), 120_000);
    const declared = auditor.extensions?.bazaar as { info: { input: { method: string } }; routeTemplate: string };
    expect(declared.info.input.method).to.equal('GET');
    expect(declared.routeTemplate).to.equal('/api/posts/:postId');
    const registration = page.items[0]!;
    expect(registration.accepts[0]).to.include({
      payTo: svc.service.runtime.chain.treasury,
      amount: '1000000',
      network: svc.service.runtime.site.network,
    });
    const registrationDeclared = registration.extensions?.bazaar as { info: { input: { method: string } } };
    expect(registrationDeclared.info.input.method).to.equal('POST');
  });

  it("each skill's listing states exactly the requirements, description and service metadata of its 402", async () => {
    const check = async () => {
      const page = await bazaar.listResources();
      for (const item of page.items.filter((i) => i.type === 'http' && i.resource !== registrationUrl())) {
        const res = await fetch(local(item.resource));
        expect(res.status).to.equal(402);
        const required = decodePaymentRequiredHeader(res.headers.get('payment-required')!);
        expect(item.accepts).to.deep.equal(required.accepts);
        expect(item.description).to.equal(required.resource.description);
        expect(item.mimeType).to.equal(required.resource.mimeType);
        for (const key of ['serviceName', 'tags', 'iconUrl'] as const)
          if (required.resource[key] !== undefined) expect(item[key]).to.deep.equal(required.resource[key]);
        if (required.extensions?.bazaar) expect(item.extensions?.bazaar).to.deep.equal(required.extensions.bazaar);
      }
    };
    // A skill's audit lands seconds after it is published, and its listing (whose output example
    // states the verdict) follows it at the Bazaar projection's next pass: they agree from then on.
    await eventually(
      () =>
        check().then(
          () => true,
          () => false,
        ),
      20_000,
    );
    await check();
  });

  it("the registration's listing states the requirements of the 402 of POST /api/agents/verify", async () => {
    const [registration] = (await bazaar.listResources({ payTo: svc.service.runtime.chain.treasury })).items;
    const account = privateKeyToAccount(generatePrivateKey());
    const res = await postVerify(svc.url, await signedVerifyBody(svc.url, account, 'would-be-agent'));
    expect(res.status).to.equal(402);
    const required = decodePaymentRequiredHeader(res.headers.get('payment-required')!);
    expect(registration!.resource).to.equal(required.resource.url.replace(svc.url, base()));
    expect(registration!.accepts).to.deep.equal(required.accepts);
  });

  it('lists the buy_skill MCP tool per skill as type=mcp resources, keyed by URL and tool, paid as its tool call asks', async () => {
    const page = await bazaar.listResources({ type: 'mcp' });
    expect(page.pagination.total).to.equal(2);
    expect(page.items.map((i) => i.resource)).to.have.members([mcpUrl(ids.auditor), mcpUrl(ids.parser)]);
    const keys = page.items.map((i) => {
      const input = (i.extensions!.bazaar as { info: { input: { tool: string } } }).info.input;
      return `${i.resource} ${input.tool}`;
    });
    expect(new Set(keys).size, 'one catalogue key (url, tool) per skill').to.equal(2);
    const http = (await bazaar.listResources({ type: 'http' })).items;
    for (const item of page.items) {
      expect(item.type).to.equal('mcp');
      const declared = item.extensions?.bazaar as Parameters<typeof validateDiscoveryExtension>[0];
      expect(validateDiscoveryExtension(declared), item.resource).to.deep.equal({ valid: true });
      expect(validateDiscoveryExtensionSpec(declared as never), item.resource).to.deep.include({ valid: true });
      const postId = item.resource.split('skill=')[1]!;
      const input = (declared.info as { input: Record<string, unknown> }).input;
      expect(input).to.deep.include({
        type: 'mcp',
        tool: 'buy_skill',
        toolName: 'buy_skill',
        transport: 'streamable-http',
        example: { postId },
      });
      expect(input.inputSchema).to.deep.include({ type: 'object', required: ['postId'] });
      // The same terms as the HTTP full view, and as buy_skill's own 402, called at the listed URL.
      expect(item.accepts).to.deep.equal(http.find((h) => h.resource === url(postId))!.accepts);
      const client = new Client({ name: 'bazaar-test', version: '1.0.0' });
      await client.connect(new StreamableHTTPClientTransport(new URL(local(item.resource))));
      try {
        const required = paymentRequiredOf(await buySkill(client, postId));
        expect(required?.accepts, item.resource).to.deep.equal(item.accepts);
      } finally {
        await client.close();
      }
    }
    expect((await bazaar.search({ query: 'spreadsheet', type: 'mcp' })).resources.map((r) => r.resource)).to.deep.equal(
      [mcpUrl(ids.auditor)],
    );
    expect((await bazaar.listResources({ type: 'sse' })).items).to.deep.equal([]);
  });

  it('pages with limit and offset; total counts every match', async () => {
    const first = await bazaar.listResources({ limit: 2 });
    const second = await bazaar.listResources({ limit: 2, offset: 2 });
    const third = await bazaar.listResources({ limit: 2, offset: 4 });
    const past = await bazaar.listResources({ limit: 2, offset: 5 });
    expect(first.pagination).to.deep.equal({ limit: 2, offset: 0, total: 5 });
    expect(second.pagination).to.deep.equal({ limit: 2, offset: 2, total: 5 });
    expect(first.items).to.have.length(2);
    expect(second.items).to.have.length(2);
    expect(third.items).to.have.length(1);
    expect(past.items).to.deep.equal([]);
    const all = [...first.items, ...second.items, ...third.items].map((i) => i.resource);
    expect(all).to.deep.equal((await bazaar.listResources()).items.map((i) => i.resource));
    expect(new Set(all).size).to.equal(5);
    // A skill's listings come together: its HTTP full view, then its MCP tool.
    expect(all[2]).to.equal(all[1]!.replace(/\/api\/posts\/([^?]+)\?view=full$/, '/mcp?skill=$1'));
  });

  it('filters by payTo, network, scheme, type and extension key as the Bazaar does', async () => {
    const bySeller = await bazaar.listResources({ payTo: seller.address.toLowerCase(), type: 'http' });
    expect(bySeller.items.map((i) => i.resource)).to.have.members([url(ids.auditor), url(ids.parser)]);
    expect(bySeller.pagination.total).to.equal(2);
    expect((await bazaar.listResources({ payTo: seller.address.toLowerCase() })).pagination.total).to.equal(4);
    const byTreasury = await bazaar.listResources({ payTo: svc.service.runtime.chain.treasury });
    expect(byTreasury.items.map((i) => i.resource)).to.deep.equal([registrationUrl()]);
    const network = svc.service.runtime.site.network;
    expect((await bazaar.listResources({ network })).pagination.total).to.equal(5);
    expect((await bazaar.listResources({ network: 'eip155:1' })).items).to.deep.equal([]);
    expect((await bazaar.listResources({ scheme: 'exact', type: 'http' })).pagination.total).to.equal(3);
    expect((await bazaar.listResources({ type: 'mcp' })).pagination.total).to.equal(2);
    expect((await bazaar.listResources({ extensions: 'bazaar' })).pagination.total).to.equal(5);
    expect((await bazaar.listResources({ extensions: 'payment-identifier-v9' })).pagination.total).to.equal(0);
  });

  it('filters by OASF category (skill or domain, path or id, with what is filed under it) and maximum price', async () => {
    expect(await listed('category=natural_language_processing')).to.deep.equal([url(ids.auditor)]);
    expect(await listed('category=skills:103')).to.deep.equal([url(ids.auditor)]);
    expect(await listed('category=finance_and_business')).to.deep.equal([url(ids.parser)]);
    expect(await listed('category=technology')).to.deep.equal([url(ids.auditor)]);
    expect(await listed('category=legal')).to.deep.equal([]);
    expect(await listed('maxPrice=500000')).to.deep.equal([url(ids.auditor)]);
    expect(await listed('maxPrice=1000000')).to.deep.equal([registrationUrl(), url(ids.auditor)]);
  });

  it("filters by the seller's health as the service computes it", async () => {
    // Until the seller's documents are first published, the read is a 404 problem (whose `status` is 404).
    const health = await eventually(async () => {
      const { status, body } = await get('/api/agents/ledger-smith/health.json');
      return status === 200 ? (body.status as string) : undefined;
    });
    expect(health).to.be.oneOf(['healthy', 'degraded', 'dormant']);
    await eventually(async () => (await listed(`health=${health}`)).length === 2);
    const others = ['healthy', 'degraded', 'dormant'].filter((h) => h !== health);
    expect(await listed(`health=${others.join(',')}`)).to.deep.equal([]);
    expect(await listed(`health=${others[0]},${health}`)).to.have.members([url(ids.auditor), url(ids.parser)]);
  });

  it('filters by distinct buyers: a skill appears under minBuyers=1 once it is bought', async () => {
    expect(await listed('minBuyers=1')).to.deep.equal([]);
    const buyer = await newBuyer(svc.service.runtime.chain);
    expect((await buyer.payV2(local(url(ids.parser)))).status).to.equal(200);
    await eventually(async () => (await listed('minBuyers=1')).includes(url(ids.parser)), 15_000);
    expect(await listed('minBuyers=1')).to.deep.equal([url(ids.parser)]);
    expect(await listed('minBuyers=2')).to.deep.equal([]);
    expect(await listed('minBuyers=0')).to.have.length(3);
  });

  it('search finds a skill by a word of its title, pages with an opaque cursor, and applies the filters', async () => {
    const found = await bazaar.search({ query: 'spreadsheet', type: 'http' });
    expect(found.x402Version).to.equal(2);
    expect(found.resources.map((r) => r.resource)).to.deep.equal([url(ids.auditor)]);
    expect((await bazaar.search({ query: 'spreadsheet' })).resources.map((r) => r.resource)).to.deep.equal([
      url(ids.auditor),
      mcpUrl(ids.auditor),
    ]);
    expect(found.resources[0]!.accepts[0]).to.include({ amount: '500000' });
    expect(found.pagination).to.deep.equal({ limit: 20, cursor: null });

    // "ledger" is in three previews: the free skill is no x402 resource, so two are found.
    const first = await bazaar.search({ query: 'ledger', limit: 1, type: 'http' });
    expect(first.resources).to.have.length(1);
    expect(first.pagination?.cursor).to.be.a('string');
    const second = await bazaar.search({ query: 'ledger', limit: 1, type: 'http', cursor: first.pagination!.cursor! });
    expect(second.resources).to.have.length(1);
    expect(second.pagination?.cursor).to.equal(null);
    expect([first.resources[0]!.resource, second.resources[0]!.resource]).to.have.members([
      url(ids.auditor),
      url(ids.parser),
    ]);

    const cheap = (await get('/discovery/search?query=ledger&maxPrice=600000&type=http')).body;
    expect(cheap.resources.map((r: Item) => r.resource)).to.deep.equal([url(ids.auditor)]);
    expect((await bazaar.search({ query: 'ledger', network: 'eip155:1' })).resources).to.deep.equal([]);
    expect((await bazaar.search({ query: 'register an agent' })).resources.map((r) => r.resource)).to.deep.equal([
      registrationUrl(),
    ]);
  });

  it('bad filter values get 400 problem+json naming the parameter', async () => {
    const cases: Array<[string, string]> = [
      ['/discovery/resources?category=not_a_category', 'category'],
      ['/discovery/resources?category=103', 'category'], // a skill id and a domain id
      ['/discovery/resources?health=sick', 'health'],
      ['/discovery/resources?minBuyers=-1', 'minBuyers'],
      ['/discovery/resources?maxPrice=1.5', 'maxPrice'],
      ['/discovery/resources?payTo=0x1234', 'payTo'],
      ['/discovery/resources?network=base', 'network'],
      ['/discovery/resources?extensions=', 'extensions'],
      ['/discovery/resources?limit=0', 'limit'],
      ['/discovery/resources?limit=101', 'limit'],
      ['/discovery/resources?offset=x', 'offset'],
      ['/discovery/search', 'query'],
      ['/discovery/search?query=ledger&cursor=not-a-cursor', 'cursor'],
      [`/discovery/search?query=ledger&cursor=${Buffer.from('o:5000').toString('base64url')}`, 'cursor'],
    ];
    for (const [path, param] of cases) {
      const res = await fetch(`${svc.url}${path}`);
      expect(res.status, path).to.equal(400);
      expect(res.headers.get('content-type')).to.match(/^application\/problem\+json/);
      const problem = await res.json();
      expect(problem.code, path).to.equal('invalid_request');
      expect(
        problem.invalidParams.map((p: { name: string }) => p.name),
        path,
      ).to.include(param);
    }
  });

  it('answers are CORS-open and cacheable: a client holding the ETag gets 304', async () => {
    for (const path of ['/discovery/resources?limit=5', '/discovery/search?query=ledger']) {
      const { res } = await get(path);
      expect(res.headers.get('access-control-allow-origin')).to.equal('*');
      expect(res.headers.get('cache-control')).to.match(/^public, max-age=\d+/);
      const etag = res.headers.get('etag')!;
      expect(etag).to.match(/^"/);
      const again = await get(path, { 'if-none-match': etag });
      expect(again.status).to.equal(304);
    }
  });

  it('an unpublished skill leaves the listing within a pass of the indexer', async () => {
    expect((await other.api(`/api/posts/${ids.free}`)).status).to.equal(200);
    expect((await seller.api(`/api/posts/${ids.auditor}/unpublish`, { method: 'POST' })).status).to.equal(200);
    await eventually(async () => !(await listed('')).includes(url(ids.auditor)), 15_000);
    expect((await bazaar.listResources()).pagination.total).to.equal(3);
    expect((await bazaar.search({ query: 'spreadsheet' })).resources).to.deep.equal([]);
  });
});
