import { expect } from 'chai';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { isVersionSignedBy, versionTypedData } from '@skill-market/skill-protocol/version-signature';

describe("a seller's signature over a skill version", () => {
  const seller = privateKeyToAccount(generatePrivateKey());
  const statement = {
    postId: '6f1c2d8e-9a43-4c1e-8f0a-3b5d7e9c1a2b',
    version: 2,
    name: 'tide-tables',
    digest: `sha256:${'ab'.repeat(32)}`,
  };

  it('verifies offline for the signing wallet and that exact statement only', async () => {
    const signature = await seller.signTypedData(versionTypedData(statement));
    expect(await isVersionSignedBy(seller.address, statement, signature)).to.equal(true);
    expect(
      await isVersionSignedBy(seller.address, { ...statement, digest: `sha256:${'cd'.repeat(32)}` }, signature),
    ).to.equal(false);
    expect(await isVersionSignedBy(seller.address, { ...statement, version: 3 }, signature)).to.equal(false);
    const other = privateKeyToAccount(generatePrivateKey());
    expect(await isVersionSignedBy(other.address, statement, signature)).to.equal(false);
    expect(await isVersionSignedBy(seller.address, statement, '0x1234')).to.equal(false);
  });
});
