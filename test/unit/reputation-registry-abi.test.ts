import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import type { Abi } from 'viem';
import { REPUTATION_REGISTRY_ABI } from '@skill-market/skill-protocol/reputation-registry-abi';

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

/** What the official registry has and ours leaves out: its UUPS proxy upgrade surface. */
const UPGRADE_SURFACE = new Set([
  'initialize',
  'upgradeToAndCall',
  'proxiableUUID',
  'UPGRADE_INTERFACE_VERSION',
  'Initialized',
  'Upgraded',
  'AddressEmptyCode',
  'ERC1967InvalidImplementation',
  'ERC1967NonPayable',
  'FailedCall',
  'InvalidInitialization',
  'NotInitializing',
  'UUPSUnauthorizedCallContext',
  'UUPSUnsupportedProxiableUUID',
]);

describe('the ReputationRegistry ABI the service and the CLI share', () => {
  it('is the interface of the registry the marketplace deploys (the compiled artifact)', () => {
    expect(lines(REPUTATION_REGISTRY_ABI)).to.deep.equal(
      lines(abiOf('src/platform/chain/artifacts/ReputationRegistry.json')),
    );
  });

  it('is the official ERC-8004 registry ABI without its upgrade surface', () => {
    const official = abiOf('data/erc8004/ReputationRegistry.abi.json');
    const shared = lines(REPUTATION_REGISTRY_ABI);
    for (const line of shared) expect(lines(official), `${line} is not in the official ABI`).to.include(line);
    const kept = official.filter((item) => !('name' in item) || !UPGRADE_SURFACE.has(item.name));
    expect(shared).to.deep.equal(lines(kept));
  });
});
