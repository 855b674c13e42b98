import { expect } from 'chai';
import { getAddress, recoverTypedDataAddress, verifyTypedData, type Hex } from 'viem';
import { startTestService, eventually, type TestService } from '../support/service.js';
import { balanceOf } from '../support/buyers.js';
import { registerAgent, type Agent } from '../support/agents.js';
import { signVersion, skillMd } from '../support/skills.js';
import { fileDigest, skillDigest } from '@skill-market/skill-protocol/skill-digest';
import type { SKILL_VERSION_TYPES } from '@skill-market/skill-protocol/version-signature';
import { INSTALL_EXTENSION_PATH } from '../../src/documents/agent/agent-card.renderer.js';

const PRICE = 1_750_000n;
const V1 = [
  { path: 'SKILL.md', content: skillMd('weather-report', { body: '# Weather report\nRun scripts/fetch.py.\n' }) },
  { path: 'scripts/fetch.py', content: 'print("sunny")\n' },
];
const V2 = [
  { path: 'SKILL.md', content: skillMd('weather-report', { body: '# Weather report\nNow with wind.\n' }) },
  { path: 'scripts/fetch.py', content: 'print("sunny, 12 km/h wind")\n' },
];

type Integrity = {
  name: string;
  version: number;
  skillDigest: string;
  files: { path: string; digest: string }[];
  signature: {
    signer: string;
    value: Hex;
    typedData: {
      domain: Record<string, string>;
      types: typeof SKILL_VERSION_TYPES;
      primaryType: 'SkillVersion';
      message: Record<string, string>;
    };
  } | null;
};

/** What a buyer does offline with a full view: recompute every digest and recover the signer. */
async function verifyOffline(full: { files: { path: string; content: string }[]; integrity: Integrity }) {
  const { integrity } = full;
  for (const f of full.files) {
    const listed = integrity.files.find((x) => x.path === f.path);
    expect(listed?.digest, f.path).to.equal(fileDigest(f.content));
  }
  expect(integrity.files).to.have.length(full.files.length);
  expect(skillDigest(full.files)).to.equal(integrity.skillDigest);
  const sig = integrity.signature!;
  const { domain, types, primaryType, message } = sig.typedData;
  expect(message.digest).to.equal(integrity.skillDigest);
  return recoverTypedDataAddress({
    domain,
    types,
    primaryType,
    message: {
      postId: message.postId!,
      version: BigInt(message.version!),
      name: message.name!,
      digest: message.digest!,
    },
    signature: sig.value,
  });
}

describe('Agent Skills bought: the digest bought is recorded and receipted; a purchase covers every version', function () {
  this.timeout(120_000);
  let svc: TestService;
  let seller: Agent;
  let buyer: Agent;
  let postId: string;
  let paymentId: string;
  const get = (path: string) => fetch(`${svc.url}${path}`);
  const purchases = () =>
    svc.service.runtime.database.db.selectFrom('purchases').selectAll().where('post_id', '=', postId).execute();

  before(async () => {
    svc = await startTestService();
    seller = await registerAgent(svc, 'weather-seller');
    buyer = await registerAgent(svc, 'weather-buyer');
    const created = await seller.api('/api/posts', {
      method: 'POST',
      json: {
        title: 'Weather report',
        preview: 'Writes a weather report.',
        priceAtomic: PRICE.toString(),
        body: { files: V1 },
      },
    });
    postId = (await created.json()).id;
    const versionSignature = await signVersion(seller.account, {
      postId,
      version: 1,
      name: 'weather-report',
      files: V1,
    });
    const published = await seller.api(`/api/posts/${postId}/publish`, { method: 'POST', json: { versionSignature } });
    expect(published.status).to.equal(200);
  });
  after(async () => svc?.stop());

  it('the manifest, before buying, states the skill digest and the signature a buyer will check against', async () => {
    const manifest = await (await get(`/api/posts/${postId}/manifest.json`)).json();
    expect(manifest.integrity).to.deep.include({ name: 'weather-report', version: 1, skillDigest: skillDigest(V1) });
    expect(manifest.content.skillDigest).to.equal(skillDigest(V1));
    expect(manifest.integrity.signature.signer).to.equal(getAddress(seller.address));
  });

  it('the buyer pays once, verifies every file and the seller signature offline, and the purchase names the digest bought', async () => {
    const before = await balanceOf(svc.service.runtime.chain, buyer.address);
    const res = await buyer.payV2(`${svc.url}/api/posts/${postId}?view=full`);
    expect(res.status).to.equal(200);
    paymentId = res.headers.get('x-payment-id')!;
    const full = await res.json();
    expect(await verifyOffline(full)).to.equal(full.author.walletAddress);
    expect(full.author.walletAddress).to.equal(getAddress(seller.address));
    expect(await balanceOf(svc.service.runtime.chain, buyer.address)).to.equal(before - PRICE);

    const rows = await purchases();
    expect(rows).to.have.length(1);
    expect(rows[0]).to.include({ post_version: 1, skill_digest: skillDigest(V1) });
  });

  it("the purchase's receipt states the version and skill digest bought, signed by the receipt key", async () => {
    const receipt = await (await get(`/api/payments/${paymentId}/receipt`)).json();
    expect(receipt.purchase).to.include({ postId, version: 1, digest: skillDigest(V1) });
    expect(receipt.purchase.transaction).to.equal(receipt.payload.transaction);
    const valid = await verifyTypedData({
      address: receipt.signer.address,
      ...receipt.purchase.eip712,
      message: { ...receipt.purchase, version: BigInt(receipt.purchase.version) },
      signature: receipt.purchase.signature,
    });
    expect(valid).to.equal(true);
    const forged = await verifyTypedData({
      address: receipt.signer.address,
      ...receipt.purchase.eip712,
      message: { ...receipt.purchase, version: 1n, digest: skillDigest(V2) },
      signature: receipt.purchase.signature,
    });
    expect(forged).to.equal(false);
  });

  it('a version added later is the buyer’s too: read with its token, no second charge, the first purchase unchanged', async () => {
    const versionSignature = await signVersion(seller.account, {
      postId,
      version: 2,
      name: 'weather-report',
      files: V2,
    });
    const added = await seller.api(`/api/posts/${postId}/versions`, {
      method: 'POST',
      json: { body: { files: V2 }, version: '1.1.0', versionSignature },
    });
    expect(added.status).to.equal(201);

    const before = await balanceOf(svc.service.runtime.chain, buyer.address);
    const res = await buyer.api(`/api/posts/${postId}?view=full`);
    expect(res.status).to.equal(200);
    const full = await res.json();
    expect(full.integrity).to.include({ version: 2, versionLabel: '1.1.0', skillDigest: skillDigest(V2) });
    expect(await verifyOffline(full)).to.equal(getAddress(seller.address));
    expect(await balanceOf(svc.service.runtime.chain, buyer.address)).to.equal(before);
    const rows = await purchases();
    expect(rows).to.have.length(1);
    expect(rows[0]).to.include({ post_version: 1, skill_digest: skillDigest(V1) });

    // Someone who did not buy still meets the paywall for the new version.
    const stranger = await registerAgent(svc, 'weather-stranger');
    expect((await stranger.api(`/api/posts/${postId}?view=full`)).status).to.equal(402);
  });

  it("the feed entry, the seller's A2A card skill and the manifest name the current version's digest", async () => {
    const digest = skillDigest(V2);
    const item = await eventually(async () => {
      const page = await (await get('/api/discovery/posts.json?limit=100')).json();
      const found = page.items.find((i: { id: string }) => i.id === postId);
      return found?.skillDigest === digest ? found : undefined;
    });
    expect(item).to.include({ name: 'weather-report', version: 2 });

    // The card lists the skill, and its x-market-install extension states the skill's integrity.
    const skill = await eventually(async () => {
      const card = await (await get(`/api/agents/${seller.handle}/agent-card.json`)).json();
      if (!card.skills?.some((s: { id: string }) => s.id === postId)) return undefined;
      const install = card.capabilities.extensions.find((e: { uri: string }) => e.uri.endsWith(INSTALL_EXTENSION_PATH));
      const found = install?.params.skills.find((s: { id: string }) => s.id === postId);
      return found?.skillDigest === digest ? found : undefined;
    });
    expect(skill).to.include({ name: 'weather-report', version: 2, skillDigest: digest, signed: true });

    const manifest = await eventually(async () => {
      const m = await (await get(`/api/posts/${postId}/manifest.json`)).json();
      return m.integrity?.version === 2 ? m : undefined;
    });
    expect(manifest.integrity.skillDigest).to.equal(digest);
  });
});
