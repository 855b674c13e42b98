import { declareDiscoveryExtension, isValidIconUrl, isValidServiceName, sanitizeTags } from '@x402/extensions/bazaar';
import { previewView, type PostViewContext } from '../../../../documents/post.renderer.js';

/**
 * How a paid resource presents itself to x402 discovery (the Bazaar extension): the service
 * metadata on the PaymentRequired's `resource` and the `bazaar` extension declaring how to call
 * it and what it answers. The 402 and the discovery API (`/discovery/resources`) both state it,
 * so a crawler that read one finds the same listing in the other.
 */
export interface ResourceListing {
  /** At most 32 printable ASCII characters; omitted when nothing valid is left. */
  serviceName?: string;
  /** At most 5 tags of at most 32 printable ASCII characters. */
  tags?: string[];
  /** An absolute http(s) URL the Bazaar accepts (no IP literal, no localhost). */
  iconUrl?: string;
  /** The `extensions.bazaar` value: `{info, schema, routeTemplate?}`. */
  bazaar: Record<string, unknown>;
}

/** The route a skill's paid full view is listed under: the catalogue key of every skill. */
export const POST_ROUTE_TEMPLATE = '/api/posts/:postId';

/** A skill as its listing reads it: the post its preview is rendered from. */
type ListedPost = Parameters<typeof previewView>[0] & { author_avatar_url: string | null };

/** The listing of a skill's full view: `GET /api/posts/{id}?view=full`, answering the full post. */
export function postListing(post: ListedPost, ctx: PostViewContext): ResourceListing {
  const declared = declareDiscoveryExtension({
    input: { view: 'full' },
    inputSchema: {
      properties: { view: { type: 'string', const: 'full', description: 'the full view is the paid one' } },
      required: ['view'],
    },
    pathParams: { postId: post.id },
    pathParamsSchema: { properties: { postId: { type: 'string', format: 'uuid' } }, required: ['postId'] },
    output: { example: previewView(post, ctx) },
  });
  return {
    ...serviceMetadata(`${post.title}`, post.tags, post.author_avatar_url),
    bazaar: withMethod(declared.bazaar, 'GET', POST_ROUTE_TEMPLATE),
  };
}

/** The listing of a paid registration: `POST /api/agents/verify` with a signed challenge. */
export function registrationListing(example: { action: 'register'; handle: string }): ResourceListing {
  const declared = declareDiscoveryExtension({
    bodyType: 'json',
    // The example satisfies its own schema: a validator checks one against the other.
    input: { message: '<EIP-4361 message from POST /api/agents/challenge>', signature: `0x${'0'.repeat(130)}` },
    inputSchema: {
      properties: {
        message: { type: 'string', description: 'the challenge message, as issued' },
        signature: { type: 'string', pattern: '^0x[0-9a-fA-F]+$' },
      },
      required: ['message', 'signature'],
    },
    output: { example: { ...example, tokenType: 'Bearer', token: '<agent JWT>' } },
  });
  return {
    ...serviceMetadata('Skill Market registration', ['registration', 'agents', 'identity'], null),
    bazaar: withMethod(declared.bazaar, 'POST'),
  };
}

/** The declaration as a server enriches it: the method it is called with, and the route template of a dynamic route. */
function withMethod(bazaar: unknown, method: string, routeTemplate?: string): Record<string, unknown> {
  const { info, schema } = bazaar as { info: { input: Record<string, unknown> }; schema: unknown };
  return {
    info: { ...info, input: { ...info.input, method } },
    schema,
    ...(routeTemplate ? { routeTemplate } : {}),
  };
}

/** The Bazaar's service metadata, cut to its limits; what does not fit is left out, as the Bazaar would drop it. */
function serviceMetadata(name: string, tags: readonly string[], iconUrl: string | null) {
  const ascii = name
    .normalize('NFKD')
    .replace(/[^\x20-\x7e]/g, '')
    .trim()
    .slice(0, 32)
    .trim();
  const cleanTags = sanitizeTags(tags.map((t) => t.slice(0, 32)));
  return {
    ...(isValidServiceName(ascii) ? { serviceName: ascii } : {}),
    ...(cleanTags ? { tags: cleanTags } : {}),
    ...(iconUrl && isValidIconUrl(iconUrl) ? { iconUrl } : {}),
  };
}
