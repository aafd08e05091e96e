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
