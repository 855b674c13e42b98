import { expect } from 'chai';
import {
  FullView,
  IndexEntryView,
  PostFull,
  PreviewView,
  SkillsIndex,
  SkillsIndexView,
} from '@skill-market/skill-protocol/responses';
import { skillsIndexDocument } from '../../src/documents/skills/skills-index.document.js';
import { readIndex } from '../../src/cli/market-api.js';

/**
 * The shapes clients read (@skill-market/skill-protocol/responses) against what the service
 * renders: every valid example of the discovery index is a SkillsIndex, and what a client takes of
 * an answer is a part of the answer.
 */
describe('the answers clients read, as the package declares them', () => {
  it('every valid example of /.well-known/agent-skills/index.json parses as a SkillsIndex, and as what a client reads of it', () => {
    for (const example of skillsIndexDocument.examples.valid) {
      const strict = SkillsIndex.safeParse(example);
      expect(strict.success, JSON.stringify(strict.error?.issues)).to.equal(true);
      // What the installer reads: the index in either form, normalized (src/cli/market-api.ts).
      const read = SkillsIndexView.safeParse(readIndex(example as SkillsIndexView));
      expect(read.success, JSON.stringify(read.error?.issues)).to.equal(true);
    }
  });

  it("a client's view of a skill is a pick of the full view: a full answer parses as one", () => {
    const full = PostFull.parse({
      id: '5f0c7a9e-1b2c-4d3e-8f90-a1b2c3d4e5f6',
      view: 'full',
      status: 'published',
      title: 'Weather report',
      preview: 'Writes a weather report.',
      author: { handle: 'seller', walletAddress: `0x${'1'.repeat(40)}`, agentCard: 'http://x/card.json' },
      price: { amount: '0', asset: `0x${'2'.repeat(40)}`, decimals: 6, network: 'eip155:1', payTo: '0x', free: true },
      tags: [],
      oasfSkills: [],
      oasfDomains: [],
      version: 1,
      publishedAt: null,
      updatedAt: '2025-01-01T00:00:00.000Z',
      links: { manifest: 'http://x/m', full: 'http://x/f' },
      files: [{ path: 'SKILL.md', content: '# Weather\n' }],
    });
    expect(FullView.parse(full)).to.include({ id: full.id, title: full.title, version: 1 });
    expect(PreviewView.parse(full).price).to.not.have.property('payTo');
    expect(Object.keys(IndexEntryView.shape)).to.not.include('links');
  });
});
