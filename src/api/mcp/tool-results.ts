import type { CallToolResult } from '@modelcontextprotocol/server';
import type { Logger } from '../../platform/logger.js';
import { AppError, ServiceUnavailableError } from '../../platform/errors.js';

/** A tool's answer: the object as structured content, and the same JSON as text for clients without it. */
export function toolResult(body: Record<string, unknown>, meta?: Record<string, unknown>): CallToolResult {
  return {
    content: [{ type: 'text', text: JSON.stringify(body) }],
    structuredContent: body,
    ...(meta ? { _meta: meta } : {}),
  };
}

/**
 * A tool error with a stable snake_case `code` (the same codes the HTTP API answers with), as
 * structured content `{error: {code, message, ...details}}` and as text.
 */
export function toolError(code: string, message: string, details: Record<string, unknown> = {}): CallToolResult {
  const body = { error: { code, message, ...details } };
  return { content: [{ type: 'text', text: JSON.stringify(body) }], structuredContent: body, isError: true };
}

/**
 * Runs a tool and turns a failure into its tool error: an AppError keeps its code and message (a
 * client's mistake, an unknown skill, a busy dependency); anything else is logged and answered
 * without its internals, as the HTTP API answers a 500.
 */
export async function answering(
  log: Logger,
  tool: string,
  run: () => Promise<CallToolResult>,
): Promise<CallToolResult> {
  try {
    return await run();
  } catch (err) {
    if (err instanceof AppError) {
      return toolError(err.code, err.message, {
        ...err.details,
        ...(err instanceof ServiceUnavailableError ? { retryAfterSeconds: err.retryAfterSeconds } : {}),
      });
    }
    log.error({ err, tool }, 'MCP tool failed');
    return toolError('internal_error', `The ${tool} tool failed on our side`);
  }
}
