import fc from 'fast-check';
import { expect } from 'vitest';
import { internalAccountBalances, LedgerError, openInternalLedgerAccount, type Ledger, type LedgerAccountRef } from '../../src/modules/ledger/index.js';
import type { Db } from '../../src/platform/db/database.js';
import { withTx } from '../../src/platform/db/tx.js';
import { uuidv7 } from '../../src/platform/ids.js';

/**
 * Random money movements for property tests of the ledger: commands over a few internal accounts
 * (funding, transfers with a fee, holds, posts, voids, reversals, replays), applied through the
 * real `Ledger`, and the effect each one has on the accounts when it succeeds.
 */
export type Command =
  | { op: 'fund'; to: number; amount: number }
  | { op: 'transfer'; from: number; to: number; amount: number; fee: number }
  | { op: 'hold'; from: number; amount: number }
  | { op: 'post' | 'void'; hold: number }
  | { op: 'reverse'; transfer: number }
  | { op: 'replay'; of: number };

export const ACCOUNTS = 4;

const account = fc.integer({ min: 0, max: ACCOUNTS - 1 });
const amount = fc.integer({ min: 1, max: 3_000 });

export const commandArb: fc.Arbitrary<Command> = fc.oneof(
  { arbitrary: fc.record({ op: fc.constant('fund' as const), to: account, amount: fc.integer({ min: 1_000, max: 10_000 }) }), weight: 3 },
  {
    arbitrary: fc.record({ op: fc.constant('transfer' as const), from: account, to: account, amount, fee: fc.integer({ min: 0, max: 50 }) }).filter((c) => c.from !== c.to),
    weight: 3,
  },
  { arbitrary: fc.record({ op: fc.constant('hold' as const), from: account, amount }), weight: 3 },
  { arbitrary: fc.record({ op: fc.constantFrom('post' as const, 'void' as const), hold: fc.nat(20) }), weight: 3 },
  { arbitrary: fc.record({ op: fc.constant('reverse' as const), transfer: fc.nat(20) }), weight: 2 },
  { arbitrary: fc.record({ op: fc.constant('replay' as const), of: fc.nat(30) }), weight: 1 },
);

export interface Balances {
  available: bigint[];
  total: bigint[];
}

/** What a successful command did, in account terms, so expected balances can be added up. */
interface Effect {
  available: Map<number, bigint>;
  total: Map<number, bigint>;
}

/** The accounts of one run and the history it needs (holds and transfers to pick from, past calls to replay). */
export class LedgerRun {
  readonly accounts: string[] = [];
  private readonly holds: Array<{ id: string; from: number; amount: bigint }> = [];
  /** What may be reversed, reversals included: a reversal is final (NOT_REVERSIBLE). */
  private readonly transfers: Array<{ id: string; effect: Effect; reversal?: true }> = [];
  private readonly applied: Array<() => Promise<unknown>> = [];
  private readonly resolved = new Set<string>();
  private readonly reversed = new Set<string>();
  private seq = 0;

  private constructor(
    private readonly db: Db,
    private readonly ledger: Ledger,
    readonly platformId: string,
    private readonly tag: string,
  ) {}

  static async open(db: Db, ledger: Ledger, platformId: string): Promise<LedgerRun> {
    const run = new LedgerRun(db, ledger, platformId, uuidv7());
    for (let i = 0; i < ACCOUNTS; i++) {
      const id = uuidv7();
      await withTx(db, (trx) => openInternalLedgerAccount(trx, { id, platformId, currency: 'USD', now: new Date() }));
      run.accounts.push(id);
    }
    return run;
  }

  private ref(i: number): LedgerAccountRef {
    return { kind: 'INTERNAL_ACCOUNT', id: this.accounts[i]! };
  }

  /**
   * Applies one command. Resolves to the effect it had, or to the refusal the ledger gave
   * (only the refusals a correct ledger may give for a well-formed command are accepted).
   * Given the balances a sequential run expects before it, also checks that the ledger refused
   * exactly when it had to.
   */
  async apply(command: Command, before?: Balances): Promise<{ effect?: Effect; refusal?: string }> {
    this.expected = before;
    const outcome = await this.applyUnchecked(command);
    if (before) {
      const expected = this.expectedRefusal(command, before);
      expect(outcome.refusal, JSON.stringify(command)).toBe(expected);
    }
    return outcome;
  }

  /** What a correct ledger answers to a command applied alone, from the balances before it. */
  private expectedRefusal(command: Command, before: Balances): string | undefined {
    switch (command.op) {
      case 'transfer':
        return before.available[command.from]! < BigInt(command.amount + command.fee) ? 'INSUFFICIENT_FUNDS' : undefined;
      case 'hold':
        return before.available[command.from]! < BigInt(command.amount) ? 'INSUFFICIENT_FUNDS' : undefined;
      default:
        return this.lastRefusal;
    }
  }

  private lastRefusal: string | undefined;

  private async applyUnchecked(command: Command): Promise<{ effect?: Effect; refusal?: string }> {
    this.lastRefusal = undefined;
    const reference = `${this.tag}:${++this.seq}`;
    const platformId = this.platformId;
    const usd = (from: LedgerAccountRef, to: LedgerAccountRef, n: number) => ({ from, to, amount: BigInt(n), currency: 'USD' });
    const effect = (available: Array<[number, bigint]>, total: Array<[number, bigint]>): Effect => ({ available: new Map(available), total: new Map(total) });
    const run = async (call: () => Promise<unknown>, allowed: string[], onSuccess: (result: { id: string }) => Effect) => {
      try {
        const result = (await call()) as { id: string };
        this.applied.push(call);
        return { effect: onSuccess(result) };
      } catch (error) {
        if (error instanceof LedgerError && allowed.includes(error.reason)) return { refusal: error.reason };
        throw error;
      }
    };
    switch (command.op) {
      case 'fund': {
        const n = BigInt(command.amount);
        return run(
          () => withTx(this.db, (trx) => this.ledger.transfer(trx, { platformId, reference, postings: [usd({ kind: 'SANDBOX_FUNDING', currency: 'USD' }, this.ref(command.to), command.amount)] })),
          [],
          (r) => {
            const e = effect([[command.to, n]], [[command.to, n]]);
            this.transfers.push({ id: r.id, effect: e });
            return e;
          },
        );
      }
      case 'transfer': {
        const [n, fee] = [BigInt(command.amount), BigInt(command.fee)];
        const postings = [usd(this.ref(command.from), this.ref(command.to), command.amount)];
        if (command.fee > 0) postings.push(usd(this.ref(command.from), { kind: 'PLATFORM_FEES', currency: 'USD' }, command.fee));
        return run(
          () => withTx(this.db, (trx) => this.ledger.transfer(trx, { platformId, reference, postings })),
          ['INSUFFICIENT_FUNDS'],
          (r) => {
            const e = effect([[command.from, -(n + fee)], [command.to, n]], [[command.from, -(n + fee)], [command.to, n]]);
            this.transfers.push({ id: r.id, effect: e });
            return e;
          },
        );
      }
      case 'hold': {
        const n = BigInt(command.amount);
        return run(
          () => withTx(this.db, (trx) => this.ledger.hold(trx, { platformId, reference, postings: [usd(this.ref(command.from), { kind: 'SETTLEMENT', rail: 'ACH', currency: 'USD' }, command.amount)] })),
          ['INSUFFICIENT_FUNDS'],
          (r) => {
            this.holds.push({ id: r.id, from: command.from, amount: n });
            return effect([[command.from, -n]], []);
          },
        );
      }
      case 'post':
      case 'void': {
        const hold = this.holds[command.hold % Math.max(1, this.holds.length)];
        if (!hold) return {};
        const method = command.op === 'post' ? this.ledger.postHold.bind(this.ledger) : this.ledger.voidHold.bind(this.ledger);
        if (this.resolved.has(hold.id)) this.lastRefusal = 'HOLD_NOT_PENDING';
        return run(
          () => withTx(this.db, (trx) => method(trx, { platformId, holdId: hold.id, reference })),
          ['HOLD_NOT_PENDING'],
          () => {
            this.resolved.add(hold.id);
            return command.op === 'post' ? effect([], [[hold.from, -hold.amount]]) : effect([[hold.from, hold.amount]], []);
          },
        );
      }
      case 'reverse': {
        const original = this.transfers[command.transfer % Math.max(1, this.transfers.length)];
        if (!original) return {};
        const negate = (m: Map<number, bigint>) => new Map([...m].map(([k, v]) => [k, -v]));
        this.lastRefusal = original.reversal || this.reversed.has(original.id) ? 'NOT_REVERSIBLE' : this.reversalShortOf(original.effect.available);
        return run(
          () => withTx(this.db, (trx) => this.ledger.reverse(trx, { platformId, transactionId: original.id, reference })),
          ['INSUFFICIENT_FUNDS', 'NOT_REVERSIBLE'],
          (r) => {
            this.reversed.add(original.id);
            const e = { available: negate(original.effect.available), total: negate(original.effect.total) };
            this.transfers.push({ id: r.id, effect: e, reversal: true });
            return e;
          },
        );
      }
      case 'replay': {
        // Applying a past call again (same reference, same postings) changes nothing.
        const past = this.applied[command.of % Math.max(1, this.applied.length)];
        if (!past) return {};
        const result = (await past()) as { replayed: boolean };
        expect(result.replayed).toBe(true);
        return { effect: effect([], []) };
      }
    }
  }

  /** Balances a sequential run expects before the command being applied. */
  private expected: Balances | undefined;

  private reversalShortOf(credited: Map<number, bigint>): string | undefined {
    if (!this.expected) return undefined;
    for (const [i, v] of credited) if (v > 0n && this.expected.available[i]! < v) return 'INSUFFICIENT_FUNDS';
    return undefined;
  }

  async balances(): Promise<Balances> {
    const found = await internalAccountBalances(this.db, this.platformId, this.accounts);
    return { available: this.accounts.map((id) => found.get(id)!.available), total: this.accounts.map((id) => found.get(id)!.total) };
  }
}

/** Balances after adding a command's effect. */
export function applyEffect(balances: Balances, effect: { available: Map<number, bigint>; total: Map<number, bigint> } | undefined): Balances {
  if (!effect) return balances;
  return {
    available: balances.available.map((v, i) => v + (effect.available.get(i) ?? 0n)),
    total: balances.total.map((v, i) => v + (effect.total.get(i) ?? 0n)),
  };
}

export const zeroBalances = (): Balances => ({ available: Array(ACCOUNTS).fill(0n), total: Array(ACCOUNTS).fill(0n) });
