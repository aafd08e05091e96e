/**
 * The ledger's public interface: the only file other modules import from (README.md has the
 * model). Money moves only through a `Ledger` (transfer, hold → postHold / voidHold, reverse),
 * inside the caller's database transaction; everything else here reads.
 */
export {
  Ledger,
  LedgerError,
  MAX_POSTING_AMOUNT,
  accountBalance,
  findLedgerTransaction,
  internalAccountBalances,
  openInternalLedgerAccount,
  openInternalLedgerAccounts,
  systemAccountId,
  type AccountBalance,
  type Balance,
  type InternalAccountBalance,
  type LedgerAccountRef,
  type LedgerEntry,
  type LedgerErrorReason,
  type LedgerMetadata,
  type LedgerOptions,
  type LedgerTransaction,
  type LedgerTransactionView,
  type Posting,
  type ResolveInput,
  type ReverseInput,
  type TransferInput,
} from './service.js';
export type { LedgerTransactionKind } from './repo.js';
export { verifyLedger, type Breach, type BreachCheck, type VerifyOptions, type VerifyReport } from './verify.js';
