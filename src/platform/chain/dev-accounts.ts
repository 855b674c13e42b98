import type { Address, Hex } from 'viem';

/**
 * The dev chain's well-known accounts, apart from the chain itself so that code which only needs a
 * key (signing the treasury's ownership proof on the embedded chain) loads none of its contracts.
 */

/** A funded key on the dev chain. */
export interface DevAccount {
  address: Address;
  privateKey: Hex;
}

// anvil's default accounts 0..2 (mnemonic "test test ... junk"). Public, well-known keys:
// hard-coded because deriving them from the mnemonic costs more than the whole deployment.
export const ANVIL_ACCOUNTS: readonly DevAccount[] = [
  {
    address: '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266',
    privateKey: '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80',
  },
  {
    address: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
    privateKey: '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d',
  },
  {
    address: '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC',
    privateKey: '0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a',
  },
];

/** The private key of a well-known dev chain account (anvil's defaults), or undefined for any other address. */
export function devAccountKey(address: Address): Hex | undefined {
  return ANVIL_ACCOUNTS.find((a) => a.address.toLowerCase() === address.toLowerCase())?.privateKey;
}
