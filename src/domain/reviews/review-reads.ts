import type { Executor } from '../../data/db.js';
import { findPostWithAuthor } from '../../data/posts.repository.js';
import { readSkillRating, readSkillReviews } from '../../data/reviews.repository.js';
import { REVIEWS_LISTED, skillReviewsDocument } from '../../documents/posts/skill-reviews.document.js';
import { GoneError, NotFoundError } from '../../platform/errors.js';

/** A published skill's reviews.json, or undefined for a skill that is not published. */
export async function renderReviewsOf(db: Executor, baseUrl: string, postId: string) {
  const post = await findPostWithAuthor(db, postId);
  if (post?.status !== 'published') return undefined;
  const [rating, reviews, seller] = await Promise.all([
    readSkillRating(db, postId),
    readSkillReviews(db, postId, REVIEWS_LISTED),
    db.selectFrom('agents').select('token_id').where('id', '=', post.author_id).executeTakeFirst(),
  ]);
  return skillReviewsDocument.render({
    postId,
    rating,
    reviews,
    sellerOnChain: Boolean(seller?.token_id),
    baseUrl,
  });
}

/** The API's answer for reviews.json: 404 for no published skill, 410 for a removed one. */
export async function readReviewsDocument(db: Executor, baseUrl: string, postId: string) {
  const doc = await renderReviewsOf(db, baseUrl, postId);
  if (doc) return doc;
  const post = await findPostWithAuthor(db, postId);
  if (post?.status === 'removed') throw new GoneError('This skill was taken down', 'post_removed');
  throw new NotFoundError('No published skill has this id', 'post_not_found');
}
