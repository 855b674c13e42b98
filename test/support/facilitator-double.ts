import express from 'express';
import type { Server } from 'node:http';
import type { Facilitator } from '../../src/domain/payments/facilitators/facilitator.js';

export type DoubleMode =
  | { kind: 'ok' }
  | { kind: 'fail' } // every call answers 500
  | { kind: 'slow'; ms: number } // every answer is delayed
  | { kind: 'settle-late'; ms: number } // settles for real, but answers only after `ms`
  // settles for real, but answers as the exact scheme does when the receipt did not come within its
  // confirmation timeout: success false, errorReason settlement_pending, with the transaction
  | { kind: 'settle-pending' }
  | { kind: 'refuse-4xx' } // refuses every payment with 400 and a VerifyResponse body, as some facilitators do
  | { kind: 'hang' }; // accepts every connection and never answers, as a wedged facilitator does

/**
 * A remote x402 facilitator speaking the real facilitator HTTP API (`GET /supported`,
 * `POST /verify`, `POST /settle` with `{x402Version, paymentPayload, paymentRequirements}`),
 * backed by a real facilitator on the test chain. Tests switch it between healthy, failing,
 * slow, hung and down. `calls` counts every request received, answered or not.
 */
export class FacilitatorDouble {
  mode: DoubleMode = { kind: 'ok' };
  calls = { supported: 0, verify: 0, settle: 0 };
  private server: Server | undefined;
  private port = 0;

  constructor(private readonly backend: Facilitator) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async start(port = 0): Promise<this> {
    const app = express();
    app.use(express.json({ limit: '1mb' }));
    const gate = async (res: express.Response): Promise<boolean> => {
      // Never answered: the client's deadline (or `stop`, which cuts the connection) ends it.
      if (this.mode.kind === 'hang') return false;
      if (this.mode.kind === 'fail') {
        res.status(500).json({ error: 'facilitator double: failing on purpose' });
        return false;
      }
      if (this.mode.kind === 'slow') await new Promise((r) => setTimeout(r, (this.mode as { ms: number }).ms));
      return true;
    };
    app.get('/supported', async (_req, res) => {
      this.calls.supported += 1;
      if (await gate(res)) res.json(await this.backend.supported());
    });
    for (const op of ['verify', 'settle'] as const) {
      app.post(`/${op}`, async (req, res) => {
        this.calls[op] += 1;
        const { paymentPayload, paymentRequirements } = req.body ?? {};
        if (!paymentPayload || !paymentRequirements) {
          res.status(400).json({ error: 'paymentPayload and paymentRequirements are required' });
          return;
        }
        if (!(await gate(res))) return;
        if (this.mode.kind === 'refuse-4xx') {
          res.status(400).json(
            op === 'verify'
              ? { isValid: false, invalidReason: 'invalid_exact_evm_signature' }
              : {
                  success: false,
                  errorReason: 'invalid_exact_evm_signature',
                  transaction: '',
                  network: 'eip155:84532',
                },
          );
          return;
        }
        try {
          const result = await this.backend[op]({
            x402Version: paymentPayload.x402Version,
            payload: paymentPayload,
            requirements: paymentRequirements,
          });
          if (op === 'settle' && this.mode.kind === 'settle-late')
            await new Promise((r) => setTimeout(r, (this.mode as { ms: number }).ms));
          if (op === 'settle' && this.mode.kind === 'settle-pending' && 'transaction' in result) {
            res.json({
              ...result,
              success: false,
              errorReason: 'settlement_pending',
              errorMessage: 'Timed out while waiting for transaction with hash to be confirmed.',
            });
            return;
          }
          res.json(result);
        } catch (err) {
          res.status(500).json({ error: (err as Error).message });
        }
      });
    }
    await new Promise<void>((resolve) => {
      this.server = app.listen(port, '127.0.0.1', () => {
        this.port = (this.server!.address() as { port: number }).port;
        resolve();
      });
    });
    return this;
  }

  /** Takes the facilitator off the network (connection refused) until `start` again on the same port. */
  async stop(): Promise<void> {
    const s = this.server;
    this.server = undefined;
    if (!s) return;
    s.closeAllConnections();
    await new Promise<void>((r) => s.close(() => r()));
  }

  async restart(): Promise<void> {
    await this.start(this.port);
  }
}
