import { sql } from 'kysely';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { otpContactTakenByOther } from '../../src/modules/wallet-auth/repo.js';
import { findPendingApproval } from '../../src/modules/webhooks/repo.js';
import { createTestContext, type TestContext } from '../helpers/context.js';
import { expectIndex, recorded } from '../helpers/query-plans.js';

/**
 * Two request-path lookups served by a partial index: an approval's open question
 * (webhook_approvals_pending, where status = 'PENDING') and an OTP contact held by another
 * customer (auth_credentials_otp_contact, where type in ('EMAIL_OTP', 'SMS_OTP')). A generic plan
 * (what a named statement settles on) can use a partial index only when the statement's own text
 * proves its predicate: with the status or type sent as a parameter it scanned the whole table
 * (3,077 and 3,504 pages at 200,000 rows). Explained here on tables that were never analysed.
 */
let ctx: TestContext;

beforeAll(async () => {
  ctx = await createTestContext();
  const platform = ctx.platform.uuid;
  await sql`
    insert into webhook_approvals (platform_id, id, transaction_id, consumer, status, requested_fields, deadline, created_at)
    select ${platform}, gen_random_uuid(), 'Transaction:' || g, 'c', case when g % 50 = 0 then 'PENDING' else 'APPROVED' end, '[]'::jsonb, now(), now()
      from generate_series(1, 3000) g`.execute(ctx.handle.db);
  await sql`
    insert into auth_credentials (id, platform_id, account_id, type, nickname, created_at, updated_at)
    select gen_random_uuid(), ${platform}, (select id from internal_accounts where platform_id = ${platform} limit 1), case g when 1 then 'EMAIL_OTP' when 2 then 'SMS_OTP' else 'PASSKEY' end, 'user' || g || '@example.com', now(), now()
      from generate_series(1, 3000) g`.execute(ctx.handle.db);
}, 120_000);
afterAll(() => ctx?.close());

describe('lookups through partial indexes, as planned for their values and as generic plans', () => {
  it('an approval’s open question', async () => {
    await expectIndex(ctx.handle.db, await recorded((db) => findPendingApproval(db, ctx.platform.uuid, 'Transaction:100')), 'webhook_approvals_pending');
  });

  it('an OTP contact of another customer, e-mail and phone', async () => {
    for (const type of ['EMAIL_OTP', 'SMS_OTP'] as const) {
      const contact = type === 'EMAIL_OTP' ? 'User10@example.com' : '+14155550100';
      await expectIndex(ctx.handle.db, await recorded((db) => otpContactTakenByOther(db, ctx.platform.uuid, type, contact, '00000000-0000-7000-8000-0000000000ff')), 'auth_credentials_otp_contact');
    }
  });
});
