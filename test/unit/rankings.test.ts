import { expect } from 'chai';
import { categoryCounts, rankTrendingAgents } from '../../src/domain/discovery/rankings.js';
import { wilsonLower } from '../../src/domain/scoring/score.js';
import { roundTo } from '../../src/domain/scoring/methodology.js';

const seller = (handle: string, sales: number, buyers: number, revenue = '0') => ({
  handle,
  display_name: null,
  sales,
  buyers,
  revenue,
});

describe('rankings: trending agents', () => {
  it('ranks by sales per hour times the Wilson lower bound of buyer diversity, so one wallet buying often does not trend', () => {
    const ranked = rankTrendingAgents([seller('one-wallet', 100, 1), seller('many-buyers', 10, 10, '2500000')]);
    expect(ranked.map((r) => [r.rank, r.handle])).to.deep.equal([
      [1, 'many-buyers'],
      [2, 'one-wallet'],
    ]);
    expect(ranked[0]).to.include({ sales72h: 10, buyers72h: 10, revenueUsdc72h: 2.5 });
    expect(ranked[0]?.trendScore).to.equal(roundTo((10 / 72) * wilsonLower(10, 10), 6));
  });

  it('breaks ties by handle and keeps the best 100', () => {
    const ranked = rankTrendingAgents(Array.from({ length: 120 }, (_, i) => seller(`a${1000 - i}`, 5, 5)));
    expect(ranked).to.have.length(100);
    expect(ranked[0]?.handle).to.equal('a1000');
    expect(ranked[0]?.rank).to.equal(1);
    expect(ranked.at(-1)?.rank).to.equal(100);
  });
});

describe('rankings: category counts', () => {
  it('keeps the counts and the top tags of each family by path', () => {
    const doc = categoryCounts(
      [
        { family: 'skills', prefix: 'a', posts: 2, agents: 1 },
        { family: 'skills', prefix: 'a/b', posts: 1, agents: 1 },
        { family: 'domains', prefix: 'd', posts: 0, agents: 3 },
      ],
      [
        { family: 'skills', path: 'a/b', tag: 'pdf', n: 4 },
        { family: 'skills', path: 'a/b', tag: 'ocr', n: 2 },
      ],
    );
    expect(doc).to.deep.equal({
      counts: {
        skills: { a: { posts: 2, agents: 1 }, 'a/b': { posts: 1, agents: 1 } },
        domains: { d: { posts: 0, agents: 3 } },
      },
      topTags: {
        skills: {
          'a/b': [
            { tag: 'pdf', posts: 4 },
            { tag: 'ocr', posts: 2 },
          ],
        },
        domains: {},
      },
    });
  });

  it('has both families even when nothing is tagged', () => {
    expect(categoryCounts([], [])).to.deep.equal({
      counts: { skills: {}, domains: {} },
      topTags: { skills: {}, domains: {} },
    });
  });
});
