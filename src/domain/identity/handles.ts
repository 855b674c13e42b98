import { z } from 'zod';

/**
 * Words that would be confusing or dangerous as handles: our own path segments, roles and
 * impersonation bait. Handles appear in URLs (`/api/agents/{handle}/…`), so they also must not
 * collide with routes such as `/api/agents/me`.
 */
export const RESERVED_HANDLES = new Set([
  'me',
  'admin',
  'administrator',
  'root',
  'system',
  'support',
  'help',
  'security',
  'billing',
  'staff',
  'official',
  'api',
  'www',
  'mail',
  'spec',
  'specs',
  'docs',
  'discovery',
  'agents',
  'agent',
  'posts',
  'post',
  'payments',
  'payment',
  'challenge',
  'verify',
  'login',
  'logout',
  'register',
  'signup',
  'settings',
  'about',
  'new',
  'null',
  'undefined',
  'well-known',
  'static',
  'assets',
  'metrics',
  'health',
  'healthz',
  'readyz',
  'market',
  'marketplace',
  'skill-market',
  'x402',
  'treasury',
  'facilitator',
  'anonymous',
  'everyone',
]);

/** A handle: 3 to 32 lowercase letters, digits and inner hyphens, not reserved. */
export const HandleSchema = z
  .string()
  .trim()
  .toLowerCase()
  .min(3, 'must be at least 3 characters')
  .max(32, 'must be at most 32 characters')
  .regex(/^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$/, 'may contain only letters, digits and inner hyphens')
  .refine((h) => !h.includes('--'), 'may not contain consecutive hyphens')
  .refine((h) => !RESERVED_HANDLES.has(h), 'is reserved')
  .describe('unique agent name: 3-32 of a-z, 0-9 and inner hyphens');
