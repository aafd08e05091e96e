import { sql, type Selectable } from 'kysely';
import type { DbOrTx, Tx } from '../../platform/db/database.js';
import { lockKeyForTransaction } from '../../platform/db/advisory-locks.js';
import { insertChunked } from '../../platform/db/insert-chunked.js';
import { deleteOldest, pastMargin } from '../../platform/retention.js';

export type CredentialType = 'EMAIL_OTP' | 'SMS_OTP' | 'PASSKEY' | 'OAUTH';
export type SignedRequestStatus = 'PENDING' | 'PROCESSING' | 'DONE';

interface WalletsTable {
  account_id: string;
  platform_id: string;
  sealed_secret: string;
  created_at: Date;
}

interface AuthCredentialsTable {
  id: string;
  platform_id: string;
  account_id: string;
  type: CredentialType;
  nickname: string;
  webauthn_id: string | null;
  details: Record<string, unknown>;
  verified_at: Date | null;
  otp_failures: number;
  otp_throttled_until: Date | null;
  created_at: Date;
  updated_at: Date;
  revoked_at: Date | null;
}

interface AuthSessionsTable {
  id: string;
  platform_id: string;
  account_id: string;
  credential_id: string;
  public_key: string;
  created_at: Date;
  updated_at: Date;
  expires_at: Date;
  revoked_at: Date | null;
}

interface OtpChallengesTable {
  id: string;
  platform_id: string;
  credential_id: string;
  code_hash: string;
  sealed_target_key: string;
  target_bundle: string;
  expires_at: Date;
  settle_at: Date;
  answered_at: Date | null;
  consumed_at: Date | null;
  created_at: Date;
}

/**
 * Who may sign a challenge: one given key, an active session on the account (optionally
 * narrowed), or nobody: a passkey assertion redeems it instead.
 */
export type SignerRule = { kind: 'key'; publicKey: string } | { kind: 'session'; sessionId?: string; excludeCredentialId?: string } | { kind: 'passkey' };
/** How a signed operation ended: a success status and body, or the error it answers. */
export interface StoredOutcome {
  statusCode: number;
  body?: unknown;
  error?: { code: string; message: string; details?: Record<string, unknown> };
}

interface SignedRequestsTable {
  id: string;
  platform_id: string;
  account_id: string;
  operation: string;
  target_id: string;
  body_hash: string;
  payload_to_sign: string;
  signer: SignerRule;
  context: Record<string, unknown>;
  status: SignedRequestStatus;
  stamp: string | null;
  settle_at: Date | null;
  outcome: StoredOutcome | null;
  expires_at: Date;
  created_at: Date;
  updated_at: Date;
}

interface OidcTokensUsedTable {
  /** `oidcTokenDigest`: SHA-256 of the token's signed part (header.payload), whatever the spelling of its signature. */
  token_sha256: string;
  platform_id: string;
  expires_at: Date;
  used_at: Date;
}

declare module '../../platform/db/database.js' {
  interface Database {
    oidc_tokens_used: OidcTokensUsedTable;
    wallets: WalletsTable;
    auth_credentials: AuthCredentialsTable;
    auth_sessions: AuthSessionsTable;
    otp_challenges: OtpChallengesTable;
    signed_requests: SignedRequestsTable;
  }
}

export type WalletRow = Selectable<WalletsTable>;
export type CredentialRow = Selectable<AuthCredentialsTable>;
export type SessionRow = Selectable<AuthSessionsTable>;
export type OtpChallengeRow = Selectable<OtpChallengesTable>;
export type SignedRequestRow = Selectable<SignedRequestsTable>;

const json = (value: unknown) => JSON.stringify(value);

// Wallets

/** Many wallets, a statement per thousand; a wallet that exists already keeps its secret. */
export async function insertWallets(db: DbOrTx, rows: WalletRow[]): Promise<void> {
  await insertChunked(rows, (chunk) => db.insertInto('wallets').values(chunk).onConflict((oc) => oc.column('account_id').doNothing()).execute());
}

/** Which of `accountIds` have a wallet secret already. */
export async function accountsWithWallets(db: DbOrTx, accountIds: string[]): Promise<Set<string>> {
  if (accountIds.length === 0) return new Set();
  const rows = await db.selectFrom('wallets').select('account_id').where('account_id', 'in', accountIds).execute();
  return new Set(rows.map((r) => r.account_id));
}

export async function findWallet(db: DbOrTx, accountId: string): Promise<WalletRow | undefined> {
  return db.selectFrom('wallets').selectAll().where('account_id', '=', accountId).executeTakeFirst();
}

// Credentials

export type NewCredential = Pick<CredentialRow, 'id' | 'platform_id' | 'account_id' | 'type' | 'nickname' | 'created_at' | 'updated_at'> &
  Partial<Pick<CredentialRow, 'webauthn_id' | 'details' | 'verified_at'>>;

const credentialValues = (row: NewCredential) =>
  ({ webauthn_id: null, verified_at: null, otp_failures: 0, otp_throttled_until: null, revoked_at: null, ...row, details: json(row.details ?? {}) as never }) as const;

export async function insertCredential(db: DbOrTx, row: NewCredential): Promise<CredentialRow> {
  return db.insertInto('auth_credentials').values(credentialValues(row)).returningAll().executeTakeFirstOrThrow();
}

/** Many credentials, a statement per thousand (a bulk import opens a wallet per customer). */
export async function insertCredentials(db: DbOrTx, rows: NewCredential[]): Promise<void> {
  await insertChunked(rows, (chunk) => db.insertInto('auth_credentials').values(chunk.map(credentialValues)).execute());
}

/** An active credential; `lock` takes its row FOR UPDATE or FOR SHARE. */
export async function findCredential(db: DbOrTx, platformId: string, id: string, lock?: 'update' | 'share'): Promise<CredentialRow | undefined> {
  let query = db.selectFrom('auth_credentials').selectAll().where('platform_id', '=', platformId).where('id', '=', id).where('revoked_at', 'is', null);
  if (lock === 'update') query = query.forUpdate();
  if (lock === 'share') query = query.forShare();
  return query.executeTakeFirst();
}

export async function activeCredentials(db: DbOrTx, accountId: string): Promise<CredentialRow[]> {
  return db.selectFrom('auth_credentials').selectAll().where('account_id', '=', accountId).where('revoked_at', 'is', null).orderBy('id').execute();
}

export async function updateCredential(db: DbOrTx, id: string, changes: Partial<CredentialRow>): Promise<CredentialRow> {
  const { details, ...rest } = changes;
  return db
    .updateTable('auth_credentials')
    .set({ ...rest, ...(details ? { details: json(details) as never } : {}) })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** The advisory-lock class of wallet accounts' credential sets (its own key space). */
const CREDENTIAL_SET_LOCK_CLASS = 0x77616c; // 'wal'

/**
 * Serialises, until the transaction ends, the revocations of one account's credentials: the
 * second counts what is left only once the first has committed or rolled back. A row lock on the
 * credential being revoked does not: two revocations of two credentials each lock their own and,
 * neither seeing the other's uncommitted revocation, could leave the account with none.
 */
export async function lockCredentialSet(trx: Tx, accountId: string): Promise<void> {
  await lockKeyForTransaction(trx, CREDENTIAL_SET_LOCK_CLASS, accountId);
}

/**
 * The locks of an operation that writes existing credentials, in the global order (README, Lock
 * order): the credential sets of their accounts and of `signerAccountId`, by account id, then
 * the credentials FOR UPDATE, by id (a credential's account never changes, so reading the
 * accounts unlocked is safe).
 */
export async function lockCredentialsForWrite(trx: Tx, signerAccountId: string, ids: string[]): Promise<void> {
  const owners = await trx.selectFrom('auth_credentials').select('account_id').distinct().where('id', 'in', ids).execute();
  for (const accountId of [...new Set([signerAccountId, ...owners.map((o) => o.account_id)])].sort()) await lockCredentialSet(trx, accountId);
  await trx.selectFrom('auth_credentials').select('id').where('id', 'in', ids).orderBy('id').forUpdate().execute();
}

/** The customer's active credentials of an OTP type, across its wallets, oldest first; `lock` takes them FOR UPDATE. */
export async function otpCredentialsOfCustomer(
  db: DbOrTx,
  platformId: string,
  customerId: string,
  type: 'EMAIL_OTP' | 'SMS_OTP',
  lock = false,
): Promise<CredentialRow[]> {
  let query = db
    .selectFrom('auth_credentials as c')
    .innerJoin('internal_accounts as a', 'a.id', 'c.account_id')
    .selectAll('c')
    .where('c.platform_id', '=', platformId)
    .where('a.customer_id', '=', customerId)
    .where('c.type', '=', type)
    .where('c.revoked_at', 'is', null)
    .orderBy('c.id');
  // The credentials only: the wallet accounts' rows are not written here.
  if (lock) query = query.forUpdate('c');
  return query.execute();
}

/**
 * An OTP contact as contacts are compared (`otpContactTakenByOther`) and locked
 * (`lockOtpContact`): lower case, so an e-mail matches whatever its case (a phone is E.164,
 * which case does not touch). The stored side is compared with PostgreSQL's `lower()`, which
 * agrees with this on the ASCII that the e-mail and E.164 formats admit.
 */
function otpContactKey(contact: string): string {
  return contact.toLowerCase();
}

/** The advisory-lock class of OTP contacts (its own key space). */
const OTP_CONTACT_LOCK_CLASS = 0x776163; // 'wac'

/**
 * Serialises, until the transaction ends, the transactions that tie an OTP credential of `type`
 * to `contact` in this platform (README, Lock order, step 5): each checks that no other
 * customer's wallet carries the contact only once the one before it has committed or rolled
 * back. Nothing else can: the rule is about another customer's wallets, and the customer is on
 * `internal_accounts`, out of reach of a unique index on `auth_credentials`.
 */
export async function lockOtpContact(trx: Tx, platformId: string, type: 'EMAIL_OTP' | 'SMS_OTP', contact: string): Promise<void> {
  await lockKeyForTransaction(trx, OTP_CONTACT_LOCK_CLASS, `${platformId}:${type}:${otpContactKey(contact)}`);
}

/**
 * Whether an active OTP credential of this type on another customer's wallet already carries
 * `contact` (compared as `otpContactKey` says). Served by `auth_credentials_otp_contact`.
 */
export async function otpContactTakenByOther(db: DbOrTx, platformId: string, type: 'EMAIL_OTP' | 'SMS_OTP', contact: string, customerId: string): Promise<boolean> {
  const row = await db
    .selectFrom('auth_credentials as c')
    .innerJoin('internal_accounts as a', 'a.id', 'c.account_id')
    .select('c.id')
    .where('c.platform_id', '=', platformId)
    // A literal (one statement per type), as auth_credentials_otp_contact's predicate names the
    // types: a named statement's generic plan can use that index only then.
    .where('c.type', '=', sql.lit(type))
    .where('c.revoked_at', 'is', null)
    .where(sql<string>`lower(c.nickname)`, '=', otpContactKey(contact))
    .where('a.customer_id', '<>', customerId)
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}

/** Moves one credential to a new contact, only if it still carries `previous`; false when it does not. */
export async function moveCredentialContact(db: DbOrTx, id: string, previous: string, contact: string, now: Date): Promise<boolean> {
  const moved = await db
    .updateTable('auth_credentials')
    .set({ nickname: contact, updated_at: now })
    .where('id', '=', id)
    .where('nickname', '=', previous)
    .where('revoked_at', 'is', null)
    .returning('id')
    .executeTakeFirst();
  return moved !== undefined;
}

// Sessions

export async function insertSession(db: DbOrTx, row: SessionRow): Promise<SessionRow> {
  return db.insertInto('auth_sessions').values(row).returningAll().executeTakeFirstOrThrow();
}

export async function findActiveSession(db: DbOrTx, platformId: string, id: string, now: Date): Promise<SessionRow | undefined> {
  return db
    .selectFrom('auth_sessions')
    .selectAll()
    .where('platform_id', '=', platformId)
    .where('id', '=', id)
    .where('revoked_at', 'is', null)
    .where('expires_at', '>', now)
    .executeTakeFirst();
}

export async function activeSessions(db: DbOrTx, accountId: string, now: Date): Promise<Array<SessionRow & { type: CredentialType; nickname: string; webauthn_id: string | null }>> {
  return db
    .selectFrom('auth_sessions as s')
    .innerJoin('auth_credentials as c', 'c.id', 's.credential_id')
    .selectAll('s')
    .select(['c.type', 'c.nickname', 'c.webauthn_id'])
    .where('s.account_id', '=', accountId)
    .where('s.revoked_at', 'is', null)
    .where('s.expires_at', '>', now)
    .where('c.revoked_at', 'is', null)
    .orderBy('s.id')
    .execute();
}

/**
 * Active sessions on the account signing with `publicKey`, whose credential is still active;
 * `share`: the sessions and their credentials share-locked, so a revocation waits until the
 * caller's transaction ends.
 */
export async function sessionsWithKey(db: DbOrTx, accountId: string, publicKey: string, now: Date, share = true): Promise<SessionRow[]> {
  const query = db
    .selectFrom('auth_sessions as s')
    .innerJoin('auth_credentials as c', 'c.id', 's.credential_id')
    .selectAll('s')
    .where('s.account_id', '=', accountId)
    .where('s.public_key', '=', publicKey)
    .where('s.revoked_at', 'is', null)
    .where('s.expires_at', '>', now)
    .where('c.revoked_at', 'is', null);
  return (share ? query.forShare() : query).execute();
}

export async function revokeSession(db: DbOrTx, id: string, now: Date): Promise<void> {
  await db.updateTable('auth_sessions').set({ revoked_at: now, updated_at: now }).where('id', '=', id).where('revoked_at', 'is', null).execute();
}

export async function revokeSessionsOfCredential(db: DbOrTx, credentialId: string, now: Date): Promise<void> {
  await db.updateTable('auth_sessions').set({ revoked_at: now, updated_at: now }).where('credential_id', '=', credentialId).where('revoked_at', 'is', null).execute();
}

/**
 * Retention: deletes at most `limit` sessions that stopped signing (revoked, or else expired)
 * more than RETENTION_MARGIN_MS before `now`, oldest first along auth_sessions_ended (migration
 * 0047). Every reader takes only active sessions (`revoked_at is null and expires_at > now`:
 * findActiveSession, activeSessions, sessionsWithKey), so to the API a purged session is what an
 * ended one already was: absent from GET /auth/sessions, 404 to DELETE and refresh, and no key
 * of it signs. No table refers to a session (a signed request names one only as text).
 */
export function purgeEndedSessions(db: DbOrTx, now: Date, limit: number): Promise<number> {
  return deleteOldest(db, { table: 'auth_sessions', key: sql`least(expires_at, revoked_at)`, before: pastMargin(now) }, limit);
}

/**
 * Retention: deletes at most `limit` records of used OIDC tokens that can no longer be
 * presented, oldest first along oidc_tokens_used_expiry. The verifier refuses a token once its
 * `exp` (`expires_at` here) has passed, with no tolerance on `exp` (oidc.ts), so a record goes
 * RETENTION_MARGIN_MS after it: until then a replay still meets its row.
 */
export function purgeSpentOidcTokens(db: DbOrTx, now: Date, limit: number): Promise<number> {
  return deleteOldest(db, { table: 'oidc_tokens_used', key: sql`expires_at`, before: pastMargin(now) }, limit);
}

// OTP challenges

/** The window of the rate of codes per credential (otp.ts): a challenge counts towards it this long after it was issued. */
export const OTP_CHALLENGE_WINDOW_MS = 15 * 60_000;

/**
 * Retention: deletes at most `limit` OTP challenges that nothing reads any more, oldest first
 * along otp_challenges_created (migration 0048). Only a credential's latest challenge is ever
 * checked (`latestOtpChallenge`), and every challenge counts towards the credential's rate
 * window for OTP_CHALLENGE_WINDOW_MS after it was issued (`nthLatestOtpChallengeSince`). So a challenge
 * goes once it left that window, RETENTION_MARGIN_MS ago, and either a later challenge of its
 * credential superseded it (later in `latestOtpChallenge`'s order: created_at, then id) or it
 * expired RETENTION_MARGIN_MS ago. A superseded challenge is never younger than the one
 * superseding it, and qualifies whenever that one does, so along this order it goes no later: a
 * deletion never makes an older, still open code the latest again. A latest challenge that
 * expired and was deleted answers a verify OTP_NOT_ISSUED instead of OTP_EXPIRED (both 401: ask
 * for a new code), and a challenge call issues a new code either way.
 */
export function purgeOtpChallenges(db: DbOrTx, now: Date, limit: number): Promise<number> {
  const before = pastMargin(now);
  return deleteOldest(
    db,
    {
      table: 'otp_challenges',
      key: sql`created_at`,
      before: new Date(before.getTime() - OTP_CHALLENGE_WINDOW_MS),
      also: sql<boolean>`(expires_at < ${before} or exists (
        select 1 from otp_challenges later
        where later.credential_id = otp_challenges.credential_id and (later.created_at, later.id) > (otp_challenges.created_at, otp_challenges.id)))`,
    },
    limit,
  );
}

export async function insertOtpChallenge(db: DbOrTx, row: OtpChallengeRow): Promise<void> {
  await db.insertInto('otp_challenges').values(row).execute();
}

/** The credential's latest challenge, locked: only it counts, and it is read to be answered or used up. */
export async function latestOtpChallenge(trx: Tx, credentialId: string): Promise<OtpChallengeRow | undefined> {
  return trx.selectFrom('otp_challenges').selectAll().where('credential_id', '=', credentialId).orderBy('created_at', 'desc').orderBy('id', 'desc').limit(1).forUpdate().executeTakeFirst();
}

export async function updateOtpChallenge(db: DbOrTx, id: string, changes: Partial<OtpChallengeRow>): Promise<void> {
  await db.updateTable('otp_challenges').set(changes).where('id', '=', id).execute();
}

/** Withdraws a code that could not be sent (`OneTimeCodes.deliver`): as if it had never been issued. */
export async function deleteOtpChallenge(db: DbOrTx, id: string): Promise<void> {
  await db.deleteFrom('otp_challenges').where('id', '=', id).execute();
}

/** Uses up every open code of a credential (its contact moved: codes sent to the old one must not log in). */
export async function consumeOtpChallenges(db: DbOrTx, credentialId: string, now: Date): Promise<void> {
  await db.updateTable('otp_challenges').set({ consumed_at: now }).where('credential_id', '=', credentialId).where('consumed_at', 'is', null).execute();
}

/** When the credential's `nth` latest code issued after `since` was issued; undefined when fewer were (otp_challenges_credential). */
export async function nthLatestOtpChallengeSince(db: DbOrTx, credentialId: string, since: Date, nth: number): Promise<Date | undefined> {
  const row = await db
    .selectFrom('otp_challenges')
    .select('created_at')
    .where('credential_id', '=', credentialId)
    .where('created_at', '>', since)
    .orderBy('created_at', 'desc')
    .offset(nth - 1)
    .limit(1)
    .executeTakeFirst();
  return row?.created_at;
}

// Signed requests

export async function insertSignedRequest(db: DbOrTx, row: SignedRequestRow): Promise<void> {
  await db
    .insertInto('signed_requests')
    .values({ ...row, signer: json(row.signer) as never, context: json(row.context) as never, outcome: null })
    .execute();
}

export async function findSignedRequest(db: DbOrTx, platformId: string, id: string, lock = false): Promise<SignedRequestRow | undefined> {
  let query = db.selectFrom('signed_requests').selectAll().where('platform_id', '=', platformId).where('id', '=', id);
  if (lock) query = query.forUpdate();
  return query.executeTakeFirst();
}

/** Moves a PENDING request to PROCESSING with this stamp; undefined when another retry got there first. */
export async function claimSignedRequest(db: DbOrTx, id: string, stamp: string, settleAt: Date, now: Date): Promise<SignedRequestRow | undefined> {
  return db
    .updateTable('signed_requests')
    .set({ status: 'PROCESSING', stamp, settle_at: settleAt, updated_at: now })
    .where('id', '=', id)
    .where('status', '=', 'PENDING')
    .returningAll()
    .executeTakeFirst();
}

export async function setSignedRequestContext(db: DbOrTx, id: string, context: Record<string, unknown>): Promise<SignedRequestRow> {
  return db.updateTable('signed_requests').set({ context: json(context) as never }).where('id', '=', id).returningAll().executeTakeFirstOrThrow();
}

/** Gives a claimed request back after a refusal that changed nothing: PENDING again, with no stamp, so any allowed key may redeem it. */
export async function releaseSignedRequest(db: DbOrTx, id: string, now: Date): Promise<SignedRequestRow> {
  return db
    .updateTable('signed_requests')
    .set({ status: 'PENDING', stamp: null, settle_at: null, updated_at: now })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function completeSignedRequest(db: DbOrTx, id: string, outcome: StoredOutcome, now: Date): Promise<SignedRequestRow> {
  return db
    .updateTable('signed_requests')
    .set({ status: 'DONE', outcome: json(outcome) as never, updated_at: now })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

// The wallet's account and its owner, read to authorise and address wallet operations.

export interface WalletAccount {
  id: string;
  platform_id: string;
  customer_id: string;
  email: string | null;
  phone_number: string | null;
}

/** A live customer's EMBEDDED_WALLET account of this platform, with the owner's contact details. */
export async function findWalletAccount(db: DbOrTx, platformId: string, accountId: string): Promise<WalletAccount | undefined> {
  const row = await db
    .selectFrom('internal_accounts as a')
    .innerJoin('customers as c', 'c.id', 'a.customer_id')
    .select(['a.id', 'a.platform_id', 'a.customer_id', 'c.email', 'c.phone_number'])
    .where('a.platform_id', '=', platformId)
    .where('a.id', '=', accountId)
    .where('a.type', '=', 'EMBEDDED_WALLET')
    .where('c.deleted_at', 'is', null)
    .executeTakeFirst();
  return row ? { ...row, customer_id: row.customer_id! } : undefined;
}

/**
 * The customer's contacts as committed now, its row FOR SHARE: a contact change (an UPDATE of
 * the row) not yet committed is waited for, and one that starts later waits for the caller.
 */
export async function lockCustomerContacts(trx: Tx, customerId: string): Promise<{ email: string | null; phone_number: string | null }> {
  return trx.selectFrom('customers').select(['email', 'phone_number']).where('id', '=', customerId).forShare().executeTakeFirstOrThrow();
}

/**
 * Records an OIDC token as used; false when it was used before. Spent records are the retention
 * purge's (purgeSpentOidcTokens): deleting every platform's expired records inside each login
 * made concurrent logins wait on one another's deletes.
 */
export async function useOidcToken(db: DbOrTx, platformId: string, digest: string, expiresAt: Date, now: Date): Promise<boolean> {
  const inserted = await db
    .insertInto('oidc_tokens_used')
    .values({ token_sha256: digest, platform_id: platformId, expires_at: expiresAt, used_at: now })
    .onConflict((oc) => oc.column('token_sha256').doNothing())
    .returning('token_sha256')
    .executeTakeFirst();
  return inserted !== undefined;
}
