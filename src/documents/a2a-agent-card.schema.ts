import { createRequire } from 'node:module';
import type { JsonSchema } from './document.js';

const require = createRequire(import.meta.url);
const v03: { definitions: Record<string, JsonSchema> } = require('./schemas/a2a-v0.3.0.schema.json');
const v10: { definitions: Record<string, JsonSchema> } = require('./schemas/a2a-v1.0.0-agent-card.schema.json');

/**
 * The members only A2A v0.3 reads: v1.0 moved them into `supportedInterfaces[]`. Our cards keep
 * them beside the v1.0 members so a v0.3 client reads the same card (docs/a2a.md); a v1.0 reader
 * ignores them (the specification: "Implementations SHOULD ignore unrecognized fields").
 */
export const A2A_V03_ONLY_MEMBERS = ['protocolVersion', 'url', 'preferredTransport'] as const;

/** The card without its v0.3-only members: what A2A v1.0 reads of it (and what its v1.0 signature covers). */
export function a2aV1Members(card: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(card).filter(([k]) => !(A2A_V03_ONLY_MEMBERS as readonly string[]).includes(k)),
  );
}

/**
 * The A2A v0.3.0 AgentCard as one self-contained schema: the AgentCard definition at the root with
 * every definition it refers to beside it. Its `$id` makes it its own resource, so the same object
 * works in the validator and embedded in the OpenAPI document.
 */
export const A2A_V03_AGENT_CARD_SCHEMA: JsonSchema = {
  $id: 'https://a2a-protocol.org/v0.3.0/schemas/AgentCard.json',
  ...v03.definitions.AgentCard,
  definitions: v03.definitions,
};

/** The A2A v1.0 AgentCard exactly as the vendored proto-derived schema states it (no member beyond v1.0's). */
export const A2A_V1_AGENT_CARD_SCHEMA: JsonSchema = {
  $id: 'https://a2a-protocol.org/v1.0.0/schemas/AgentCard.json',
  ...v10.definitions.AgentCard,
  definitions: v10.definitions,
};

/** The v0.3-only members as the v1.0 side of the published card admits them (their shape is the v0.3 schema's business). */
const legacyMembers = Object.fromEntries(A2A_V03_ONLY_MEMBERS.map((m) => [m, { type: 'string' }]));

/**
 * The schema every published AgentCard matches: a valid A2A v0.3.0 AgentCard and, but for the
 * v0.3-only members, a valid A2A v1.0 AgentCard (the same v1.0 definitions, strict everywhere
 * else).
 */
export const A2A_AGENT_CARD_SCHEMA: JsonSchema = {
  $id: 'urn:skill-market:schemas:a2a-agent-card',
  allOf: [
    // A resource of its own (an `$id` may be registered once, and the plain v0.3 schema has its own).
    { ...A2A_V03_AGENT_CARD_SCHEMA, $id: 'urn:skill-market:schemas:a2a-v0.3.0-agent-card' },
    {
      $id: 'urn:skill-market:schemas:a2a-v1.0-agent-card-with-v0.3-members',
      ...v10.definitions.AgentCard,
      properties: { ...(v10.definitions.AgentCard?.properties as object), ...legacyMembers },
      definitions: v10.definitions,
    },
  ],
};
