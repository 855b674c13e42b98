import {
  OFFER_RECEIPT,
  signReceiptEIP712,
  type EIP712SignedReceipt,
  type ReceiptPayload,
} from '@x402/extensions/offer-receipt';
import { privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import type { Address, Hex, TypedData, TypedDataDefinition } from 'viem';
import type { Payment } from '../../../../data/schema.js';

/** What a receipt states about a settled payment (the columns its signer reads). */
type SettlementFacts = Pick<Payment, 'id' | 'status' | 'network' | 'resource' | 'payer' | 'tx_hash' | 'settled_at'>;
import { signTypedDataWith } from '../../../../platform/secp256k1.js';

export { OFFER_RECEIPT };
export type { EIP712SignedReceipt };

/** How many signed receipts an issuer keeps (a busy seller's mirror re-renders its last 100 sales). */
const SIGNED_RECEIPTS_KEPT = 20_000;

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
  private readonly privateKey: Hex;
  /**
   * Receipts signed already, by payment, transaction and settlement time: a receipt is a function
   * of those alone, so the one signed for the paid answer serves the seller's reputation mirror and
   * every replay. Oldest first out (a Map iterates in insertion order).
   */
  private readonly signed = new Map<string, EIP712SignedReceipt>();

  /** `privateKey`: RECEIPT_PRIVATE_KEY, or the development key kept in DATA_DIR (src/bootstrap/secrets.ts). */
  constructor(privateKey: Hex) {
    this.privateKey = privateKey;
    this.account = privateKeyToAccount(this.privateKey);
  }

  /** The address that signs receipts: what a verifier compares `recoverTypedDataAddress` with. */
  get address(): Address {
    return this.account.address;
  }

  /** The key id published beside the address (did:pkh, as the offer-receipt extension names EIP-712 keys). */
  get kid(): string {
    return `did:pkh:eip155:1:${this.account.address}`;
  }

  /**
   * The marketplace's statement of what a purchase bought, signed with the receipt key: EIP-712
   * `SkillPurchase{transaction, postId, version, digest}` in the domain `{name: "Skill Market",
   * version: "1"}`. The x402 receipt states the payment; this binds its transaction to the skill
   * version and the skill digest the buyer received. Deterministic, like the receipt.
   */
  async purchaseStatement(p: PurchaseStatement) {
    const typed = purchaseTypedData();
    const message = { transaction: p.transaction, postId: p.postId, version: BigInt(p.version), digest: p.digest };
    const signature = signTypedDataWith(this.privateKey, { ...typed, message });
    return { ...p, signature, eip712: typed };
  }

  /**
   * Signs a statement of the marketplace (a review attestation, a refund receipt: EIP-712 typed
   * data in the domain `{name: "Skill Market", version: "1"}`) with the receipt key, so a reader
   * checks it against the same address as the receipts. Deterministic, like the receipt.
   */
  signStatement<const T extends TypedData | Record<string, unknown>, P extends keyof T | 'EIP712Domain'>(
    typed: TypedDataDefinition<T, P>,
  ): Hex {
    return signTypedDataWith(this.privateKey, typed);
  }

  /** The signed receipt of a settled payment. */
  async receiptFor(payment: SettlementFacts): Promise<EIP712SignedReceipt> {
    if (payment.status !== 'settled' || !payment.tx_hash || !payment.settled_at) {
      throw new Error(`payment ${payment.id} is not settled: it has no receipt`);
    }
    const key = `${payment.id}:${payment.tx_hash}:${new Date(payment.settled_at).getTime()}`;
    const known = this.signed.get(key);
    if (known) return known;
    const payload = receiptPayloadOf(payment);
    const signature = await signReceiptEIP712(payload, async (typed) =>
      signTypedDataWith(this.privateKey, typed as never),
    );
    const receipt: EIP712SignedReceipt = { format: 'eip712', payload, signature };
    if (this.signed.size >= SIGNED_RECEIPTS_KEPT) this.signed.delete(this.signed.keys().next().value as string);
    this.signed.set(key, receipt);
    return receipt;
  }
}

/** What a purchase bought: the skill version and its skill digest, paid by `transaction`. */
export interface PurchaseStatement {
  transaction: string;
  postId: string;
  version: number;
  /** `sha256:<hex>`, the skill digest of the version bought. */
  digest: string;
}

/** The EIP-712 definition of the purchase statement (`message.version` is a uint256). */
export const purchaseTypedData = () => ({
  domain: { name: 'Skill Market', version: '1' },
  types: {
    SkillPurchase: [
      { name: 'transaction', type: 'string' },
      { name: 'postId', type: 'string' },
      { name: 'version', type: 'uint256' },
      { name: 'digest', type: 'string' },
    ],
  },
  primaryType: 'SkillPurchase' as const,
});

/** What a receipt states about a settled payment. */
export function receiptPayloadOf(payment: SettlementFacts): ReceiptPayload {
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
