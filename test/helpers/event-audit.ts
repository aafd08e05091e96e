import { expect } from 'vitest';
import { assertTransition, canTransition, TRANSACTION_STATUSES, type TransactionStatus } from '../../src/modules/transactions/status.js';
import { BASE, type TestContext, type TestPlatform } from './context.js';

/**
 * What an integrator who keeps its own copy of payments and balances from webhooks alone would
 * hold, checked against what happened (test/http/event-consistency.test.ts): the platform's
 * outbox rows (every event that committed, in id order: what the webhooks carry, `data` and
 * all) replayed per resource, against the API's reads and the ledger's entries.
 *
 * - A transaction's OUTGOING_PAYMENT.* / INCOMING_PAYMENT.* events start with its creation and
 *   walk the status machine (status.ts) one edge at a time, no status twice; an incoming
 *   payment's CREATED and PROCESSING have no event type (upstream has none), so its events may
 *   step over them, and only them. The last event's `data` is GET /transactions/{id}, exactly.
 * - Each account's INTERNAL_ACCOUNT.BALANCE_UPDATED events are one per ledger transaction that
 *   touched it, each with the balances the ledger's sums give through that transaction and the
 *   ones before it in commit order; the account's last INTERNAL_ACCOUNT.* event is its GET, exactly.
 * - Any other resource's last event (customer, external account, verification) is its GET.
 * - Ordering: ids of one resource's events follow its changes, and its `updatedAt` never goes
 *   back from one event to the next: an integrator keeping the newest `updatedAt` keeps the last.
 */

type Body = Record<string, any>;

export interface OutboxRow {
  id: string;
  type: string;
  resource_id: string;
  data: Body;
}

const get = async (ctx: TestContext, p: TestPlatform, path: string): Promise<Body> => {
  const response = await ctx.app.inject({ method: 'GET', url: `${BASE}${path}`, headers: { authorization: p.auth } });
  expect(response.statusCode, `GET ${path}: ${response.body}`).toBe(200);
  return response.json() as Body;
};

/** Every page of a list. */
async function all(ctx: TestContext, p: TestPlatform, path: string): Promise<Body[]> {
  const out: Body[] = [];
  for (let cursor: string | undefined; ; ) {
    const page = await get(ctx, p, `${path}${path.includes('?') ? '&' : '?'}limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    out.push(...(page.data as Body[]));
    if (!page.hasMore) return out;
    cursor = page.nextCursor as string;
  }
}

/** The platform's committed events, oldest first (by id, as the outbox relay hands them on). */
export async function outboxOf(ctx: TestContext, platformUuid: string): Promise<OutboxRow[]> {
  const rows = await ctx.handle.db.selectFrom('events').select(['id', 'type', 'resource_id', 'data']).where('platform_id', '=', platformUuid).orderBy('id').execute();
  return rows.map((r) => ({ id: r.id, type: r.type, resource_id: r.resource_id, data: (typeof r.data === 'string' ? JSON.parse(r.data) : r.data) as Body }));
}

function byResource(rows: OutboxRow[], prefix: string): Map<string, OutboxRow[]> {
  const out = new Map<string, OutboxRow[]>();
  for (const row of rows) if (row.type.startsWith(prefix)) out.set(row.resource_id, [...(out.get(row.resource_id) ?? []), row]);
  return out;
}

// ---- transactions ----

type Direction = 'OUTGOING' | 'INCOMING';
/** Statuses with no event of their own: upstream has no INCOMING_PAYMENT.CREATED nor .PROCESSING. */
const SILENT: Record<Direction, ReadonlySet<TransactionStatus>> = { OUTGOING: new Set(), INCOMING: new Set(['CREATED', 'PROCESSING']) };

/** The status `data` must show for an event type (undefined: a refund event, which changes no status but REFUNDED's). */
function statusOfType(direction: Direction, type: string): TransactionStatus[] | undefined {
  const name = type.slice(type.indexOf('.') + 1);
  if (direction === 'INCOMING') {
    if (name === 'REFUND_COMPLETED') return ['REFUNDED'];
    if (name === 'FAILED') return ['FAILED', 'REJECTED'];
  }
  if (name.startsWith('REFUND_')) return undefined;
  return [name as TransactionStatus];
}

/** Whether `to` is reached from `from` (null: creation) through statuses that send no event. */
function reachable(direction: Direction, from: TransactionStatus | null, to: TransactionStatus): boolean {
  if (from === null) return TRANSACTION_STATUSES.some((s) => isInitial(direction, s) && (s === to || (SILENT[direction].has(s) && reachable(direction, s, to))));
  const seen = new Set<TransactionStatus>([from]);
  const queue: TransactionStatus[] = [from];
  while (queue.length > 0) {
    const at = queue.shift()!;
    for (const next of TRANSACTION_STATUSES) {
      if (!canTransition(direction, at, next)) continue;
      if (next === to) return true;
      if (SILENT[direction].has(next) && !seen.has(next)) seen.add(next), queue.push(next);
    }
  }
  return false;
}

/** Where a transaction may start: status.ts's own check (its INITIAL table is private). */
function isInitial(direction: Direction, status: TransactionStatus): boolean {
  try {
    assertTransition(direction, null, status);
    return true;
  } catch {
    return false;
  }
}

/** What `refund.status` a refund event announces. */
const REFUND_STATUS: Record<string, string> = { REFUND_PENDING: 'PENDING', REFUND_COMPLETED: 'COMPLETED', REFUND_FAILED: 'FAILED' };

export function checkTransactionEvents(label: string, events: OutboxRow[], view: Body): void {
  const direction = view.type as Direction;
  const where = `${label} ${view.id}: ${events.map((e) => `${e.type}(${e.data.status}${e.data.refund ? `/refund ${e.data.refund.status}` : ''})`).join(' → ')}`;
  expect(events.length, `no event for ${where}`).toBeGreaterThan(0);
  let status: TransactionStatus | null = null;
  for (const [i, event] of events.entries()) {
    expect(event.type.startsWith(direction === 'OUTGOING' ? 'OUTGOING_PAYMENT.' : 'INCOMING_PAYMENT.'), `event type of ${where}`).toBe(true);
    const data = event.data;
    expect({ id: data.id, type: data.type, createdAt: data.createdAt }, `event ${i} names another transaction: ${where}`).toEqual({ id: view.id, type: view.type, createdAt: view.createdAt });
    const shown = data.status as TransactionStatus;
    const expected = statusOfType(direction, event.type);
    const name = event.type.slice(event.type.indexOf('.') + 1);
    if (name.startsWith('REFUND_')) expect(data.refund?.status, `event ${i} ${event.type} without its refund: ${where}`).toBe(REFUND_STATUS[name]);
    if (expected) expect(expected, `event ${i} ${event.type} shows ${shown}: ${where}`).toContain(shown);
    if (!expected || shown === status) {
      // A refund event of an unchanged status; a status event never repeats its status.
      expect(expected === undefined && status !== null, `event ${i} repeats ${shown}: ${where}`).toBe(true);
      expect(shown, `a refund event changed the status: ${where}`).toBe(status);
    } else {
      expect(reachable(direction, status, shown), `event ${i}: ${status ?? '(creation)'} → ${shown} is no step of the machine: ${where}`).toBe(true);
    }
    if (i > 0) expect(data.updatedAt >= events[i - 1]!.data.updatedAt, `updatedAt went back at event ${i}: ${where}`).toBe(true);
    status = shown;
  }
  const last = events.at(-1)!.data;
  if (SILENT[direction].has(view.status)) {
    // Still in a status with no event: the last event is the step before it.
    expect(reachable(direction, last.status, view.status), `GET shows ${view.status}, the events ${last.status}: ${where}`).toBe(true);
    return;
  }
  expect(withoutRailRevision(last, view), `the last event of ${where} is not GET /transactions/{id}`).toEqual(view);
}

/**
 * The one change without an event: a sandbox rail that names its own settlement time when a
 * PROCESSING payout is handed to it (a `003` account's six minutes, a transfer's `005`) writes it
 * to `expectedSettlementAt` (and `updatedAt`) after OUTGOING_PAYMENT.PROCESSING went out
 * (settlement.ts `settle`). Upstream has no event for a new estimate; the next event
 * (COMPLETED or FAILED) carries it. Only those two fields of a PROCESSING payout are taken from GET.
 */
function withoutRailRevision(last: Body, view: Body): Body {
  if (view.type !== 'OUTGOING' || view.status !== 'PROCESSING' || last.expectedSettlementAt === view.expectedSettlementAt) return last;
  return { ...last, expectedSettlementAt: view.expectedSettlementAt, updatedAt: view.updatedAt };
}

// ---- internal accounts: events against the ledger ----

interface Sums {
  available: bigint;
  total: bigint;
}

/** Every internal account's balances after each ledger transaction touching it, in the ledger's ids' order. */
async function ledgerHistory(ctx: TestContext, platformUuid: string): Promise<Map<string, Array<Sums & { ledgerTransaction: string; reference: string }>>> {
  const rows = await ctx.handle.db
    .selectFrom('ledger_entries as e')
    .innerJoin('ledger_transactions as t', 't.id', 'e.transaction_id')
    .innerJoin('ledger_accounts as a', 'a.id', 'e.account_id')
    .select(['e.account_id', 'e.side', 'e.amount', 't.id', 't.kind', 't.reference'])
    .where('e.platform_id', '=', platformUuid)
    .where('a.kind', '=', 'INTERNAL_ACCOUNT')
    .orderBy('t.id')
    .orderBy('e.seq')
    .execute();
  const out = new Map<string, Array<Sums & { ledgerTransaction: string; reference: string }>>();
  const sums = new Map<string, { dp: bigint; cp: bigint; dq: bigint; cq: bigint }>();
  for (const row of rows) {
    const s = sums.get(row.account_id) ?? { dp: 0n, cp: 0n, dq: 0n, cq: 0n };
    sums.set(row.account_id, s);
    const amount = BigInt(row.amount);
    const debit = row.side === 'D';
    if (row.kind === 'POSTED') debit ? (s.dp += amount) : (s.cp += amount);
    else if (row.kind === 'PENDING') debit ? (s.dq += amount) : (s.cq += amount);
    else if (row.kind === 'POST_PENDING') debit ? ((s.dp += amount), (s.dq -= amount)) : ((s.cp += amount), (s.cq -= amount));
    else debit ? (s.dq -= amount) : (s.cq -= amount);
    const history = out.get(row.account_id) ?? [];
    out.set(row.account_id, history);
    const point = { available: s.cp - s.dp - s.dq, total: s.cp + s.cq - s.dp, ledgerTransaction: row.id, reference: row.reference };
    // One point per ledger transaction: its last line on the account carries the sums.
    if (history.at(-1)?.ledgerTransaction === row.id) history[history.length - 1] = point;
    else history.push(point);
  }
  return out;
}

/**
 * The account's BALANCE_UPDATED events, in id order, against its ledger transactions: each event
 * is the previous one's balances plus the change of one ledger transaction not yet accounted
 * for, and every ledger transaction is accounted for once. The ledger's ids follow when each
 * transaction took its time, not when it committed (one may wait for the account's row behind a
 * later one): the events follow commits, so they are matched, not zipped.
 */
export function checkAccountEvents(label: string, events: OutboxRow[], history: Array<Sums & { reference: string }>, view: Body): void {
  const balances = events.filter((e) => e.type === 'INTERNAL_ACCOUNT.BALANCE_UPDATED').map((e) => ({ available: BigInt(e.data.balance.amount), total: BigInt(e.data.totalBalance.amount) }));
  const where = `${label} ${view.id}\nevents: ${balances.map((b) => `${b.available}/${b.total}`).join(' ')}\nledger: ${history.map((h) => `${h.available}/${h.total} (${h.reference})`).join(' ')}`;
  const changes = history.map((h, i) => ({ available: h.available - (history[i - 1]?.available ?? 0n), total: h.total - (history[i - 1]?.total ?? 0n), reference: h.reference }));
  let before: Sums = { available: 0n, total: 0n };
  for (const [i, after] of balances.entries()) {
    const change = changes.findIndex((c) => c.available === after.available - before.available && c.total === after.total - before.total);
    expect(change, `BALANCE_UPDATED ${i} is no ledger transaction's change: ${where}`).toBeGreaterThanOrEqual(0);
    changes.splice(change, 1);
    before = after;
  }
  expect(changes.map((c) => c.reference), `ledger transactions without their BALANCE_UPDATED: ${where}`).toEqual([]);
  for (const [i, event] of events.entries()) {
    expect(event.data.id, `event of another account: ${where}`).toBe(view.id);
    if (i > 0) expect(event.data.updatedAt >= events[i - 1]!.data.updatedAt, `updatedAt went back at event ${i} (${event.type}): ${where}`).toBe(true);
  }
  if (events.length > 0) expect(events.at(-1)!.data, `the last event of ${where} is not the account's GET`).toEqual(view);
}

/** The last event of each resource of `prefix` against its GET (`path(resourceId)`). */
async function checkLastEvents(ctx: TestContext, p: TestPlatform, rows: OutboxRow[], prefix: string, path: (id: string, data: Body) => string): Promise<number> {
  const grouped = byResource(rows, prefix);
  for (const [id, events] of grouped) {
    const view = await get(ctx, p, path(id, events.at(-1)!.data));
    for (let i = 1; i < events.length; i++) {
      expect(events[i]!.data.updatedAt >= events[i - 1]!.data.updatedAt, `updatedAt of ${id} went back at ${events[i]!.type}`).toBe(true);
    }
    expect(events.at(-1)!.data, `the last ${prefix} event of ${id} (${events.map((e) => e.type).join(' → ')}) is not its GET`).toEqual(view);
  }
  return grouped.size;
}

export interface AuditReport {
  transactions: number;
  transactionEvents: number;
  accounts: number;
  balanceEvents: number;
  others: Record<string, number>;
}

/** Audits every event of the platform so far against the API and the ledger (the module comment). */
export async function auditEvents(ctx: TestContext, p: TestPlatform, label = ''): Promise<AuditReport> {
  // Reads first: the platform's account list may open accounts (and record their events).
  const accounts = [...(await all(ctx, p, '/customers/internal-accounts')), ...((await get(ctx, p, '/platform/internal-accounts')).data as Body[])];
  const transactions = await all(ctx, p, '/transactions');
  const rows = await outboxOf(ctx, p.uuid);
  const txEvents = byResource(
    rows.filter((r) => r.type.startsWith('OUTGOING_PAYMENT.') || r.type.startsWith('INCOMING_PAYMENT.')),
    '',
  );
  for (const listed of transactions) {
    const view = await get(ctx, p, `/transactions/${listed.id}`);
    expect(view, `GET /transactions/{id} and the list disagree on ${listed.id}`).toEqual(listed);
    checkTransactionEvents(label, txEvents.get(view.id) ?? [], view);
  }
  expect([...txEvents.keys()].filter((id) => !transactions.some((t) => t.id === id)), 'events of transactions the API does not show').toEqual([]);

  const history = await ledgerHistory(ctx, p.uuid);
  const accountEvents = byResource(rows, 'INTERNAL_ACCOUNT.');
  for (const view of accounts) {
    const uuid = (view.id as string).slice('InternalAccount:'.length);
    checkAccountEvents(label, accountEvents.get(view.id) ?? [], history.get(uuid) ?? [], view);
  }
  expect([...history.keys()].filter((uuid) => !accounts.some((a) => a.id === `InternalAccount:${uuid}`)), 'ledger accounts the API does not show').toEqual([]);

  const others = {
    customers: await checkLastEvents(ctx, p, rows, 'CUSTOMER.', (id) => `/customers/${id}`),
    externalAccounts: await checkLastEvents(ctx, p, rows, 'EXTERNAL_ACCOUNT.', (id, data) => `/${data.customerId ? 'customers' : 'platform'}/external-accounts/${id}`),
    verifications: await checkLastEvents(ctx, p, rows, 'VERIFICATION.', (id) => `/verifications/${id}`),
  };
  return {
    transactions: transactions.length,
    transactionEvents: [...txEvents.values()].reduce((n, e) => n + e.length, 0),
    accounts: accounts.length,
    balanceEvents: rows.filter((r) => r.type === 'INTERNAL_ACCOUNT.BALANCE_UPDATED').length,
    others,
  };
}
