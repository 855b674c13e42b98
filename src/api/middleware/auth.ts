import type { Request } from 'express';
import type { AgentClaims, JwtKeys } from '../../domain/identity/jwt.js';
import { UnauthorizedError } from '../../platform/errors.js';

/**
 * The agent behind `Authorization: Bearer <jwt>`. With `required`, a missing token is a 401;
 * a present but bad token (expired, tampered, wrong algorithm or key) is always a 401.
 */
export function authenticate(req: Request, jwt: JwtKeys, required: true): AgentClaims;
export function authenticate(req: Request, jwt: JwtKeys, required: false): AgentClaims | undefined;
export function authenticate(req: Request, jwt: JwtKeys, required: boolean): AgentClaims | undefined {
  const header = req.get('authorization');
  if (!header) {
    if (required)
      throw new UnauthorizedError('A bearer token is required: sign in with POST /api/agents/verify', 'token_missing');
    return undefined;
  }
  const token = /^Bearer\s+(\S+)$/i.exec(header)?.[1];
  if (!token) throw new UnauthorizedError('The Authorization header must be "Bearer <token>"', 'token_invalid');
  return jwt.verify(token);
}
