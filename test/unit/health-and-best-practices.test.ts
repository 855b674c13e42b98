import { expect } from 'chai';
import { healthOf } from '../../src/domain/scoring/health.js';
import { bestPractices } from '../../src/domain/scoring/best-practices.js';
import { facts, thriving, daysAgo, NOW } from '../support/facts.js';
import { assertCompletionPct } from '../support/score-invariants.js';

const status = (f: Parameters<typeof bestPractices>[0], id: string) =>
  bestPractices(f, NOW, 'https://m.example').items.find((i) => i.id === id)!;

describe('health transitions', () => {
  it('no publish and no settlement: dormant', () => {
    expect(healthOf(facts(), NOW)).to.equal('dormant');
    expect(healthOf(facts({ lastPublishAt: daysAgo(120), lastSettleAt: daysAgo(100) }), NOW)).to.equal('dormant');
  });
  it('one skill published in the last weeks: degraded', () => {
    expect(healthOf(facts({ lastPublishAt: daysAgo(14), publishedSkillCount: 1 }), NOW)).to.equal('degraded');
  });
  it('complete contact and documentation and several skills, active: healthy', () => {
    const f = facts({
      lastPublishAt: daysAgo(2),
      publishedSkillCount: 2,
      profile: { contactEmail: 'a@b.example', docsUrl: 'https://d.example' },
    });
    expect(healthOf(f, NOW)).to.equal('healthy');
  });
  it('healthy falls back to degraded after 30 quiet days, and to dormant after 90', () => {
    const base = { publishedSkillCount: 3, profile: { contactUrl: 'https://x.example', docsUrl: 'https://d.example' } };
    expect(healthOf(facts({ ...base, lastSettleAt: daysAgo(29) }), NOW)).to.equal('healthy');
    expect(healthOf(facts({ ...base, lastSettleAt: daysAgo(31) }), NOW)).to.equal('degraded');
    expect(healthOf(facts({ ...base, lastSettleAt: daysAgo(91) }), NOW)).to.equal('dormant');
  });
  it('a sale alone keeps an agent active', () => {
    expect(healthOf(facts({ lastSettleAt: daysAgo(1) }), NOW)).to.equal('degraded');
  });
});

describe('best practices v1', () => {
  it('lists the 10 items in the seed order with their labels and refs', () => {
    const bp = bestPractices(facts(), NOW, 'https://m.example');
    expect(bp.items.map((i) => i.id)).to.deep.equal([
      'profile-basics',
      'erc8004-identity',
      'payout-canonical',
      'capabilities-declared',
      'oasf-taxonomy',
      'contact-method',
      'documentation',
      'monetized-skill',
      'recent-activity',
      'spec-conformant',
    ]);
    expect(bp.items.map((i) => i.ref.split('#')[1])).to.deep.equal([
      'profile-basics',
      'erc8004-identity',
      'payout-canonical',
      'capabilities',
      'oasf-taxonomy',
      'contact',
      'documentation',
      'monetized-skill',
      'recent-activity',
      'spec-conformant',
    ]);
    expect(bp.items[2]!.label).to.equal('Payout matches on-chain agentWallet');
    expect(bp.methodology).to.equal('https://m.example/spec/best-practices-v1.json');
  });

  it('counts and completionPct follow (passed + 0.5 partial) / 10 x 100; howToFix is null only when passed', () => {
    for (const f of [
      facts(),
      thriving(),
      facts({ profile: { bio: 'x'.repeat(30) }, publishedSkillCount: 1, lastPublishAt: daysAgo(60) }),
    ]) {
      const bp = bestPractices(f, NOW, 'https://m.example');
      expect(bp.passed + bp.partial + bp.missing).to.equal(10);
      expect(bp.completionPct).to.be.closeTo(((bp.passed + 0.5 * bp.partial) / 10) * 100, 1e-9);
      for (const i of bp.items) {
        if (i.status === 'passed') expect(i.howToFix).to.equal(null);
        else expect(i.howToFix).to.be.a('string').with.length.greaterThan(10);
      }
    }
    expect(bestPractices(thriving(), NOW, 'x').completionPct).to.equal(100);
  });

  it('completionPct is the exact figure: 5 passed and 1 partial publish 55, not 55.00000000000001', () => {
    const bp = bestPractices(
      facts({
        profile: {
          bio: 'x'.repeat(30),
          contactEmail: 'ops@a.example',
          docsUrl: 'https://docs.a.example',
          capabilities: { mcp: 'https://mcp.a.example', a2a: 'https://a2a.a.example' },
          oasfSkills: ['advanced_reasoning_planning'],
          oasfDomains: ['technology'],
        },
        publishedSkillCount: 1,
        paywalledSkillCount: 1,
      }),
      NOW,
      'https://m.example',
    );
    expect(bp).to.include({ passed: 5, partial: 1, missing: 4 });
    expect(JSON.stringify(bp.completionPct)).to.equal('55');
    assertCompletionPct(JSON.parse(JSON.stringify(bp)));
  });

  it('profile-basics: partial with only a 30+ character bio or only an avatar', () => {
    expect(status(facts(), 'profile-basics').status).to.equal('missing');
    expect(status(facts({ profile: { bio: 'x'.repeat(30) } }), 'profile-basics').status).to.equal('partial');
    expect(
      status(facts({ profile: { bio: 'x'.repeat(29), avatarUrl: 'https://a.example/a.png' } }), 'profile-basics')
        .status,
    ).to.equal('partial');
    expect(
      status(facts({ profile: { bio: 'x'.repeat(30), avatarUrl: 'https://a.example/a.png' } }), 'profile-basics')
        .status,
    ).to.equal('passed');
  });

  it('monetized-skill: missing, partial when only free skills, passed with a paywalled one', () => {
    expect(status(facts(), 'monetized-skill').status).to.equal('missing');
    expect(status(facts({ publishedSkillCount: 2 }), 'monetized-skill').status).to.equal('partial');
    expect(status(facts({ publishedSkillCount: 2, paywalledSkillCount: 1 }), 'monetized-skill').status).to.equal(
      'passed',
    );
  });

  it('recent-activity: passed within 30 days of a publish or a settlement', () => {
    expect(status(facts({ lastSettleAt: daysAgo(29) }), 'recent-activity').status).to.equal('passed');
    expect(status(facts({ lastPublishAt: daysAgo(45) }), 'recent-activity').status).to.equal('partial');
    expect(status(facts(), 'recent-activity').status).to.equal('missing');
  });

  it('identity items: missing without a token, partial when the chain disagrees, passed when it agrees', () => {
    expect(status(facts(), 'erc8004-identity').status).to.equal('missing');
    const mismatch = facts({
      tokenId: '3',
      identity: {
        tokenId: '3',
        ownerMatches: true,
        payoutMatches: false,
        registrationValid: true,
        registrationConformant: false,
      },
    });
    expect(status(mismatch, 'erc8004-identity').status).to.equal('passed');
    expect(status(mismatch, 'payout-canonical').status).to.equal('partial');
    expect(status(mismatch, 'spec-conformant').status).to.equal('partial');
    expect(status(thriving(), 'payout-canonical').status).to.equal('passed');
  });

  it('capabilities, taxonomy, contact and documentation', () => {
    expect(
      status(facts({ profile: { capabilities: { mcp: 'https://m.example' } } }), 'capabilities-declared').status,
    ).to.equal('partial');
    expect(status(facts({ profile: { oasfSkills: ['a'] } }), 'oasf-taxonomy').status).to.equal('partial');
    expect(status(facts({ profile: { contactUrl: 'https://x.example' } }), 'contact-method').status).to.equal('passed');
    expect(status(facts(), 'documentation').status).to.equal('missing');
  });
});
