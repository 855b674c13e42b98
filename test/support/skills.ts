import type { Hex, PrivateKeyAccount } from 'viem';
import { skillDigest, type SkillFile } from '@skill-market/skill-protocol/skill-digest';
import { versionTypedData } from '@skill-market/skill-protocol/version-signature';

/**
 * A valid SKILL.md (Agent Skills format) named `name`: frontmatter with the name and a
 * description, then `body` (a heading by default). `frontmatter` adds lines to the frontmatter.
 */
export function skillMd(
  name: string,
  extra: { description?: string; body?: string; frontmatter?: string } = {},
): string {
  const description = extra.description ?? `Does what ${name} says, when an agent needs it.`;
  return `---\nname: ${name}\ndescription: ${JSON.stringify(description)}\n${extra.frontmatter ?? ''}---\n${
    extra.body ?? `# ${name}\n`
  }`;
}

/** A skill's folder for a post body: SKILL.md named `name` plus any other files. */
export function skillBody(name: string, body?: string, others: SkillFile[] = []): { files: SkillFile[] } {
  return { files: [{ path: 'SKILL.md', content: skillMd(name, body === undefined ? {} : { body }) }, ...others] };
}

/** A skill name made of a title: lowercase letters, digits and single hyphens. */
export function skillName(title: string): string {
  return (
    title
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-+|-+$/g, '')
      .slice(0, 56)
      .replace(/-+$/, '') || 'skill'
  );
}

/** The seller's EIP-712 signature of a version of its files, as publish and the signature route take it. */
export function signVersion(
  account: PrivateKeyAccount,
  v: { postId: string; version: number; name: string; files?: SkillFile[]; digest?: string },
): Promise<Hex> {
  const digest = v.digest ?? skillDigest(v.files ?? []);
  return account.signTypedData(versionTypedData({ postId: v.postId, version: v.version, name: v.name, digest }));
}

/**
 * Creates a post of `skill`'s folder for `seller` and publishes its first version signed by the
 * seller's wallet; the post's id.
 */
export async function publishSignedSkill(
  seller: {
    account: PrivateKeyAccount;
    api(path: string, init?: { method?: string; json?: unknown }): Promise<Response>;
  },
  post: { title: string; preview: string; priceAtomic: string; tags: string[]; skill: string },
): Promise<string> {
  const { files } = skillBody(post.skill);
  const { skill: _skill, ...fields } = post;
  const created = await seller.api('/api/posts', { method: 'POST', json: { ...fields, body: { files } } });
  if (created.status !== 201) throw new Error(`create failed: ${created.status} ${await created.text()}`);
  const { id, integrity } = await created.json();
  const versionSignature = await signVersion(seller.account, { postId: id, version: 1, name: integrity.name, files });
  const published = await seller.api(`/api/posts/${id}/publish`, { method: 'POST', json: { versionSignature } });
  if (published.status !== 200) throw new Error(`publish failed: ${published.status} ${await published.text()}`);
  return id;
}
