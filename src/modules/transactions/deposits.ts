import type { Clock, PlatformClock } from '../../platform/clock.js';
import type { DbOrTx, Tx } from '../../platform/db/database.js';
import { formatId, uuidv7 } from '../../platform/ids.js';
import { recordEvents } from '../../platform/outbox.js';
import { senderReadiness } from '../customers/index.js';
import { findAccountByDepositReference, heldAddressForm, type FundingInstruction, type InternalAccountRow } from '../internal-accounts/index.js';
import { MAX_POSTING_AMOUNT, type Ledger } from '../ledger/index.js';
import { platformEnvironment } from '../platforms/index.js';
import { isPaymentRail } from './rails.js';
import { findTransaction, insertTransaction, updateTransaction, type TransactionRow } from './repo.js';
import { assertTransition } from './status.js';
import { toTransaction } from './views.js';

interface FundingDepositsTable {
  platform_id: string;
  deposit_id: string;
  transaction_id: string;
  created_at: Date;
}

/** Production (feed) deposit ids, across every platform: the one credit of each (migration 0038). */
interface FeedDepositsTable {
  deposit_id: string;
  platform_id: string;
  transaction_id: string;
  created_at: Date;
}

declare module '../../platform/db/database.js' {
  interface Database {
    funding_deposits: FundingDepositsTable;
    feed_deposits: FeedDepositsTable;
  }
}

/** What the sending bank or wallet is known as, as far as the rail tells (every field optional). */
export interface DepositSender {
  accountHolderName?: string;
  accountIdentifier?: string;
  bankName?: string;
  bankIdentifier?: string;
  endToEndId?: string;
  traceNumber?: string;
  remittanceInformation?: string;
  /** Crypto deposits: the on-chain transaction that paid the address. */
  transactionHash?: string;
}

/** Money that arrived at funding instructions, as the rail provider (or the sandbox) reports it. */
export interface ReportedDeposit {
  /** The provider's id of the deposit: one credit per id, however often it is reported. */
  depositId: string;
  /** The bank reference the payment carried, or the deposit address / invoice it paid. */
  reference: string;
  currency: string;
  /** Minor units received. */
  amount: bigint;
  /** A PaymentRail (ACH, SEPA, …) or, for crypto, the network (SOLANA, BITCOIN, LIGHTNING, …). */
  rail: string;
  sender?: DepositSender;
}

/**
 * Why a deposit credited nothing. CONFLICTING_DEPOSIT: a production deposit id credited before,
 * listed again with another reference, currency, amount or rail. AMOUNT_OUT_OF_RANGE: more than
 * one ledger posting takes (MAX_POSTING_AMOUNT). REFUSED: any other refusal of the credit (the
 * deposit feed's, from the ledger's error).
 */
export type UnmatchedReason = 'UNKNOWN_REFERENCE' | 'ACCOUNT_NOT_ACTIVE' | 'CURRENCY_MISMATCH' | 'BALANCE_LIMIT' | 'CONFLICTING_DEPOSIT' | 'AMOUNT_OUT_OF_RANGE' | 'REFUSED';

export type DepositOutcome =
  | { credited: true; transaction: TransactionRow; repeated: boolean }
  | {
      credited: false;
      reason: UnmatchedReason;
      account?: InternalAccountRow;
      /** CONFLICTING_DEPOSIT: the id's one credit. */
      credit?: { platformId: string; transactionId: string };
      /** ACCOUNT_NOT_ACTIVE for an open account: its owner was deleted (a deleted customer's accounts stay open). */
      ownerDeleted?: true;
      detail?: string;
    };

/** The on-chain networks an IncomingTransaction's `onChainTransaction.network` names. */
const ON_CHAIN_NETWORKS = new Set(['BITCOIN', 'ETHEREUM', 'SOLANA', 'BASE', 'POLYGON', 'TRON', 'PLASMA', 'SPARK']);

/** The network a deposit to this wallet instruction arrives on. */
function networkOf(accountType: string): string {
  if (accountType === 'BITCOIN_L1') return 'BITCOIN';
  return accountType.replace(/_WALLET$/, '');
}

/**
 * The rails a deposit carrying `reference` can arrive on at this account: the bank instructions'
 * `paymentRails`, or the network of the wallet instruction whose address (an EVM one in any
 * case: `heldAddressForm`) or invoice it is. A Lightning invoice the account's instructions no
 * longer hold (renewed since: internal-accounts README) arrives on Lightning too.
 */
export function depositRailsOf(account: InternalAccountRow, reference: string): string[] {
  const instructions = account.funding_payment_instructions as FundingInstruction[];
  const address = heldAddressForm(reference);
  const wallet = instructions.find(
    (i) => i.accountOrWalletInfo.address === address || i.accountOrWalletInfo.invoice === reference || (/^ln/i.test(reference) && i.accountOrWalletInfo.accountType === 'LIGHTNING'),
  );
  if (wallet) return [networkOf(wallet.accountOrWalletInfo.accountType)];
  return instructions.flatMap((i) => (Array.isArray(i.accountOrWalletInfo.paymentRails) ? i.accountOrWalletInfo.paymentRails : []));
}

export interface FundingDepositsDeps {
  clock: Clock;
  platformClock: PlatformClock;
  ledger: Ledger;
}

/**
 * Deposits to internal accounts' funding instructions (issue 17 §3). A bank-rail deposit is
 * informational for the platform (UPSTREAM §5.9: no approval round trip): the INCOMING
 * transaction is opened and credited in one database transaction, from the rail's SETTLEMENT
 * account, with INCOMING_PAYMENT.PENDING then INCOMING_PAYMENT.COMPLETED (and the ledger's
 * INTERNAL_ACCOUNT.BALANCE_UPDATED). `funding_deposits (platform_id, deposit_id)` makes a
 * deposit id credit once, whoever reports it how often; a production (feed) id also claims
 * `feed_deposits (deposit_id)`, once across every platform.
 */
export class FundingDeposits {
  constructor(private readonly deps: FundingDepositsDeps) {}

  /**
   * Credits the account the deposit's reference names, in the caller's transaction, or answers
   * why nothing was credited. `scope`: one platform's accounts (the sandbox's simulation), or
   * every production platform's (the provider's feed: references and addresses are unique, and
   * real money never credits a sandbox platform's simulated instructions). A ledger error
   * (BALANCE_LIMIT) is thrown: the caller decides what it means. Production ids are global
   * (`feed_deposits`, its primary key the guarantee): an id credits once across every platform,
   * and listed again differently it is CONFLICTING_DEPOSIT (`relisted`).
   */
  async receive(trx: Tx, deposit: ReportedDeposit, scope: { platformId: string } | 'production'): Promise<DepositOutcome> {
    const feed = scope === 'production';
    if (feed) {
      // The provider's ids are global: one credited on any platform is never credited again.
      const first = await this.feedCredit(trx, deposit.depositId);
      if (first) return this.relisted(trx, deposit, first);
    }
    const account = feed ? await this.productionAccount(trx, deposit.reference) : await findAccountByDepositReference(trx, deposit.reference, scope.platformId);
    if (!account) return { credited: false, reason: 'UNKNOWN_REFERENCE' };
    const previous = await this.creditedBefore(trx, account.platform_id, deposit.depositId);
    if (previous) return { credited: true, transaction: previous, repeated: true };
    if (account.status !== 'ACTIVE') return { credited: false, reason: 'ACCOUNT_NOT_ACTIVE', account };
    if (deposit.currency !== account.currency) return { credited: false, reason: 'CURRENCY_MISMATCH', account };
    if (deposit.amount > MAX_POSTING_AMOUNT) return { credited: false, reason: 'AMOUNT_OUT_OF_RANGE', account };
    let customer: { uuid: string; platformCustomerId: string } | undefined;
    if (account.customer_id) {
      // Read FOR SHARE, as a quote's execution reads a credited account's owner: a DELETE of the
      // owner (which refuses a customer holding money) either sees this credit or is seen by it.
      const owner = await senderReadiness(trx, account.platform_id, account.customer_id, { forShare: true });
      // The owner was deleted while its account stayed open: nobody to credit.
      if (!owner || owner.deleted) return { credited: false, reason: 'ACCOUNT_NOT_ACTIVE', account, ownerDeleted: true };
      customer = { uuid: account.customer_id, platformCustomerId: owner.platformCustomerId };
    }

    const now = this.deps.clock.now();
    const id = uuidv7(now.getTime());
    if (feed) {
      const mine = await trx
        .insertInto('feed_deposits')
        .values({ deposit_id: deposit.depositId, platform_id: account.platform_id, transaction_id: id, created_at: now })
        .onConflict((oc) => oc.column('deposit_id').doNothing())
        .returning('deposit_id')
        .executeTakeFirst();
      // Credited meanwhile (this report waited on the key): as a listing after it.
      if (!mine) return this.relisted(trx, deposit, (await this.feedCredit(trx, deposit.depositId))!);
    }
    const claimed = await trx
      .insertInto('funding_deposits')
      .values({ platform_id: account.platform_id, deposit_id: deposit.depositId, transaction_id: id, created_at: now })
      .onConflict((oc) => oc.columns(['platform_id', 'deposit_id']).doNothing())
      .returning('transaction_id')
      .executeTakeFirst();
    if (!claimed) {
      // Reported twice at once: the other report committed its credit while this one waited on the key.
      return { credited: true, transaction: (await this.creditedBefore(trx, account.platform_id, deposit.depositId))!, repeated: true };
    }
    return { credited: true, transaction: await this.credit(trx, account, customer, deposit, id, now), repeated: false };
  }

  /**
   * The account a production deposit's reference names on a production platform (real money never
   * credits a sandbox platform's simulated instructions), whatever its state; undefined when none.
   */
  async productionAccount(db: Tx, reference: string): Promise<InternalAccountRow | undefined> {
    const account = await findAccountByDepositReference(db, reference, undefined);
    return account && (await platformEnvironment(db, account.platform_id)) === 'production' ? account : undefined;
  }

  private async feedCredit(db: DbOrTx, depositId: string): Promise<{ platformId: string; transactionId: string } | undefined> {
    const row = await db.selectFrom('feed_deposits').select(['platform_id', 'transaction_id']).where('deposit_id', '=', depositId).executeTakeFirst();
    return row ? { platformId: row.platform_id, transactionId: row.transaction_id } : undefined;
  }

  /**
   * A production deposit id listed again after its credit: the same deposit (reference, currency,
   * amount and rail as credited) answers that credit; anything else is CONFLICTING_DEPOSIT, kept
   * for the operator and credited nowhere — the provider says one id is two deposits.
   */
  private async relisted(trx: Tx, deposit: ReportedDeposit, first: { platformId: string; transactionId: string }): Promise<DepositOutcome> {
    const credited = await findTransaction(trx, first.platformId, first.transactionId);
    if (
      credited &&
      credited.reconciliation_reference === deposit.reference &&
      credited.receiving_currency === deposit.currency &&
      BigInt(credited.received_amount) === deposit.amount &&
      credited.payment_rail === deposit.rail
    ) {
      return { credited: true, transaction: credited, repeated: true };
    }
    const account = await this.productionAccount(trx, deposit.reference);
    const detail = credited
      ? `credited before as ${formatId('Transaction', credited.id)} (platform ${first.platformId}): ${credited.received_amount} ${credited.receiving_currency} on ${credited.payment_rail}, reference ${credited.reconciliation_reference}`
      : `credited before as ${formatId('Transaction', first.transactionId)} (platform ${first.platformId})`;
    return { credited: false, reason: 'CONFLICTING_DEPOSIT', ...(account ? { account } : {}), credit: first, detail };
  }

  private async creditedBefore(db: DbOrTx, platformId: string, depositId: string): Promise<TransactionRow | undefined> {
    const row = await db.selectFrom('funding_deposits').select('transaction_id').where('platform_id', '=', platformId).where('deposit_id', '=', depositId).executeTakeFirst();
    return row ? findTransaction(db, platformId, row.transaction_id) : undefined;
  }

  private async credit(
    trx: Tx,
    account: InternalAccountRow,
    customer: { uuid: string; platformCustomerId: string } | undefined,
    deposit: ReportedDeposit,
    id: string,
    now: Date,
  ): Promise<TransactionRow> {
    const platformId = account.platform_id;
    const { transactionHash, ...bankSide } = deposit.sender ?? {};
    assertTransition('INCOMING', null, 'PENDING');
    const opened = await insertTransaction(trx, {
      platform_id: platformId,
      id,
      quote_id: null,
      type: 'INCOMING',
      status: 'PENDING',
      failure_reason: null,
      environment: await platformEnvironment(trx, platformId),
      customer_id: customer?.uuid ?? null,
      platform_customer_id: customer?.platformCustomerId ?? null,
      source: {
        sourceType: 'REALTIME_FUNDING',
        currency: deposit.currency,
        ...bankSide,
        ...(isPaymentRail(deposit.rail) ? { paymentRail: deposit.rail } : {}),
        ...(transactionHash && ON_CHAIN_NETWORKS.has(deposit.rail) ? { onChainTransaction: { transactionHash, network: deposit.rail } } : {}),
      },
      destination: { destinationType: 'ACCOUNT', accountId: formatId('InternalAccount', account.id), currency: account.currency },
      source_account_id: null,
      destination_account_id: account.id,
      sending_currency: deposit.currency,
      receiving_currency: deposit.currency,
      sent_amount: deposit.amount,
      total_sending_amount: deposit.amount,
      received_amount: deposit.amount,
      fees: 0n,
      platform_fees: 0n,
      exchange_rate: '1',
      rate_details: null,
      description: null,
      remittance_information: deposit.sender?.remittanceInformation ?? null,
      purpose_of_payment: null,
      payment_instructions: null,
      payment_rail: deposit.rail,
      // The reference the money travelled with: what the platform reconciles against.
      reconciliation_reference: deposit.reference,
      funded_amount: deposit.amount,
      created_at: now,
      updated_at: now,
    });
    const applied = await this.deps.ledger.transfer(trx, {
      platformId,
      reference: `transaction:${id}:credit`,
      postings: [{ from: { kind: 'SETTLEMENT', rail: deposit.rail, currency: deposit.currency }, to: { kind: 'INTERNAL_ACCOUNT', id: account.id }, amount: deposit.amount, currency: deposit.currency }],
      metadata: { transactionId: formatId('Transaction', id), depositId: deposit.depositId },
    });
    assertTransition('INCOMING', 'PENDING', 'COMPLETED');
    const completed = (await updateTransaction(
      trx,
      platformId,
      id,
      'PENDING',
      { status: 'COMPLETED', funding_id: applied.id, settled_at: await this.deps.platformClock.now(platformId, trx) },
      this.deps.clock.now(),
    ))!;
    // PENDING tells the platform money is arriving (informational: nothing waits for an answer); COMPLETED that it is credited.
    await recordEvents(trx, this.deps.clock, [
      { platformId, type: 'INCOMING_PAYMENT.PENDING', resourceId: formatId('Transaction', id), data: toTransaction(opened) },
      { platformId, type: 'INCOMING_PAYMENT.COMPLETED', resourceId: formatId('Transaction', id), data: toTransaction(completed) },
    ]);
    return completed;
  }
}
