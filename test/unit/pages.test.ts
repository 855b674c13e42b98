import { expect } from 'chai';
import { EXAMPLE_AGENT, EXAMPLE_SITE } from '../../src/documents/examples.js';
import { renderAgentPage, type AgentPageView } from '../../src/documents/pages/agent-page.renderer.js';
import { renderEmbedCard } from '../../src/documents/agent/embed-card.renderer.js';
import { renderHome } from '../../src/documents/pages/home.renderer.js';
import { renderSearchPage } from '../../src/documents/pages/search-page.renderer.js';
import { renderSkillPage } from '../../src/documents/pages/skill-page.renderer.js';
import { PAGE_SCRIPT_PATH } from '../../src/documents/pages/layout.js';
import { similarForPage } from '../../src/domain/pages/agent-page.js';

const HOSTILE = '<script>alert(1)</script>"><img src=x onerror=alert(2)>\'';

/** Nothing an agent wrote became markup: no element, no attribute broken out of, no script URL. */
function expectInert(page: string) {
  // The page's one script is the site's own file; any other script element came from agent text.
  const html = page.replace(`<script src="${PAGE_SCRIPT_PATH}" defer></script>`, '');
  expect(html.toLowerCase()).to.not.contain('<script');
  expect(html).to.not.contain('<img src=x');
  expect(html).to.not.match(/href="javascript:/i);
  expect(html).to.not.match(/src="http:\/\/avatar/);
}

const agentView = (): AgentPageView => ({
  baseUrl: EXAMPLE_SITE.baseUrl,
  agent: {
    ...EXAMPLE_AGENT,
    display_name: HOSTILE,
    bio: HOSTILE,
    avatar_url: 'http://avatar.example/a.png',
    website_url: 'javascript:alert(1)',
    docs_url: `https://docs.example/${HOSTILE}`,
    contact_url: null,
    contact_email: HOSTILE,
  },
  verified: false,
  score: {
    score: 42.5,
    rawScore: 50,
    health: 'degraded',
    dimensions: { transparency: 0.5, reliability: 0.25, reputation: 1.5, ecosystem: 0 },
    contributions: { transparency: 12.5, reliability: 7.5, reputation: 35, ecosystem: 0 },
    weights: { transparency: 0.25, reliability: 0.3, reputation: 0.35, ecosystem: 0.1 },
  },
  checklist: {
    items: [{ id: 'profile-basics', label: 'Profile basics filled', status: 'missing', howToFix: HOSTILE }],
    passed: 0,
    partial: 0,
    missing: 1,
  },
  skills: [
    {
      id: '5f0c7a9e-1b2c-4d3e-8f90-a1b2c3d4e5f6',
      title: HOSTILE,
      preview: HOSTILE,
      tags: [HOSTILE],
      oasfSkills: [],
      priceAtomic: '1500001',
      installType: null,
      integrity: { name: 'pdf-tables', version: 1, skillDigest: `sha256:${'a'.repeat(64)}`, signed: false },
    },
  ],
  similar: [{ handle: 'other-agent', similarity: 0.5, sharedLabels: [HOSTILE] }],
});

describe('pages: pure renderers that keep agent text inert', () => {
  it("the agent page says why an agent's health is not healthy, and says nothing of it when healthy", () => {
    const base = agentView();
    const degraded = renderAgentPage({
      ...base,
      score: { ...base.score, healthReasons: ['fewer than 2 published skills', 'no contact method'] },
    });
    expect(degraded).to.contain(
      '<p id="health-reasons">Why degraded: fewer than 2 published skills; no contact method.',
    );
    const healthy = renderAgentPage({
      ...base,
      score: { ...base.score, health: 'healthy', healthReasons: [] },
    });
    expect(healthy).to.not.contain('health-reasons');
  });

  it('the agent page escapes every agent text, links only http(s) URLs, shows avatars only from https', () => {
    const html = renderAgentPage(agentView());
    expectInert(html);
    expect(html).to.contain('&lt;script&gt;alert(1)&lt;/script&gt;&quot;&gt;&lt;img src=x onerror=alert(2)&gt;&#39;');
    expect(html).to.not.contain('javascript:alert(1)');
    expect(html).to.contain('1.500001 USDC');
    // A dimension out of range draws a full bar, never a wider one.
    expect(html).to.contain('style="width:100%"');
  });

  it('the home, skill and search pages escape every agent text', () => {
    expectInert(
      renderHome({
        site: EXAMPLE_SITE,
        trending: [{ handle: 'acme-extractor', displayName: HOSTILE, sales72h: 1, buyers72h: 1 }],
        tags: [{ tag: HOSTILE, posts: 1 }],
        newest: [
          {
            id: '5f0c7a9e-1b2c-4d3e-8f90-a1b2c3d4e5f6',
            title: HOSTILE,
            preview: HOSTILE,
            authorHandle: 'acme-extractor',
            priceAtomic: '0',
          },
        ],
      }),
    );
    const skill = renderSkillPage({
      baseUrl: EXAMPLE_SITE.baseUrl,
      network: EXAMPLE_SITE.network,
      post: {
        id: '5f0c7a9e-1b2c-4d3e-8f90-a1b2c3d4e5f6',
        title: HOSTILE,
        preview: HOSTILE,
        priceAtomic: '10',
        tags: [HOSTILE],
        authorHandle: 'acme-extractor',
        authorWallet: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
      },
      description: HOSTILE,
      sales: { sales: 1, buyers: 1 },
      version: {
        number: 2,
        label: HOSTILE,
        files: 1,
        bytes: 10,
        skillName: 'pdf-tables',
        digest: 'sha256:ab',
        signedBy: null,
      },
      // A finding quotes the skill's own hostile line: escaped like every other agent text.
      audit: {
        verdict: 'fail',
        counts: { fail: 1, warn: 0, info: 0 },
        overridden: false,
        findings: [{ rule: HOSTILE, severity: 'fail', file: HOSTILE, line: 3, excerpt: HOSTILE, message: HOSTILE }],
      },
    });
    expectInert(skill);
    expect(skill).to.contain('Audit: fail');
    expect(skill).to.contain('0.00001 USDC');
    const search = renderSearchPage({
      query: HOSTILE,
      answer: {
        didYouMean: HOSTILE,
        results: [{ type: 'post', id: 'x', title: HOSTILE, highlight: `<mark>pdf</mark> ${HOSTILE}` }],
      },
      suggestions: [HOSTILE],
    });
    expectInert(search);
    // The search's own marks stay marks.
    expect(search).to.contain('<mark>pdf</mark> &lt;script&gt;');
  });
});

describe('pages: what a newcomer reads', () => {
  it('the embed card of an agent whose ERC-8004 token its wallet owns shows the verified mark, another none', () => {
    const facts = { score: 61.2, health: 'healthy', publishedSkillCount: 3, uniqueBuyers90d: 4 };
    expect(renderEmbedCard(EXAMPLE_AGENT, { ...facts, verified: true }, EXAMPLE_SITE.baseUrl)).to.contain('✓ verified');
    expect(renderEmbedCard(EXAMPLE_AGENT, facts, EXAMPLE_SITE.baseUrl)).to.not.contain('verified');
  });

  it('the agent page names shared categories by their OASF labels, not by taxonomy path', () => {
    const similar = similarForPage([
      {
        agentId: 'a',
        handle: 'twin-agent',
        similarity: 0.8,
        method: 'idf-jaccard',
        shared: [
          'skill:data_engineering/data_cleaning',
          'domain:technology',
          'tag:etl',
          'skill:unknown_family/odd_leaf',
        ],
      },
    ]);
    const html = renderAgentPage({ ...agentView(), similar });
    expect(html).to.contain('shares Data Cleaning, Technology, etl, Odd leaf');
    expect(html).to.not.contain('data_engineering/');
    expect(html).to.not.contain('skill:');
  });
});
