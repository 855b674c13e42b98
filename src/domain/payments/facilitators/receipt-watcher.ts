import type { Address, Hex, PublicClient, TransactionReceipt } from 'viem';

/** How many receipt polls pass between looks at whether the transaction's nonce was taken by another one. */
const NONCE_CHECK_EVERY = 8;

/**
 * Waits for a sent transaction's receipt, and notices when none will come: the account's mined
 * nonce passed the transaction's own without it (replaced), or the confirmation timeout passed
 * (dropped or stuck).
 */
export class ReceiptWatcher {
  constructor(
    private readonly opts: {
      address: Address;
      client: Pick<PublicClient, 'getTransactionReceipt' | 'getTransactionCount'>;
      pollingIntervalMs: number;
      confirmationTimeoutMs: number;
      /** The clock deadlines are read from (tests inject one). */
      now?: () => number;
      /** Waits between polls (tests inject one). */
      wait?: (ms: number) => Promise<void>;
    },
  ) {}

  /** The receipt of the transaction sent with `hash` and `nonce`, or undefined when it will not come. */
  async receiptOf(hash: Hex, nonce: number): Promise<TransactionReceipt | undefined> {
    const { client, address } = this.opts;
    const now = this.opts.now ?? Date.now;
    const wait = this.opts.wait ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
    const deadline = now() + this.opts.confirmationTimeoutMs;
    for (let poll = 0; ; poll++) {
      const receipt = await client.getTransactionReceipt({ hash }).catch(() => undefined);
      if (receipt) return receipt;
      if (now() >= deadline) return undefined;
      if (poll % NONCE_CHECK_EVERY === NONCE_CHECK_EVERY - 1) {
        const mined = await client.getTransactionCount({ address, blockTag: 'latest' });
        // Mined past this nonce: the receipt may have landed just now; else another transaction took the nonce.
        if (mined > nonce) return client.getTransactionReceipt({ hash }).catch(() => undefined);
      }
      await wait(this.opts.pollingIntervalMs);
    }
  }
}
