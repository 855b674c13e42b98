import { expect } from 'chai';
import { searchLines } from '../../src/cli/agent-actions.js';

const base = 'http://localhost:3000';
const skill = (handle: string, label: string) => ({
  type: 'post',
  id: '5f0c7a9e-1b2c-4d3e-8f90-a1b2c3d4e5f6',
  title: 'Weather report',
  label,
  url: `${base}/api/posts/5f0c7a9e-1b2c-4d3e-8f90-a1b2c3d4e5f6`,
  page: `${base}/skills/5f0c7a9e-1b2c-4d3e-8f90-a1b2c3d4e5f6`,
  seller: { handle, displayName: 'Seller One', score: 42.5 },
  priceAtomic: '1500000',
  priceUsdc: '1.5',
  buyers: 3,
  preview: 'Writes a weather report from a forecast.',
  version: '1.0.0',
});

describe('skill-market search: what each result prints', () => {
  it('a skill shows its seller and score, price, buyers, version, preview and its page, never an API URL', () => {
    const lines = searchLines(skill('seller-one', 'Weather report (by @seller-one)'), base);
    expect(lines).to.deep.equal([
      'skill  Weather report (by @seller-one)',
      '       1.5 USDC · 3 buyers · version 1.0.0 · by @seller-one (Seller One), score 42.5',
      '       Writes a weather report from a forecast.',
      `       ${base}/skills/5f0c7a9e-1b2c-4d3e-8f90-a1b2c3d4e5f6`,
    ]);
    expect(lines.join('\n')).not.to.include('/api/');
  });

  it('two skills of the same title read apart by their sellers', () => {
    const a = searchLines(skill('seller-one', 'Weather report (by @seller-one)'), base);
    const b = searchLines(skill('seller-two', 'Weather report (by @seller-two)'), base);
    expect(a[0]).not.to.equal(b[0]);
    expect(a[1]).not.to.equal(b[1]);
  });

  it('an agent shows its score, skills and sales and links its page; a free skill says free', () => {
    const agent = searchLines(
      {
        type: 'agent',
        id: 'seller-one',
        title: 'Seller One',
        label: 'Seller One',
        url: `${base}/api/agents/seller-one/agent-card.json`,
        page: `${base}/agents/seller-one`,
        seller: { handle: 'seller-one', displayName: 'Seller One', score: 42.5 },
        sales90d: 1,
        publishedSkills: 2,
        preview: 'Writes weather reports.',
      },
      base,
    );
    expect(agent).to.deep.equal([
      'agent  Seller One',
      '       @seller-one, score 42.5 · 2 skills · 1 sale in 90 days',
      '       Writes weather reports.',
      `       ${base}/agents/seller-one`,
    ]);
    expect(searchLines({ ...skill('seller-one', 'Weather report'), priceUsdc: '0', buyers: 1 }, base)[1]).to.match(
      /^ {7}free · 1 buyer · /,
    );
  });

  it('a market that sends only the first fields still gets page links, derived from the id', () => {
    const lines = searchLines(
      { type: 'agent', id: 'old-agent', title: 'Old', url: `${base}/api/agents/old-agent/agent-card.json` },
      base,
    );
    expect(lines).to.deep.equal(['agent  Old', `       ${base}/agents/old-agent`]);
    expect(
      searchLines(
        { type: 'tag', id: 'weather', title: 'weather (2 skills)', url: `${base}/api/discovery/search?q=weather` },
        base,
      ).at(-1),
    ).to.equal(`       ${base}/search?q=weather`);
  });
});
