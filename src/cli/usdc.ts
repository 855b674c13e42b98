import { CliError } from './cli-error.js';

/** An atomic amount as USDC with its decimals, e.g. `1.5 USDC`. */
export function formatUsdc(price: { amount: string; decimals: number }): string {
  const atomic = BigInt(price.amount);
  const unit = 10n ** BigInt(price.decimals);
  const fraction = (atomic % unit).toString().padStart(price.decimals, '0').replace(/0+$/, '');
  return `${atomic / unit}${fraction ? `.${fraction}` : ''} USDC`;
}

/** `2.5` (USDC) as atomic units of a 6-decimal token. */
export function parseUsdc(text: string, decimals = 6): bigint {
  const m = /^(\d+)(?:\.(\d+))?$/.exec(text.trim());
  if (!m || (m[2]?.length ?? 0) > decimals)
    throw new CliError('invalid_option', `--max-price must be an amount in USDC such as 2.5, not "${text}"`);
  return BigInt(m[1] ?? '0') * 10n ** BigInt(decimals) + BigInt((m[2] ?? '').padEnd(decimals, '0') || '0');
}
