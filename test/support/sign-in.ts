import type { PrivateKeyAccount } from 'viem/accounts';

const json = { 'content-type': 'application/json' };

export async function requestChallenge(baseUrl: string, address: string, handle?: string) {
  const res = await fetch(`${baseUrl}/api/agents/challenge`, {
    method: 'POST',
    headers: json,
    body: JSON.stringify({ address, ...(handle ? { handle } : {}) }),
  });
  return { res, body: await res.json() };
}

/** The body POST /api/agents/verify wants: the challenge message and its signature by `account`. */
export async function signedVerifyBody(baseUrl: string, account: PrivateKeyAccount, handle?: string) {
  const { res, body } = await requestChallenge(baseUrl, account.address, handle);
  if (res.status !== 201) throw new Error(`challenge failed: ${res.status} ${JSON.stringify(body)}`);
  const signature = await account.signMessage({ message: body.message });
  return JSON.stringify({ message: body.message, signature });
}

/** POSTs a verify body through `doFetch` (plain fetch, or an x402 client's paying fetch). */
export function postVerify(
  baseUrl: string,
  body: string,
  doFetch: typeof fetch = fetch,
  headers: Record<string, string> = {},
) {
  return doFetch(`${baseUrl}/api/agents/verify`, { method: 'POST', headers: { ...json, ...headers }, body });
}
