import { expect } from 'chai';
import { originAllowed, originPolicy, parseOrigins } from '../../src/platform/allowed-origins.js';
import { ConfigError, loadConfig } from '../../src/platform/config.js';

describe('MCP: which browser origins may call the endpoint', () => {
  const policy = (env: 'development' | 'test' | 'production') =>
    originPolicy({ env, allowedOrigins: ['https://agents.example'], publicBaseUrl: 'https://market.example/' });

  it('in production, a loopback page is refused like any other origin; the public and configured origins, and no Origin, are not', () => {
    const production = policy('production');
    for (const origin of ['http://localhost:3000', 'http://127.0.0.1:5173', 'http://[::1]:8080', 'http://localhost'])
      expect(originAllowed(origin, production), origin).to.equal(false);
    for (const origin of [undefined, 'https://market.example', 'https://agents.example'])
      expect(originAllowed(origin, production), origin).to.equal(true);
  });

  it('in development and test, loopback pages over http are served, on any port', () => {
    for (const env of ['development', 'test'] as const)
      for (const origin of ['http://localhost:6274', 'http://127.0.0.1:3000', 'http://[::1]:9', 'http://localhost'])
        expect(originAllowed(origin, policy(env)), `${env} ${origin}`).to.equal(true);
  });

  it('what only looks like an allowed origin is refused', () => {
    const dev = policy('development');
    for (const origin of [
      'null',
      '',
      'https://localhost:3000',
      'http://localhost.evil.example',
      'http://127.0.0.2:3000',
      'https://market.example.evil.example',
      'https://market.example:8443',
      'https://market.example/',
      'https://Market.example',
      'http://market.example',
      'not a url',
    ])
      expect(originAllowed(origin, dev), origin).to.equal(false);
  });

  it('MCP_ALLOWED_ORIGINS takes comma-separated origins and refuses anything else, naming it', () => {
    expect(parseOrigins(undefined)).to.deep.equal([]);
    expect(parseOrigins(' https://a.example, https://B.example:8443/ ,')).to.deep.equal([
      'https://a.example',
      'https://b.example:8443',
    ]);
    expect(() => parseOrigins('https://a.example/path')).to.throw(/"https:\/\/a\.example\/path" is not an origin/);
    expect(() => parseOrigins('a.example')).to.throw(/"a\.example"/);
    expect(loadConfig({ NODE_ENV: 'test', MCP_ALLOWED_ORIGINS: 'https://a.example' }).mcpAllowedOrigins).to.deep.equal([
      'https://a.example',
    ]);
    expect(() => loadConfig({ NODE_ENV: 'test', MCP_ALLOWED_ORIGINS: 'file:///etc' }))
      .to.throw(ConfigError)
      .with.property('message')
      .that.includes('MCP_ALLOWED_ORIGINS');
  });
});
