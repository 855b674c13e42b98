import { createRequire } from 'node:module';
import type { JsonSchema } from './document.js';

const require = createRequire(import.meta.url);
const a2a: { definitions: Record<string, JsonSchema> } = require('./schemas/a2a-v0.3.0.schema.json');

/**
 * The A2A v0.3.0 AgentCard as one self-contained schema: the AgentCard definition at the root with
 * every definition it refers to beside it. Its `$id` makes it its own resource, so the same object
 * works in the validator and embedded in the OpenAPI document.
 */
export const A2A_AGENT_CARD_SCHEMA: JsonSchema = {
  $id: 'https://a2a-protocol.org/v0.3.0/schemas/AgentCard.json',
  ...a2a.definitions.AgentCard,
  definitions: a2a.definitions,
};
