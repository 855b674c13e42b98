import { expect } from 'chai';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { wrapFetchWithPaymentFromConfig, x402Client } from '@x402/fetch';
import { DEFAULT_MAX_AMOUNT_PER_PAYMENT } from '@x402/core/client';
import { decodePaymentRequiredHeader, decodePaymentResponseHeader } from '@x402/core/http';
import type { Network, PaymentRequired } from '@x402/core/types';
import { ExactEvmScheme } from '@x402/evm/exact/client';
import { startTestService, type TestService } from '../support/service.js';
import { balanceOf } from '../support/buyers.js';
import { postVerify, signedVerifyBody } from '../support/sign-in.js';

/**
 * Registration costs 1 USDC, exactly the stock x402 client's default cap per payment
 * (`DEFAULT_MAX_AMOUNT_PER_PAYMENT`, "$1", since @x402/core 2.25). These tests pay it with the
 * stock client's default spend controls, never a raised cap: a cap that stops at 1 USDC
 * (exclusive, or a price above it) would fail them.
 */
describe('registration with a stock x402 client and its default spend controls', function () {
  this.timeout(60_000);
  let svc: TestService;
  const chain = () => svc.service.runtime.chain;

  before(async () => {
    svc = await startTestService();
  });
  after(async () => svc?.stop());

  it('the stock cap is $1 and registration asks exactly 1 USDC of it', async () => {
    expect(DEFAULT_MAX_AMOUNT_PER_PAYMENT).to.equal('$1');
    const res = await postVerify(
      svc.url,
      await signedVerifyBody(svc.url, privateKeyToAccount(generatePrivateKey()), 'cap-probe'),
    );
    const required = decodePaymentRequiredHeader(res.headers.get('payment-required')!);
    expect(required.accepts[0]).to.include({ amount: '1000000', asset: chain().usdc.address });
  });

  it('on Base the stock client, configured with nothing but its scheme, accepts the registration: USDC is a default asset and 1 USDC is within $1', async () => {
    const res = await postVerify(
      svc.url,
      await signedVerifyBody(svc.url, privateKeyToAccount(generatePrivateKey()), 'base-buyer'),
    );
    const ours = decodePaymentRequiredHeader(res.headers.get('payment-required')!);
    // The same 402 as production serves it: on Base Sepolia and Base, with their USDC.
    const onBase = (network: Network, asset: string, name: string, amount = '1000000'): PaymentRequired => ({
      ...ours,
      accepts: ours.accepts.map((a) => ({ ...a, network, asset, amount, extra: { ...a.extra, name, version: '2' } })),
    });
    const stock = (network: Network) =>
      new x402Client().register(network, new ExactEvmScheme(privateKeyToAccount(generatePrivateKey())));
    for (const [network, asset, name] of [
      ['eip155:84532', '0x036CbD53842c5426634e7929541eC2318f3dCF7e', 'USDC'],
      ['eip155:8453', '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913', 'USD Coin'],
    ] as const) {
      const payload = await stock(network).createPaymentPayload(onBase(network, asset, name));
      expect(payload.accepted, network).to.include({ amount: '1000000', asset });
      // One atomic unit more is past the default cap: the cap is what these tests check.
      let refused: unknown;
      await stock(network)
        .createPaymentPayload(onBase(network, asset, name, '1000001'))
        .catch((err: unknown) => {
          refused = err;
        });
      expect(String(refused), network).to.include('spendControls.maxAmountPerPayment ($1');
    }
  });

  it('on the local chain, wrapFetchWithPaymentFromConfig registers an agent with allowedAssets for the local token alone, at the default cap', async () => {
    const account = privateKeyToAccount(generatePrivateKey());
    await chain().faucet!(account.address, 5_000_000n);
    const network = chain().network as Network;
    const schemes = [{ network, client: new ExactEvmScheme(account) }];
    const body = await signedVerifyBody(svc.url, account, 'stock-client');

    // Untouched defaults: the local token is no known stablecoin, so the stock client refuses it.
    const untouched = wrapFetchWithPaymentFromConfig(fetch, { schemes });
    let refused: unknown;
    await postVerify(svc.url, body, untouched as typeof fetch).catch((err: unknown) => {
      refused = err;
    });
    expect(String(refused)).to.include('only default assets or entries in spendControls.allowedAssets are allowed');

    // Allowing the token, capped at what the default $1 is for a 6-decimal USDC: no cap is raised.
    const pay = wrapFetchWithPaymentFromConfig(fetch, {
      schemes,
      spendControls: { allowedAssets: [{ network, asset: chain().usdc.address, maxAmountPerPayment: '1000000' }] },
    });
    const treasuryBefore = await balanceOf(chain(), chain().treasury);
    const paid = await postVerify(svc.url, body, pay as typeof fetch);
    expect(paid.status, await paid.clone().text()).to.equal(200);
    expect(await paid.json()).to.deep.include({ action: 'register' });
    expect(decodePaymentResponseHeader(paid.headers.get('payment-response')!).success).to.equal(true);
    expect(await balanceOf(chain(), chain().treasury)).to.equal(treasuryBefore + 1_000_000n);
    expect(await balanceOf(chain(), account.address)).to.equal(4_000_000n);
  });
});
