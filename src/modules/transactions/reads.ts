import type { DbOrTx } from '../../platform/db/database.js';
import { validDateTime } from '../../platform/datetime.js';
import { parseId } from '../../platform/ids.js';
import { decodeCursor, encodeCursor, notThisListsCursor, type Page } from '../../platform/pagination.js';
import { listTransactions, type ListFilters } from './repo.js';
import type { Transaction, TransactionListQuery } from './schemas.js';
import { toTransaction } from './views.js';

/** GET /transactions: every filter of UPSTREAM §5.4, keyset pages in createdAt order (newest first unless `sortOrder=asc`). */
export async function listPlatformTransactions(db: DbOrTx, platformId: string, query: TransactionListQuery): Promise<Page<Transaction>> {
  // `customerId` may name the platform itself (upstream: its own transfers); another platform has none here.
  const after = query.cursor ? decodeCursor(query.cursor) : undefined;
  const namedPlatform = query.customerId ? parseId('Platform', query.customerId) : undefined;
  if (namedPlatform && namedPlatform !== platformId) return { data: [], hasMore: false };
  const filters: ListFilters = {
    ...(namedPlatform ? { ownTransfers: true as const } : query.customerId ? { customerId: parseId('Customer', query.customerId)! } : {}),
    ...(query.platformCustomerId ? { platformCustomerId: query.platformCustomerId } : {}),
    ...(query.accountIdentifier ? { accountIdentifier: query.accountIdentifier } : {}),
    ...(query.senderAccountIdentifier ? { senderAccountIdentifier: query.senderAccountIdentifier } : {}),
    ...(query.receiverAccountIdentifier ? { receiverAccountIdentifier: query.receiverAccountIdentifier } : {}),
    ...(query.status ? { status: query.status } : {}),
    ...(query.type ? { type: query.type } : {}),
    ...(query.reference ? { reference: query.reference } : {}),
    ...(query.startDate ? { startDate: validDateTime(query.startDate) } : {}),
    ...(query.endDate ? { endDate: validDateTime(query.endDate) } : {}),
  };
  const limit = query.limit ?? 20;
  const order = query.sortOrder ?? 'desc';
  const { rows, total, anchorFound } = await listTransactions(db, platformId, filters, { limit, order, ...(after ? { after } : {}) });
  if (!anchorFound) throw notThisListsCursor();
  const hasMore = rows.length > limit;
  const pageRows = hasMore ? rows.slice(0, limit) : rows;
  return {
    data: pageRows.map(toTransaction),
    hasMore,
    ...(hasMore ? { nextCursor: encodeCursor(pageRows[pageRows.length - 1]!.id) } : {}),
    ...(total === undefined ? {} : { totalCount: total }),
  };
}
