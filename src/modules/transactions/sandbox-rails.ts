import { accountSuffix } from '../external-accounts/index.js';
import type { DepositStatus, Payout, PayoutStatus, Pull, PullOutcome, RailFailureReason, RailProvider, SubmitOutcome } from './rail-provider.js';

/**
 * Sandbox outcomes, chosen by the last three digits of the sent amount (minor units), like
 * card-network test numbers. Deterministic: the same amount always ends the same way.
 * Rejections at submission release the hold; failures at settlement refund the debit.
 */
export const SANDBOX_TRIGGERS: Record<string, { at: 'SUBMISSION' | 'SETTLEMENT'; failureReason: RailFailureReason }> = {
  '901': { at: 'SETTLEMENT', failureReason: 'QUOTE_EXECUTION_FAILED' },
  '902': { at: 'SETTLEMENT', failureReason: 'PAYOUT_RETURNED' },
  '903': { at: 'SUBMISSION', failureReason: 'LIMIT_EXCEEDED' },
  '904': { at: 'SUBMISSION', failureReason: 'ACCOUNT_CANNOT_RECEIVE' },
  '905': { at: 'SUBMISSION', failureReason: 'ACCOUNT_INVALID' },
  '906': { at: 'SUBMISSION', failureReason: 'COMPLIANCE_REJECTED' },
};

function sandboxTrigger(sentAmount: bigint) {
  return SANDBOX_TRIGGERS[(sentAmount % 1000n).toString().padStart(3, '0')];
}

/**
 * The upstream sandbox's account outcomes, chosen by the last three digits of the external
 * account's primary identifier (`accountSuffix`): one table for payouts of executed quotes, one
 * for POST /transfer-out. `settlesInSeconds` replaces the rail's settlement time; a failure
 * `at: 'SETTLEMENT'` comes at that time.
 */
type AccountOutcome = { settlesInSeconds?: number } & ({ failureReason?: undefined } | { at: 'SUBMISSION' | 'SETTLEMENT'; failureReason: RailFailureReason });
const SANDBOX_QUOTE_ACCOUNT_OUTCOMES: Record<string, AccountOutcome> = {
  '002': { at: 'SUBMISSION', failureReason: 'QUOTE_EXECUTION_FAILED' },
  '003': { settlesInSeconds: 360 },
  '004': { at: 'SETTLEMENT', failureReason: 'ACCOUNT_CANNOT_RECEIVE' },
  '005': { at: 'SETTLEMENT', failureReason: 'PAYOUT_RETURNED' },
  '006': { at: 'SUBMISSION', failureReason: 'QUOTE_EXECUTION_FAILED' },
  '007': { at: 'SETTLEMENT', failureReason: 'QUOTE_EXECUTION_FAILED' },
};
const SANDBOX_TRANSFER_ACCOUNT_OUTCOMES: Record<string, AccountOutcome> = {
  '002': { at: 'SUBMISSION', failureReason: 'LIMIT_EXCEEDED' },
  '003': { at: 'SUBMISSION', failureReason: 'ACCOUNT_INVALID' },
  '004': { at: 'SETTLEMENT', failureReason: 'ACCOUNT_CANNOT_RECEIVE' },
  '005': { at: 'SETTLEMENT', failureReason: 'ACCOUNT_CANNOT_RECEIVE', settlesInSeconds: 30 },
};
/** POST /transfer-in: pulls ending in these fail without crediting anything, after `afterSeconds`. */
const SANDBOX_PULL_FAILURES: Record<string, { afterSeconds: number }> = {
  '002': { afterSeconds: 0 },
  '003': { afterSeconds: 0 },
  '004': { afterSeconds: 0 },
  '005': { afterSeconds: 30 },
};

/** Accounts whose suffix a process keeps at most (oldest dropped first). */
const KEPT_SUFFIXES = 10_000;

/** Reads the primary identifier (account number, IBAN, CLABE, address, PIX key…) of a platform's external account; null when unknown. */
type IdentifierOf = (platformId: string, externalAccountId: string) => Promise<string | null>;

/**
 * The simulated rails of sandbox platforms: every payout settles unless its amount (SANDBOX_TRIGGERS)
 * or its external account's identifier (the upstream sandbox's suffixes) names another outcome.
 * The amount goes first: a trigger amount to a suffixed account ends as the amount says.
 */
export class SandboxRails implements RailProvider {
  /**
   * The suffix (or none) of accounts already read, by platform and account. An external
   * account's details never change after creation, so any process may keep them: a payout's
   * submission and its settlement read the account once, further payouts to it not at all.
   */
  private readonly suffixes = new Map<string, string | undefined>();

  constructor(private readonly identifierOf: IdentifierOf) {}

  private async suffixOf(platformId: string, accountId: string): Promise<string | undefined> {
    const key = `${platformId}/${accountId}`;
    if (this.suffixes.has(key)) return this.suffixes.get(key);
    const identifier = await this.identifierOf(platformId, accountId);
    const suffix = identifier ? accountSuffix(identifier) : undefined;
    // Unknown (another platform's, or no such) accounts are not kept: they are rare, and not worth a slot.
    if (identifier !== null) {
      if (this.suffixes.size >= KEPT_SUFFIXES) this.suffixes.delete(this.suffixes.keys().next().value!);
      this.suffixes.set(key, suffix);
    }
    return suffix;
  }

  private async accountOutcome(payout: Payout): Promise<AccountOutcome | undefined> {
    const accountId = (payout.destination as { accountId?: string } | null)?.accountId;
    const suffix = accountId?.startsWith('ExternalAccount:') ? await this.suffixOf(payout.platformId, accountId) : undefined;
    if (!suffix) return undefined;
    return (payout.requestedAs === 'TRANSFER' ? SANDBOX_TRANSFER_ACCOUNT_OUTCOMES : SANDBOX_QUOTE_ACCOUNT_OUTCOMES)[suffix];
  }

  async submit(payout: Payout): Promise<SubmitOutcome> {
    const trigger = sandboxTrigger(payout.sentAmount);
    if (trigger) return trigger.at === 'SUBMISSION' ? { status: 'REJECTED', failureReason: trigger.failureReason } : { status: 'ACCEPTED' };
    const outcome = await this.accountOutcome(payout);
    if (outcome?.failureReason && outcome.at === 'SUBMISSION') return { status: 'REJECTED', failureReason: outcome.failureReason };
    return outcome?.settlesInSeconds !== undefined ? { status: 'ACCEPTED', settlesInSeconds: outcome.settlesInSeconds } : { status: 'ACCEPTED' };
  }

  async status(payout: Payout): Promise<PayoutStatus> {
    const trigger = sandboxTrigger(payout.sentAmount);
    if (trigger) return trigger.at === 'SETTLEMENT' ? { status: 'FAILED', failureReason: trigger.failureReason } : { status: 'COMPLETED' };
    const outcome = await this.accountOutcome(payout);
    return outcome?.failureReason ? { status: 'FAILED', failureReason: outcome.failureReason } : { status: 'COMPLETED' };
  }

  /** A pull is refused by the suffix of the account it comes from; amounts trigger nothing here (the triggers are payout outcomes). */
  async collect(pull: Pull): Promise<PullOutcome> {
    const failure = SANDBOX_PULL_FAILURES[(await this.suffixOf(pull.platformId, pull.accountId)) ?? ''];
    return failure ? { status: 'FAILED', afterSeconds: failure.afterSeconds } : { status: 'COLLECTED' };
  }

  /** Sandbox money arrives through POST /sandbox/send, never by itself. */
  async deposit(): Promise<DepositStatus> {
    return { status: 'PENDING' };
  }

  /** The sandbox's outside world takes returned money back in the ledger (SANDBOX_FUNDING); nothing else to do. */
  async returnDeposit(): Promise<void> {}
}
