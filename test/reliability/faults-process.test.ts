import { expect } from 'chai';
import { parseAbi, type Address, type Hex } from 'viem';
import { registerAgent, type Agent } from '../support/agents.js';
import { balanceOf, newBuyer, type Buyer } from '../support/buyers.js';
import { eventually } from '../support/service.js';
import { postVerify, signedVerifyBody } from '../support/sign-in.js';
import {
  spawnServiceChild,
  startServiceParts,
  type ServiceChild,
  type ServiceParts,
} from '../support/service-child.js';
import { skillBody } from '../support/skills.js';

const [authorizationUsed, transferEvent, authorizationState] = parseAbi([
  'event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce)',
  'event Transfer(address indexed from, address indexed to, uint256 value)',
  'function authorizationState(address authorizer, bytes32 nonce) view returns (bool)',
]);

interface PaymentRow {
  id: string;
  status: string;
  purpose: 'registration' | 'purchase';
  payer: string;
  pay_to: string;
  nonce: string;
  amount_atomic: string;
  tx_hash: string | null;
}

const IN_FLIGHT = ['pending', 'verified', 'settling'];
// Just above what the built-in facilitator requires (a request may be settling for 41 s: it may
// wait 30 s for a receipt), and below the default minute: once restarted, the reconciler takes up
// the payments the dead process left settling no later than those it left pending (after 90 s).
const STUCK_AFTER_MS = '42000';

/**
 * The service process dies (SIGKILL: no drain, no cleanup) while a burst of real x402 payments is
 * being settled on the chain. Some settlements were mined and not recorded, some recorded, some
 * never sent. Started again on the same database, Redis and chain, the service must bring every
 * payment to a final state by itself (the reconciler and the settle-payment job read the chain), and
 * the ledger must then equal the chain: every settled payment is exactly one use of its
 * authorization on chain and every use on chain is exactly one settled payment, nobody is charged
 * twice, and exactly the settled purchases and registrations have their effect.
 */
describe('faults: the service process is killed (SIGKILL) while payments settle', function () {
  // A payment claimed but never sent is released only after 90 s (ledger/resolve-payment.ts) by a
  // reconciler that runs once a minute: recovery alone may take up to 2.5 minutes.
  this.timeout(360_000);
  let parts: ServiceParts | undefined;
  const services: ServiceChild[] = [];
  const sellers: Agent[] = [];
  const posts: { id: string; price: bigint; seller: Agent }[] = [];
  const buyers: Buyer[] = [];
  const registrants: { buyer: Buyer; handle: string; body: string }[] = [];

  before(async () => {
    parts = await startServiceParts();
    const first = await spawnServiceChild({ ...parts.env, PAYMENTS_STUCK_AFTER_MS: STUCK_AFTER_MS });
    services.push(first);
    const target = { url: first.url, chain: parts.chain };
    sellers.push(...(await Promise.all([0, 1, 2].map((i) => registerAgent(target, `seller-${i}`, 5_000_000n)))));
    for (const [i, seller] of sellers.entries()) {
      const price = 100_000n * BigInt(i + 1);
      const res = await seller.api('/api/posts', {
        method: 'POST',
        json: {
          title: `Careful skill ${i}`,
          preview: 'preview',
          priceAtomic: String(price),
          tags: ['faults'],
          body: skillBody(`careful-skill-${i}`, `# ${i}`),
        },
      });
      expect(res.status, await res.clone().text()).to.equal(201);
      const post = await res.json();
      expect((await seller.api(`/api/posts/${post.id}/publish`, { method: 'POST' })).status).to.equal(200);
      posts.push({ id: post.id, price, seller });
    }
    for (let i = 0; i < 24; i++) buyers.push(await newBuyer(parts.chain, 2_000_000n));
    for (let i = 0; i < 8; i++) {
      const buyer = await newBuyer(parts.chain, 2_000_000n);
      const handle = `newcomer-${i}`;
      // Challenge and signature now: during the burst, only the paid step runs.
      registrants.push({ buyer, handle, body: await signedVerifyBody(first.url, buyer.account, handle) });
    }
  });

  after(async () => {
    for (const s of services) await s.kill('SIGKILL').catch(() => undefined);
    await parts?.stop();
  });

  it('after a restart every payment is final, and the ledger equals the chain: one transfer per settled payment, none twice, entitlements exactly for settled purchases', async () => {
    const p = parts!;
    const first = services[0]!;
    const db = p.db;
    const usdc = p.devChain.usdc.address;
    const treasury = p.devChain.accounts.treasury.address;
    const watched: Address[] = [
      ...buyers.map((b) => b.address),
      ...registrants.map((r) => r.buyer.address),
      ...sellers.map((s) => s.address),
      treasury,
    ];
    const balancesBefore = new Map<Address, bigint>();
    for (const a of watched) balancesBefore.set(a, await balanceOf(p.chain, a));
    const before = await db.query<{ id: string }>('SELECT id FROM payments');
    const preBurst = new Set(before.rows.map((r) => r.id));
    expect(before.rows.length, 'the sellers registered').to.equal(sellers.length);

    // The burst: every buyer buys every skill, and newcomers register, all at once (registrations
    // spread among the purchases, so that both kinds are in flight when the process dies).
    let sent = 0;
    const outcomes: Array<number | 'connection lost'> = [];
    const track = (request: () => Promise<Response>) => {
      sent++;
      return request().then(
        async (res) => {
          await res.arrayBuffer();
          outcomes.push(res.status);
        },
        () => outcomes.push('connection lost'),
      );
    };
    const burst = Promise.all(
      buyers.flatMap((b, i) => [
        ...posts.map((post) => track(() => b.payV2(`${first.url}/api/posts/${post.id}?view=full`))),
        ...(i % 3 === 0
          ? [registrants[i / 3]!].map((r) => track(() => postVerify(first.url, r.body, r.buyer.payV2)))
          : []),
      ]),
    );

    // Kill as soon as a payment of the burst is settled while others are still in flight (being
    // verified, sent to the chain, mined, or recorded). On a loaded machine the first payment may
    // settle before the next one is recorded, so both are waited for, not only the first settlement.
    const newRows = async () =>
      (await db.query<PaymentRow>('SELECT * FROM payments')).rows.filter((r) => !preBurst.has(r.id));
    let lastSeen: PaymentRow[] = [];
    await eventually(
      async () => {
        lastSeen = await newRows();
        // Several in flight, so that some still are once the kill lands a few milliseconds later.
        return (
          lastSeen.some((r) => r.status === 'settled') &&
          lastSeen.filter((r) => IN_FLIGHT.includes(r.status)).length >= 3
        );
      },
      60_000,
      5,
    ).catch((err) => {
      const statuses = [...new Set(lastSeen.map((r) => r.status))].map(
        (s) => `${s}: ${lastSeen.filter((r) => r.status === s).length}`,
      );
      throw new Error(`${(err as Error).message}; the burst's payments last seen: ${statuses.join(', ') || 'none'}`);
    });
    const killed = await first.kill('SIGKILL');
    expect(killed.signal).to.equal('SIGKILL');
    const atKill = await newRows();
    const inFlightAtKill = atKill.filter((r) => IN_FLIGHT.includes(r.status));
    const byStatus = (rows: PaymentRow[], of: (r: PaymentRow) => string = (r) => r.status) =>
      Object.fromEntries([...new Set(rows.map(of))].sort().map((s) => [s, rows.filter((r) => of(r) === s).length]));
    // Every client gets its answer or a lost connection before anything listens on the port again.
    await burst;
    const answered = outcomes.filter((o) => o === 200).length;
    console.log(
      `      requests sent: ${sent}; answered 200 before the kill: ${answered}; connections lost: ${outcomes.filter((o) => o === 'connection lost').length}; ` +
        `other answers: ${JSON.stringify(outcomes.filter((o) => o !== 200 && o !== 'connection lost'))}`,
    );
    // How many of those the chain had already settled: the dead process sent them but never recorded it.
    const minedUnrecorded = (
      await Promise.all(
        inFlightAtKill.map((r) =>
          p.devChain.publicClient.readContract({
            address: usdc,
            abi: [authorizationState],
            functionName: 'authorizationState',
            args: [r.payer as Address, r.nonce as Hex],
          }),
        ),
      )
    ).filter(Boolean).length;
    console.log(
      `      payments at the kill: ${atKill.length} ${JSON.stringify(byStatus(atKill, (r) => `${r.purpose} ${r.status}`))}; in flight: ${inFlightAtKill.length}, ` +
        `of which already settled on chain but not recorded: ${minedUnrecorded}`,
    );
    expect(inFlightAtKill.length, 'payments in flight when the process was killed').to.be.greaterThan(0);

    // The same service again, on the same database, Redis, chain and port.
    const restartedAt = Date.now();
    const passes: string[] = [];
    const resolutions: Record<string, number> = {};
    const second = await spawnServiceChild(
      { ...p.env, PAYMENTS_STUCK_AFTER_MS: STUCK_AFTER_MS },
      {
        port: first.port,
        onLog: (l) => {
          if (l.msg !== 'job completed') return;
          const result = l.result as { enqueued?: number; resolution?: string };
          if (l.job === 'reconcile-payments')
            passes.push(`+${((Date.now() - restartedAt) / 1000).toFixed(0)} s: ${result.enqueued}`);
          if (l.job === 'settle-payment') resolutions[result.resolution!] = (resolutions[result.resolution!] ?? 0) + 1;
        },
      },
    );
    services.push(second);
    await eventually(
      async () => {
        const { rows } = await db.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM payments WHERE status IN ('pending', 'verified', 'settling')",
        );
        return rows[0]!.n === 0;
      },
      240_000,
      500,
    ).catch((err) => {
      throw new Error(`${(err as Error).message}; service log: ${JSON.stringify(second.tail(10))}`);
    });
    const recoveredInS = (Date.now() - restartedAt) / 1000;

    // The ledger.
    const { rows: all } = await db.query<PaymentRow>('SELECT * FROM payments');
    const burstRows = all.filter((r) => !preBurst.has(r.id));
    const settled = all.filter((r) => r.status === 'settled');
    const releasedIds = atKill.filter((r) => !all.some((x) => x.id === r.id)).map((r) => r.id);
    const resolvedFromKill = inFlightAtKill.map((r) => all.find((x) => x.id === r.id)?.status ?? 'released');
    console.log(
      `      recovered in ${recoveredInS.toFixed(1)} s after the restart; burst payments now ${JSON.stringify(byStatus(burstRows))}; ` +
        `in flight at the kill became ${JSON.stringify(Object.fromEntries([...new Set(resolvedFromKill)].map((s) => [s, resolvedFromKill.filter((x) => x === s).length])))}; ` +
        `released (row removed, nothing charged): ${releasedIds.length}`,
    );
    console.log(
      `      reconciler passes after the restart (payments handed to settle-payment): ${passes.join(', ')}; settle-payment outcomes: ${JSON.stringify(resolutions)}`,
    );
    expect(all.filter((r) => IN_FLIGHT.includes(r.status))).to.deep.equal([]);

    // Every use of an authorization on chain is exactly one settled payment, in the same transaction, and vice versa.
    const used = await p.devChain.publicClient.getLogs({
      address: usdc,
      event: authorizationUsed,
      fromBlock: 0n,
      toBlock: 'latest',
    });
    const key = (payer: string, nonce: string) => `${payer.toLowerCase()}/${nonce.toLowerCase()}`;
    const onChain = new Map<string, Hex[]>();
    for (const log of used) {
      const k = key(log.args.authorizer!, log.args.nonce!);
      onChain.set(k, [...(onChain.get(k) ?? []), log.transactionHash!]);
    }
    const ledger = new Map<string, PaymentRow[]>();
    for (const r of settled) ledger.set(key(r.payer, r.nonce), [...(ledger.get(key(r.payer, r.nonce)) ?? []), r]);
    expect([...onChain.keys()].sort(), 'authorizations used on chain = settled payments').to.deep.equal(
      [...ledger.keys()].sort(),
    );
    for (const [k, txs] of onChain) {
      expect(txs, `uses on chain of ${k}`).to.have.length(1);
      expect(ledger.get(k), `settled payments of ${k}`).to.have.length(1);
      expect(ledger.get(k)![0]!.tx_hash?.toLowerCase(), `transaction of ${k}`).to.equal(txs[0]!.toLowerCase());
    }
    // A payment that did not settle left its authorization unused: nothing was taken for it.
    for (const r of [
      ...all.filter((x) => x.status !== 'settled'),
      ...atKill.filter((x) => releasedIds.includes(x.id)),
    ]) {
      expect(onChain.has(key(r.payer, r.nonce)), `payment ${r.id} (${r.status}) was charged`).to.equal(false);
    }

    // Nobody was charged twice: each payer's outgoing transfers are exactly its settled payments.
    const transfers = await p.devChain.publicClient.getLogs({
      address: usdc,
      event: transferEvent,
      fromBlock: 0n,
      toBlock: 'latest',
    });
    for (const payer of [...buyers.map((b) => b.address), ...registrants.map((r) => r.buyer.address)]) {
      const out = transfers.filter((t) => t.args.from!.toLowerCase() === payer.toLowerCase());
      const paid = settled.filter((r) => r.payer === payer.toLowerCase());
      expect(
        out.map((t) => `${t.transactionHash}/${t.args.to!.toLowerCase()}/${t.args.value}`).sort(),
        `transfers from ${payer}`,
      ).to.deep.equal(paid.map((r) => `${r.tx_hash}/${r.pay_to}/${r.amount_atomic}`).sort());
    }

    // Each wallet's balance moved by exactly what the ledger says it earned and spent in the burst.
    for (const a of watched) {
      const mine = burstRows.filter((r) => r.status === 'settled');
      const earned = mine.filter((r) => r.pay_to === a.toLowerCase()).reduce((s, r) => s + BigInt(r.amount_atomic), 0n);
      const spent = mine.filter((r) => r.payer === a.toLowerCase()).reduce((s, r) => s + BigInt(r.amount_atomic), 0n);
      expect((await balanceOf(p.chain, a)) - balancesBefore.get(a)!, `balance change of ${a}`).to.equal(earned - spent);
    }

    // Effects exactly once, exactly for settled payments: purchases (entitlements) and agents.
    const { rows: purchases } = await db.query<{ payment_id: string; tx_hash: string; buyer_address: string }>(
      'SELECT payment_id, tx_hash, buyer_address FROM purchases',
    );
    const settledPurchases = settled.filter((r) => r.purpose === 'purchase');
    expect(purchases.map((x) => x.payment_id).sort(), 'purchases = settled purchase payments').to.deep.equal(
      settledPurchases.map((r) => r.id).sort(),
    );
    for (const x of purchases) expect(x.tx_hash).to.equal(settledPurchases.find((r) => r.id === x.payment_id)!.tx_hash);
    const { rows: agents } = await db.query<{ registration_payment_id: string; handle: string }>(
      'SELECT registration_payment_id, handle FROM agents',
    );
    const settledRegistrations = settled.filter((r) => r.purpose === 'registration');
    expect(agents.map((x) => x.registration_payment_id).sort(), 'agents = settled registrations').to.deep.equal(
      settledRegistrations.map((r) => r.id).sort(),
    );

    // What a client polling its payment sees: a final state, or for a released claim nothing at all
    // (its authorization is unused and may be sent again).
    for (const r of inFlightAtKill) {
      const res = await fetch(`${second.url}/api/payments/${r.id}`);
      if (releasedIds.includes(r.id)) {
        expect(res.status, `released payment ${r.id}`).to.equal(404);
        continue;
      }
      expect(res.status).to.equal(200);
      expect((await res.json()).status).to.be.oneOf(['settled', 'failed', 'expired']);
    }
    const burstSettled = burstRows.filter((r) => r.status === 'settled').length;
    console.log(
      `      burst: ${sent} requests, ${inFlightAtKill.length} payments in flight at the kill, ${burstSettled} settled ` +
        `(${settledPurchases.filter((r) => !preBurst.has(r.id)).length} purchases, ${settledRegistrations.filter((r) => !preBurst.has(r.id)).length} registrations; ` +
        `${burstSettled - answered} of them without an answer to their client), ${burstRows.filter((r) => r.status === 'failed').length} failed, ` +
        `${burstRows.filter((r) => r.status === 'expired').length} expired, ${releasedIds.length} released; ${used.length} authorizations used on chain`,
    );
  });
});
