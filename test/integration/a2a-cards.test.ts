import { expect } from 'chai';
import { generateKeyPairSync } from 'node:crypto';
import {
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
} from '@a2a-js/sdk/client';
import { parseLegacyAgentCard } from '@a2a-js/sdk/compat/v0_3/client';
import { verifyAgentCardSignature } from '@a2a-js/sdk';
import canonicalizeModule from 'canonicalize';
import { createLocalJWKSet, flattenedVerify, type JSONWebKeySet } from 'jose';
import { startTestService, eventually, type TestService } from '../support/service.js';
import { registerAgent } from '../support/agents.js';
import { skillBody, skillName } from '../support/skills.js';
import { A2A_V03_ONLY_MEMBERS } from '../../src/documents/a2a-agent-card.schema.js';
import { schemaErrors, SCHEMAS } from '../../src/documents/validate.js';
import { EXAMPLE_SITE } from '../../src/documents/examples.js';
import { renderSiteAgentCard } from '../../src/documents/site-agent-card.renderer.js';
import { CardKeys } from '../../src/platform/card-keys.js';

// The package is CommonJS whose module.exports is the function; its declaration calls it `default`.
const canonicalize = canonicalizeModule as unknown as (input: unknown) => string;

type Signature = { protected: string; signature: string; header?: Record<string, unknown> };
type Card = Record<string, unknown> & { signatures: Signature[] };

const newKeyPem = () => generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();

/**
 * What a third party does, with nothing of ours but the JWKS: for each signature, the RFC 8785 text
 * of the card without `signatures` (for the `a2a-v1.0` form, also without the v0.3-only members),
 * then a flattened JWS verification against the key the protected header's kid names.
 */
async function verifyCard(card: Card, jwks: JSONWebKeySet): Promise<string[]> {
  const keys = createLocalJWKSet(jwks);
  const verified: string[] = [];
  for (const sig of card.signatures) {
    const { signatures: _s, ...rest } = card;
    const form = sig.header?.canonical;
    const members =
      form === 'a2a-v1.0'
        ? Object.fromEntries(
            Object.entries(rest).filter(([k]) => !(A2A_V03_ONLY_MEMBERS as readonly string[]).includes(k)),
          )
        : rest;
    const payload = Buffer.from(canonicalize(members)).toString('base64url');
    const { protectedHeader } = await flattenedVerify({ ...sig, payload }, keys, { algorithms: ['EdDSA'] });
    expect(protectedHeader?.typ).to.equal('JOSE');
    verified.push(String(form));
  }
  return verified;
}

async function rejection(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected a rejection');
}

describe('A2A cards: v1.0 and v0.3 readers, signatures, the JWKS and A2A-Version', function () {
  this.timeout(120_000);
  let svc: TestService;
  const previous = new CardKeys(newKeyPem(), 'set below');
  const retired = new CardKeys(newKeyPem(), 'set below');
  const agentCardPath = '/api/agents/a2a-seller/agent-card.json';
  /** An agent with no published skill yet. */
  const newcomerCardPath = '/api/agents/a2a-newcomer/agent-card.json';
  const cardPaths = ['/.well-known/agent-card.json', agentCardPath, newcomerCardPath];

  before(async () => {
    svc = await startTestService({
      // A rotation: one previous key still in its window, one past it.
      CARD_PREVIOUS_KEYS: JSON.stringify([
        { jwk: previous.current, retireAfter: new Date(Date.now() + 86_400_000).toISOString() },
        { jwk: retired.current, retireAfter: new Date(Date.now() - 1000).toISOString() },
      ]),
    });
    const seller = await registerAgent(svc, 'a2a-seller');
    const post = await (
      await seller.api('/api/posts', {
        method: 'POST',
        json: {
          title: 'PDF tables',
          preview: 'Every table of a PDF as CSV.',
          body: skillBody(skillName('PDF tables'), '# PDF tables'),
          priceAtomic: '1500000',
          tags: ['pdf'],
        },
      })
    ).json();
    await seller.api(`/api/posts/${post.id}/publish`, { method: 'POST' });
    await registerAgent(svc, 'a2a-newcomer');
    await eventually(
      async () => {
        const res = await fetch(`${svc.url}${agentCardPath}`);
        return res.status === 200 && ((await res.json()) as Card & { skills: unknown[] }).skills.length === 1;
      },
      60_000,
      200,
    );
    await eventually(async () => (await fetch(`${svc.url}${newcomerCardPath}`)).status === 200, 60_000, 200);
  });
  after(async () => {
    await svc?.stop();
  });

  const jwks = async () => {
    const res = await fetch(`${svc.url}/.well-known/jwks.json`);
    expect(res.status).to.equal(200);
    expect(res.headers.get('cache-control')).to.equal('public, max-age=300');
    return (await res.json()) as JSONWebKeySet;
  };
  /** The origin the service names itself by (PUBLIC_BASE_URL unset: localhost and its port). */
  const base = () => svc.url.replace('127.0.0.1', 'localhost');
  const cardAt = async (path: string) => (await (await fetch(`${svc.url}${path}`)).json()) as Card;

  it('the official v1.0 client reads the site card and an agent card, and its verifier accepts both', async () => {
    const set = await jwks();
    // What a client does: the key the signature's kid names, from the JWKS at the jku it trusts.
    const verifier = verifyAgentCardSignature(async (kid, jku) => {
      expect(jku).to.equal(`${base()}/.well-known/jwks.json`);
      const key = set.keys.find((k) => k.kid === kid);
      if (!key) throw new Error(`no key ${kid}`);
      return key as never;
    });
    const resolver = new DefaultAgentCardResolver();
    const site = await resolver.resolve(svc.url);
    expect(site.name).to.equal('Skill Market');
    expect(site.supportedInterfaces[0]).to.include({
      url: base(),
      protocolBinding: 'HTTP+JSON',
      protocolVersion: '1.0',
    });
    await verifier(site);

    const agent = await resolver.resolve(svc.url, agentCardPath);
    expect(agent.supportedInterfaces[0]).to.include({ protocolBinding: 'HTTP+JSON', protocolVersion: '1.0' });
    await verifier(agent);
    // The SDK's verifier refuses the same card with one member changed.
    expect((await rejection(verifier({ ...agent, name: 'Someone else' }))).message).to.match(/no valid signatures/i);

    // The client factory picks the card's first interface, and the client verifies on reading.
    const client = await new ClientFactory().createFromUrl(svc.url, agentCardPath);
    expect((await client.getAgentCard(undefined, verifier)).name).to.equal(agent.name);
  });

  it('a v0.3 reader gets its members from the same card: url, preferredTransport and protocolVersion', async () => {
    for (const path of cardPaths) {
      const card = await cardAt(path);
      expect(schemaErrors(SCHEMAS.agentCardV03, card), path).to.deep.equal([]);
      expect(card).to.include({ protocolVersion: '0.3.0', preferredTransport: 'HTTP+JSON' });
      const asV03 = parseLegacyAgentCard(card as never);
      expect(asV03.supportedInterfaces[0]?.url).to.equal(card.url);
      expect(asV03.supportedInterfaces[0]?.protocolVersion).to.match(/^0\.3/);
    }
  });

  it("an agent's own declared A2A endpoint is stated as 0.3 JSON-RPC (we do not serve it), and the official client speaks 0.3 to it", async () => {
    const declarer = await registerAgent(svc, 'a2a-declarer');
    const endpoint = 'https://a2a.declarer.example/rpc';
    const patched = await declarer.api('/api/agents/me', {
      method: 'PATCH',
      json: { capabilities: { a2a: endpoint } },
    });
    expect(patched.status, await patched.clone().text()).to.equal(200);
    const path = '/api/agents/a2a-declarer/agent-card.json';
    const card = await eventually(
      async () => {
        const res = await fetch(`${svc.url}${path}`);
        if (res.status !== 200) return undefined;
        const c = (await res.json()) as Card & { url?: string };
        return c.url === endpoint ? c : undefined;
      },
      60_000,
      200,
    );
    expect(card.supportedInterfaces).to.deep.equal([
      { url: endpoint, protocolBinding: 'JSONRPC', protocolVersion: '0.3' },
    ]);
    expect(card).to.include({ url: endpoint, preferredTransport: 'JSONRPC', protocolVersion: '0.3.0' });
    expect(schemaErrors(SCHEMAS.agentCard, card)).to.deep.equal([]);
    expect(schemaErrors(SCHEMAS.agentCardV03, card)).to.deep.equal([]);
    expect(await verifyCard(card, await jwks())).to.deep.equal(['a2a-v1.0', 'card']);
    // A 1.0 client able to speak 0.3 picks its 0.3 JSON-RPC transport for the endpoint, not 1.0 methods.
    const factory = new ClientFactory(
      ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
        transports: [new JsonRpcTransportFactory({ legacyCompat: { enabled: true } })],
      }),
    );
    const client = await factory.createFromAgentCard(card as never);
    expect(client.protocolVersion).to.match(/^0\.3/);
  });

  it('both cards are valid A2A v1.0 cards (strict schema, but for the v0.3 members)', async () => {
    for (const path of cardPaths) {
      const card = await cardAt(path);
      const v1 = Object.fromEntries(
        Object.entries(card).filter(([k]) => !(A2A_V03_ONLY_MEMBERS as readonly string[]).includes(k)),
      );
      expect(schemaErrors(SCHEMAS.agentCardV1, v1), path).to.deep.equal([]);
      expect(schemaErrors(SCHEMAS.agentCard, card), path).to.deep.equal([]);
    }
  });

  it('every signature of every published card verifies with plain jose against /.well-known/jwks.json', async () => {
    const set = await jwks();
    const kids = set.keys.map((k) => k.kid);
    for (const path of cardPaths) {
      const card = await cardAt(path);
      expect(await verifyCard(card, set), path).to.deep.equal(['a2a-v1.0', 'card']);
      for (const sig of card.signatures) {
        const header = JSON.parse(Buffer.from(sig.protected, 'base64url').toString());
        expect(header).to.include({ alg: 'EdDSA', typ: 'JOSE', jku: `${base()}/.well-known/jwks.json` });
        expect(kids).to.include(header.kid);
      }
    }
  });

  it('a tampered card fails verification', async () => {
    const card = await cardAt(agentCardPath);
    const set = await jwks();
    const err = await rejection(verifyCard({ ...card, description: 'Send your USDC elsewhere' }, set));
    expect(err.message).to.match(/signature verification failed/);
    // The v0.3 endpoint is covered too (by the whole-card signature).
    const moved = { ...card, url: 'https://evil.example/a2a' };
    expect((await rejection(verifyCard(moved, set))).message).to.match(/signature verification failed/);
  });

  it('rotation: a card signed with a previous key verifies while that key is in its window, not after', async () => {
    const set = await jwks();
    const kids = set.keys.map((k) => k.kid);
    expect(kids).to.include(previous.kid).and.not.include(retired.kid);
    // Cards as the previous keys signed them before the rotation.
    const site = { ...EXAMPLE_SITE, baseUrl: svc.url };
    const byPrevious = renderSiteAgentCard({ ...site, cardSigner: previous }) as unknown as Card;
    expect(await verifyCard(byPrevious, set)).to.deep.equal(['a2a-v1.0', 'card']);
    const byRetired = renderSiteAgentCard({ ...site, cardSigner: retired }) as unknown as Card;
    expect((await rejection(verifyCard(byRetired, set))).message).to.match(/no applicable key found/i);
  });

  it('a request naming an A2A version we do not serve gets VersionNotSupportedError; 1.0, 0.3 and none get the card', async () => {
    for (const path of cardPaths) {
      const refused: { headers?: Record<string, string>; query?: string }[] = [
        { headers: { 'A2A-Version': '2.0' } },
        { headers: { 'A2A-Version': 'latest' } },
        { query: '?A2A-Version=0.2' },
      ];
      for (const request of refused) {
        const res = await fetch(`${svc.url}${path}${request.query ?? ''}`, { headers: request.headers });
        expect(res.status, `${path} ${JSON.stringify(request)}`).to.equal(400);
        expect(res.headers.get('content-type')).to.match(/^application\/a2a\+json/);
        expect(res.headers.get('cache-control')).to.equal('no-store');
        const body = await res.json();
        expect(body.error).to.include({ code: 400, status: 'FAILED_PRECONDITION' });
        expect(body.error.details[0]).to.include({
          '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
          reason: 'VERSION_NOT_SUPPORTED',
          domain: 'a2a-protocol.org',
        });
      }
      const accepted: Record<string, string>[] = [
        { 'A2A-Version': '1.0' },
        { 'A2A-Version': '0.3' },
        { 'A2A-Version': '1.0.3' },
        {},
      ];
      for (const headers of accepted) {
        const res = await fetch(`${svc.url}${path}`, { headers });
        expect(res.status, `${path} ${JSON.stringify(headers)}`).to.equal(200);
        expect((await res.json()).signatures).to.have.length(2);
      }
    }
  });
});
