import type { Clock, PlatformClock } from '../../platform/clock.js';
import type { Db, DbOrTx, Tx } from '../../platform/db/database.js';
import { withTx } from '../../platform/db/tx.js';
import { AppError } from '../../platform/errors.js';
import type { Principal } from '../../platform/http/auth.js';
import { formatId, parseId, uuidv7 } from '../../platform/ids.js';
import { currency as currencyOf } from '../../platform/currencies.js';
import { amountToWire } from '../../platform/money.js';
import { pageRequest, toPage, type Page } from '../../platform/pagination.js';
import { recordEvents } from '../../platform/outbox.js';
import { OffsetPlatformClock } from '../../platform/platform-clock.js';
import { getConfigRow } from '../config/index.js';
import { internalAccountBalances, Ledger, LedgerError, openInternalLedgerAccounts, type Balance, type InternalAccountBalance } from '../ledger/index.js';
import { initialiseWallets } from '../wallet-auth/index.js';
import {
  fundedByLightning,
  fundingInstructions,
  fundingReferenceOfInvoice,
  holdingAccountType,
  lightningInvoiceOf,
  newFundingReference,
  renewedInstructions,
  type FundingInstruction,
} from './funding-instructions.js';
import {
  insertAccountIfAbsent,
  insertCustomerAccountsIfAbsent,
  listCustomerAccounts,
  listPlatformAccounts,
  ownerDeleted,
  replaceFundingInstructions,
  selectAccountByDepositReference,
  selectAccounts,
  selectActiveHoldingAccount,
  selectCustomerAccountIds,
  updateAccount,
  type InternalAccountRow,
  type InternalAccountType,
} from './repo.js';
import type { CustomerAccountsQuery, InternalAccount, InternalAccountUpdate, PaymentInstructions, PlatformAccountsQuery } from './schemas.js';

/** The API view of an account; its balances come from the ledger, and `updatedAt` moves with them. */
function toInternalAccount(row: InternalAccountRow, balance: Balance & { updatedAt: Date }): InternalAccount {
  const currency = currencyOf(row.currency);
  const updatedAt = balance.updatedAt > row.updated_at ? balance.updatedAt : row.updated_at;
  return {
    id: formatId('InternalAccount', row.id),
    ...(row.customer_id ? { customerId: formatId('Customer', row.customer_id) } : {}),
    type: row.type,
    status: row.status,
    balance: { amount: amountToWire(balance.available), currency },
    totalBalance: { amount: amountToWire(balance.total), currency },
    fundingPaymentInstructions: row.funding_payment_instructions as PaymentInstructions[],
    ...(row.type === 'EMBEDDED_WALLET' ? { privateEnabled: row.private_enabled ?? false } : {}),
    createdAt: row.created_at.toISOString(),
    updatedAt: updatedAt.toISOString(),
  };
}

function balanceOrFail(balances: Map<string, Balance & { updatedAt: Date }>, accountId: string): Balance & { updatedAt: Date } {
  const balance = balances.get(accountId);
  // Every internal account is opened in the ledger in the transaction that creates it.
  if (!balance) throw new Error(`internal account ${accountId} has no ledger account`);
  return balance;
}

/** Rows → API views, with one read of the ledger for all their balances. */
async function withBalances(db: DbOrTx, platformUuid: string, rows: InternalAccountRow[]): Promise<InternalAccount[]> {
  const balances = await internalAccountBalances(
    db,
    platformUuid,
    rows.map((r) => r.id),
  );
  return rows.map((row) => toInternalAccount(row, balanceOrFail(balances, row.id)));
}

/**
 * Brings the Lightning invoices of these accounts' funding instructions up to date (the rest of
 * the instructions never expire): an invoice expired or within LIGHTNING_RENEW_BEFORE_SECONDS of
 * expiring at the platform's time (a sandbox test clock moves it) is replaced by a fresh one,
 * stored, with INTERNAL_ACCOUNT.FUNDING_INSTRUCTIONS_UPDATED; the funding reference stays. A
 * read writes only then, about once a year per account. Two reads renewing at once store one
 * invoice: the second finds it replaced and serves the stored one. `db`: the caller's
 * transaction, or the root handle (the renewal then opens its own).
 */
async function withCurrentInstructions(
  db: DbOrTx,
  clock: Clock,
  platformClock: PlatformClock,
  platformUuid: string,
  rows: InternalAccountRow[],
): Promise<InternalAccountRow[]> {
  const lightning = rows.filter((row) => lightningInvoiceOf(row.funding_payment_instructions as FundingInstruction[]) !== undefined);
  if (lightning.length === 0) return rows;
  const platformNow = await platformClock.now(platformUuid, db);
  const due = lightning.flatMap((row) => {
    const instructions = row.funding_payment_instructions as FundingInstruction[];
    const renewed = renewedInstructions(instructions, row.funding_reference, platformNow);
    return renewed ? [{ row, invoice: lightningInvoiceOf(instructions)!, renewed }] : [];
  });
  if (due.length === 0) return rows;
  const renew = async (trx: Tx) => {
    const current = new Map<string, InternalAccountRow>();
    const replaced: InternalAccountRow[] = [];
    for (const { row, invoice, renewed } of due) {
      const updated = await replaceFundingInstructions(trx, row.id, invoice, renewed, clock.now());
      if (updated) replaced.push(updated);
      const [stored] = updated ? [updated] : await selectAccounts(trx, platformUuid, [row.id]);
      if (stored) current.set(row.id, stored);
    }
    const views = await withBalances(trx, platformUuid, replaced);
    await recordEvents(
      trx,
      clock,
      views.map((account) => ({ platformId: platformUuid, type: 'INTERNAL_ACCOUNT.FUNDING_INSTRUCTIONS_UPDATED', resourceId: account.id, data: account })),
    );
    return current;
  };
  const current = db.isTransaction ? await renew(db as Tx) : await withTx(db as Db, renew);
  return rows.map((row) => current.get(row.id) ?? row);
}

/** The platform's time, from its offset in the database (for callers that have no PlatformClock). */
function platformTime(db: DbOrTx, clock: Clock, platformUuid: string): Promise<Date> {
  return new OffsetPlatformClock(db as Db, clock).now(platformUuid, db);
}

interface Owner {
  customerUuid: string | null;
  email: string | null;
}

/**
 * Opens the accounts the platform's configuration calls for, for each owner, and records
 * `INTERNAL_ACCOUNT.STATUS_UPDATED` for each one it opens. The configuration row is held (FOR
 * SHARE) until the transaction ends, so a concurrent PATCH /config either waits for these
 * accounts or is seen by them; its follow-up job then finds every customer approved before it.
 */
async function provision(trx: Tx, clock: Clock, platformUuid: string, owners: Owner[]): Promise<number> {
  const config = await getConfigRow(trx, platformUuid, { lock: 'share' });
  const now = clock.now();
  // A Lightning invoice is dated by the platform's time (a sandbox test clock may be ahead), by which it is checked and renewed.
  const invoicesDated = config.supported_currencies.some((c) => fundedByLightning(c.currencyCode)) ? await platformTime(trx, clock, platformUuid) : now;
  const rows: InternalAccountRow[] = [];
  const emails = new Map<string, string>();
  for (const { customerUuid, email } of owners) {
    // Each currency in the account that holds it: INTERNAL_CRYPTO for USDC, USDT, BTC; INTERNAL_FIAT for the rest.
    const wanted: Array<{ type: InternalAccountType; currency: string }> = config.supported_currencies.map((c) => ({
      type: holdingAccountType(c.currencyCode),
      currency: c.currencyCode,
    }));
    // An embedded wallet is the customer's own, and its first credential is the customer's
    // e-mail (spec §2.4 rule 6): no e-mail, no wallet until one is set.
    if (customerUuid && email && config.embedded_wallet_config) {
      wanted.push({ type: 'EMBEDDED_WALLET', currency: config.supported_currencies[0]?.currencyCode ?? 'USD' });
    }
    for (const { type, currency } of wanted) {
      const id = uuidv7(now.getTime());
      const reference = newFundingReference();
      if (type === 'EMBEDDED_WALLET') emails.set(id, email!);
      rows.push({
        id,
        platform_id: platformUuid,
        customer_id: customerUuid,
        type,
        currency,
        status: 'ACTIVE',
        funding_payment_instructions: fundingInstructions({ type, currency, reference, isPlatformAccount: customerUuid === null, now: invoicesDated }),
        funding_reference: reference,
        private_enabled: type === 'EMBEDDED_WALLET' ? false : null,
        created_at: now,
        updated_at: now,
      });
    }
  }
  // Customers' accounts go in with one statement however many customers a batch approves; the
  // platform's own (few, with another uniqueness rule) one by one.
  const inserted = await insertCustomerAccountsIfAbsent(
    trx,
    rows.filter((row) => row.customer_id !== null),
  );
  for (const row of rows) if (row.customer_id === null && (await insertAccountIfAbsent(trx, row))) inserted.add(row.id);
  const opened = rows.filter((row) => inserted.has(row.id));
  await openInternalLedgerAccounts(
    trx,
    opened.map((row) => ({ id: row.id, platformId: platformUuid, currency: row.currency, now })),
  );
  await initialiseWallets(
    trx,
    clock,
    platformUuid,
    opened.filter((row) => row.type === 'EMBEDDED_WALLET').map((row) => ({ accountId: row.id, email: emails.get(row.id)! })),
  );
  await recordEvents(
    trx,
    clock,
    opened.map((row) => {
      const account = toInternalAccount(row, { available: 0n, total: 0n, updatedAt: now });
      return { platformId: platformUuid, type: 'INTERNAL_ACCOUNT.STATUS_UPDATED', resourceId: account.id, data: account };
    }),
  );
  return opened.length;
}

/**
 * A newly approved customer's accounts: one per currency the platform supports (INTERNAL_FIAT,
 * or INTERNAL_CRYPTO for a crypto currency), plus an EMBEDDED_WALLET when embedded wallets are
 * configured and the customer has an e-mail.
 * Safe to call again (e.g. once the e-mail is set).
 */
export async function provisionCustomerAccounts(trx: Tx, clock: Clock, platformUuid: string, customerUuid: string, email: string | null): Promise<number> {
  return provision(trx, clock, platformUuid, [{ customerUuid, email }]);
}

/**
 * The same for several approved customers at once (a configuration change catching up with
 * customers approved before it). Returns how many accounts were opened.
 */
export async function provisionAccountsOf(trx: Tx, clock: Clock, platformUuid: string, customers: Array<{ uuid: string; email: string | null }>): Promise<number> {
  return provision(trx, clock, platformUuid, customers.map((c) => ({ customerUuid: c.uuid, email: c.email })));
}

/** The platform's own accounts, one per supported currency (INTERNAL_FIAT or INTERNAL_CRYPTO). Safe to call again. */
export async function provisionPlatformAccounts(trx: Tx, clock: Clock, platformUuid: string): Promise<number> {
  return provision(trx, clock, platformUuid, [{ customerUuid: null, email: null }]);
}

export async function listCustomerInternalAccounts(
  db: Db,
  clock: Clock,
  platformClock: PlatformClock,
  platformUuid: string,
  query: CustomerAccountsQuery,
): Promise<Page<InternalAccount>> {
  const page = pageRequest(query);
  const customerId = query.customerId ? parseId('Customer', query.customerId) : undefined;
  const listed = await listCustomerAccounts(
    db,
    platformUuid,
    { ...(customerId ? { customerId } : {}), ...(query.currency ? { currency: query.currency } : {}), ...(query.type ? { type: query.type } : {}) },
    page,
  );
  const rows = await withCurrentInstructions(db, clock, platformClock, platformUuid, listed.rows);
  const balances = await internalAccountBalances(
    db,
    platformUuid,
    rows.map((r) => r.id),
  );
  return toPage(rows, page, (row) => toInternalAccount(row, balanceOrFail(balances, row.id)), listed.totalCount);
}

/**
 * Lists the platform's accounts, first creating any that are missing: platforms made before
 * accounts existed, and currencies added to the platform config since, get theirs here.
 */
export async function listPlatformInternalAccounts(
  trx: Tx,
  clock: Clock,
  platformClock: PlatformClock,
  platformUuid: string,
  query: PlatformAccountsQuery,
): Promise<{ data: InternalAccount[] }> {
  await provisionPlatformAccounts(trx, clock, platformUuid);
  const listed = await listPlatformAccounts(trx, platformUuid, {
    ...(query.currency ? { currency: query.currency } : {}),
    ...(query.type ? { type: query.type } : {}),
  });
  const rows = await withCurrentInstructions(trx, clock, platformClock, platformUuid, listed);
  return { data: await withBalances(trx, platformUuid, rows) };
}

/**
 * Applies a signed PATCH /internal-accounts/{id}. The challenge was issued only for an embedded
 * wallet of the platform, and the signed request goes with its account, so the account exists.
 */
export async function updateWalletAccount(trx: Tx, clock: Clock, accountUuid: string, update: InternalAccountUpdate): Promise<InternalAccount> {
  const updated = await updateAccount(trx, accountUuid, {
    ...(update.privateEnabled !== undefined ? { private_enabled: update.privateEnabled } : {}),
    updated_at: clock.now(),
  });
  const [view] = await withBalances(trx, updated.platform_id, [updated]);
  return view!;
}

/**
 * Writes INTERNAL_ACCOUNT.BALANCE_UPDATED (payload: the InternalAccount with its new balances)
 * for each account a ledger transaction changed, in that transaction.
 */
async function recordBalanceUpdates(trx: DbOrTx, clock: Clock, platformUuid: string, balances: Array<InternalAccountBalance & { updatedAt: Date }>): Promise<void> {
  const rows = await selectAccounts(
    trx,
    platformUuid,
    balances.map((b) => b.accountId),
  );
  const byId = new Map(balances.map((b) => [b.accountId, b]));
  await recordEvents(
    trx,
    clock,
    rows.map((row) => {
      const account = toInternalAccount(row, byId.get(row.id)!);
      return { platformId: platformUuid, type: 'INTERNAL_ACCOUNT.BALANCE_UPDATED', resourceId: account.id, data: account };
    }),
  );
}

/** An internal account as other modules see it (a quote's source or destination). */
export interface InternalAccountRef {
  id: string;
  uuid: string;
  customerUuid: string | null;
  type: InternalAccountRow['type'];
  currency: string;
  status: InternalAccountRow['status'];
}

/** The platform's internal account `accountId` (`InternalAccount:<uuid>`); undefined when it is not one. */
export async function findInternalAccount(db: DbOrTx, platformUuid: string, accountId: string): Promise<InternalAccountRef | undefined> {
  const uuid = parseId('InternalAccount', accountId);
  if (!uuid) return undefined;
  const [row] = await selectAccounts(db, platformUuid, [uuid]);
  if (!row) return undefined;
  return { id: formatId('InternalAccount', row.id), uuid: row.id, customerUuid: row.customer_id, type: row.type, currency: row.currency, status: row.status };
}

/**
 * The ledger as Corridor runs it: every change of an internal account's balance records its
 * INTERNAL_ACCOUNT.BALANCE_UPDATED event. app.ts, the CLI, the bench and the tests all use this.
 */
export function createAccountsLedger(clock: Clock, options: { hotAccountShards?: number } = {}): Ledger {
  return new Ledger({
    clock,
    ...options,
    onInternalBalancesChanged: (trx, platformUuid, balances) => recordBalanceUpdates(trx, clock, platformUuid, balances),
  });
}

/**
 * A credit the account cannot hold (the ledger's BALANCE_LIMIT), as every credit answers it
 * (modules/quotes README): the reason tells it from an amount over the route's own maximum.
 */
export function balanceLimitReached(accountUuid: string): AppError {
  return new AppError('AMOUNT_OUT_OF_RANGE', `The account cannot hold more than ${Number.MAX_SAFE_INTEGER} minor units.`, {
    details: { reason: 'BALANCE_LIMIT', accountId: formatId('InternalAccount', accountUuid) },
  });
}

/**
 * POST /sandbox/internal-accounts/{id}/fund: money from the platform's sandbox world account,
 * one posted ledger transaction (which records the BALANCE_UPDATED event). Sandbox platforms
 * only: the route refuses any other (`sandboxOnly`) before this runs.
 */
export async function fundSandboxAccount(
  trx: Tx,
  ledger: Ledger,
  clocks: { clock: Clock; platformClock: PlatformClock },
  principal: Principal,
  accountId: string,
  amount: bigint,
  reference: string,
): Promise<InternalAccount> {
  const [found] = await selectAccounts(trx, principal.platformId, [parseId('InternalAccount', accountId)!]);
  if (!found) throw new AppError('REFERENCE_NOT_FOUND', `Internal account ${accountId} was not found.`);
  // The answer and its BALANCE_UPDATED event show instructions that can be paid.
  const [row] = (await withCurrentInstructions(trx, clocks.clock, clocks.platformClock, principal.platformId, [found])) as [InternalAccountRow];
  if (row.status !== 'ACTIVE') throw new AppError('CONFLICT', `Internal account ${accountId} is ${row.status} and cannot be funded.`);
  // A deleted customer can send nothing: money funded to its account could never leave it.
  if (await ownerDeleted(trx, principal.platformId, row.customer_id)) {
    throw new AppError('CONFLICT', `Internal account ${accountId} belongs to a deleted customer and cannot be funded.`, {
      details: { reason: 'CUSTOMER_DELETED', accountId, customerId: formatId('Customer', row.customer_id!) },
    });
  }
  try {
    const applied = await ledger.transfer(trx, {
      platformId: principal.platformId,
      reference,
      postings: [{ from: { kind: 'SANDBOX_FUNDING', currency: row.currency }, to: { kind: 'INTERNAL_ACCOUNT', id: row.id }, amount, currency: row.currency }],
    });
    const balance = applied.internalAccounts.find((b) => b.accountId === row.id)!;
    return toInternalAccount(row, { ...balance, updatedAt: applied.balancesUpdatedAt.get(row.id)! });
  } catch (error) {
    if (error instanceof LedgerError && error.reason === 'BALANCE_LIMIT') throw balanceLimitReached(row.id);
    throw error;
  }
}

/** The customer's accounts that hold money or have money in flight (a balance, a hold either way), with their balances. */
export async function accountsHoldingMoney(db: DbOrTx, platformUuid: string, customerUuid: string): Promise<InternalAccountBalance[]> {
  const ids = await selectCustomerAccountIds(db, platformUuid, customerUuid);
  const balances = await internalAccountBalances(db, platformUuid, ids);
  return ids
    .map((id) => ({ accountId: formatId('InternalAccount', id), ...balanceOrFail(balances, id) }))
    .filter((b) => b.available !== 0n || b.total !== 0n)
    .map(({ accountId, available, total }) => ({ accountId, available, total }));
}

/** Whether `account` may be credited by a payment: not when its owner is a deleted customer, who could never send it on. */
export async function creditableAccount(db: DbOrTx, platformUuid: string, account: InternalAccountRef): Promise<boolean> {
  return !(await ownerDeleted(db, platformUuid, account.customerUuid));
}

/** The platform's internal account `id` (`InternalAccount:<uuid>`), customer's or platform's own; undefined for anything else. */
export async function findInternalAccountRow(db: DbOrTx, platformUuid: string, id: string): Promise<InternalAccountRow | undefined> {
  const uuid = parseId('InternalAccount', id);
  if (!uuid) return undefined;
  return (await selectAccounts(db, platformUuid, [uuid]))[0];
}

/**
 * The customer's ACTIVE account holding `currency` (INTERNAL_FIAT, or INTERNAL_CRYPTO for a crypto
 * currency), where a payment to the customer is credited; undefined when it has none.
 */
export async function findCustomerAccountIn(db: DbOrTx, platformUuid: string, customerUuid: string, currency: string): Promise<InternalAccountRef | undefined> {
  const row = await selectActiveHoldingAccount(db, platformUuid, customerUuid, currency);
  return row && { id: formatId('InternalAccount', row.id), uuid: row.id, customerUuid: row.customer_id, type: row.type, currency: row.currency, status: row.status };
}

/**
 * The account a deposit is for (transactions/deposits.ts): the bank reference it carried, or a
 * deposit address / Lightning invoice of the account's instructions; or a Lightning invoice the
 * account showed before it was renewed (paid before it expired, reported after), by the funding
 * reference its description names, which never changes. `platformId`: one platform's accounts.
 */
export async function findAccountByDepositReference(db: DbOrTx, reference: string, platformId?: string): Promise<InternalAccountRow | undefined> {
  return selectAccountByDepositReference(db, reference, fundingReferenceOfInvoice(reference), platformId);
}
