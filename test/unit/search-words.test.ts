import { expect } from 'chai';
import { matchText, type WordInfo } from '../../src/domain/discovery/search.js';

const word = (w: string, posts: number | null, suggestion: string | null = null): WordInfo => ({
  word: w,
  posts,
  agents: 0,
  suggestion,
});

describe('search: which words a query matches on', () => {
  it('leaves out a word in more than a quarter of a large marketplace, keeping the rare one', () => {
    expect(matchText([word('skill', 1_000_000), word('1234', 3)], 1_000_000, 'posts')).to.deep.equal({
      typed: '1234',
      corrected: '1234',
    });
  });

  it('keeps every word when all of them are that common', () => {
    expect(matchText([word('skill', 900_000), word('pdf', 400_000)], 1_000_000, 'posts').typed).to.equal('skill pdf');
  });

  it('leaves nothing out in a small marketplace', () => {
    expect(matchText([word('tables', 2), word('pdf', 1)], 3, 'posts').typed).to.equal('tables pdf');
  });

  it('offers the corrected form beside the typed one; unknown words count as rare', () => {
    expect(matchText([word('scrapng', null, 'scrape'), word('skill', 999_999)], 1_000_000, 'posts')).to.deep.equal({
      typed: 'scrapng',
      corrected: 'scrape',
    });
  });
});
