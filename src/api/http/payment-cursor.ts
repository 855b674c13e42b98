import { z } from 'zod';
import type { ListedPayment, PaymentPosition } from '../../data/payments.repository.js';
import { ValidationError } from '../../platform/errors.js';

/** Cursor of a page of payments: base64url of `<created_at to the microsecond>|<id>` of its last row. */
export const cursorOf = (p: ListedPayment) =>
  Buffer.from(`${p.position.createdAt}|${p.position.id}`).toString('base64url');
/** A stored time as the cursor carries it: UTC, microseconds, years 1970 to 9999. */
const CURSOR_TIME = /^(19[7-9]\d|[2-9]\d{3})-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;
export function positionOf(cursor: string): PaymentPosition {
  const [at, id, rest] = Buffer.from(cursor, 'base64url').toString('utf8').split('|');
  const guid = z.guid().safeParse(id);
  if (rest !== undefined || !CURSOR_TIME.test(at ?? '') || Number.isNaN(Date.parse(at ?? '')) || !guid.success)
    throw new ValidationError('cursor is not one this API gave', [
      { name: 'cursor', in: 'query', reason: 'pass nextCursor of the previous page unchanged' },
    ]);
  return { createdAt: at as string, id: guid.data };
}
