import { expect } from 'chai';
import { cacheControl, etagOf, matchesIfNoneMatch } from '../../src/api/http/cache.js';
import { isStaticPath } from '../../src/documents/catalog.js';
import { slotId } from '../../src/platform/queues.js';

describe('cache headers', () => {
  it('gives the same body the same strong ETag and a different body another', () => {
    expect(etagOf('{"a":1}')).to.equal(etagOf(Buffer.from('{"a":1}')));
    expect(etagOf('{"a":1}')).to.not.equal(etagOf('{"a":2}'));
    expect(etagOf('x')).to.match(/^"[A-Za-z0-9_-]{27}"$/);
  });

  it('matches If-None-Match lists, weak tags and the wildcard', () => {
    expect(matchesIfNoneMatch('"a", "b"', '"b"')).to.equal(true);
    expect(matchesIfNoneMatch('W/"b"', '"b"')).to.equal(true);
    expect(matchesIfNoneMatch('*', '"b"')).to.equal(true);
    expect(matchesIfNoneMatch('"c"', '"b"')).to.equal(false);
    expect(matchesIfNoneMatch(undefined, '"b"')).to.equal(false);
  });

  it('writes max-age and stale-while-revalidate', () => {
    expect(cacheControl({ maxAge: 60, staleWhileRevalidate: 600 })).to.equal(
      'public, max-age=60, stale-while-revalidate=600',
    );
  });
});

describe('static document paths', () => {
  it('routes document paths to the bucket and everything else to the API', () => {
    expect(isStaticPath('/.well-known/agent-card.json')).to.equal(true);
    expect(isStaticPath('/api/agents/alice/badge.svg')).to.equal(true);
    expect(isStaticPath('/api/agents/alice/score.json')).to.equal(true);
    expect(isStaticPath('/api/discovery/agents.json')).to.equal(true);
    expect(isStaticPath('/api/discovery/search')).to.equal(false);
    expect(isStaticPath('/api/agents/verify')).to.equal(false);
    expect(isStaticPath('/api/agents/../../etc/passwd')).to.equal(false);
  });
});

describe('scheduler slot ids', () => {
  it('are the same for every replica within a minute and contain no colon', () => {
    const a = slotId('site-card', new Date('2026-11-21T05:35:01.000Z'));
    const b = slotId('site-card', new Date('2026-11-21T05:35:59.999Z'));
    expect(a).to.equal(b).and.to.equal('site-card-202611210535');
    expect(slotId('site-card', new Date('2026-11-21T05:36:00.000Z'))).to.not.equal(a);
  });
});
