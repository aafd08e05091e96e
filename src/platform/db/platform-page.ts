import { sql, type RawBuilder, type SelectQueryBuilder } from 'kysely';

/**
 * Keyset pages of one platform's rows in id order, read along the table's (platform_id, id)
 * index whatever the other platforms hold.
 *
 * Written plainly (`platform_id = $1 … order by id desc limit 21`), the query leaves PostgreSQL a
 * second way: walk the primary key (id) backwards and filter on platform_id. The planner prices
 * that walk as if the platform's rows were spread evenly through the ids, so when the platform
 * holds a large share of the table it expects a page within a few dozen rows. When another
 * platform wrote the newest rows, the walk reads every one of them first: the page's cost grows
 * with the other platforms' data (measured on PostgreSQL 15 with two platforms of 78,000
 * customers each: 20 ms and 59,000 buffers for the older platform's first page, where its own
 * index reads 21 rows). Custom and generic plans both fall into it.
 *
 * An equality with a parameter makes platform_id a constant to the planner, which then drops it
 * from the sort order, and the primary key gives what is left (`id`). Named as `= any(array[$1])`
 * (`onePlatform`), platform_id stays a sort key; ordered by platform_id then id
 * (`inPlatformIdOrder`), only an index that leads with platform_id gives the order without a sort.
 * The two go together: either alone changes nothing.
 */
export function onePlatform(platformId: string): RawBuilder<boolean> {
  return sql<boolean>`platform_id = any(array[${platformId}::uuid])`;
}

/**
 * Orders a query filtered by `onePlatform` by platform_id, then id in `order`. `indexIdOrder` is
 * the direction of id in the table's (platform_id, id) index: the platform's direction is chosen
 * so that the index, read forwards or backwards, gives exactly this order.
 */
export function inPlatformIdOrder<DB, TB extends keyof DB, O>(
  query: SelectQueryBuilder<DB, TB, O>,
  order: 'asc' | 'desc',
  indexIdOrder: 'asc' | 'desc',
): SelectQueryBuilder<DB, TB, O> {
  return query.orderBy(sql`platform_id`, order === indexIdOrder ? 'asc' : 'desc').orderBy(sql`id`, order);
}

/**
 * `column` equal to `value`, for a page read along an index of (platform_id, column, id): written
 * as the two bounds `column >= value and column <= value` (the same rows, for text under a
 * deterministic collation, as every column here is). An equality makes the column a constant to
 * the planner, so the platform's (platform_id, id) index gives the page's order as well, and a
 * plan made for any value (the pipelined reads' generic plans) guesses a value's share of the
 * rows as one over the number of distinct values: with few (two currencies, two customer types)
 * it may walk the platform's id index checking each row, and a value few rows hold then reads all
 * of them (200,000 internal accounts: 18,821 pages, bench/README.md). Bounds leave the column a
 * sort key: ordered by platform_id, then the column, then id (`inPlatformValueIdOrder`), only the
 * index that leads with the value gives the order without reading every match and sorting, and
 * its first rows are the page. (`= any(array[…])`, as `onePlatform` does, would not do: before
 * PostgreSQL 17 an index read with it on a column after the first gives no order.)
 */
export function oneValue(column: string | RawBuilder<unknown>, value: string, { leads = true }: { leads?: boolean } = {}): RawBuilder<boolean> {
  const ref = typeof column === 'string' ? sql.ref(column) : column;
  // A filter the page is not read along (another leads) stays an equality.
  return leads ? sql<boolean>`${ref} >= ${value} and ${ref} <= ${value}` : sql<boolean>`${ref} = ${value}`;
}

/**
 * Orders a query filtered by `onePlatform` and `oneValue(column, …)` by platform_id, the column,
 * then id in `order`, as `inPlatformIdOrder` does for an index of (platform_id, column, id) with
 * id in `indexIdOrder`.
 */
export function inPlatformValueIdOrder<DB, TB extends keyof DB, O>(
  query: SelectQueryBuilder<DB, TB, O>,
  column: string | RawBuilder<unknown>,
  order: 'asc' | 'desc',
  indexIdOrder: 'asc' | 'desc',
): SelectQueryBuilder<DB, TB, O> {
  const direction = order === indexIdOrder ? 'asc' : 'desc';
  return query
    .orderBy(sql`platform_id`, direction)
    .orderBy(typeof column === 'string' ? sql.ref(column) : column, direction)
    .orderBy(sql`id`, order);
}
