import { expect } from 'chai';
import { ProfilePatch, profileChanges } from '../../src/domain/agents/profile.js';

describe('profile edits: the columns a patch changes', () => {
  const current = { capabilities: { mcp: 'https://a.example/mcp', a2a: 'https://a.example/a2a' } };

  it('when an agent sets a field and clears another, then only those two columns change', () => {
    const patch = ProfilePatch.parse({ displayName: '  Ada  ', bio: null });
    expect(profileChanges(current, patch)).to.deep.equal({ display_name: 'Ada', bio: null });
  });

  it('when an agent declares one endpoint and removes another, then the others are kept', () => {
    const patch = ProfilePatch.parse({ capabilities: { x402: 'https://a.example/pay', a2a: null } });
    expect(JSON.parse(String(profileChanges(current, patch).capabilities))).to.deep.equal({
      mcp: 'https://a.example/mcp',
      x402: 'https://a.example/pay',
    });
  });

  it('when an agent names its ERC-8004 token, then the token id column is set', () => {
    expect(profileChanges(current, ProfilePatch.parse({ erc8004AgentId: '42' }))).to.deep.equal({ token_id: '42' });
  });
});
