import type { PostVersion, PostWithAuthor } from '../../data/posts.repository.js';
import { skillPageDocument } from '../../documents/pages/pages.document.js';
import type { SkillPageView } from '../../documents/pages/skill-page.renderer.js';
import type { SiteInfo } from '../../documents/site-info.js';

/** A published post's page, from the post and its current version (what its manifest states). */
export function skillPageView(post: PostWithAuthor, version: PostVersion, site: SiteInfo): SkillPageView {
  return {
    baseUrl: site.baseUrl,
    network: site.network,
    post: {
      id: post.id,
      title: post.title,
      preview: post.preview,
      priceAtomic: post.price_atomic,
      tags: post.tags,
      authorHandle: post.author_handle,
      authorWallet: post.author_wallet,
    },
    version: {
      number: post.current_version,
      label: version.version_label,
      files: (version.body.files ?? []).length,
      bytes: version.body_bytes,
      skillName: version.skill_name,
      digest: version.skill_digest,
      signedBy: version.signer,
    },
  };
}

/** The skill page's HTML. */
export const renderSkillPageOf = (post: PostWithAuthor, version: PostVersion, site: SiteInfo) =>
  skillPageDocument.render(skillPageView(post, version, site));
