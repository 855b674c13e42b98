import { expect } from 'chai';
import type { Address } from 'viem';
import {
  identityFacts,
  REGISTRATION_TYPE,
  registrationProblems,
  type Resolution,
} from '../../src/domain/identity/erc8004.js';

const registry: Address = '0x5FbDB2315678afecb367f091113dc7ad8CE0C0de';
const wallet = '0x70997970c51812dc3a010c7d01b50e0d17dc79c8';
const chainId = 31337;

const file = (overrides: Record<string, unknown> = {}): Record<string, unknown> => ({
  type: REGISTRATION_TYPE,
  name: 'Alice',
  description: 'Writes skills',
  services: [{ name: 'web', endpoint: 'https://alice.example' }],
  active: true,
  registrations: [{ agentId: 7, agentRegistry: `eip155:${chainId}:${registry}` }],
  ...overrides,
});

/** A resolution as the resolver (or the identity cache) hands it over. */
function resolution(registration: Record<string, unknown> | null, errors?: string[]): Resolution {
  return {
    tokenId: '7',
    registry: `eip155:${chainId}:${registry}`,
    owner: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
    agentWallet: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
    tokenUri: 'data:application/json,{}',
    registration,
    registrationErrors: errors ?? (registration ? registrationProblems(registration, registry, chainId, '7') : []),
    resolvedAt: '2026-11-21T06:00:00.000Z',
  };
}

describe('ERC-8004 identity facts', () => {
  it('a conformant registration file owned by the wallet is valid and conformant', () => {
    const facts = identityFacts(resolution(file()), wallet);
    expect(facts).to.deep.equal({
      tokenId: '7',
      ownerMatches: true,
      payoutMatches: true,
      registrationValid: true,
      registrationConformant: true,
    });
  });

  it('a file without type, name, description or services is invalid', () => {
    for (const broken of [{ type: 'something-else' }, { name: '' }, { description: 42 }, { services: undefined }]) {
      const facts = identityFacts(resolution(file(broken)), wallet);
      expect(facts.registrationValid, JSON.stringify(broken)).to.equal(false);
      expect(facts.registrationConformant, JSON.stringify(broken)).to.equal(false);
    }
  });

  it('a file that is inactive, uses "endpoints" or does not list this token is valid but not conformant', () => {
    for (const partial of [
      { active: false },
      { services: undefined, endpoints: [] },
      { registrations: [{ agentId: 8, agentRegistry: `eip155:${chainId}:${registry}` }] },
    ]) {
      const facts = identityFacts(resolution(file(partial)), wallet);
      expect(facts.registrationValid, JSON.stringify(partial)).to.equal(true);
      expect(facts.registrationConformant, JSON.stringify(partial)).to.equal(false);
    }
  });

  it('without a readable file (no token, no tokenURI, unreadable) it is neither valid nor conformant', () => {
    const facts = identityFacts(resolution(null, ['registration file unreadable: not a JSON object']), wallet);
    expect(facts.registrationValid).to.equal(false);
    expect(facts.registrationConformant).to.equal(false);
  });

  it("validity does not depend on the problems' wording (a cached resolution keeps only their text)", () => {
    const facts = identityFacts(resolution(file(), ['type must be reworded: a problem text from elsewhere']), wallet);
    expect(facts.registrationValid).to.equal(true);
    expect(facts.registrationConformant).to.equal(false);
  });

  it("another wallet's token matches neither owner nor payout", () => {
    const facts = identityFacts(resolution(file()), '0x1111111111111111111111111111111111111111');
    expect(facts.ownerMatches).to.equal(false);
    expect(facts.payoutMatches).to.equal(false);
  });
});
