import { expect } from 'chai';
import { createPublicClient, createWalletClient, http, parseEther, parseEventLogs } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { startTestService, type TestService } from '../support/service.js';
import { testClient } from '../support/anvil.js';
import { freePort } from '../../src/platform/net.js';
import { localChain } from '../../src/platform/chain/clients.js';
import { identityRegistryAbi } from '../../src/platform/chain/identity-registry.js';
import { resolveIdentity } from '../../src/domain/identity/erc8004.js';

/** What an operator's RPC URL looks like: the provider's API key is in its path. */
const RPC_KEY = 'rpc-api-key-7f3a9c1e5b';

describe('public answers carry no internals', function () {
  this.timeout(120_000);
  let svc: TestService;
  const chain = () => svc.service.runtime.chain;

  before(async () => {
    svc = await startTestService();
  });
  after(async () => svc?.stop());

  describe('GET /readyz', () => {
    let rpcUrl: string;
    let ping: () => Promise<bigint>;

    before(async () => {
      // The chain check fails as it does when the RPC provider is down: viem's error names the URL it called.
      rpcUrl = `http://127.0.0.1:${await freePort()}/v2/${RPC_KEY}`;
      const dead = createPublicClient({ transport: http(rpcUrl, { retryCount: 0, timeout: 1_000 }) });
      ping = chain().ping;
      chain().ping = () => dead.getBlockNumber();
    });
    after(() => {
      chain().ping = ping;
    });

    const ready = async (authorization?: string) => {
      const res = await fetch(`${svc.url}/readyz`, { headers: authorization ? { authorization } : {} });
      return { status: res.status, text: await res.text() };
    };

    it('anyone sees each dependency by name, status, time and whether it is required, and never why it failed', async () => {
      const { status, text } = await ready();
      expect(status).to.equal(200);
      const body = JSON.parse(text);
      expect(body.status).to.equal('degraded');
      expect(Object.keys(body.checks)).to.have.members(['database', 'redis', 'bucket', 'chain']);
      expect(body.checks.chain).to.have.all.keys('status', 'ms', 'required');
      expect(body.checks.chain).to.include({ status: 'failed', required: false });
      expect(body.checks.database).to.include({ status: 'ok', required: true });
      expect(text).to.not.include(RPC_KEY);
      expect(text).to.not.include(new URL(rpcUrl).port);
      for (const wrong of ['Bearer not-the-admin-token', `Basic ${Buffer.from('ops:nope').toString('base64')}`]) {
        const guessed = await ready(wrong);
        expect(guessed.text, wrong).to.not.include(RPC_KEY);
        expect(JSON.parse(guessed.text).checks.chain, wrong).to.not.have.property('error');
      }
    });

    it('with the admin token (Bearer or Basic password), the operator also reads why each check failed', async () => {
      for (const authorization of [
        `Bearer ${svc.adminToken}`,
        `Basic ${Buffer.from(`ops:${svc.adminToken}`).toString('base64')}`,
      ]) {
        const body = JSON.parse((await ready(authorization)).text);
        expect(body.checks.chain.status, authorization).to.equal('failed');
        expect(body.checks.chain.error, authorization).to.include(RPC_KEY);
        expect(body.checks.database, authorization).to.not.have.property('error');
      }
    });
  });

  describe("ERC-8004 registrationErrors (published in every verified agent's identity document)", () => {
    /** Registers a token in the IdentityRegistry and points it at `uri`, from a wallet of the test's own. */
    async function tokenAt(uri: string): Promise<string> {
      const account = privateKeyToAccount(generatePrivateKey());
      await testClient(chain()).setBalance({ address: account.address, value: parseEther('1') });
      const wallet = createWalletClient({
        account,
        chain: localChain(chain().chainId, chain().rpcUrl),
        transport: http(chain().rpcUrl),
      });
      const registered = await chain().publicClient.waitForTransactionReceipt({
        hash: await wallet.writeContract({
          address: chain().identityRegistry,
          abi: identityRegistryAbi,
          functionName: 'register',
          args: [uri],
        }),
      });
      const [event] = parseEventLogs({
        abi: identityRegistryAbi,
        logs: registered.logs,
        eventName: 'Registered',
      }) as unknown as Array<{ args: { agentId: bigint } }>;
      return event!.args.agentId.toString();
    }
    const problemsOf = async (uri: string) => {
      const r = await resolveIdentity(
        chain().publicClient,
        chain().identityRegistry,
        chain().chainId,
        await tokenAt(uri),
      );
      expect(r.registration, uri).to.equal(null);
      expect(r.registrationErrors, uri).to.have.length(1);
      return r.registrationErrors[0]!;
    };

    it('a host that resolves to a private address is refused by its rule, without the address it resolved to', async () => {
      const problem = await problemsOf(`https://localhost:${await freePort()}/registration.json`);
      expect(problem).to.equal(
        'registration file unreadable: its host is a private or reserved address, which is not fetched (outbound_address_not_allowed)',
      );
      expect(problem).to.not.match(/127\.0\.0\.1|::1/);
    });

    it("a tokenURI's credentials are never repeated, whichever rule it breaks", async () => {
      const scheme = await problemsOf('ftp://agent:hunter2@files.example/registration.json');
      expect(scheme).to.equal(
        'registration file unreadable: its scheme is not fetched (use data: or https:) (outbound_scheme_not_allowed)',
      );
      const invalid = await problemsOf('https://agent:hunter2@[files.example/registration.json');
      expect(invalid).to.equal('registration file unreadable: the tokenURI is not a valid URL (outbound_invalid_url)');
      for (const problem of [scheme, invalid]) expect(problem).to.not.match(/hunter|agent:/);
    });

    it("a file that is not a JSON object is named by its rule, without repeating the file's content", async () => {
      expect(await problemsOf('data:application/json,secret-looking-text')).to.equal(
        'registration file unreadable: not JSON (not_json)',
      );
      expect(await problemsOf(`data:application/json;base64,${Buffer.from('[1,2]').toString('base64')}`)).to.equal(
        'registration file unreadable: not a JSON object (not_json_object)',
      );
      expect(await problemsOf('data:application/json,%E0%A4%A')).to.equal(
        'registration file unreadable: the data: URI does not decode (data_uri_invalid)',
      );
    });
  });

  it('the OpenAPI document says the failure details of /readyz are for the admin token only', async () => {
    const doc = await (await fetch(`${svc.url}/openapi.json`)).json();
    expect(doc.paths['/readyz'].get.description).to.include('admin token');
  });
});
