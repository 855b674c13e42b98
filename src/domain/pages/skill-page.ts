import type { Db } from '../../data/db.js';
import {
  readSkillPageFigures,
  type PostVersion,
  type PostWithAuthor,
  type SkillPageFigures,
} from '../../data/posts.repository.js';
import { skillPageDocument } from '../../documents/pages/pages.document.js';
import type { SkillPageView } from '../../documents/pages/skill-page.renderer.js';
import type { SiteInfo } from '../../documents/site-info.js';
import { storedAudit } from '../../documents/posts/skill-audit.document.js';
import { renderReviewsOf } from '../reviews/review-reads.js';
import { readFrontmatter } from '@skill-market/skill-protocol/skill-frontmatter';

/** The SKILL.md frontmatter `description` of a version, if it has one. */
function descriptionOf(version: PostVersion): string | null {
  const skillMd = (version.body.files ?? []).find((f) => f.path === 'SKILL.md');
  const description = skillMd ? readFrontmatter(skillMd.content)?.description?.trim() : undefined;
  return description ? description : null;
}

/** A published post's page, from the post, its current version (what its manifest states) and its figures. */
export function skillPageView(
  post: PostWithAuthor,
  version: PostVersion,
  figures: SkillPageFigures,
  site: SiteInfo,
): SkillPageView {
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
    description: descriptionOf(version),
    sales: { sales: figures.sales, buyers: figures.buyers },
    version: {
      number: post.current_version,
      label: version.version_label,
      files: (version.body.files ?? []).length,
      bytes: version.body_bytes,
      skillName: version.skill_name,
      digest: version.skill_digest,
      signedBy: version.signer,
    },
    audit: auditOf(version),
  };
}

/** The page's audit: the stored one, its warn and fail findings only (info findings are in the report). */
function auditOf(version: PostVersion): SkillPageView['audit'] {
  const audit = storedAudit(version);
  if (!audit) return null;
  return {
    verdict: audit.verdict,
    counts: audit.counts,
    overridden: audit.override !== null,
    findings: audit.findings.filter((f) => f.severity !== 'info'),
  };
}

/** The skill page's HTML as of now: the post, its current version and its sales. */
export async function renderSkillPageOf(
  db: Db,
  post: PostWithAuthor,
  version: PostVersion,
  site: SiteInfo,
): Promise<string> {
  const [figures, reviews] = await Promise.all([
    readSkillPageFigures(db, post.id),
    renderReviewsOf(db, site.baseUrl, post.id),
  ]);
  return skillPageDocument.render({ ...skillPageView(post, version, figures, site), ...(reviews ? { reviews } : {}) });
}
