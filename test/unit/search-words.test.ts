import { expect } from 'chai';
import { matchText, queryWords, type WordInfo } from '../../src/domain/discovery/search-words.js';

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

describe('search: the words of a query', () => {
  it('splits on anything but letters, marks and digits, lower-cases, drops one-letter words and repeats', () => {
    expect(queryWords('PDF-tables, a pdf  Tables x2 ÉLAN')).to.deep.equal(['pdf', 'tables', 'x2', 'élan']);
  });

  it('keeps the words of other scripts whole, combining marks included', () => {
    expect(queryWords('हिन्दी search')).to.deep.equal(['हिन्दी', 'search']);
  });

  it('looks up at most twelve words', () => {
    const q = Array.from({ length: 20 }, (_, i) => `w${i}`).join(' ');
    expect(queryWords(q)).to.have.length(12);
    expect(queryWords(q).at(-1)).to.equal('w11');
  });
});
