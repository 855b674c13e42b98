import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { parseAbi, type Abi } from 'viem';
import { IDENTITY_REGISTRY_ABI } from '@skill-market/skill-protocol/identity-registry-abi';

const ROOT = join(import.meta.dirname, '../..');
const abiOf = (path: string): Abi => {
  const json = JSON.parse(readFileSync(join(ROOT, path), 'utf8')) as Abi | { abi: Abi };
  return 'abi' in json ? json.abi : json;
};

type Param = { type: string; name?: string; indexed?: boolean; components?: readonly Param[] };
const param = (p: Param): unknown => ({
  type: p.type,
  name: p.name ?? '',
  ...(p.indexed ? { indexed: true } : {}),
  ...(p.components ? { components: p.components.map(param) } : {}),
});
/**
 * Each entry as one JSON line (kind, name, parameter names and types, indexed, mutability), in a
 * stable order: what a call or a decoded log depends on, without the compiler's internalType.
 */
const lines = (abi: Abi) =>
  abi
    .filter((item) => item.type !== 'constructor')
    .map((item) => {
      const i = item as { type: string; name?: string; inputs?: Param[]; outputs?: Param[]; stateMutability?: string };
      return JSON.stringify({
        type: i.type,
        name: i.name,
        inputs: (i.inputs ?? []).map(param),
        outputs: (i.outputs ?? []).map(param),
        stateMutability: i.stateMutability ?? null,
      });
    })
    .sort();

describe('the IdentityRegistry ABI the service and the CLI share', () => {
  it('is the interface of the registry the marketplace deploys (the compiled artifact)', () => {
    expect(lines(IDENTITY_REGISTRY_ABI)).to.deep.equal(
      lines(abiOf('src/platform/chain/artifacts/IdentityRegistry.json')),
    );
  });

  it("declares the official ERC-8004 registry's identity functions and events as the official ABI does", () => {
    const official = new Set(lines(abiOf('data/erc8004/IdentityRegistry.abi.json')));
    const shared = new Set(lines(IDENTITY_REGISTRY_ABI));
    const erc8004 = lines(
      parseAbi([
        'function register(string agentURI) returns (uint256 agentId)',
        'function setAgentURI(uint256 agentId, string newURI)',
        'function tokenURI(uint256 tokenId) view returns (string)',
        'function ownerOf(uint256 tokenId) view returns (address)',
        'function getAgentWallet(uint256 agentId) view returns (address)',
        'event Registered(uint256 indexed agentId, string agentURI, address indexed owner)',
      ]),
    );
    for (const line of erc8004) {
      expect(shared.has(line), `${line} is not in the shared ABI`).to.equal(true);
      expect(official.has(line), `${line} is not in the official ABI`).to.equal(true);
    }
  });
});
