import { createHash } from 'node:crypto';
import { expect } from 'chai';
import { stableHash, topStampedHash } from '../../src/domain/publishing/publish-document.js';
import {
  SCORE_REFRESH_MS,
  reputationFingerprint,
  scoreContentHash,
} from '../../src/domain/agents/agent-document-hashes.js';
import { scoreDocument } from '../../src/domain/scoring/score.js';
import { NOW, daysAgo, thriving } from '../support/facts.js';
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
    // A later sale with the same counts (one left the 90-day window as it came) moves it too.
    const moved = scoreDocument({ ...facts, lastSettleAt: new Date(now.getTime() - 3600_000) }, pop, now, ctx);
    expect(scoreContentHash(moved)).to.not.equal(scoreContentHash(first));
    // So does a health status time changes (no sale or publish in 30 days: degraded).
    const month = scoreDocument(facts, pop, new Date(now.getTime() + 30 * 86_400_000), ctx);
    expect(month.score.health.status).to.not.equal(first.score.health.status);
    expect(scoreContentHash(month)).to.not.equal(scoreContentHash(first));
  });

  it('time passing alone leaves every score identity alone, whatever the decay; the daily refresh republishes it', () => {
    // Agents last active from minutes to 80 days ago, each seen 1 minute to 19 hours later: the
    // freshness components, dimensions and points all move, the identity must not (a recompute
    // would otherwise rewrite the document of any agent whose decay crossed a rounding step).
    const pop = {
      uniqueBuyers: [1, 2, 5, 9, 20],
      settlements: [1, 3, 8, 40, 90],
      paidSkills: [1, 2],
      incomingSimilar: [1],
    };
    const ctx = { baseUrl: 'https://market.example', source: 'skill-market' };
    let moved = 0;
    for (let i = 0; i < 400; i++) {
      const settled = (i * 4.37) % 80;
      const facts = { ...thriving(), lastSettleAt: daysAgo(settled), lastPublishAt: daysAgo((i * 7.91) % 80) };
      const first = scoreDocument(facts, pop, NOW, ctx);
      const later = scoreDocument(
        facts,
        pop,
        new Date(NOW.getTime() + 60_000 + ((i * 2_711_000) % (19 * 3600_000))),
        ctx,
      );
      if (later.score.health.status !== first.score.health.status) continue;
      if (later.score.score !== first.score.score) moved++;
      expect(scoreContentHash(later), `agent ${i}`).to.equal(scoreContentHash(first));
    }
    expect(moved, 'points that moved with time alone').to.be.greaterThan(100);
    expect(SCORE_REFRESH_MS).to.be.below(86_400_000);
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
