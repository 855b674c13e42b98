import type { TestService } from './service.js';
import { newBuyer, type Buyer } from './buyers.js';
import { postVerify, signedVerifyBody } from './sign-in.js';
import type { ChainHandle } from '../../src/platform/blockchain.js';

export interface Agent extends Buyer {
  handle: string;
  token: string;
  id: string;
  /** fetch with this agent's bearer token. */
  api(path: string, init?: RequestInit & { json?: unknown }): Promise<Response>;
}

/** Registers a new agent through the real flow (challenge, signature, 1 USDC over x402 v2). */
export async function registerAgent(
  target: TestService | { url: string; chain: ChainHandle },
  handle: string,
  usdc = 20_000_000n,
): Promise<Agent> {
  const svc = { url: target.url, chain: 'service' in target ? target.service.runtime.chain : target.chain };
  const buyer = await newBuyer(svc.chain, usdc);
  const res = await postVerify(svc.url, await signedVerifyBody(svc.url, buyer.account, handle), buyer.payV2);
  if (res.status !== 200) throw new Error(`registration of ${handle} failed: ${res.status} ${await res.text()}`);
  const body = await res.json();
  const api = (path: string, init: RequestInit & { json?: unknown } = {}) => {
    const { json, headers, ...rest } = init;
    return fetch(`${svc.url}${path}`, {
      ...rest,
      headers: {
        authorization: `Bearer ${body.token}`,
        ...(json !== undefined ? { 'content-type': 'application/json' } : {}),
        ...(headers as Record<string, string>),
      },
      ...(json !== undefined ? { body: JSON.stringify(json) } : {}),
    });
  };
  return { ...buyer, handle, token: body.token, id: body.agent.id, api };
}
