import { expect } from 'chai';
import { buildTagIndex, matchTags, trigrams, trigramSimilarity } from '../../src/domain/discovery/search-tags.js';

const index = buildTagIndex([
  { tag: 'invoices', posts: 12 },
  { tag: 'ocr-invoices', posts: 3 },
  { tag: 'pdf-tables', posts: 7 },
  { tag: 'Poetry', posts: 1 },
]);

describe('search: tags matched by trigrams and substrings', () => {
  it('makes the trigrams pg_trgm makes: padded words, lower-cased, each window once', () => {
    expect([...trigrams('Ab ab')].sort()).to.deep.equal(['  a', ' ab', 'ab '].sort());
    // 'ab' and 'abc' share two of their five distinct trigrams.
    expect(trigramSimilarity(trigrams('ab'), trigrams('abc'))).to.be.closeTo(2 / 5, 1e-9);
    expect(trigramSimilarity(trigrams('ab'), trigrams('xy'))).to.equal(0);
  });

  it('scores a tag containing the query 0.5 above its similarity, ties by skill count', () => {
    const hits = matchTags(index, 'invoices', 10);
    expect(hits.map((h) => h.tag)).to.deep.equal(['invoices', 'ocr-invoices']);
    expect(hits[0]?.score).to.equal(1.5);
    const sim = trigramSimilarity(trigrams('invoices'), trigrams('ocr-invoices'));
    expect(hits[1]?.score).to.be.closeTo(sim + 0.5, 1e-9);
  });

  it('finds a short query inside a longer tag though they share no trigram, case-insensitively', () => {
    expect(matchTags(index, 'OE', 10).map((h) => h.tag)).to.deep.equal(['Poetry']);
  });

  it('counts a tag once however often it holds the query, and keeps `limit` of them', () => {
    expect(matchTags(index, 'i', 10).map((h) => h.tag)).to.have.members(['invoices', 'ocr-invoices']);
    expect(matchTags(index, 'e', 2)).to.have.length(2);
  });

  it('matches nothing for a query unlike every tag, and for an empty index', () => {
    expect(matchTags(index, 'zzz', 10)).to.deep.equal([]);
    expect(matchTags(buildTagIndex([]), 'invoices', 10)).to.deep.equal([]);
  });
});
