import { createHash } from 'node:crypto';
import { expect } from 'chai';
import { stableHash } from '../../src/domain/documents/publish-document.js';
import { scoreContentHash } from '../../src/domain/agents/agent-documents.js';
import { scoreDocument } from '../../src/domain/scoring/score.js';
import { NOW, thriving } from '../support/facts.js';

const sha = (s: string) => createHash('sha256').update(s).digest('hex');

describe('content hashes: what makes a published document different', () => {
  it('time stamps at any depth are left out, everything else counts', () => {
    const doc = { a: 1, computedAt: 'x', nested: { generatedAt: 'y', list: [{ computedAt: 'z', b: 2 }] } };
    expect(stableHash(doc)).to.equal(sha(JSON.stringify({ a: 1, nested: { list: [{ b: 2 }] } })));
    expect(stableHash({ ...doc, computedAt: 'later' })).to.equal(stableHash(doc));
    expect(stableHash({ ...doc, a: 2 })).to.not.equal(stableHash(doc));
    expect(stableHash('<svg/>')).to.equal(sha(JSON.stringify('<svg/>')));
  });

  it('a score document an hour later, with nothing else changed, has the same identity; a sale changes it', () => {
    const pop = { uniqueBuyers: [], settlements: [], paidSkills: [], incomingSimilar: [] };
    const now = NOW;
    const facts = thriving(); // sold a day ago, published three days ago
    const ctx = { baseUrl: 'https://market.example', source: 'skill-market' };
    const first = scoreDocument(facts, pop, now, ctx);
    const later = scoreDocument(facts, pop, new Date(now.getTime() + 3600_000), ctx);
    expect(later.inputs.daysSinceLastSettle).to.be.greaterThan(first.inputs.daysSinceLastSettle!);
    expect(stableHash(later)).to.not.equal(stableHash(first));
    expect(scoreContentHash(later)).to.equal(scoreContentHash(first));
    const sold = scoreDocument({ ...facts, settlementCount90d: 5, lastSettleAt: now }, pop, now, ctx);
    expect(scoreContentHash(sold)).to.not.equal(scoreContentHash(first));
    // Weeks of decay do move it.
    const weeks = scoreDocument(facts, pop, new Date(now.getTime() + 21 * 86_400_000), ctx);
    expect(scoreContentHash(weeks)).to.not.equal(scoreContentHash(first));
  });
});
