import { expect } from 'chai';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { CliError } from '../../src/cli/cli-error.js';
import type { FullView, IndexEntryView } from '@skill-market/skill-protocol/responses';
import { verifySkill } from '../../src/cli/verify.js';
import { fileDigest, skillDigest } from '@skill-market/skill-protocol/skill-digest';
import { signVersion } from '../support/skills.js';

const POST = '5f0c7a9e-1b2c-4d3e-8f90-a1b2c3d4e5f6';
const seller = privateKeyToAccount(generatePrivateKey());
const files = [
  { path: 'SKILL.md', content: '---\nname: weather-report\ndescription: Writes a weather report.\n---\n# Weather\n' },
  { path: 'references/units.md', content: 'Celsius.\n' },
];

async function signedView(over: Partial<FullView> = {}): Promise<FullView> {
  const value = await signVersion(seller, { postId: POST, version: 1, name: 'weather-report', files });
  return {
    id: POST,
    title: 'Weather report',
    status: 'published',
    author: { handle: 'seller', walletAddress: seller.address },
    price: { amount: '0', asset: '0x', decimals: 6, network: 'eip155:1', free: true },
    version: 1,
    files: files.map((f) => ({ ...f })),
    integrity: {
      name: 'weather-report',
      version: 1,
      versionLabel: '1.0.0',
      skillDigest: skillDigest(files),
      files: files.map((f) => ({ path: f.path, digest: fileDigest(f.content) })),
      signature: { signer: seller.address, value, scheme: 'eip712' },
    },
    ...over,
  };
}

const opts = { seller: seller.address, allowUnsigned: false };
const refusal = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: unknown) => e,
  );

describe('what the installer checks before it writes a skill', () => {
  it('accepts the files its seller signed, and names the signer', async () => {
    const skill = await verifySkill(await signedView(), undefined, opts);
    expect(skill).to.deep.include({ name: 'weather-report', version: 1, signer: seller.address });
    expect(skill.skillDigest).to.equal(skillDigest(files));
  });

  it('refuses an extra file, a missing file and a skill digest the discovery index contradicts', async () => {
    const extra = await signedView();
    extra.files!.push({ path: 'assets/extra.txt', content: 'x' });
    expect(await refusal(verifySkill(extra, undefined, opts)))
      .to.be.instanceOf(CliError)
      .and.include({ code: 'digest_mismatch' });

    const missing = await signedView();
    missing.files!.pop();
    const err = (await refusal(verifySkill(missing, undefined, opts))) as CliError;
    expect(err.code).to.equal('digest_mismatch');
    expect(err.message).to.contain('references/units.md missing');

    const entry = {
      id: POST,
      name: 'weather-report',
      versions: [{ version: 1, versionLabel: '1.0.0', digest: `sha256:${'0'.repeat(64)}`, files: [], signature: null }],
    } as unknown as IndexEntryView;
    const contradicted = (await refusal(verifySkill(await signedView(), entry, opts))) as CliError;
    expect(contradicted.code).to.equal('digest_mismatch');
    expect(contradicted.message).to.contain('stated by the discovery index');
  });

  it('refuses a folder whose SKILL.md names another skill than the one stated', async () => {
    const view = await signedView();
    view.integrity!.name = 'other-skill';
    expect(await refusal(verifySkill(view, undefined, opts))).to.include({ code: 'not_an_agent_skill' });
  });

  it("refuses a signature over another version's digest, even with --allow-unsigned", async () => {
    const view = await signedView();
    view.integrity!.signature!.value = await signVersion(seller, {
      postId: POST,
      version: 2,
      name: 'weather-report',
      files,
    });
    expect(await refusal(verifySkill(view, undefined, { ...opts, allowUnsigned: true }))).to.include({
      code: 'signature_invalid',
    });
  });
});
