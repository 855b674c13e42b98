import { expect } from 'chai';
import { hashTypedData, keccak256, recoverTypedDataAddress, toHex, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount, sign } from 'viem/accounts';
import {
  isTypedDataSigner,
  recoverHashSigner,
  signHash,
  signTypedDataWith,
  typedDataHash,
} from '../../src/platform/secp256k1.js';

const typed = (i: number) => ({
  domain: { name: 'Skill Market', version: '1', chainId: 84532 },
  types: {
    SkillPurchase: [
      { name: 'transaction', type: 'string' },
      { name: 'version', type: 'uint256' },
    ],
  },
  primaryType: 'SkillPurchase' as const,
  message: { transaction: `0x${i.toString(16).padStart(64, '0')}`, version: BigInt(i) },
});

describe('secp256k1 on the paid path (libsecp256k1 in WebAssembly) agrees with viem', () => {
  it('signs typed data byte for byte as viem does, for many keys and messages', async () => {
    for (let i = 0; i < 40; i++) {
      const key = generatePrivateKey();
      const viemSignature = await privateKeyToAccount(key).signTypedData(typed(i));
      expect(signTypedDataWith(key, typed(i))).to.equal(viemSignature);
    }
  });

  it('hashes typed data as viem does, in several domains, each used again, and with a domain type of its own', () => {
    const domains = [
      { name: 'Skill Market', version: '1', chainId: 84532 },
      {
        name: 'USD Coin',
        version: '2',
        chainId: 8453,
        verifyingContract: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913' as const,
      },
      { name: 'Skill Market', version: '1', chainId: 1 },
      {},
    ];
    for (let round = 0; round < 3; round++) {
      for (const [d, domain] of domains.entries()) {
        const data = { ...typed(round * 10 + d), domain };
        expect(typedDataHash(data), `domain ${d}, round ${round}`).to.equal(hashTypedData(data));
      }
    }
    // A domain type stated in `types` (fewer fields than the domain has) is the one hashed.
    const stated = {
      ...typed(3),
      domain: { name: 'Skill Market', version: '1', chainId: 84532 },
      types: { ...typed(3).types, EIP712Domain: [{ name: 'name', type: 'string' }] as const },
    };
    expect(typedDataHash(stated)).to.equal(hashTypedData(stated));
    expect(typedDataHash(stated)).to.not.equal(typedDataHash(typed(3)));
    // Validation as viem's: an integer out of its type's range is refused.
    const outOfRange = {
      ...typed(1),
      types: { Small: [{ name: 'n', type: 'uint8' }] },
      primaryType: 'Small' as const,
      message: { n: 256n },
    };
    expect(() => typedDataHash(outOfRange)).to.throw();
  });

  it('signs a hash as viem serializes it (r, s, v 27 or 28)', async () => {
    for (let i = 0; i < 20; i++) {
      const key = generatePrivateKey();
      const hash = keccak256(toHex(`message ${i}`));
      expect(signHash(hash, key)).to.equal(await sign({ hash, privateKey: key, to: 'hex' }));
    }
  });

  it('recovers the signer viem recovers, and refuses what is not a 65-byte signature of that signer', async () => {
    const account = privateKeyToAccount(generatePrivateKey());
    const other = privateKeyToAccount(generatePrivateKey());
    const signature = await account.signTypedData(typed(7));
    expect(recoverHashSigner(hashTypedData(typed(7)), signature)).to.equal(
      await recoverTypedDataAddress({ ...typed(7), signature }),
    );
    expect(isTypedDataSigner(account.address, typed(7), signature)).to.equal(true);
    expect(isTypedDataSigner(other.address, typed(7), signature)).to.equal(false);
    // Another message, a truncated signature, a bad recovery byte, garbage.
    expect(isTypedDataSigner(account.address, typed(8), signature)).to.equal(false);
    expect(isTypedDataSigner(account.address, typed(7), signature.slice(0, 130) as Hex)).to.equal(false);
    expect(isTypedDataSigner(account.address, typed(7), `${signature.slice(0, 130)}05` as Hex)).to.equal(false);
    expect(isTypedDataSigner(account.address, typed(7), `0x${'00'.repeat(65)}`)).to.equal(false);
    // v given as 0 or 1 instead of 27 or 28.
    const v = Number.parseInt(signature.slice(130), 16) - 27;
    expect(isTypedDataSigner(account.address, typed(7), `${signature.slice(0, 130)}0${v}` as Hex)).to.equal(true);
  });
});
