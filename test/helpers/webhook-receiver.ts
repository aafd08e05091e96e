import { createPublicKey, verify, type KeyObject } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Kysely } from 'kysely';
import { expect } from 'vitest';
import type { ApprovalRequest } from '../../src/modules/webhooks/index.js';
import type { Database } from '../../src/platform/db/database.js';
import { newId } from '../../src/platform/ids.js';
import { webhookBreach } from './upstream-conformance.js';

export interface Envelope {
  id: string;
  type: string;
  timestamp: string;
  data?: Record<string, unknown>;
}

export interface ReceivedWebhook {
  raw: string;
  body: Envelope;
  headers: IncomingHttpHeaders;
  /** Whether `X-Service-Signature` verified against one of the trusted public keys. */
  verified: boolean;
}

export interface Answer {
  status: number;
  body?: string;
  /** Wait this long before answering (a slow endpoint). */
  delayMs?: number;
  /** Never answer (a hung endpoint); the connection stays open until the server closes. */
  hang?: boolean;
  headers?: Record<string, string>;
}

/**
 * A platform's webhook endpoint, as an integrator would write it with node:http: it reads the
 * raw body, verifies the signature with node:crypto exactly as docs/webhooks.md shows, records
 * what came, and answers as the test tells it.
 */
export class WebhookReceiver {
  readonly received: ReceivedWebhook[] = [];
  /** Bodies outside the upstream's schema for their event type (helpers/upstream-conformance.ts); close() fails on any. */
  private readonly breaches: string[] = [];
  answer: (webhook: ReceivedWebhook) => Answer = () => ({ status: 200 });
  private readonly keys: KeyObject[] = [];
  private constructor(private readonly server: Server) {}

  static async start(port = 0): Promise<WebhookReceiver> {
    const server = createServer();
    const receiver = new WebhookReceiver(server);
    server.on('request', (request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (c: Buffer) => chunks.push(c));
      request.on('end', () => {
        const rawBody = Buffer.concat(chunks);
        // The verification of docs/webhooks.md, verbatim.
        const signature = Buffer.from(String(request.headers['x-service-signature'] ?? ''), 'base64');
        const verified = receiver.keys.some((publicKey) => verify('sha256', rawBody, publicKey, signature));
        const webhook: ReceivedWebhook = { raw: rawBody.toString('utf8'), body: JSON.parse(rawBody.toString('utf8')) as Envelope, headers: request.headers, verified };
        receiver.received.push(webhook);
        const breach = webhookBreach(webhook.raw);
        if (breach) receiver.breaches.push(breach);
        const answer = receiver.answer(webhook);
        if (answer.hang) return;
        const send = () => response.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers }).end(answer.body ?? '');
        if (answer.delayMs) setTimeout(send, answer.delayMs);
        else send();
      });
    });
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    return receiver;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/webhooks`;
  }

  /** Trusts these public keys (PEM) from GET /webhooks/signing-keys. */
  trust(pems: string[]): void {
    this.keys.splice(0, this.keys.length, ...pems.map((pem) => createPublicKey(pem)));
  }

  of(type: string): ReceivedWebhook[] {
    return this.received.filter((w) => w.body.type === type);
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    if (this.breaches.length > 0) throw new Error(`webhooks outside the upstream's schema:\n${this.breaches.join('\n')}`);
  }
}

/**
 * Resolves once Corridor has read the receiver's 202 to the approval question about
 * `transactionId` and opened the platform's window (the row's deadline shortened from the
 * latest possible one to answer + window). A test that moves a clock before then would move
 * the window's start with it, and the question would never time out.
 */
export async function untilApprovalWindowOpen(db: Kysely<Database>, transactionId: string, windowMs: number): Promise<void> {
  await expect
    .poll(async () => {
      const row = await db.selectFrom('webhook_approvals').select(['deadline', 'created_at']).where('transaction_id', '=', transactionId).executeTakeFirst();
      return row ? row.deadline.getTime() - row.created_at.getTime() : undefined;
    })
    .toBeLessThanOrEqual(windowMs);
}

/** An incoming UMA payment waiting for a platform's approval, as the UMA module describes one, for `consumer` to apply. */
export function approvalQuestion(platformUuid: string, consumer: string, requested: Array<{ name: string; mandatory: boolean }> = []): ApprovalRequest {
  const transactionId = newId('Transaction');
  return {
    platformId: platformUuid,
    transactionId,
    consumer,
    type: 'INCOMING_PAYMENT.PENDING',
    data: {
      id: transactionId,
      status: 'PENDING',
      type: 'INCOMING',
      direction: 'CREDIT',
      destination: { destinationType: 'UMA_ADDRESS', umaAddress: '$recipient@uma.example.com' },
      customerId: newId('Customer'),
      platformCustomerId: 'cust-1',
      receivedAmount: { amount: 50000, currency: { code: 'USD', name: 'US Dollar', symbol: '$', decimals: 2 } },
      counterpartyInformation: { FULL_NAME: 'John Sender' },
      ...(requested.length ? { requestedReceiverCustomerInfoFields: requested } : {}),
    },
  };
}
