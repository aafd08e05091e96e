import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { selectAccountByDepositReference } from '../../src/modules/internal-accounts/repo.js';
import { createPlatform } from '../../src/modules/platforms/service.js';
import { ManualClock } from '../../src/platform/clock.js';
import type { DbHandle } from '../../src/platform/db/database.js';
import { withTx } from '../../src/platform/db/tx.js';
import { openTestDatabase } from '../helpers/context.js';
import { queryPlans, recorded } from '../helpers/query-plans.js';

/**
 * Every deposit finds the account it is for by its reference (modules/transactions/deposits.ts,
 * the production deposit feed, POST /sandbox/deposits): a bank reference, a deposit address or
 * a Lightning invoice of the account's funding instructions. The statement asked for one row of
 * `reference = $1 or instructions @> $2 or instructions @> $3`: the planner cannot tell how many
 * rows a jsonb containment matches, expected one within the first rows of any scan, and its
 * generic plan (what a named statement settles on) read the whole table or every account of the
 * platform (and with 220 000 accounts its plan for the values did too). Here 12 000 accounts on
 * a table never analysed: each statement of each form (with and without a platform, with the
 * invoice's funding reference) reads internal_accounts through the two reference indexes only.
 */
const REFERENCE_INDEXES = ['internal_accounts_funding_instructions', 'internal_accounts_funding_reference'];

let handle: DbHandle;
let drop: () => Promise<void>;
let platformUuid: string;
const clock = new ManualClock('2026-03-01T00:00:00Z');

beforeAll(async () => {
  ({ handle, drop } = await openTestDatabase());
  ({ platformUuid } = await withTx(handle.db, (trx) => createPlatform(trx, clock, { name: 'Deposits', environment: 'sandbox' })));
  // 6 000 customers, each with a USDC account (a deposit address on Solana) and a USD account (a bank reference).
  await sql`
    insert into customers (id, platform_id, platform_customer_id, customer_type, review_status, uma_address, profile, created_at, updated_at)
    select ('00000000-0000-7000-8000-' || lpad(to_hex(g), 12, '0'))::uuid, ${platformUuid}, 'pc-' || g, 'INDIVIDUAL', 'APPROVED', '$c' || g || '@uma.example', '{}'::jsonb, now(), now()
      from generate_series(1, 6000) g`.execute(handle.db);
  await sql`
    insert into internal_accounts (id, platform_id, customer_id, type, currency, status, funding_payment_instructions, funding_reference, created_at, updated_at)
    select gen_random_uuid(), ${platformUuid}, c.id, a.type, a.currency, 'ACTIVE',
           case when a.currency = 'USDC'
             then jsonb_build_array(jsonb_build_object('instructionsNotes', '', 'isPlatformAccount', false,
                    'accountOrWalletInfo', jsonb_build_object('accountType', 'SOLANA_WALLET', 'address', 'So1' || md5(c.id::text))))
             else jsonb_build_array(jsonb_build_object('instructionsNotes', '', 'isPlatformAccount', false,
                    'accountOrWalletInfo', jsonb_build_object('accountType', 'US_ACCOUNT', 'accountNumber', right(md5(c.id::text), 10)))) end,
           'CDR' || upper(left(md5(c.id::text || a.currency), 13)), now(), now()
      from customers c cross join (values ('INTERNAL_CRYPTO', 'USDC'), ('INTERNAL_FIAT', 'USD')) a (type, currency)`.execute(handle.db);
  // Rows inserted just now wait in the GIN index's pending list, which every search reads in full
  // (a few hundred pages here, as many as the table) until a vacuum moves them into the index, as
  // autovacuum does in service; no statistics are gathered.
  await sql`vacuum internal_accounts`.execute(handle.db);
}, 120_000);
afterAll(() => drop?.());

describe('the account a deposit is for, found by its reference', () => {
  const forms = {
    'a sandbox deposit (one platform)': (reference: string) => (db: Parameters<typeof selectAccountByDepositReference>[0]) => selectAccountByDepositReference(db, reference, undefined, platformUuid),
    'a deposit reported by the rail (any platform)': (reference: string) => (db: Parameters<typeof selectAccountByDepositReference>[0]) => selectAccountByDepositReference(db, reference, undefined),
    'a Lightning invoice naming its funding reference': (reference: string) => (db: Parameters<typeof selectAccountByDepositReference>[0]) =>
      selectAccountByDepositReference(db, reference, 'CDR0123456789ABC', platformUuid),
  };

  for (const [form, run] of Object.entries(forms)) {
    it(`${form} is read through the reference indexes, planned for its values and generic`, async () => {
      const queries = await recorded(run('So1d2c3e4f5a6b7c8d9e0f1a2b3c4d5e6f'));
      expect(queries).toHaveLength(1);
      for (const plan of await queryPlans(handle.db, queries[0]!)) {
        const described = `${queries[0]!.sql}\n${JSON.stringify(plan.map((n) => [n['Node Type'], n['Index Name']]))}`;
        expect(plan.map((n) => n['Node Type']), described).not.toContain('Seq Scan');
        const read = new Set(plan.map((n) => n['Index Name']).filter(Boolean));
        expect([...read].sort(), described).toEqual(REFERENCE_INDEXES);
      }
    });
  }

  it('still finds the account of a bank reference, a deposit address, and one platform’s only', async () => {
    const [bank] = (await sql<{ id: string; funding_reference: string }>`select id, funding_reference from internal_accounts where currency = 'USD' limit 1`.execute(handle.db)).rows;
    expect((await selectAccountByDepositReference(handle.db, bank!.funding_reference.toLowerCase(), undefined))?.id).toBe(bank!.id);
    const [wallet] = (await sql<{ id: string; address: string }>`
      select id, funding_payment_instructions->0->'accountOrWalletInfo'->>'address' as address from internal_accounts where currency = 'USDC' limit 1`.execute(handle.db)).rows;
    expect((await selectAccountByDepositReference(handle.db, wallet!.address, undefined, platformUuid))?.id).toBe(wallet!.id);
    expect(await selectAccountByDepositReference(handle.db, wallet!.address, undefined, '00000000-0000-7000-8000-00000000ffff')).toBeUndefined();
  });
});
