import { expect } from 'chai';
import { CATALOGUE, documentAtPath, isStaticPath, keyOfPath } from '../../src/documents/catalog.js';
import { JSON_TYPE } from '../../src/documents/document.js';
import { documentErrors } from '../../src/documents/validate.js';

describe('the catalogue of published documents', () => {
  it('names every document once, at a distinct path', () => {
    expect(new Set(CATALOGUE.map((d) => d.id)).size).to.equal(CATALOGUE.length);
    expect(new Set(CATALOGUE.map((d) => d.path)).size).to.equal(CATALOGUE.length);
  });

  it('gives every JSON document a schema with valid and invalid examples, and nothing else a schema', () => {
    for (const d of CATALOGUE) {
      if (d.contentType === JSON_TYPE) {
        expect(d.schema, d.id).to.be.an('object');
        expect(d.examples.valid, d.id).to.not.be.empty;
        expect(d.examples.invalid, d.id).to.not.be.empty;
      } else {
        expect(d.schema, d.id).to.equal(undefined);
      }
    }
  });

  for (const d of CATALOGUE) {
    it(`${d.id}: its schema accepts every valid example and refuses every invalid one`, () => {
      for (const [i, example] of d.examples.valid.entries())
        expect(documentErrors(d, example), `valid example ${i}`).to.deep.equal([]);
      for (const [i, example] of d.examples.invalid.entries())
        expect(documentErrors(d, example), `invalid example ${i}`).to.not.be.empty;
    });
  }

  it('finds the entry of each sample path, whose key is the path without its slash (or the one its module names)', () => {
    for (const d of CATALOGUE) {
      expect(isStaticPath(d.samplePath), d.samplePath).to.equal(true);
      expect(documentAtPath(d.samplePath), d.samplePath).to.equal(d);
      // The sample paths' parameters (a key takes the ones its path names).
      const key = d.key({
        handle: 'some-agent-7',
        postId: '5f0c7a9e-1b2c-4d3e-8f90-a1b2c3d4e5f6',
        shard: '5f',
        version: '2',
      });
      expect(key).to.equal(keyOfPath(d.samplePath));
    }
  });

  it('routes no path outside the catalogue to the bucket', () => {
    for (const path of [
      '/api/agents/ab/score.json',
      `/api/agents/${'a'.repeat(33)}/score.json`,
      '/api/agents/alice/score.json.bak',
      '/api/agents/alice/unknown.json',
      '/api/discovery/search',
      '/spec/unknown-v1.json',
      '/api/posts/not-a-uuid/manifest.json',
    ])
      expect(documentAtPath(path), path).to.equal(undefined);
  });

  it('gives each document its Cache-Control from its own policy', () => {
    for (const d of CATALOGUE)
      expect(d.cacheControl).to.equal(
        `public, max-age=${d.cache.maxAge}, stale-while-revalidate=${d.cache.staleWhileRevalidate}`,
      );
  });
});
