import type { Clock } from '../../platform/clock.js';
import type { DbOrTx, Tx } from '../../platform/db/database.js';
import { withTx } from '../../platform/db/tx.js';
import { uuidv7 } from '../../platform/ids.js';
import { enqueueJob } from '../../platform/jobs/index.js';
import type { TiedCredentials } from './contact-credentials.js';
import { checkClientPublicKey, loadWalletAccount, OPERATIONS, type WalletAuthDeps } from './context.js';
import { accountsWithWallets, findWallet, insertCredentials, insertWallets, type SignedRequestRow, type WalletAccount, type WalletRow } from './repo.js';
import type { SignedRequestChallenge, WalletExportRequest } from './schemas.js';
import { accountRef } from './views.js';

const WALLET_SECRET_JOB = 'wallet.create-secret';

/**
 * New embedded wallets' first credentials: one EMAIL_OTP each, tied to the owner's e-mail (spec
 * §2.4 rule 6), and one job that has the enclave generate their secrets. However many wallets
 * (a bulk import opens one per customer with an e-mail), two statements and one job.
 */
export async function initialiseWallets(trx: Tx, clock: Clock, platformId: string, wallets: Array<{ accountId: string; email: string }>): Promise<void> {
  if (wallets.length === 0) return;
  const now = clock.now();
  await insertCredentials(
    trx,
    wallets.map(({ accountId, email }) => ({
      id: uuidv7(now.getTime()),
      platform_id: platformId,
      account_id: accountId,
      type: 'EMAIL_OTP',
      nickname: email,
      created_at: now,
      updated_at: now,
    })),
  );
  await enqueueJob(trx, clock, { kind: WALLET_SECRET_JOB, platformId, payload: { platformId, accountIds: wallets.map((w) => w.accountId) } });
}

/**
 * The wallet itself: its secret (made by the enclave, never stored in the clear), its export
 * sealed to the end user's key, and the signed operations other modules perform on it
 * (privacy, contact changes).
 */
export class WalletFlows {
  constructor(private readonly deps: WalletAuthDeps) {
    deps.signed.register(OPERATIONS.exportWallet, {
      execute: async (trx, row) => {
        await this.secret(trx, row.platform_id, row.account_id);
        // Only the status is stored and every identical re-send seals the secret again: build the
        // answer once now, so a stored 200 is always one that can be answered (a client key off
        // the curve, from a challenge issued before keys were checked, is a stored 400 instead).
        checkClientPublicKey((row.context.body as WalletExportRequest).clientPublicKey, 'clientPublicKey');
        await this.revealExport(trx, row);
        return { statusCode: 200 };
      },
      reveal: (db, row) => this.revealExport(db, row),
      checkBody: (body) => checkClientPublicKey((body as WalletExportRequest).clientPublicKey, 'clientPublicKey'),
    });
    deps.jobs.register(WALLET_SECRET_JOB, async (job) => {
      // `accountId`: one wallet, as jobs queued before wallets were initialised in batches name it.
      const { platformId, accountIds, accountId } = job.payload as { platformId: string; accountIds?: string[]; accountId?: string };
      await withTx(deps.db, (trx) => this.secrets(trx, platformId, accountIds ?? [accountId!]));
    });
  }

  async walletAccount(db: DbOrTx, platformId: string, accountId: string): Promise<WalletAccount> {
    return loadWalletAccount(db, platformId, accountId);
  }

  /** The wallet's sealed secret, generated on first need (the provisioning job normally has). */
  private async secret(trx: Tx, platformId: string, accountId: string): Promise<string> {
    const existing = await findWallet(trx, accountId);
    if (existing) return existing.sealed_secret;
    // A concurrent job may store its secret first: the one stored is read back, not ours.
    await insertWallets(trx, this.newWallets(platformId, [accountId]));
    return (await findWallet(trx, accountId))!.sealed_secret;
  }

  /** The secrets of new wallets, in two statements however many: those that have one keep it. */
  private async secrets(trx: Tx, platformId: string, accountIds: string[]): Promise<void> {
    const existing = await accountsWithWallets(trx, accountIds);
    await insertWallets(trx, this.newWallets(platformId, accountIds.filter((id) => !existing.has(id))));
  }

  /** Wallet rows with freshly generated sealed secrets. */
  private newWallets(platformId: string, accountIds: string[]): WalletRow[] {
    const now = this.deps.clock.now();
    return accountIds.map((id) => ({ account_id: id, platform_id: platformId, sealed_secret: this.deps.enclave.createWalletSecret(accountRef(id)), created_at: now }));
  }

  /** POST /internal-accounts/{id}/export, first call. The secret is sealed only on the signed retry. */
  async startExport(platformId: string, accountId: string, body: WalletExportRequest): Promise<SignedRequestChallenge> {
    checkClientPublicKey(body.clientPublicKey, 'clientPublicKey');
    return withTx(this.deps.db, async (trx) => {
      const account = await loadWalletAccount(trx, platformId, accountId);
      return this.deps.signed.issue(trx, {
        platformId,
        accountId: account.id,
        operation: OPERATIONS.exportWallet,
        targetId: accountId,
        body,
        signer: { kind: 'session' },
        payload: { type: 'ACTIVITY_TYPE_EXPORT_WALLET', parameters: { walletId: accountId, targetPublicKey: body.clientPublicKey.toLowerCase() } },
      });
    });
  }

  private async revealExport(db: DbOrTx, row: SignedRequestRow): Promise<unknown> {
    const { clientPublicKey } = row.context.body as WalletExportRequest;
    const wallet = (await findWallet(db, row.account_id))!;
    const accountId = accountRef(row.account_id);
    return {
      id: accountId,
      encryptedWalletCredentials: await this.deps.enclave.exportWallet(wallet.sealed_secret, accountId, Buffer.from(clientPublicKey, 'hex'), accountId),
    };
  }

  /**
   * Issues a signed-retry challenge for an operation another module performs (privacy, contact
   * change); `context` travels to its execution beside the bound body. A contact change names in
   * `tied` the credentials its execution moves (`moveTiedCredentials`, which reads them back as
   * `context.tied`): they are what it writes, locked in the global order before its signer is
   * checked (README, Lock order).
   */
  async issueFor(
    trx: Tx,
    spec: {
      platformId: string;
      accountUuid: string;
      operation: string;
      targetId: string;
      body: unknown;
      type: string;
      parameters: Record<string, unknown>;
      context?: Record<string, unknown>;
      tied?: TiedCredentials;
    },
  ): Promise<SignedRequestChallenge> {
    const { tied } = spec;
    const context = tied ? { ...spec.context, tied } : spec.context;
    return this.deps.signed.issue(trx, {
      ...(tied ? { writesCredentials: tied.credentials.map((c) => c.id) } : {}),
      platformId: spec.platformId,
      accountId: spec.accountUuid,
      operation: spec.operation,
      targetId: spec.targetId,
      body: spec.body,
      signer: { kind: 'session' },
      ...(context ? { context } : {}),
      payload: { type: spec.type, parameters: spec.parameters },
    });
  }
}
