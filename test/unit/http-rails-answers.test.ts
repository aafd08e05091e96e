import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_POSTING_AMOUNT } from '../../src/modules/ledger/index.js';
import { HttpRails } from '../../src/modules/transactions/http-rails.js';
import type { ExpectedDeposit, Pull } from '../../src/modules/transactions/rail-provider.js';

/**
 * The production rail adapter's reading of the provider's answers (docs/payments.md, the
 * rail-provider contract), on a local stub: what is inside the contract becomes an outcome; what
 * is outside it (an amount the ledger cannot take, a zero or zero-padded amount, a time without
 * its offset, a return not confirmed) is 503 SERVICE_UNAVAILABLE, which the job retries — never
 * money credited or returned on a guess. No database.
 */
let server: Server;
let rails: HttpRails;
let answer: unknown;

beforeAll(async () => {
  server = createServer(async (request, response) => {
    for await (const _chunk of request);
    response.setHeader('content-type', 'application/json');
    response.end(JSON.stringify(answer));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  rails = new HttpRails({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/rails`, token: 'rail-secret', timeoutMs: 5_000 });
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

const expected: ExpectedDeposit = {
  transactionId: 'Transaction:019542f5-b3e7-7d02-8000-000000000001',
  platformId: '019542f5-b3e7-7d02-8000-000000000002',
  quoteId: 'Quote:019542f5-b3e7-7d02-8000-000000000003',
  currency: 'USD',
  amount: 20_000n,
  reference: 'CRD-REF',
  paymentInstructions: [],
  expiresAt: '2026-01-01T00:05:00Z',
};
const pull: Pull = { transactionId: expected.transactionId, platformId: expected.platformId, accountId: 'ExternalAccount:019542f5-b3e7-7d02-8000-000000000004', rail: 'ACH', currency: 'USD', amount: 10_075n, reference: 'CRD-REF' };

const offContract = (promise: Promise<unknown>) => expect(promise).rejects.toMatchObject({ code: 'SERVICE_UNAVAILABLE' });

describe('POST {url}/deposits/status', () => {
  it('RECEIVED with an amount of exactly 2^53 − 1 (the largest posting) and an RFC 3339 time is received', async () => {
    answer = { status: 'RECEIVED', amount: MAX_POSTING_AMOUNT.toString(), receivedAt: '2026-01-01T00:01:00.5+02:00' };
    await expect(rails.deposit(expected)).resolves.toEqual({ status: 'RECEIVED', amount: MAX_POSTING_AMOUNT, receivedAt: new Date('2025-12-31T22:01:00.500Z') });
    answer = { status: 'RECEIVED', amount: '1', receivedAt: '2026-01-01T00:01:00Z' };
    await expect(rails.deposit(expected)).resolves.toEqual({ status: 'RECEIVED', amount: 1n, receivedAt: new Date('2026-01-01T00:01:00Z') });
  });

  it('an amount above 2^53 − 1, zero, zero-padded, signed or not a string is outside the contract', async () => {
    for (const amount of [(MAX_POSTING_AMOUNT + 1n).toString(), '0', '020000', '-20000', '+20000', '20000.00', 20_000, '']) {
      answer = { status: 'RECEIVED', amount, receivedAt: '2026-01-01T00:01:00Z' };
      await offContract(rails.deposit(expected));
    }
  });

  it('a receivedAt without its offset, not RFC 3339, or impossible is outside the contract', async () => {
    for (const receivedAt of ['2026-01-01T00:01:00', '2026-01-01 00:01:00Z', '2026-01-01', 'yesterday', '2026-13-01T00:01:00Z', 1_767_225_660_000, null]) {
      answer = { status: 'RECEIVED', amount: '20000', receivedAt };
      await offContract(rails.deposit(expected));
    }
  });

  it('PENDING is pending; any other status is outside the contract', async () => {
    answer = { status: 'PENDING' };
    await expect(rails.deposit(expected)).resolves.toEqual({ status: 'PENDING' });
    for (const odd of [{ status: 'RETURNED' }, { status: 'received', amount: '20000', receivedAt: '2026-01-01T00:01:00Z' }, null, []]) {
      answer = odd;
      await offContract(rails.deposit(expected));
    }
  });
});

describe('POST {url}/deposits/return', () => {
  it('only RETURNED confirms the return', async () => {
    answer = { status: 'RETURNED' };
    await expect(rails.returnDeposit(expected, 20_000n)).resolves.toBeUndefined();
    for (const odd of [{ status: 'PENDING' }, { status: 'ACCEPTED' }, {}, null]) {
      answer = odd;
      await offContract(rails.returnDeposit(expected, 20_000n));
    }
  });
});

describe('POST {url}/collections and /collections/status', () => {
  it('ACCEPTED and REJECTED are the hand-over’s answers; COLLECTED there is outside the contract', async () => {
    answer = { status: 'ACCEPTED' };
    await expect(rails.collect(pull)).resolves.toEqual({ status: 'ACCEPTED' });
    answer = { status: 'REJECTED' };
    await expect(rails.collect(pull)).resolves.toEqual({ status: 'FAILED', afterSeconds: 0 });
    for (const odd of [{ status: 'COLLECTED' }, { status: 'PENDING' }, { status: 'FAILED' }, null]) {
      answer = odd;
      await offContract(rails.collect(pull));
    }
  });

  it('PENDING, COLLECTED and FAILED are the status’s answers; anything else is outside the contract', async () => {
    for (const status of ['PENDING', 'COLLECTED', 'FAILED'] as const) {
      answer = { status };
      await expect(rails.collectionStatus(pull)).resolves.toEqual({ status });
    }
    for (const odd of [{ status: 'ACCEPTED' }, { status: 'REJECTED' }, { status: 'collected' }, null]) {
      answer = odd;
      await offContract(rails.collectionStatus(pull));
    }
  });
});
