import { expect } from 'chai';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { decodePaymentResponseHeader } from '@x402/core/http';
import { decodeXPaymentResponse } from 'x402-fetch';
import { startTestService, type TestService } from '../support/service.js';
import { balanceOf, identifiedPayer, newBuyer } from '../support/buyers.js';
import { postVerify, requestChallenge, signedVerifyBody } from '../support/sign-in.js';

const ONE_USDC = 1_000_000n;

describe('registration and login (x402, EIP-4361, JWT)', function () {
  this.timeout(60_000);
  let svc: TestService;
  const chain = () => svc.service.runtime.chain;

  before(async () => {
    svc = await startTestService();
  });
  after(async () => svc?.stop());

  it('a new agent registers by paying 1 USDC with the official v2 client and gets a JWT', async () => {
    const buyer = await newBuyer(chain());
    const treasuryBefore = await balanceOf(chain(), chain().treasury);
    const body = await signedVerifyBody(svc.url, buyer.account, 'alice-v2');

    const unpaid = await postVerify(svc.url, body);
    expect(unpaid.status).to.equal(402);
    expect(unpaid.headers.get('payment-required')).to.be.a('string');
    const challenge = await unpaid.json();
    expect(challenge).to.include({ x402Version: 1, code: 'payment_required' });
    expect(challenge.accepts[0]).to.include({
      maxAmountRequired: '1000000',
      network: 'base-sepolia',
      payTo: chain().treasury,
    });

    const paid = await postVerify(svc.url, body, buyer.payV2);
    expect(paid.status).to.equal(200);
    const signedIn = await paid.json();
    expect(signedIn.action).to.equal('register');
    expect(signedIn.agent).to.include({ handle: 'alice-v2', walletAddress: buyer.address });
    expect(signedIn.token).to.match(/^ey/);
    const receipt = decodePaymentResponseHeader(paid.headers.get('payment-response')!);
    expect(receipt.success).to.equal(true);
    expect(receipt.transaction).to.match(/^0x[0-9a-f]{64}$/);

    expect(await balanceOf(chain(), buyer.address)).to.equal(10_000_000n - ONE_USDC);
    expect(await balanceOf(chain(), chain().treasury)).to.equal(treasuryBefore + ONE_USDC);

    const payment = await (await fetch(`${svc.url}/api/payments/${signedIn.paymentId}`)).json();
    expect(payment).to.include({
      status: 'settled',
      purpose: 'registration',
      amount: '1000000',
      txHash: receipt.transaction,
    });
    expect(payment).to.not.have.property('payer');

    const me = await fetch(`${svc.url}/api/agents/me`, { headers: { authorization: `Bearer ${signedIn.token}` } });
    expect(me.status).to.equal(200);
    expect((await me.json()).handle).to.equal('alice-v2');
  });

  it("a paid registration states each x402 extension's outcome in EXTENSION-RESPONSES, which a browser may read", async () => {
    const decode = (res: Response) => {
      const header = res.headers.get('extension-responses');
      expect(header, 'EXTENSION-RESPONSES').to.be.a('string');
      return JSON.parse(Buffer.from(header!, 'base64').toString('utf8'));
    };
    const plain = await newBuyer(chain());
    const paid = await postVerify(svc.url, await signedVerifyBody(svc.url, plain.account, 'dana-ext'), plain.payV2);
    expect(paid.status).to.equal(200);
    expect(decode(paid)).to.deep.equal({ bazaar: { status: 'success' }, 'offer-receipt': { status: 'success' } });

    // With a payment-identifier, its outcome too.
    const identified = await newBuyer(chain());
    const { pay } = identifiedPayer(chain(), identified.account, 'registration-ext-0001');
    const again = await postVerify(svc.url, await signedVerifyBody(svc.url, identified.account, 'erin-ext'), pay);
    expect(again.status).to.equal(200);
    expect(decode(again)).to.deep.equal({
      bazaar: { status: 'success' },
      'offer-receipt': { status: 'success' },
      'payment-identifier': { status: 'success' },
    });

    // A 402 carries none: nothing was settled.
    expect((await postVerify(svc.url, '')).headers.get('extension-responses')).to.equal(null);
    const preflight = await fetch(`${svc.url}/api/agents/verify`, { method: 'OPTIONS' });
    const exposed = preflight.headers.get('access-control-expose-headers') ?? '';
    expect(exposed).to.include('PAYMENT-RESPONSE').and.include('EXTENSION-RESPONSES');
  });

  it('a new agent registers by paying with the official v1 client (X-PAYMENT)', async () => {
    const buyer = await newBuyer(chain());
    const treasuryBefore = await balanceOf(chain(), chain().treasury);
    const paid = await postVerify(svc.url, await signedVerifyBody(svc.url, buyer.account, 'bob-v1'), buyer.payV1);
    expect(paid.status).to.equal(200);
    const receipt = decodeXPaymentResponse(paid.headers.get('x-payment-response')!);
    expect(receipt.success).to.equal(true);
    expect((await paid.json()).agent.handle).to.equal('bob-v1');
    expect(await balanceOf(chain(), buyer.address)).to.equal(10_000_000n - ONE_USDC);
    expect(await balanceOf(chain(), chain().treasury)).to.equal(treasuryBefore + ONE_USDC);
  });

  it('an existing agent logs in without paying', async () => {
    const buyer = await newBuyer(chain());
    expect(
      (await postVerify(svc.url, await signedVerifyBody(svc.url, buyer.account, 'carol'), buyer.payV2)).status,
    ).to.equal(200);
    const before = await balanceOf(chain(), buyer.address);

    const { body: ch } = await requestChallenge(svc.url, buyer.address);
    expect(ch.action).to.equal('login');
    expect(ch).to.not.have.property('registrationFee');
    const login = await postVerify(
      svc.url,
      JSON.stringify({ message: ch.message, signature: await buyer.account.signMessage({ message: ch.message }) }),
    );
    expect(login.status).to.equal(200);
    const body = await login.json();
    expect(body).to.include({ action: 'login' });
    expect(body.agent.handle).to.equal('carol');
    expect(await balanceOf(chain(), buyer.address)).to.equal(before);
  });

  it('a taken handle gets 409 at the challenge, before any money moves', async () => {
    const first = await newBuyer(chain());
    await postVerify(svc.url, await signedVerifyBody(svc.url, first.account, 'dave'), first.payV2);
    const second = privateKeyToAccount(generatePrivateKey());
    const { res, body } = await requestChallenge(svc.url, second.address, 'dave');
    expect(res.status).to.equal(409);
    expect(body.code).to.equal('handle_taken');
  });

  it('when two wallets pay for the same handle at once, one registers and the other gets 409 without being charged', async () => {
    const [a, b] = await Promise.all([newBuyer(chain()), newBuyer(chain())]);
    const [bodyA, bodyB] = await Promise.all([
      signedVerifyBody(svc.url, a.account, 'erin'),
      signedVerifyBody(svc.url, b.account, 'erin'),
    ]);
    const results = await Promise.all([postVerify(svc.url, bodyA, a.payV2), postVerify(svc.url, bodyB, b.payV2)]);
    const statuses = results.map((r) => r.status).sort();
    expect(statuses).to.deep.equal([200, 409]);
    const balances = await Promise.all([balanceOf(chain(), a.address), balanceOf(chain(), b.address)]);
    expect(balances.sort((x, y) => (x < y ? -1 : 1))).to.deep.equal([9_000_000n, 10_000_000n]);
  });

  it('handles are validated: too short, bad characters and reserved words get 400 naming the handle', async () => {
    const address = privateKeyToAccount(generatePrivateKey()).address;
    for (const handle of ['ab', 'Has Space', 'admin', 'x'.repeat(33), '-dash']) {
      const { res, body } = await requestChallenge(svc.url, address, handle);
      expect(res.status, handle).to.equal(400);
      expect(body.invalidParams[0].name).to.equal('handle');
    }
    const { res } = await requestChallenge(svc.url, address);
    expect(res.status).to.equal(400);
  });

  describe('challenges are single-use, bound and expiring', () => {
    it('a challenge cannot be used twice', async () => {
      const buyer = await newBuyer(chain());
      await postVerify(svc.url, await signedVerifyBody(svc.url, buyer.account, 'frank'), buyer.payV2);
      const body = await signedVerifyBody(svc.url, buyer.account);
      expect((await postVerify(svc.url, body)).status).to.equal(200);
      const again = await postVerify(svc.url, body);
      expect(again.status).to.equal(401);
      expect((await again.json()).code).to.equal('challenge_used');
    });

    it('a signature by another key is refused', async () => {
      const owner = privateKeyToAccount(generatePrivateKey());
      const other = privateKeyToAccount(generatePrivateKey());
      const { body: ch } = await requestChallenge(svc.url, owner.address, 'grace');
      const res = await postVerify(
        svc.url,
        JSON.stringify({ message: ch.message, signature: await other.signMessage({ message: ch.message }) }),
      );
      expect(res.status).to.equal(401);
      expect((await res.json()).code).to.equal('invalid_signature');
    });

    it('an altered message or an unknown nonce is refused', async () => {
      const owner = privateKeyToAccount(generatePrivateKey());
      const { body: ch } = await requestChallenge(svc.url, owner.address, 'heidi');
      const altered = ch.message.replace('Register @heidi', 'Register @mallory');
      const res = await postVerify(
        svc.url,
        JSON.stringify({ message: altered, signature: await owner.signMessage({ message: altered }) }),
      );
      expect(res.status).to.equal(401);
      expect((await res.json()).code).to.equal('challenge_unknown');
    });

    it('an expired challenge is refused', async () => {
      const owner = privateKeyToAccount(generatePrivateKey());
      const { body: ch } = await requestChallenge(svc.url, owner.address, 'ivan');
      await svc.service.runtime.database.db
        .updateTable('auth_challenges')
        .set({ expires_at: new Date(Date.now() - 1000) })
        .where('nonce', '=', ch.nonce)
        .execute();
      const res = await postVerify(
        svc.url,
        JSON.stringify({ message: ch.message, signature: await owner.signMessage({ message: ch.message }) }),
      );
      expect(res.status).to.equal(401);
      expect((await res.json()).code).to.equal('challenge_expired');
    });
  });
});

describe('bearer tokens on the API', function () {
  this.timeout(60_000);
  let svc: TestService;
  before(async () => {
    svc = await startTestService();
  });
  after(async () => svc?.stop());

  const me = (authorization?: string) =>
    fetch(`${svc.url}/api/agents/me`, { headers: authorization ? { authorization } : {} });

  it('a missing, malformed or tampered token gets 401 problem+json', async () => {
    const missing = await me();
    expect(missing.status).to.equal(401);
    expect((await missing.json()).code).to.equal('token_missing');
    const malformed = await me('Token abc');
    expect((await malformed.json()).code).to.equal('token_invalid');
    const tampered = await me('Bearer eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln');
    expect(tampered.status).to.equal(401);
    expect(tampered.headers.get('content-type')).to.match(/problem\+json/);
  });

  it('publishes the signing keys as a JWKS', async () => {
    const jwks = await (await fetch(`${svc.url}/.well-known/jwks.json`)).json();
    expect(jwks.keys[0]).to.include({ kty: 'EC', crv: 'P-256', alg: 'ES256', use: 'sig' });
    expect(jwks.keys[0].kid).to.be.a('string');
    expect(jwks.keys[0]).to.not.have.property('d');
  });
});
