import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { run } from '../../src/cli/main.js';

/** The command line with a fetch that records each URL asked and answers an empty search. */
async function cli(args: string[], env: Record<string, string> = {}) {
  const asked: string[] = [];
  const out: string[] = [];
  const err: string[] = [];
  const cwd = mkdtempSync(join(tmpdir(), 'cli-url-'));
  try {
    const code = await run(args, {
      cwd,
      env,
      out: (l) => out.push(l),
      err: (l) => err.push(l),
      fetch: (async (input: string | URL | Request) => {
        asked.push(String(input instanceof Request ? input.url : input));
        return Response.json({ results: [] });
      }) as typeof fetch,
    });
    return { code, asked, out: out.join('\n'), err: err.join('\n') };
  } finally {
    rmSync(cwd, { recursive: true, force: true });
  }
}

describe('the market URL the client talks to', () => {
  for (const [how, args, env] of [
    ['--url', ['--url', 'http://market.example', 'search', 'weather'], {}],
    ['--market', ['--market', 'http://market.example', 'search', 'weather'], {}],
    ['SKILL_MARKET_URL', ['search', 'weather'], { SKILL_MARKET_URL: 'http://market.example' }],
    ['--url after the command', ['search', 'weather', '--url', 'http://market.example'], {}],
    ['install --url', ['install', 'weather-report', '--url', 'http://market.example'], {}],
    ['update', ['update'], { SKILL_MARKET_URL: 'http://market.example' }],
    ['buy', ['buy', 'bob', '5f0c7a9e-1b2c-4d3e-8f90-a1b2c3d4e5f6', '--url', 'http://market.example'], {}],
  ] as const)
    it(`when a plain http market that is not loopback is named by ${how}, then it is refused before any request`, async () => {
      const r = await cli([...args], { ...env });
      expect(r.code).to.equal(1);
      expect(r.asked).to.deep.equal([]);
      expect(r.err).to.match(/^skill-market: refused: the market URL http:\/\/market\.example \(.+\) is not https;/);
      expect(r.err)
        .to.contain('Use https://')
        .and.to.match(/\[market_not_https\]$/);
    });

  it('names where the refused URL came from', async () => {
    expect((await cli(['search', 'x'], { SKILL_MARKET_URL: 'http://10.0.0.5:3000' })).err).to.contain(
      '(SKILL_MARKET_URL)',
    );
    expect((await cli(['--url', 'http://10.0.0.5:3000', 'search', 'x'])).err).to.contain('(--url)');
  });

  for (const url of [
    'http://127.0.0.1.evil.example',
    'http://localhost.evil.example:3000',
    'http://0.0.0.0:3000',
    'http://[::2]:3000',
    'http://192.168.1.10:3000',
    'ftp://market.example',
    'file:///etc/passwd',
  ])
    it(`refuses ${url}`, async () => {
      const r = await cli(['--url', url, 'search', 'weather']);
      expect(r.code).to.equal(1);
      expect(r.asked).to.deep.equal([]);
      expect(r.err).to.contain('[market_not_https]');
    });

  it('refuses what is not a URL at all', async () => {
    const r = await cli(['--url', 'market.example', 'search', 'weather']);
    expect(r.code).to.equal(1);
    expect(r.asked).to.deep.equal([]);
    expect(r.err).to.contain('the market URL "market.example" (--url) is not a URL').and.to.contain('[invalid_option]');
  });

  for (const url of [
    'https://market.example',
    'https://market.example:8443/',
    'http://localhost:3000',
    'http://LOCALHOST:3000',
    'http://127.0.0.1:3000',
    'http://127.8.9.10:3000',
    'http://127.1:3000',
    'http://[::1]:3000',
  ])
    it(`talks to ${url}`, async () => {
      const r = await cli(['--url', url, 'search', 'weather']);
      expect(r.err).to.equal('');
      expect(r.code).to.equal(0);
      expect(r.asked).to.have.length(1);
      expect(r.asked[0]).to.match(/\/api\/discovery\/search\?q=weather/);
    });

  it('talks to the default market, a development service on localhost, when none is named', async () => {
    const r = await cli(['search', 'weather']);
    expect(r.code).to.equal(0);
    expect(r.asked[0]).to.match(/^http:\/\/localhost:3000\/api\/discovery\/search/);
  });
});
