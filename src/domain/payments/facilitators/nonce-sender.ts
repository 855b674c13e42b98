import { keccak256, type Address, type Hex, type PublicClient } from 'viem';

/** What a sent transaction is known by: its hash and nonce, or its hash and why its fate is unknown. */
export type SendResult = { hash: Hex; nonce: number } | { hash: Hex; lost: unknown };

/**
 * The one owner of an account's transaction nonces in this process: it counts them locally, so
 * pipelined transactions need no round trip each, and reads the node's pending count again when
 * the count may have drifted.
 */
export class NonceSender {
  /** The next nonce to send with; undefined means "ask the node for its pending count". */
  private next: number | undefined;

  constructor(
    private readonly opts: {
      address: Address;
      client: Pick<PublicClient, 'getTransactionCount'>;
      /** Sends the signed transaction once, never retried by the transport (see withFreshNonceOnConflict). */
      sendRawTransaction(serialized: Hex): Promise<Hex>;
    },
  ) {}

  /**
   * Signs with the next nonce and sends once. A refusal for a taken nonce (another process with the
   * same key, or a count that drifted) means the node did not take this transaction: read the
   * pending count again and resend. Any other error leaves it unknown whether the node took it
   * (`lost`); nothing signed (the nonce could not be read) means nothing was sent, and it throws.
   */
  async send(sign: (nonce: number) => Promise<Hex>): Promise<SendResult> {
    let attempt: { hash: Hex; nonce: number } | undefined;
    try {
      return await withFreshNonceOnConflict(
        async () => {
          this.next ??= await this.opts.client.getTransactionCount({ address: this.opts.address, blockTag: 'pending' });
          const nonce = this.next;
          const serialized = await sign(nonce);
          attempt = { hash: keccak256(serialized), nonce };
          await this.opts.sendRawTransaction(serialized);
          this.next = nonce + 1;
          return attempt;
        },
        () => this.forget(),
      );
    } catch (err) {
      if (!attempt) throw err;
      this.forget();
      return { hash: attempt.hash, lost: err };
    }
  }

  /** The local count may be wrong (a transaction dropped or replaced): the next send asks the node. */
  forget(): void {
    this.next = undefined;
  }
}

/**
 * The node refused the transaction because its nonce was taken: another process settles with the
 * same key (replicas sharing FACILITATOR_PRIVATE_KEY, which docs/operations.md advises against), or
 * the local count drifted. `send` must make exactly one eth_sendRawTransaction attempt (a transport
 * without retries): then the refusal means this transaction was not accepted, and it is safe to
 * forget the local count, read the pending one again and resend. Even a wrong guess cannot charge
 * twice (the EIP-3009 authorization nonce is single-use); it could only fail a resend.
 */
export async function withFreshNonceOnConflict<T>(
  send: () => Promise<T>,
  resetNonce: () => void,
  attempts = 6,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await send();
    } catch (err) {
      if (attempt >= attempts || !isNonceConflict(err)) throw err;
      resetNonce();
      await new Promise((r) => setTimeout(r, 5 + Math.random() * 20 * attempt));
    }
  }
}

/**
 * The node's words for a taken nonce. Nodes answer it only as text (in the message, or in viem's
 * `details`), with no code of its own to test instead.
 */
export function isNonceConflict(err: unknown): boolean {
  const message = err instanceof Error ? err.message : '';
  const details = typeof err === 'object' && err !== null && 'details' in err ? String(err.details ?? '') : '';
  return /nonce too low|nonce.*lower than the current|replacement transaction underpriced/i.test(
    `${message} ${details}`,
  );
}
