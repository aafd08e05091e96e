import { sql, type Selectable } from 'kysely';
import { compiledOnce } from '../../platform/db/compiled-once.js';
import type { DbOrTx } from '../../platform/db/database.js';
import { inPlatformIdOrder, inPlatformValueIdOrder, onePlatform, oneValue } from '../../platform/db/platform-page.js';
import { countMatches, platformRowCount } from '../../platform/db/row-counts.js';
import { withJsonColumns } from '../../platform/db/json.js';
import { loadOnFirstUse } from '../../platform/load-on-first-use.js';
import type { PageRequest } from '../../platform/pagination.js';

export type InternalAccountType = 'INTERNAL_FIAT' | 'INTERNAL_CRYPTO' | 'EMBEDDED_WALLET';
export type InternalAccountStatus = 'PENDING' | 'ACTIVE' | 'CLOSED' | 'FROZEN' | 'FAILED';

interface InternalAccountsTable {
  id: string;
  platform_id: string;
  /** null: owned by the platform itself. */
  customer_id: string | null;
  type: InternalAccountType;
  currency: string;
  status: InternalAccountStatus;
  funding_payment_instructions: unknown[];
  /** Quoted with bank deposits to this account; unique. */
  funding_reference: string;
  /** EMBEDDED_WALLET only; null elsewhere. */
  private_enabled: boolean | null;
  created_at: Date;
  updated_at: Date;
}

declare module '../../platform/db/database.js' {
  interface Database {
    internal_accounts: InternalAccountsTable;
  }
}

export type InternalAccountRow = Selectable<InternalAccountsTable>;

/**
 * Inserts unless the owner already has an account of this type and currency (so provisioning
 * can run again safely). Any other conflict (a funding reference drawn twice) is an error.
 */
/**
 * Customers' accounts (customer_id set) with one statement per 1,000: answers the ids inserted;
 * an account the customer already has (same type and currency) is skipped.
 */
export async function insertCustomerAccountsIfAbsent(db: DbOrTx, rows: readonly InternalAccountRow[]): Promise<Set<string>> {
  const inserted = new Set<string>();
  for (let i = 0; i < rows.length; i += 1000) {
    const ids = await db
      .insertInto('internal_accounts')
      .values(rows.slice(i, i + 1000).map((row) => withJsonColumns(row, ['funding_payment_instructions'])))
      .onConflict((oc) => oc.columns(['customer_id', 'type', 'currency']).where('customer_id', 'is not', null).doNothing())
      .returning('id')
      .execute();
    for (const { id } of ids) inserted.add(id);
  }
  return inserted;
}

export async function insertAccountIfAbsent(db: DbOrTx, row: InternalAccountRow): Promise<boolean> {
  const inserted = await db
    .insertInto('internal_accounts')
    .values(withJsonColumns(row, ['funding_payment_instructions']))
    .onConflict((oc) =>
      row.customer_id === null
        ? oc.columns(['platform_id', 'type', 'currency']).where('customer_id', 'is', null).doNothing()
        : oc.columns(['customer_id', 'type', 'currency']).where('customer_id', 'is not', null).doNothing(),
    )
    .returning('id')
    .executeTakeFirst();
  return inserted !== undefined;
}

export interface AccountFilters {
  customerId?: string;
  currency?: string;
  type?: InternalAccountType;
}

function filtered(db: DbOrTx, platformId: string, owner: 'customers' | 'platform', f: AccountFilters) {
  let query = db.selectFrom('internal_accounts').where(onePlatform(platformId));
  query = owner === 'platform' ? query.where('customer_id', 'is', null) : query.where('customer_id', 'is not', null);
  if (f.customerId) query = query.where('customer_id', '=', f.customerId);
  const leading = owner === 'customers' ? leadingColumn(f) : undefined;
  if (f.currency) query = query.where(oneValue('currency', f.currency, { leads: leading === 'currency' }));
  if (f.type) query = query.where(oneValue('type', f.type, { leads: leading === 'type' }));
  return query;
}

/**
 * The filtered column whose index (migration 0062) a page of customers' accounts is read along:
 * without a customer (whose few accounts have their own index), the currency, else the type.
 */
function leadingColumn(f: AccountFilters): 'currency' | 'type' | undefined {
  if (f.customerId) return undefined;
  return f.currency ? 'currency' : f.type ? 'type' : undefined;
}

export async function listCustomerAccounts(db: DbOrTx, platformId: string, filters: AccountFilters, page: PageRequest) {
  const selected = filtered(db, platformId, 'customers', filters).selectAll();
  const leading = leadingColumn(filters);
  let query = (leading ? inPlatformValueIdOrder(selected, leading, 'desc', 'desc') : inPlatformIdOrder(selected, 'desc', 'desc')).limit(page.limit + 1);
  if (page.after) query = query.where('id', '<', page.after);
  // The total only where it costs the same whatever the number of accounts: the kept count
  // (migration 0034) of the unfiltered list, or a count of one customer's few accounts.
  const counted = filters.customerId
    ? countMatches(filtered(db, platformId, 'customers', filters))
    : filters.currency || filters.type
      ? undefined
      : platformRowCount(db, 'internal_accounts', platformId, 'total');
  const [rows, totalCount] = await Promise.all([query.execute(), counted]);
  return { rows, totalCount };
}

export async function listPlatformAccounts(db: DbOrTx, platformId: string, filters: AccountFilters) {
  return inPlatformIdOrder(filtered(db, platformId, 'platform', filters).selectAll(), 'asc', 'desc').execute();
}

/** The platform's accounts with these ids (others are left out). */
export async function selectAccounts(db: DbOrTx, platformId: string, ids: readonly string[]): Promise<InternalAccountRow[]> {
  if (ids.length === 0) return [];
  // One account (a quote's source, a payment's BALANCE_UPDATED): the statement compiled once.
  if (ids.length === 1) return oneAccount(db, platformId, ids[0]!);
  return db.selectFrom('internal_accounts').selectAll().where('platform_id', '=', platformId).where('id', 'in', ids).execute();
}

const oneAccount = compiledOnce((db, platformId: string, id: string) => db.selectFrom('internal_accounts').selectAll().where('platform_id', '=', platformId).where('id', '=', id));

/** The ids of every account the customer owns, whatever their status. */
export async function selectCustomerAccountIds(db: DbOrTx, platformId: string, customerId: string): Promise<string[]> {
  const rows = await db.selectFrom('internal_accounts').select('id').where('platform_id', '=', platformId).where('customer_id', '=', customerId).execute();
  return rows.map((r) => r.id);
}

/**
 * Whether the account's owner is a deleted customer (false for the platform's own accounts). Read
 * FOR SHARE in the transaction that credits the account: the credit commits before a concurrent
 * DELETE of the owner checks its balance, or waits for it and finds the owner deleted. Outside a
 * transaction (a quote's creation, checked again when it executes) a lock would hold nothing past
 * the read, yet cost PostgreSQL a transaction id and a flushed commit record: a plain read.
 */
export async function ownerDeleted(db: DbOrTx, platformId: string, customerId: string | null): Promise<boolean> {
  if (customerId === null) return false;
  const read = db.selectFrom('customers').select('deleted_at').where('platform_id', '=', platformId).where('id', '=', customerId);
  const owner = await (db.isTransaction ? read.forShare() : read).executeTakeFirst();
  return owner?.deleted_at != null;
}

export async function updateAccount(db: DbOrTx, id: string, changes: Partial<InternalAccountRow>): Promise<InternalAccountRow> {
  return db.updateTable('internal_accounts').set(changes).where('id', '=', id).returningAll().executeTakeFirstOrThrow();
}

/**
 * The customer's ACTIVE account holding `currency` (INTERNAL_FIAT, or INTERNAL_CRYPTO for a crypto
 * currency), where a payment to the customer is credited; never its embedded wallet.
 */
export async function selectActiveHoldingAccount(db: DbOrTx, platformId: string, customerId: string, currency: string): Promise<InternalAccountRow | undefined> {
  return db
    .selectFrom('internal_accounts')
    .selectAll()
    .where('platform_id', '=', platformId)
    .where('customer_id', '=', customerId)
    .where('currency', '=', currency)
    .where('type', 'in', ['INTERNAL_FIAT', 'INTERNAL_CRYPTO'])
    .where('status', '=', 'ACTIVE')
    .executeTakeFirst();
}

/**
 * Stores renewed funding instructions, unless the account's Lightning invoice is no longer
 * `invoice` (another request renewed it first): answers the updated row, or undefined then.
 */
export async function replaceFundingInstructions(
  db: DbOrTx,
  id: string,
  invoice: string,
  instructions: unknown[],
  updatedAt: Date,
): Promise<InternalAccountRow | undefined> {
  return db
    .updateTable('internal_accounts')
    .set({ funding_payment_instructions: sql`${JSON.stringify(instructions)}::jsonb`, updated_at: updatedAt })
    .where('id', '=', id)
    .where(sql`funding_payment_instructions`, '@>', sql`${JSON.stringify([{ accountOrWalletInfo: { invoice } }])}::jsonb`)
    .returningAll()
    .executeTakeFirst();
}

// viem (EIP-55 checksums) loads on the first EVM address a deposit names, as for the instructions.
const viem = loadOnFirstUse<typeof import('viem')>('viem');
const EVM_ADDRESS = /^0[xX][0-9a-fA-F]{40}$/;

/**
 * A deposit address as the instructions hold it. An EVM address (Ethereum, Base, Polygon,
 * Plasma) is 20 bytes whose hex case is only the EIP-55 checksum, and the instructions hold it
 * checksummed (funding-instructions.ts): written in any case it is the same address, so it is
 * put in that form; comparing the checksummed forms is comparing the lower-cased ones. No other
 * network's address looks like `0x` and 40 hex digits (Solana's and Tron's base58 has no 0,
 * bech32 starts with its prefix), and those are case-sensitive: they stay as sent.
 */
export function heldAddressForm(reference: string): string {
  return EVM_ADDRESS.test(reference) ? viem().getAddress(`0x${reference.slice(2).toLowerCase()}`) : reference;
}

/**
 * The account a deposit is for: the bank reference it carried (`funding_reference`, compared
 * without case, spaces or hyphens, which banks add or drop), or a deposit address / Lightning
 * invoice of its instructions (exact, but for an EVM address's case: `heldAddressForm`; one
 * containment the GIN index of 0027 finds). `invoiceReference`: the funding reference a paid
 * Lightning invoice's description names, which finds an account funded by Lightning whose
 * invoice has since been renewed.
 * `platformId` narrows it to one platform's accounts (the sandbox).
 */
export async function selectAccountByDepositReference(
  db: DbOrTx,
  reference: string,
  invoiceReference: string | undefined,
  platformId?: string,
): Promise<InternalAccountRow | undefined> {
  const bankReference = reference.replace(/[\s-]/g, '').toUpperCase();
  const holds = (info: Record<string, string>) => JSON.stringify([{ accountOrWalletInfo: info }]);
  // Each way a reference names an account is a lookup of its own through its index
  // (internal_accounts_funding_reference, internal_accounts_funding_instructions), in a
  // materialized CTE planned for all its rows (a few), apart from the LIMIT and the platform. As
  // one OR under LIMIT 1 the planner, which cannot tell how many rows a jsonb containment
  // matches, expected a match within the first rows of any scan and read the whole table (or all
  // of the platform's accounts) for each deposit: in the generic plan a named statement settles
  // on, and with 220 000 accounts in the plan for its values too.
  const accounts = () => db.selectFrom('internal_accounts').selectAll();
  const instructionsHold = (info: Record<string, string>) => sql<boolean>`funding_payment_instructions @> ${holds(info)}::jsonb`;
  let query = db
    .with(
      (cte) => cte('referenced').materialized(),
      () => {
        const named = accounts()
          .where('funding_reference', '=', bankReference)
          .unionAll(accounts().where(instructionsHold({ address: heldAddressForm(reference) })))
          .unionAll(accounts().where(instructionsHold({ invoice: reference })));
        return invoiceReference ? named.unionAll(accounts().where('funding_reference', '=', invoiceReference).where(instructionsHold({ accountType: 'LIGHTNING' }))) : named;
      },
    )
    .selectFrom('referenced')
    .selectAll();
  if (platformId) query = query.where('platform_id', '=', platformId);
  return query.limit(1).executeTakeFirst();
}
