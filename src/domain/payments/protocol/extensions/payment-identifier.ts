import { PAYMENT_IDENTIFIER, validatePaymentIdentifier } from '@x402/extensions/payment-identifier';
import { AppError } from '../../../../platform/errors.js';
import type { DecodedPayment } from '../x402-codec.js';

/** A `payment-identifier` the client sent that is not one: 400, before anything is claimed. */
export class InvalidPaymentIdentifierError extends AppError {
  constructor(detail: string) {
    super(400, 'invalid_payment_identifier', `The payment-identifier extension is malformed: ${detail}`);
  }
}

/**
 * The client's idempotency key of a v2 payment (`extensions["payment-identifier"].info.id`, 16
 * to 128 of `[A-Za-z0-9_-]`), undefined when it sent none. v1 payloads carry no extensions.
 * Throws InvalidPaymentIdentifierError for a malformed extension.
 */
export function paymentIdentifierOf(decoded: DecodedPayment): string | undefined {
  if (decoded.version !== 2) return undefined;
  const extensions = decoded.payload.extensions;
  if (extensions === undefined || extensions === null) return undefined;
  if (typeof extensions !== 'object') throw new InvalidPaymentIdentifierError('extensions must be an object');
  if (!Object.hasOwn(extensions, PAYMENT_IDENTIFIER)) return undefined;
  const extension = extensions[PAYMENT_IDENTIFIER];
  if (typeof extension !== 'object' || extension === null)
    throw new InvalidPaymentIdentifierError('Extension must be an object');
  // Checked by the extension's own rules, never by the `schema` the client echoes back: a schema
  // the client writes would decide the answer, and compiling it (a backtracking pattern) could
  // hold the event loop for as long as it likes.
  const checked = validatePaymentIdentifier({ info: (extension as { info?: unknown }).info });
  if (!checked.valid) throw new InvalidPaymentIdentifierError((checked.errors ?? []).join('; ') || 'invalid');
  const { id } = (extension as { info: { id?: string } }).info;
  return id;
}
