import type { Request, Response } from 'express';
import { z } from 'zod';
import type { ResponseSpec } from './route.js';
import { A2A_SUPPORTED_VERSIONS } from '../../documents/site-agent-card.renderer.js';

/** The request header (or query parameter) naming the A2A version a client speaks (A2A v1.0 §3.6). */
export const A2A_VERSION_HEADER = 'A2A-Version';

/**
 * Whether a request's A2A version is one we serve. Empty or absent means 0.3 (a v0.3 client
 * sends none); the patch number is ignored (`1.0.2` is `1.0`); anything else that is not
 * `Major.Minor` of a version we serve is refused.
 */
export function a2aVersionSupported(value: string | undefined): boolean {
  const v = value?.trim() ?? '';
  if (v === '') return true;
  const m = /^(\d{1,4})\.(\d{1,4})(?:\.\d{1,4})?$/.exec(v);
  return m !== null && (A2A_SUPPORTED_VERSIONS as readonly string[]).includes(`${Number(m[1])}.${Number(m[2])}`);
}

/** The version a request names: the header, else the query parameter of the same name. */
export function requestedA2AVersion(req: Request): string | undefined {
  const header = req.get(A2A_VERSION_HEADER);
  if (header !== undefined) return header;
  const query = req.query[A2A_VERSION_HEADER];
  return typeof query === 'string' ? query : Array.isArray(query) ? String(query[0]) : undefined;
}

/** The 400 of a card route, for the OpenAPI document: what `refuseUnsupportedA2AVersion` sends. */
export const VERSION_NOT_SUPPORTED_RESPONSE: ResponseSpec = {
  description:
    'A2A-Version (header or query parameter) names a version the cards do not serve (1.0 and 0.3 are served; empty means 0.3): A2A VersionNotSupportedError, HTTP+JSON binding',
  contentType: 'application/a2a+json',
  schema: z.object({
    error: z.object({
      code: z.literal(400),
      status: z.literal('FAILED_PRECONDITION'),
      message: z.string(),
      details: z.array(
        z.object({
          '@type': z.literal('type.googleapis.com/google.rpc.ErrorInfo'),
          reason: z.literal('VERSION_NOT_SUPPORTED'),
          domain: z.literal('a2a-protocol.org'),
          metadata: z.object({ requestedVersion: z.string(), supportedVersions: z.string() }),
        }),
      ),
    }),
  }),
};

/**
 * Answers a request naming an A2A version we do not serve with the specification's
 * VersionNotSupportedError as the HTTP+JSON binding states it (§11.6: a google.rpc.Status with a
 * google.rpc.ErrorInfo of reason VERSION_NOT_SUPPORTED, HTTP 400), and says so; otherwise does
 * nothing. Never cached: the same path answers every supported version with its document.
 */
export function refuseUnsupportedA2AVersion(req: Request, res: Response): boolean {
  const requested = requestedA2AVersion(req);
  if (a2aVersionSupported(requested)) return false;
  const supported = A2A_SUPPORTED_VERSIONS.join(', ');
  const shown = String(requested).slice(0, 32);
  res
    .status(400)
    .set({ 'Content-Type': 'application/a2a+json', 'Cache-Control': 'no-store', 'Access-Control-Allow-Origin': '*' })
    .send(
      JSON.stringify({
        error: {
          code: 400,
          status: 'FAILED_PRECONDITION',
          message: `A2A version ${JSON.stringify(shown)} is not supported; this service speaks ${supported}`,
          details: [
            {
              '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
              reason: 'VERSION_NOT_SUPPORTED',
              domain: 'a2a-protocol.org',
              metadata: { requestedVersion: shown, supportedVersions: supported },
            },
          ],
        },
      }),
    );
  return true;
}
