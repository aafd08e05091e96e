import { sql, type Selectable } from 'kysely';
import type { DbOrTx } from '../../platform/db/database.js';

interface InvitationsTable {
  platform_id: string;
  id: string;
  code: string;
  inviter_customer_id: string;
  inviter_uma: string;
  first_name: string | null;
  amount_to_send: bigint | null;
  amount_currency: string | null;
  url: string;
  status: 'PENDING' | 'CLAIMED' | 'CANCELLED';
  expires_at: Date | null;
  invitee_uma: string | null;
  claimed_by_platform_id: string | null;
  claimed_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

declare module '../../platform/db/database.js' {
  interface Database {
    invitations: InvitationsTable;
  }
}

export type InvitationRow = Selectable<InvitationsTable>;

/** Inserts unless the code is taken (then undefined, and the caller draws another code). */
export async function insertInvitation(db: DbOrTx, row: InvitationRow): Promise<InvitationRow | undefined> {
  return db
    .insertInto('invitations')
    .values(row)
    .onConflict((oc) => oc.column('code').doNothing())
    .returningAll()
    .executeTakeFirst();
}

export async function findByCode(db: DbOrTx, code: string): Promise<InvitationRow | undefined> {
  return db.selectFrom('invitations').selectAll().where('code', '=', code).executeTakeFirst();
}

/** A live PENDING invitation: what may still be claimed or cancelled at `now`. */
const claimable = (now: Date) => sql<boolean>`status = 'PENDING' and (expires_at is null or expires_at > ${now})`;

/**
 * Claims the invitation if it is still claimable, in one conditional UPDATE: concurrent claims
 * queue on the row lock and every one after the first finds it CLAIMED and changes nothing.
 */
export async function claimIfClaimable(
  db: DbOrTx,
  code: string,
  claim: { inviteeUma: string; claimerPlatformId: string },
  now: Date,
): Promise<InvitationRow | undefined> {
  return db
    .updateTable('invitations')
    .set({ status: 'CLAIMED', invitee_uma: claim.inviteeUma, claimed_by_platform_id: claim.claimerPlatformId, claimed_at: now, updated_at: now })
    .where('code', '=', code)
    .where(claimable(now))
    .returningAll()
    .executeTakeFirst();
}

/** Cancels the platform's own invitation if it is still claimable (the same conditional UPDATE). */
export async function cancelIfClaimable(db: DbOrTx, platformId: string, code: string, now: Date): Promise<InvitationRow | undefined> {
  return db
    .updateTable('invitations')
    .set({ status: 'CANCELLED', updated_at: now })
    .where('code', '=', code)
    .where('platform_id', '=', platformId)
    .where(claimable(now))
    .returningAll()
    .executeTakeFirst();
}
