import { getAddress, type Address } from 'viem';

/**
 * Most addresses a process remembers the checksum of. The full recompute checksums every agent's
 * wallet and each agent's last 100 buyers: at 100k agents and 200k buyer wallets, a bound of 200k
 * (buyers only) made the cache thrash and keccak showed as a tenth of the worker's profile. About
 * 50 MB when full.
 */
const CHECKSUMS_MAX = 400_000;
const checksums = new Map<string, Address>();

/**
 * The EIP-55 form of an address, remembered (viem keeps only 8,192). Bounded; the oldest half is
 * dropped when full.
 */
export function checksummed(address: string): Address {
  let c = checksums.get(address);
  if (!c) {
    if (checksums.size >= CHECKSUMS_MAX)
      for (const k of [...checksums.keys()].slice(0, CHECKSUMS_MAX / 2)) checksums.delete(k);
    c = getAddress(address);
    checksums.set(address, c);
  }
  return c;
}
