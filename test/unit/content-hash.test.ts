import { createHash } from 'node:crypto';
import { expect } from 'chai';
import { stableHash, topStampedHash } from '../../src/domain/publishing/publish-document.js';
import { reputationFingerprint, scoreContentHash } from '../../src/domain/agents/agent-document-hashes.js';
import { scoreDocument } from '../../src/domain/scoring/score.js';
import { NOW, thriving } from '../support/facts.js';
import type { Agent } from '../../src/data/schema.js';

const sha = (s: string) => createHash('sha256').update(s).digest('hex');

describe('content hashes: what makes a published document different', () => {
  it('time stamps at any depth are left out, everything else counts', () => {
    const doc = { a: 1, computedAt: 'x', nested: { generatedAt: 'y', list: [{ computedAt: 'z', b: 2 }] } };
    expect(stableHash(doc)).to.equal(sha(JSON.stringify({ a: 1, nested: { list: [{ b: 2 }] } })));
    expect(stableHash({ ...doc, computedAt: 'later' })).to.equal(stableHash(doc));
    expect(stableHash({ ...doc, a: 2 })).to.not.equal(stableHash(doc));
    expect(stableHash('<svg/>')).to.equal(sha(JSON.stringify('<svg/>')));
  });

  it('a document stamped only at its top level hashes the same without the replacer', () => {
    const doc = {
      agent: { handle: 'a' },
      items: [{ id: 'x', status: 'passed' }],
      completionPct: 55,
      computedAt: '2026-11-21T00:00:00.000Z',
    };
    expect(topStampedHash(doc)).to.equal(stableHash(doc));
    expect(topStampedHash({ ...doc, computedAt: 'later' })).to.equal(topStampedHash(doc));
    expect(topStampedHash({ ...doc, completionPct: 60 })).to.not.equal(topStampedHash(doc));
    const { computedAt: _, ...unstamped } = doc;
    expect(topStampedHash(unstamped)).to.equal(stableHash(unstamped));
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

  it("a reputation mirror's fingerprint moves with a sale, the token id or the site, and with nothing else", () => {
    const agent = { token_id: '7', handle: 'alice', bio: 'x' } as unknown as Agent;
    const site = {
      baseUrl: 'https://market.example',
      apiVersion: 'v1',
      network: 'eip155:84532',
      usdcAddress: '0x036CbD53842c5426634e7929541eC2318f3dCF7e',
      registrationPriceAtomic: 0n,
    };
    const facts = thriving();
    const base = reputationFingerprint(agent, facts, site);
    expect(
      reputationFingerprint({ ...agent, bio: 'changed' }, { ...facts, uniqueBuyers90d: 41 }, site),
      'profile and 90-day figures',
    ).to.equal(base);
    expect(reputationFingerprint(agent, { ...facts, settlementCountAll: 96 }, site), 'one more sale').to.not.equal(
      base,
    );
    expect(reputationFingerprint(agent, { ...facts, lastSettleAt: NOW }, site), 'a later sale').to.not.equal(base);
    expect(reputationFingerprint({ ...agent, token_id: '8' }, facts, site), 'the ERC-8004 token').to.not.equal(base);
    expect(reputationFingerprint({ ...agent, token_id: null }, facts, site), 'no token').to.not.equal(base);
    expect(reputationFingerprint(agent, facts, { ...site, baseUrl: 'https://other.example' }), 'the site').to.not.equal(
      base,
    );
    expect(reputationFingerprint(agent, facts, { ...site, network: 'eip155:8453' }), 'the network').to.not.equal(base);
    expect(reputationFingerprint(agent, facts, site, '', '1:2026-11-28|0'), 'a review').to.not.equal(base);
  });
});
