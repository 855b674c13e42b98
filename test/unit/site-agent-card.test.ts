import { canonicalizeAgentCard, verifyAgentCardSignature } from '@a2a-js/sdk';
import { expect } from 'chai';
import { generateKeyPairSync } from 'node:crypto';
import { createLocalJWKSet, flattenedVerify } from 'jose';
import { A2A_V03_ONLY_MEMBERS, a2aV1Members } from '../../src/documents/a2a-agent-card.schema.js';
import {
  canonicalCard,
  CardUnsignedError,
  signedCardHash,
  type CanonicalForm,
} from '../../src/documents/card-signature.js';
import { EXAMPLE_AGENT, EXAMPLE_SITE } from '../../src/documents/examples.js';
import { agentCardContent, renderAgentCard } from '../../src/documents/agent/agent-card.renderer.js';
import { renderSiteAgentCard, formatUsdc } from '../../src/documents/site-agent-card.renderer.js';
import { schemaErrors, SCHEMAS } from '../../src/documents/validate.js';
import { jsonBytes } from '../../src/domain/publishing/publish-document.js';
import { CardKeys, cardKeyId } from '../../src/platform/card-keys.js';

const site = EXAMPLE_SITE;
const signer = site.cardSigner as CardKeys;

const newKeyPem = () => generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();

type Card = Record<string, unknown> & {
  signatures: { protected: string; signature: string; header?: Record<string, unknown> }[];
};

/** The error `promise` rejects with (fails when it resolves). */
async function rejection(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected a rejection');
}

/** Verifies every signature of `card` with plain jose against the JWKS, each over the form its header names. */
async function verifyAll(card: Card, keys: { keys: object[] }) {
  const jwks = createLocalJWKSet(keys as Parameters<typeof createLocalJWKSet>[0]);
  const forms: string[] = [];
  for (const sig of card.signatures) {
    const form = (sig.header as { canonical: CanonicalForm }).canonical;
    const payload = Buffer.from(canonicalCard(card, form)).toString('base64url');
    const { protectedHeader } = await flattenedVerify({ ...sig, payload }, jwks, { algorithms: ['EdDSA'] });
    expect(protectedHeader).to.include({ alg: 'EdDSA', typ: 'JOSE', jku: signer.jku });
    expect(keys.keys.map((k) => (k as { kid: string }).kid)).to.include(protectedHeader?.kid);
    forms.push(form);
  }
  return forms;
}

describe('site AgentCard renderer', () => {
  it('renders a card valid against the strict A2A v1.0 schema (its v1.0 members) and the A2A v0.3.0 schema', () => {
    const card = renderSiteAgentCard(site);
    expect(schemaErrors(SCHEMAS.agentCard, card)).to.deep.equal([]);
    expect(schemaErrors(SCHEMAS.agentCardV1, a2aV1Members(card))).to.deep.equal([]);
    expect(schemaErrors(SCHEMAS.agentCardV03, card)).to.deep.equal([]);
    // The v0.3 members are what keeps the full card from being a strict v1.0 card, and nothing else.
    expect(schemaErrors(SCHEMAS.agentCardV1, card)).to.deep.equal(
      A2A_V03_ONLY_MEMBERS.map(() => '/ must NOT have additional properties'),
    );
  });

  it('declares its HTTP+JSON interface for A2A 1.0 and the same endpoint the v0.3 way', () => {
    const card = renderSiteAgentCard(site);
    expect(card.supportedInterfaces).to.deep.equal([
      { url: 'https://market.example', protocolBinding: 'HTTP+JSON', protocolVersion: '1.0' },
    ]);
    expect(card).to.include({
      protocolVersion: '0.3.0',
      url: 'https://market.example',
      preferredTransport: 'HTTP+JSON',
    });
    expect(card.capabilities).to.include({ streaming: false, pushNotifications: false, extendedAgentCard: false });
  });

  it('carries URL templates for crawling every per-agent document', () => {
    const ext = renderSiteAgentCard(site).capabilities.extensions[0]!;
    // `required: false` is the v1.0 default: left out, so v1.0 readers rebuild exactly what was signed.
    expect(ext).to.not.have.property('required');
    const templates = ext.params.agentTemplates as Record<string, string>;
    expect(templates.agentCard).to.equal('https://market.example/api/agents/{handle}/agent-card.json');
    for (const [, url] of Object.entries(templates))
      expect(url).to.match(/^https:\/\/market\.example\/api\/agents\/\{handle\}\//);
    expect(Object.keys(templates)).to.include.members([
      'identity',
      'card',
      'badge',
      'health',
      'similar',
      'reputation',
      'score',
      'bestPractices',
    ]);
  });

  it('renders the same bytes for the same input, signatures included, so an unchanged card is never re-published', () => {
    expect(jsonBytes(renderSiteAgentCard(site))).to.equal(jsonBytes(renderSiteAgentCard({ ...site })));
  });

  it('a card missing a required member fails validation with a readable error', () => {
    const { skills: _skills, ...broken } = renderSiteAgentCard(site);
    expect(schemaErrors(SCHEMAS.agentCard, broken).join()).to.contain("must have required property 'skills'");
  });

  it('formats atomic USDC exactly', () => {
    expect(formatUsdc(1_000_000n)).to.equal('1');
    expect(formatUsdc(1_500_000n)).to.equal('1.5');
    expect(formatUsdc(1n)).to.equal('0.000001');
    expect(formatUsdc(123_456_789_012_345_678n)).to.equal('123456789012.345678');
  });
});

describe('agent AgentCard interface', () => {
  /** Valid against the strict v1.0 schema (its v1.0 members), the v0.3.0 schema and the one checked before publishing. */
  const expectValid = (card: Record<string, unknown>) => {
    expect(schemaErrors(SCHEMAS.agentCard, card)).to.deep.equal([]);
    expect(schemaErrors(SCHEMAS.agentCardV1, a2aV1Members(card))).to.deep.equal([]);
    expect(schemaErrors(SCHEMAS.agentCardV03, card)).to.deep.equal([]);
  };

  it('states 1.0 for the card URL we serve', () => {
    const card = renderAgentCard(EXAMPLE_AGENT, [], site);
    expect(card.supportedInterfaces).to.deep.equal([
      {
        url: 'https://market.example/api/agents/acme-extractor/agent-card.json',
        protocolBinding: 'HTTP+JSON',
        protocolVersion: '1.0',
      },
    ]);
    expectValid(card);
  });

  it("states 0.3 for the agent's own declared A2A endpoint, which we do not serve, the v1.0 and v0.3 ways alike", () => {
    const agent = { ...EXAMPLE_AGENT, capabilities: { a2a: 'https://acme.example/a2a' } };
    const card = renderAgentCard(agent, [], site);
    // A 1.0 client must not send 1.0 methods to an endpoint that most likely speaks 0.3 JSON-RPC.
    expect(card.supportedInterfaces).to.deep.equal([
      { url: 'https://acme.example/a2a', protocolBinding: 'JSONRPC', protocolVersion: '0.3' },
    ]);
    expect(card).to.include({
      url: 'https://acme.example/a2a',
      preferredTransport: 'JSONRPC',
      protocolVersion: '0.3.0',
    });
    expectValid(card);
  });
});

describe('AgentCard signatures', () => {
  it('signs the v1.0 form and the whole card; plain jose verifies both against the JWKS', async () => {
    const card = renderSiteAgentCard(site) as unknown as Card;
    expect(await verifyAll(card, signer.jwks(new Date()))).to.deep.equal(['a2a-v1.0', 'card']);
  });

  it('signs exactly what the official A2A SDK rebuilds, and the SDK verifier accepts the card', async () => {
    const card = renderSiteAgentCard(site);
    expect(canonicalizeAgentCard(card as never)).to.equal(canonicalCard(card, 'a2a-v1.0'));
    const verify = verifyAgentCardSignature(async (kid) => {
      expect(kid).to.equal(signer.kid);
      return signer.current as never;
    });
    await verify(card as never);
  });

  it('a card changed after signing fails verification, whichever member changed', async () => {
    const card = renderSiteAgentCard(site) as unknown as Card;
    const keys = signer.jwks(new Date());
    const v1 = { ...card, name: 'Skill Market (mirror)' };
    expect((await rejection(verifyAll(v1, keys))).message).to.match(/signature verification failed/);
    // A v0.3-only member is covered by the whole-card signature.
    const v03 = { ...card, url: 'https://evil.example' };
    const [v1Sig, wholeSig] = v03.signatures;
    await verifyAll({ ...v03, signatures: [v1Sig!] }, keys);
    expect((await rejection(verifyAll({ ...v03, signatures: [wholeSig!] }, keys))).message).to.match(
      /signature verification failed/,
    );
  });

  it('a card signed with a key the JWKS does not list does not verify', async () => {
    const other = new CardKeys(newKeyPem(), signer.jku);
    const card = renderSiteAgentCard({ ...site, cardSigner: other }) as unknown as Card;
    await rejection(verifyAll(card, signer.jwks(new Date())));
  });

  it('refuses to render a card with no signing key', () => {
    expect(() => renderSiteAgentCard({ ...site, cardSigner: undefined })).to.throw(CardUnsignedError);
  });

  it('lists a previous key until its retire-after time, then only the current key', async () => {
    const previous = new CardKeys(newKeyPem(), signer.jku);
    const oldCard = renderSiteAgentCard({ ...site, cardSigner: previous }) as unknown as Card;
    const retireAfter = new Date('2027-01-01T00:00:00Z');
    const rotated = new CardKeys(newKeyPem(), signer.jku, [{ jwk: previous.current, retireAfter }]);
    const during = rotated.jwks(new Date('2026-12-31T23:59:59Z'));
    expect(during.keys.map((k) => (k as { kid: string }).kid)).to.deep.equal([rotated.kid, previous.kid]);
    await verifyAll(oldCard, during);
    const after = rotated.jwks(new Date('2027-01-01T00:00:01Z'));
    expect(after.keys.map((k) => (k as { kid: string }).kid)).to.deep.equal([rotated.kid]);
    await rejection(verifyAll(oldCard, after));
  });

  it('names each key by its RFC 7638 thumbprint', () => {
    expect(signer.kid).to.equal(cardKeyId(signer.current.x));
    expect(signer.kid).to.match(/^[A-Za-z0-9_-]{43}$/);
  });
});

describe('an agent card compared without signing it', () => {
  /** `keys`, counting the signatures it makes. */
  const counting = (keys: CardKeys) => {
    const made = { count: 0 };
    const wrapped = Object.assign(Object.create(keys) as CardKeys, {
      sign(input: string) {
        made.count++;
        return keys.sign(input);
      },
    });
    return { signer: wrapped, made };
  };
  const bytesOf = (agent: typeof EXAMPLE_AGENT, on: typeof site) => jsonBytes(renderAgentCard(agent, [], on));
  const hashOf = (agent: typeof EXAMPLE_AGENT, on: typeof site) =>
    signedCardHash(agentCardContent(agent, [], on), on.cardSigner);

  it('its hash is made without a signature, and moves exactly when the signed bytes do', () => {
    const { signer: countingSigner, made } = counting(signer);
    const on = { ...site, cardSigner: countingSigner };
    const rotated = { ...site, cardSigner: new CardKeys(newKeyPem(), signer.jku) };
    // The same key, its JWKS at another address.
    const moved = {
      ...site,
      cardSigner: Object.assign(Object.create(signer) as CardKeys, { jku: 'https://other.example/jwks' }),
    };
    const renamed = { ...EXAMPLE_AGENT, bio: 'Tables out of every PDF, now faster.' };
    const hash = hashOf(EXAMPLE_AGENT, on);
    expect(made.count).to.equal(0);
    // The same card and key: the same hash and, Ed25519 being deterministic, the same bytes.
    expect(hashOf(EXAMPLE_AGENT, site)).to.equal(hash);
    expect(bytesOf(EXAMPLE_AGENT, on)).to.equal(bytesOf(EXAMPLE_AGENT, site));
    expect(made.count).to.equal(2);
    // A member changed, another key, another JWKS address, no key: another hash, as the bytes differ.
    for (const [agent, other] of [
      [renamed, site],
      [EXAMPLE_AGENT, rotated],
      [EXAMPLE_AGENT, moved],
    ] as const) {
      expect(bytesOf(agent, other)).to.not.equal(bytesOf(EXAMPLE_AGENT, site));
      expect(hashOf(agent, other)).to.not.equal(hash);
    }
    expect(signedCardHash(agentCardContent(EXAMPLE_AGENT, [], site), undefined)).to.not.equal(hash);
  });

  it('ignores a signatures member of the card it is given', () => {
    const content = agentCardContent(EXAMPLE_AGENT, [], site);
    const signed = renderAgentCard(EXAMPLE_AGENT, [], site);
    expect(signedCardHash(signed, site.cardSigner)).to.equal(signedCardHash(content, site.cardSigner));
  });
});
