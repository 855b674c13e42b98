import { expect } from 'chai';
import { sql } from 'kysely';
import { randomBytes } from 'node:crypto';
import { openDatabase, type Database } from '../../src/data/db.js';
import type { Payment } from '../../src/data/schema.js';
import { claimPayment, findPayment } from '../../src/data/payments.repository.js';
import {
  finalizeSettlement,
  MissingSettlementEffectError,
  type SettlementEffect,
  type SettlementEffects,
} from '../../src/domain/payments/ledger/settlement.js';
import { createLogger } from '../../src/platform/logger.js';
import { freshDatabase, walSyncs, type TestDatabase } from '../support/database.js';

const hex = (bytes: number) => `0x${randomBytes(bytes).toString('hex')}`;

/** A registration payment as the paywall claims it, with overrides. */
function newRegistration(overrides: { handle?: string } = {}) {
  const wallet = hex(20);
  return {
    purpose: 'registration' as const,
    protocolVersion: 2 as const,
    network: 'eip155:84532',
    asset: hex(20),
    payer: wallet,
    payTo: hex(20),
    amountAtomic: 1_000_000n,
    nonce: hex(32),
    validAfter: new Date(Date.now() - 60_000),
    validBefore: new Date(Date.now() + 600_000),
    resource: 'http://localhost/api/auth/verify',
    registrationHandle: overrides.handle ?? `effects-${randomBytes(3).toString('hex')}`,
    registrationWallet: wallet,
    payload: {},
    requirements: {},
  };
}

describe('settlement effects are passed to whatever settles a payment', function () {
  this.timeout(60_000);
  let tdb: TestDatabase;
  let database: Database;

  before(async () => {
    tdb = await freshDatabase();
    database = await openDatabase({
      url: tdb.url,
      poolMax: 2,
      embeddedDataDir: 'memory://',
      log: createLogger('silent'),
    });
  });

  after(async () => {
    await database?.close();
    await tdb?.drop();
  });

  /** Runs `fn` on a pool of one connection: every statement in the same session. */
  async function onOneConnection(fn: (db: Database['db']) => Promise<void>): Promise<void> {
    const single = await openDatabase({
      url: tdb.url,
      poolMax: 1,
      embeddedDataDir: 'memory://',
      log: createLogger('silent'),
    });
    try {
      await fn(single.db);
    } finally {
      await single.close();
    }
  }

  const synchronousCommit = async (db: Database['db']) =>
    (await sql<{ synchronous_commit: string }>`SHOW synchronous_commit`.execute(db)).rows[0]?.synchronous_commit;

  async function claimed(): Promise<Payment> {
    const claim = await claimPayment(database.db, newRegistration());
    if (!claim.claimed) throw new Error('the test payment was not claimed');
    return claim.payment;
  }

  it('when a payment is claimed, then only the claim commits without waiting for its WAL: the next transaction on its connection waits', async () => {
    await onOneConnection(async (db) => {
      const claim = await claimPayment(db, newRegistration());
      if (!claim.claimed) throw new Error('the test payment was not claimed');
      const stored = await findPayment(db, claim.payment.id);
      expect(claim.payment, 'the claimed row, as a read returns it').to.deep.equal(stored);
      expect(await synchronousCommit(db)).to.equal('on');
    });
  });

  it('when a payment is claimed `pending`, then its commit does not wait for the WAL; claimed `settling` (sent right after), it does', async () => {
    await onOneConnection(async (db) => {
      const syncsOf = async (settlingThrough?: string) => {
        const before = await walSyncs(db);
        for (let i = 0; i < 20; i++) await claimPayment(db, newRegistration(), { settlingThrough });
        return (await walSyncs(db)) - before;
      };
      expect(await syncsOf(), 'WAL syncs of 20 pending claims').to.be.below(10);
      expect(await syncsOf('builtin'), 'WAL syncs of 20 settling claims').to.be.at.least(20);
    });
  });

  it('when a payment settles, then the effect of its purpose runs once, however often it is finalized', async () => {
    const payment = await claimed();
    const applied: string[] = [];
    const record: SettlementEffect = async (_trx, p) => void applied.push(p.id);
    const effects: SettlementEffects = { registration: record, purchase: record };

    const first = await finalizeSettlement(database.db, effects, payment, hex(32));
    const again = await finalizeSettlement(database.db, effects, payment, hex(32));

    expect(first.status).to.equal('settled');
    expect(again.tx_hash, 'the first recorded transaction is kept').to.equal(first.tx_hash);
    expect(applied).to.deep.equal([payment.id]);
  });

  it('when a payment purpose has no effect, then settling it throws and the payment stays unsettled', async () => {
    const payment = await claimed();
    // What a caller built outside the type system could pass: the record without this purpose.
    const incomplete = { purchase: async () => undefined } as unknown as SettlementEffects;

    let thrown: unknown;
    try {
      await finalizeSettlement(database.db, incomplete, payment, hex(32));
    } catch (err) {
      thrown = err;
    }

    expect(thrown).to.be.instanceOf(MissingSettlementEffectError);
    expect((thrown as MissingSettlementEffectError).code).to.equal('settlement_effect_missing');
    const row = await database.db
      .selectFrom('payments')
      .selectAll()
      .where('id', '=', payment.id)
      .executeTakeFirstOrThrow();
    expect(row.status, 'nothing was written').to.equal('pending');
    expect(row.tx_hash).to.equal(null);
  });
});
