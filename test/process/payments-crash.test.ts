import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/platform/db/database.js';
import { BASE, basic, onPostgres } from '../helpers/context.js';
import { validSamples } from '../helpers/external-accounts.js';
import { createSandboxPlatform, type ProcessDatabase, processDatabase, runCli, startCorridor } from '../helpers/process.js';

const TERMINAL = ['OUTGOING_PAYMENT.COMPLETED', 'OUTGOING_PAYMENT.FAILED'];

/**
 * Issue 15 §9: quotes executed (immediatelyExecute) by eight clients while the server's own job
 * worker hands payments to the rails and settles them (the sandbox clock pushed forward now and
 * then), until the server is killed with SIGKILL. Restarted, every acknowledged transfer — and
 * every one committed without its answer reaching the client — ends COMPLETED or FAILED exactly
 * once, the balance is what the completed ones took, and the ledger verifies.
 */
describe.runIf(onPostgres)('corridor serve killed with SIGKILL during executions and settlements', () => {
  let database: ProcessDatabase;
  beforeAll(async () => {
    database = await processDatabase('paycrash');
  });
  afterAll(() => database.cleanup());

  it('settles or fails every transfer exactly once after the restart', async () => {
    const created = await createSandboxPlatform(database.env);
    const authorization = basic(created.clientId, created.clientSecret);
    // The dead process's jobs come back when their leases run out: 5 s here, not a minute.
    const env = { ...database.env, CORRIDOR_JOBS: 'true', CORRIDOR_JOBS_POLL_MS: '50', CORRIDOR_JOBS_LEASE_MS: '5000' };
    let server = await startCorridor(env);
    const api = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
      fetch(`http://127.0.0.1:${server.port}${BASE}${path}`, {
        method,
        headers: { authorization, 'content-type': 'application/json', ...headers },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    const consent = { acceptedAt: new Date().toISOString(), ipAddress: '203.0.113.7', termsVersion: 'V1', acceptanceMethod: 'CHECKBOX' };
    const customer = (await (await api('POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Crash Test', endUserTermsConsent: consent })).json()) as { id: string };
    const accounts = (await (await api('GET', `/customers/internal-accounts?customerId=${customer.id}&currency=USD`)).json()) as { data: Array<{ id: string }> };
    const source = accounts.data[0]!.id;
    const FUNDED = 100_000_000;
    expect((await api('POST', `/sandbox/internal-accounts/${source}/fund`, { amount: FUNDED })).status).toBe(200);
    const sample = validSamples(new Date()).USD_ACCOUNT!;
    const payee = (await (await api('POST', '/platform/external-accounts', sample)).json()) as { id: string };

    // Eight clients create-and-execute quotes (amount 10_000 + n under key pay-n); amounts ending
    // in 901–906 take the sandbox failure paths, so refunds happen during the stream too.
    const acknowledged = new Map<number, string>();
    let next = 1;
    let dead = false;
    const clients = Array.from({ length: 8 }, async () => {
      while (!dead) {
        const n = next++;
        try {
          const response = await api(
            'POST',
            '/quotes',
            {
              source: { sourceType: 'ACCOUNT', accountId: source },
              destination: { destinationType: 'ACCOUNT', accountId: payee.id, paymentRail: 'RTP' },
              lockedCurrencySide: 'SENDING',
              lockedCurrencyAmount: 10_000 + n * 101,
              immediatelyExecute: true,
            },
            { 'idempotency-key': `pay-${n}` },
          );
          if (response.status === 201) acknowledged.set(n, ((await response.json()) as { transactionId: string }).transactionId);
        } catch {
          // The connection died with the server: not acknowledged.
        }
      }
    });
    // Settlements come due while executions stream in.
    const clock = (async () => {
      while (!dead) {
        await api('POST', '/sandbox/clock/advance', { seconds: 30 }).catch(() => undefined);
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    while (acknowledged.size < 60) await new Promise((r) => setTimeout(r, 10));
    await server.stop('SIGKILL');
    dead = true;
    await Promise.all([...clients, clock]);

    const verify = await runCli(database.env, 'ledger', 'verify');
    expect(verify.stdout).toContain('ledger verify: OK');

    server = await startCorridor(env);
    const handle = await openDatabase({ databaseUrl: database.env.DATABASE_URL!, poolSize: 1 });
    try {
      // Whatever was in flight settles once the platform's time has passed every settlement.
      expect((await api('POST', '/sandbox/clock/advance', { seconds: 86_400 })).status).toBe(200);
      const deadline = Date.now() + 120_000;
      for (;;) {
        const open = await handle.db.selectFrom('transactions').select('id').where('status', 'not in', ['COMPLETED', 'FAILED']).execute();
        if (open.length === 0) break;
        if (Date.now() > deadline) throw new Error(`${open.length} transactions never ended`);
        await new Promise((r) => setTimeout(r, 200));
      }
      const rows = await handle.db.selectFrom('transactions').select(['id', 'status', 'total_sending_amount']).execute();
      const ids = new Set(rows.map((r) => `Transaction:${r.id}`));
      for (const id of acknowledged.values()) expect(ids.has(id), id).toBe(true);
      for (const row of rows) {
        const ended = await handle.db
          .selectFrom('events')
          .select('type')
          .where('resource_id', '=', `Transaction:${row.id}`)
          .where('type', 'in', TERMINAL)
          .execute();
        expect(ended, `Transaction:${row.id}`).toHaveLength(1);
      }
      const spent = rows.filter((r) => r.status === 'COMPLETED').reduce((sum, r) => sum + BigInt(r.total_sending_amount as string), 0n);
      expect(rows.some((r) => r.status === 'FAILED')).toBe(true);
      const after = (await (await api('GET', `/customers/internal-accounts?customerId=${customer.id}&currency=USD`)).json()) as { data: Array<{ balance: { amount: number }; totalBalance: { amount: number } }> };
      expect(BigInt(after.data[0]!.balance.amount)).toBe(BigInt(FUNDED) - spent);
      expect(after.data[0]!.totalBalance.amount).toBe(after.data[0]!.balance.amount);
    } finally {
      await handle.close();
      await server.stop();
    }
    const again = await runCli(database.env, 'ledger', 'verify');
    expect(again.code, again.stdout).toBe(0);
  }, 300_000);
});
