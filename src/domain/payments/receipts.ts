import {
  OFFER_RECEIPT,
  signReceiptEIP712,
  type EIP712SignedReceipt,
  type ReceiptPayload,
} from '@x402/extensions/offer-receipt';
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import type { Address, Hex } from 'viem';
import type { Payment } from '../../data/schema.js';

export { OFFER_RECEIPT };
export type { EIP712SignedReceipt };

/** The receipt payload schema version of the x402 offer-receipt extension. */
const RECEIPT_VERSION = 1;

/**
 * Signs x402 `offer-receipt` receipts (EIP-712, domain `{name: "x402 receipt", version: "1",
 * chainId: 1}`) for settled payments with the marketplace's receipt key. A receipt is a function
 * of its payment alone: `issuedAt` is the settlement time and ECDSA signing is deterministic
 * (RFC 6979), so the receipt served later by `GET /api/payments/{id}/receipt` is byte for byte
 * the one in the settlement response.
 */
export class ReceiptIssuer {
  private readonly account: PrivateKeyAccount;
  /** Whether the key was generated for this run (no RECEIPT_PRIVATE_KEY): receipts verify only until a restart. */
  readonly ephemeral: boolean;

  constructor(privateKey: Hex | undefined) {
    this.ephemeral = privateKey === undefined;
    this.account = privateKeyToAccount(privateKey ?? generatePrivateKey());
  }

  /** The address that signs receipts: what a verifier compares `recoverTypedDataAddress` with. */
  get address(): Address {
    return this.account.address;
  }

  /** The key id published beside the address (did:pkh, as the offer-receipt extension names EIP-712 keys). */
  get kid(): string {
    return `did:pkh:eip155:1:${this.account.address}`;
  }

  /** The signed receipt of a settled payment. */
  async receiptFor(payment: Payment): Promise<EIP712SignedReceipt> {
    if (payment.status !== 'settled' || !payment.tx_hash || !payment.settled_at) {
      throw new Error(`payment ${payment.id} is not settled: it has no receipt`);
    }
    const payload = receiptPayloadOf(payment);
    const signature = await signReceiptEIP712(payload, (typed) => this.account.signTypedData(typed as never));
    return { format: 'eip712', payload, signature };
  }
}

/** What a receipt states about a settled payment. */
export function receiptPayloadOf(payment: Payment): ReceiptPayload {
  const settledAt = payment.settled_at === null ? undefined : new Date(payment.settled_at);
  if (!settledAt || !payment.tx_hash) throw new Error(`payment ${payment.id} is not settled`);
  return {
    version: RECEIPT_VERSION,
    network: payment.network,
    resourceUrl: payment.resource,
    payer: payment.payer,
    issuedAt: Math.floor(settledAt.getTime() / 1000),
    transaction: payment.tx_hash,
  };
}
