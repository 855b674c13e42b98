import { join } from 'node:path';
import { openDatabase, type Database } from '../data/db.js';
import { migrate } from '../data/migrate.js';
import { REGISTRATION_PRICE_ATOMIC } from '../domain/site.js';
import type { SiteInfo } from '../documents/site-info.js';
import { API_VERSION } from '../api/openapi.js';
import { openChain, type ChainHandle } from '../platform/blockchain.js';
import { CardKeys, JWKS_PATH } from '../platform/card-keys.js';
import type { Config } from '../platform/config.js';
import type { Logger } from '../platform/logger.js';
import { Metrics } from '../platform/metrics.js';
import { openObjectStore, type ObjectStore } from '../platform/object-store.js';
import { closeQueues, createQueues, type Queues } from '../platform/queues.js';
import { openRedis, type RedisHandle } from '../platform/redis.js';
import { redisRenderTurns, type RenderTurns } from '../platform/render-turns.js';
import { enqueueSettlement } from '../platform/queues.js';
import { localChain } from '../platform/chain/clients.js';
import { builtinFacilitator } from '../domain/payments/facilitators/builtin-facilitator.js';
import type { Facilitator } from '../domain/payments/facilitators/facilitator.js';
import { FacilitatorPool } from '../domain/payments/facilitators/pool.js';
import { remoteFacilitator } from '../domain/payments/facilitators/remote-facilitator.js';
import { Paywall } from '../domain/payments/paywall/paywall.js';
import type { SettlementEffects } from '../domain/payments/ledger/settlement.js';
import { JwtKeys } from '../domain/identity/jwt.js';
import { ReceiptIssuer } from '../domain/payments/protocol/extensions/offer-receipt.js';
import { registrationEffect } from '../domain/identity/sign-in.js';
import { purchaseEffect } from '../domain/posts/posts.use-cases.js';
import { resolveSecrets } from './secrets.js';

/**
 * What each payment purpose buys, applied in the transaction that marks its payment settled. Put
 * together here and handed to every settling path (the paywall, the settle-payment job), so none
 * can settle a payment without creating what was paid for.
 */
export const SETTLEMENT_EFFECTS: SettlementEffects = {
  registration: registrationEffect,
  purchase: purchaseEffect,
};

/** Every client a process role needs, opened once at start and closed once at shutdown. */
export interface Runtime {
  config: Config;
  log: Logger;
  database: Database;
  redis: RedisHandle;
  store: ObjectStore;
  chain: ChainHandle;
  queues: Queues;
  /** Which renders of an agent's documents another overtook (src/platform/render-turns.ts). */
  renderTurns: RenderTurns;
  metrics: Metrics;
  site: SiteInfo;
  adminToken: string;
  facilitators: FacilitatorPool;
  paywall: Paywall;
  jwt: JwtKeys;
  receipts: ReceiptIssuer;
  settlementEffects: SettlementEffects;
  enqueueSettlement(paymentId: string): Promise<void>;
  close(): Promise<void>;
}

/** Remote facilitators first (in configured order), the built-in one last as the fallback. */
export function buildFacilitatorPool(config: Config, chain: ChainHandle, log: Logger): FacilitatorPool {
  const members: Facilitator[] = config.chain.facilitatorUrls.map((url) =>
    remoteFacilitator(url, config.chain.facilitatorTimeoutMs),
  );
  if (config.chain.facilitatorBuiltin && chain.facilitatorPrivateKey) {
    members.push(
      builtinFacilitator({
        rpcUrl: chain.rpcUrl,
        chain: localChain(chain.chainId, chain.rpcUrl),
        privateKey: chain.facilitatorPrivateKey,
        // anvil mines on arrival; Base produces a block every 2 s.
        pollingIntervalMs: config.chain.pollIntervalMs ?? (chain.embedded ? 10 : 250),
        batchMax: config.chain.settlementBatchMax,
      }),
    );
  }
  if (!members.length) log.warn('no payment facilitator is configured: every paid request will get 503');
  return new FacilitatorPool(members, {
    failureThreshold: config.chain.facilitatorFailureThreshold,
    halfOpenAfterMs: config.chain.facilitatorHalfOpenMs,
    trialTimeoutMs: config.chain.facilitatorTimeoutMs,
    log,
  });
}

/**
 * Opens the database (and migrates it), Redis, the object store and the chain, each either from
 * configuration or as its embedded default. Parts start in parallel; if one fails, the others
 * are closed before the error propagates, so a failed start leaves no child process behind.
 */
export async function openRuntime(config: Config, log: Logger): Promise<Runtime> {
  const started = performance.now();
  // First: a key file that cannot be used stops the start before anything is opened.
  const { adminToken, receiptPrivateKey, jwtPrivateKeyPem, cardSigningKeyPem } = resolveSecrets(config, log);
  const opened: Array<{ close(): Promise<void> }> = [];
  const track = <T extends { close(): Promise<void> }>(p: Promise<T>) =>
    p.then((v) => {
      opened.push(v);
      return v;
    });
  try {
    const [database, redis, store, chain] = await Promise.all([
      track(openDatabase({ ...config.database, embeddedDataDir: join(config.dataDir, 'pglite'), log })),
      track(openRedis(config.redis.url, log)),
      track(
        openObjectStore({
          ...config.s3,
          embeddedDir: join(config.dataDir, 's3'),
          log,
        }),
      ),
      track(
        openChain({
          rpcUrl: config.chain.rpcUrl,
          chainId: config.chain.chainId,
          usdcAddress: config.chain.usdcAddress,
          identityRegistryAddress: config.chain.identityRegistryAddress,
          reputationRegistryAddress: config.chain.reputationRegistryAddress,
          treasuryAddress: config.chain.treasuryAddress,
          facilitatorPrivateKey: config.chain.facilitatorPrivateKey,
          faucetEnabled: config.faucetEnabled,
          log,
        }),
      ),
    ]);
    const applied = await migrate(database.pool);
    if (applied.length) log.info({ applied }, 'database migrated');

    // Producers fail fast while Redis is down (workers keep their own waiting connections).
    const producer = redis.producer();
    const queues = createQueues(producer, config.redis.prefix, log);
    const renderTurns = redisRenderTurns(producer, config.redis.prefix);
    const metrics = new Metrics();
    const facilitators = buildFacilitatorPool(config, chain, log);
    const enqueue = (paymentId: string) => enqueueSettlement(queues, paymentId);
    const receipts = new ReceiptIssuer(receiptPrivateKey);
    const paywall = new Paywall({
      db: database.db,
      facilitators,
      settlementEffects: SETTLEMENT_EFFECTS,
      log,
      enqueueSettlement: enqueue,
      // X402_EXTENSIONS=false: plain x402, with no receipt signer behind the paywall.
      receipts: config.x402Extensions ? receipts : undefined,
    });
    const baseUrl = config.publicBaseUrl ?? `http://localhost:${config.port}`;
    const site: SiteInfo = {
      baseUrl,
      apiVersion: API_VERSION,
      network: chain.network,
      usdcAddress: chain.usdc.address,
      registrationPriceAtomic: REGISTRATION_PRICE_ATOMIC,
      cardSigner: new CardKeys(cardSigningKeyPem, `${baseUrl}${JWKS_PATH}`, config.cardPreviousKeys),
    };
    const jwt = new JwtKeys({
      privateKeyPem: jwtPrivateKeyPem,
      previousPublicKeysPem: config.jwtPreviousPublicKeys,
      issuer: site.baseUrl,
      audience: site.baseUrl,
      ttlSeconds: config.jwtTtlSeconds,
    });
    log.info(
      {
        ms: Math.round(performance.now() - started),
        redis: redis.origin,
        embeddedDb: database.embedded,
        embeddedStore: store.embedded,
        embeddedChain: chain.embedded,
      },
      'runtime ready',
    );
    return {
      config,
      log,
      database,
      redis,
      store,
      chain,
      queues,
      renderTurns,
      metrics,
      site,
      adminToken,
      facilitators,
      paywall,
      jwt,
      receipts,
      settlementEffects: SETTLEMENT_EFFECTS,
      enqueueSettlement: enqueue,
      async close() {
        facilitators.close();
        await closeQueues(queues);
        await closeAll([redis, database, store, chain], log);
      },
    };
  } catch (err) {
    await closeAll(opened, log);
    throw err;
  }
}

async function closeAll(parts: Array<{ close(): Promise<void> }>, log: Logger) {
  const results = await Promise.allSettled(parts.map((p) => p.close()));
  for (const r of results) if (r.status === 'rejected') log.warn({ err: r.reason }, 'close failed');
}
