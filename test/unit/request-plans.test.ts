import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  findCustomer,
  findCustomerAnswer,
  findCustomerByUmaAddress,
  listCustomers,
  liveCustomerIdByPlatformCustomerId,
  livePlatformCustomerIds,
  liveUmaAddresses,
  umaAddressTaken,
  type CustomerFilters,
} from '../../src/modules/customers/repo.js';
import { platformRowCount } from '../../src/platform/db/row-counts.js';
import { createTestContext, type TestContext } from '../helpers/context.js';
import { expectIndex as expectIndexOn, queryPlans, recorded } from '../helpers/query-plans.js';

/**
 * Request-path queries keep to their index whatever the statistics. The customers table here
 * has a few thousand rows and was never analysed (as on a database with autovacuum off), which
 * is when the planner misjudges partial indexes: each query the repo sends is explained, once as
 * planned for its values and once as the generic plan a named prepared statement ends up with.
 */
let ctx: TestContext;
let platformUuid: string;

const expectIndex = (queries: Parameters<typeof expectIndexOn>[1], ...indexes: string[]) => expectIndexOn(ctx.handle.db, queries, ...indexes);

// A platformCustomerId or UMA address leads two indexes: the unique one over live customers, and
// since migration 0062 the one of list pages over all of them (isIncludingDeleted). Either finds
// the few rows of a value; which one a planner without statistics picks is its guess.
const BY_PLATFORM_CUSTOMER_ID = ['customers_platform_customer_id_live', 'customers_platform_customer_id_page'];
const BY_UMA_ADDRESS = ['customers_uma_address_live', 'customers_uma_address_page'];

const NO_FILTERS: CustomerFilters = { timeRange: {}, includeDeleted: false };
const afterCursor = { limit: 20, after: 'ffffffff-ffff-7fff-bfff-ffffffffffff' };

beforeAll(async () => {
  ctx = await createTestContext();
  platformUuid = ctx.platform.uuid;
  // 4,000 customers, one in ten deleted, inserted behind the planner's back (no ANALYZE).
  await sql`
    insert into customers (id, platform_id, platform_customer_id, customer_type, review_status, uma_address, profile, created_at, updated_at, deleted_at)
    select gen_random_uuid(), ${platformUuid}, 'pc-' || i, 'INDIVIDUAL', 'APPROVED', '$c' || i || '@uma.example', '{}'::jsonb, now(), now(),
           case when i % 10 = 0 then now() end
      from generate_series(1, 4000) i`.execute(ctx.handle.db);
  const stats = await sql<{ n: number }>`select count(*)::int as n from pg_stats where schemaname = current_schema() and tablename = 'customers'`.execute(ctx.handle.db);
  expect(stats.rows[0]!.n).toBe(0);
}, 120_000);
afterAll(() => ctx.close());

describe('customer request paths on a table without statistics', () => {
  it('read one customer by id', async () => {
    // findCustomerAnswer is GET /customers/{id}; findCustomer the flows that load a customer to change it.
    for (const find of [findCustomer, findCustomerAnswer]) {
      const queries = await recorded((db) => find(db, platformUuid, '01a20f0a-b4c1-709c-acab-7a3a842f46bd'));
      expect(queries).toHaveLength(1);
      for (const query of queries) for (const plan of await queryPlans(ctx.handle.db, query)) expect(plan.map((n) => n['Node Type'])).toEqual(['Index Scan']);
    }
  });

  it('the create path looks up platformCustomerId and UMA address through their indexes', async () => {
    await expectIndex(await recorded((db) => liveCustomerIdByPlatformCustomerId(db, platformUuid, 'pc-77')), ...BY_PLATFORM_CUSTOMER_ID);
    await expectIndex(await recorded((db) => umaAddressTaken(db, platformUuid, '$c77@uma.example')), ...BY_UMA_ADDRESS);
    // The batch lookups of createCustomers (POST /customers and every bulk-import batch).
    await expectIndex(await recorded((db) => livePlatformCustomerIds(db, platformUuid, ['pc-77', 'pc-78', 'none'])), ...BY_PLATFORM_CUSTOMER_ID);
    await expectIndex(await recorded((db) => liveUmaAddresses(db, platformUuid, ['$c77@uma.example', '$c78@uma.example'])), ...BY_UMA_ADDRESS);
  });

  it('an incoming UMA request finds its receiver through the UMA address index', async () => {
    await expectIndex(await recorded((db) => findCustomerByUmaAddress(db, platformUuid, '$c77@uma.example')), ...BY_UMA_ADDRESS);
  });

  it('a page of live customers reads them in index order, first page and after a cursor', async () => {
    const [firstPage] = await recorded((db) => listCustomers(db, platformUuid, NO_FILTERS, { limit: 20 }));
    const [nextPage] = await recorded((db) => listCustomers(db, platformUuid, NO_FILTERS, afterCursor));
    await expectIndex([firstPage!, nextPage!], 'customers_live_page');
  });

  it('a list narrowed to a platformCustomerId is counted through its index', async () => {
    const byId = await recorded((db) => listCustomers(db, platformUuid, { ...NO_FILTERS, platformCustomerId: 'pc-77' }, { limit: 20 }));
    await expectIndex(byId.filter((q) => !q.sql.includes('order by')), ...BY_PLATFORM_CUSTOMER_ID);
  });

  it('totalCount of an unfiltered list reads the kept count, not the table', async () => {
    const queries = await recorded((db) => platformRowCount(db, 'customers', platformUuid, 'live'));
    await expectIndex(queries, 'platform_row_counts_pkey');
    expect(await platformRowCount(ctx.handle.db, 'customers', platformUuid, 'live')).toBe(3600);
    expect(await platformRowCount(ctx.handle.db, 'customers', platformUuid, 'total')).toBe(4000);
  });
});
