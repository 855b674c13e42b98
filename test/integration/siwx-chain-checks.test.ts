import { expect } from 'chai';
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { decodePaymentRequiredHeader } from '@x402/core/http';
import {
  createSIWxPayload,
  encodeSIWxHeader,
  SIGN_IN_WITH_X,
  type SIWxExtension,
} from '@x402/extensions/sign-in-with-x';
import { startDevChain, type DevChain } from '../../src/platform/chain/devchain.js';
import { ChainCheckBudget } from '../../src/domain/payments/paywall/sign-in-with-x.js';
import { startCountingRpcProxy, type CountingRpcProxy } from '../support/rpc-proxy.js';
import { chainEnvOf } from '../support/topology.js';
import { startTestService, type TestService } from '../support/service.js';

const QUIET_SCHEDULE = { SITE_CARD_CRON: '0 0 1 1 *', POPULATION_CRON: '0 0 1 1 *', RECOMPUTE_CRON: '0 0 1 1 *' };

describe('Sign-In-With-X proofs cost at most one chain call per client per window', function () {
  this.timeout(60_000);
  let devChain: DevChain;
  let rpc: CountingRpcProxy;
  let svc: TestService;
  const verifyUrl = () => `${svc.url}/api/agents/verify`;

  before(async () => {
    devChain = await startDevChain();
    rpc = await startCountingRpcProxy(devChain.rpcUrl);
    // No scheduled job reads the chain meanwhile: the counts are the proofs' own.
    svc = await startTestService({ ...chainEnvOf(devChain), RPC_URL: rpc.url, ...QUIET_SCHEDULE });
  });
  after(async () => {
    await svc?.stop();
    await rpc?.close();
    await devChain?.stop();
  });

  /** A proof for the sign-in route signed by `signer`, naming `named` as its wallet. */
  async function proof(signer: PrivateKeyAccount, named = signer.address): Promise<string> {
    const challenge = await fetch(verifyUrl(), { method: 'POST' });
    const required = decodePaymentRequiredHeader(challenge.headers.get('payment-required')!);
    const ext = required.extensions![SIGN_IN_WITH_X] as SIWxExtension;
    const info = { ...ext.info, chainId: ext.supportedChains[0]!.chainId, type: 'eip191' as const };
    const payload = await createSIWxPayload(info, signer, `${new URL(info.uri).protocol}//${info.domain}/`);
    return encodeSIWxHeader({ ...payload, address: named });
  }

  const send = async (header: string) => {
    const res = await fetch(verifyUrl(), { method: 'POST', headers: { [SIGN_IN_WITH_X]: header } });
    return { status: res.status, code: ((await res.json()) as { code: string }).code };
  };
  const ethCalls = () => rpc.calls.get('eth_call') ?? 0;

  it("a plain wallet's proof is checked without the chain", async () => {
    const wallet = privateKeyToAccount(generatePrivateKey());
    const before = ethCalls();
    // Signed by the wallet it names: proved, and refused only because that wallet has no agent.
    expect(await send(await proof(wallet))).to.deep.equal({ status: 402, code: 'siwx_no_agent' });
    expect(ethCalls()).to.equal(before);
  });

  it('forged proofs from one client: the first is checked on chain, the rest refused without a call', async () => {
    const victim = privateKeyToAccount(generatePrivateKey()).address;
    const forger = privateKeyToAccount(generatePrivateKey());
    const headers = await Promise.all(Array.from({ length: 6 }, () => proof(forger, victim)));
    const before = ethCalls();
    expect(await send(headers[0]!)).to.deep.equal({ status: 402, code: 'invalid_siwx_signature' });
    expect(ethCalls()).to.equal(before + 1);
    for (const header of headers.slice(1)) {
      expect(await send(header)).to.deep.equal({ status: 402, code: 'siwx_chain_check_limited' });
    }
    expect(ethCalls(), 'one chain call for six forged proofs').to.equal(before + 1);
  });

  it('the budget is per client and comes back after the window', () => {
    let now = 1_000_000;
    const budget = new ChainCheckBudget(60_000, 2, () => now);
    expect(budget.take('a')).to.equal(true);
    expect(budget.take('a')).to.equal(false);
    expect(budget.take('b')).to.equal(true);
    now += 59_999;
    expect(budget.take('a')).to.equal(false);
    now += 1;
    expect(budget.take('a')).to.equal(true);
    // Past its size the oldest client is forgotten, so memory stays bounded.
    expect(budget.take('c')).to.equal(true);
    expect(budget.take('b')).to.equal(true);
  });
});
