import { expect } from 'chai';
import { checkEndpointUrl, type WebhookNetworkPolicy } from '../../src/domain/webhooks/endpoint-url.js';
import { webhookNetworkPolicy } from '../../src/domain/webhooks/webhook-settings.js';
import { AppError } from '../../src/platform/errors.js';

const policy = (allowLoopback: boolean): WebhookNetworkPolicy =>
  webhookNetworkPolicy(
    { allowLoopback, timeoutMs: 1000, retryBaseMs: 100, maxAttempts: 3 },
    { publicBaseUrl: 'https://market.example', listenHost: '0.0.0.0', port: 3000 },
  );

async function refusal(url: string, p: WebhookNetworkPolicy): Promise<string | undefined> {
  try {
    await checkEndpointUrl(url, p);
    return undefined;
  } catch (err) {
    if (err instanceof AppError) return err.code;
    throw err;
  }
}

describe('webhook endpoint URLs', () => {
  it('refuses private, link-local (cloud metadata), reserved and IPv4-in-IPv6 addresses', async () => {
    for (const url of [
      'https://10.0.0.5/hook',
      'https://192.168.1.1/',
      'https://169.254.169.254/latest/meta-data',
      'https://[fd00::1]/',
      'https://0.0.0.0/',
    ])
      expect(await refusal(url, policy(true)), url).to.equal('webhook_url_private');
    // Loopback in an IPv4-mapped form is loopback: refused where loopback is not allowed.
    expect(await refusal('https://[::ffff:127.0.0.1]/', policy(false))).to.equal('webhook_url_private');
  });

  it('refuses this marketplace itself: its public host on any port, its listener under local names', async () => {
    expect(await refusal('https://market.example/api/webhooks', policy(false))).to.equal('webhook_url_own_host');
    expect(await refusal('https://MARKET.example:8443/', policy(false))).to.equal('webhook_url_own_host');
    expect(await refusal('http://127.0.0.1:3000/hook', policy(true))).to.equal('webhook_url_own_host');
    expect(await refusal('http://localhost:3000/hook', policy(true))).to.equal('webhook_url_own_host');
    // The fully qualified form (a trailing dot) names the same host.
    expect(await refusal('https://market.example./hook', policy(false))).to.equal('webhook_url_own_host');
    expect(await refusal('http://localhost.:3000/hook', policy(true))).to.equal('webhook_url_own_host');
  });

  it("counts a URL's length once normalised, as it is stored: 400 characters of é are 2,400 encoded", async () => {
    const url = `https://93.184.215.14/${'é'.repeat(400)}`;
    expect(url.length).to.be.below(2048);
    expect(await refusal(url, policy(false))).to.equal('webhook_url_too_long');
  });

  it('in development (a loopback public URL) refuses only the port the marketplace serves', async () => {
    const dev = webhookNetworkPolicy(
      { allowLoopback: true, timeoutMs: 1000, retryBaseMs: 100, maxAttempts: 3 },
      { publicBaseUrl: 'http://localhost:3000', listenHost: '127.0.0.1', port: 3000 },
    );
    expect(await refusal('http://localhost:3000/', dev)).to.equal('webhook_url_own_host');
    expect(await refusal('http://127.0.0.1:3000/', dev)).to.equal('webhook_url_own_host');
    expect(await refusal('http://[::1]:3000/', dev)).to.equal('webhook_url_own_host');
    expect(await refusal('http://localhost:8787/', dev)).to.equal(undefined);
  });

  it('takes loopback over http only where loopback is allowed, and public addresses over https only', async () => {
    expect(await refusal('http://127.0.0.1:8787/', policy(true))).to.equal(undefined);
    expect(await refusal('http://127.0.0.1:8787/', policy(false))).to.equal('webhook_url_private');
    expect(await refusal('https://93.184.215.14/hook', policy(false))).to.equal(undefined);
    expect(await refusal('http://93.184.215.14/hook', policy(true))).to.equal('webhook_url_scheme');
  });

  it('refuses what is not an http(s) URL, and URLs with credentials', async () => {
    for (const url of ['not a url', 'ftp://93.184.215.14/', 'https://user:pw@93.184.215.14/', 'file:///etc/passwd'])
      expect(await refusal(url, policy(true)), url).to.equal('webhook_url_invalid');
  });
});
