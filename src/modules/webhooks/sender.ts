import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { guardedLookup, RefusedAddressError, refusedLiteral, type Resolver } from '../../platform/address-guard.js';

/** What is read of a receiver's answer: enough for an approval's JSON, never an unbounded body. */
export const MAX_RESPONSE_BYTES = 16 * 1024;

export interface WebhookRequest {
  url: string;
  body: string;
  headers: Record<string, string>;
  timeoutMs: number;
  /** Production: refuse loopback, private, link-local and metadata addresses (checked on the address connected to). */
  guard: boolean;
}

export interface WebhookResponse {
  /** Absent when no HTTP answer came (refused, unreachable, timed out). */
  status?: number;
  body?: string;
  latencyMs: number;
  /** What went wrong, in words for the delivery log; absent on an HTTP answer. */
  error?: string;
  /** The address was refused by the production guard; nothing was sent. */
  refused?: boolean;
}

/**
 * How long a kept-alive connection may sit unused before Corridor closes it (as Node's own
 * global agent does). Without it a receiver that never closes idle connections, or a platform
 * moving its endpoint from host to host, would keep a socket per host open for ever.
 */
export const IDLE_CONNECTION_MS = 5_000;

/**
 * Connections to an endpoint are reused across deliveries; the guard runs when each one opens.
 * Guarded (production) requests never share a pool with unguarded (sandbox) ones, or a socket
 * a sandbox opened to a private address could carry a production delivery.
 */
const pooled = { keepAlive: true, timeout: IDLE_CONNECTION_MS };
const agents = {
  guarded: { http: new HttpAgent(pooled), https: new HttpsAgent(pooled) },
  open: { http: new HttpAgent(pooled), https: new HttpsAgent(pooled) },
};

function readCapped(response: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    response.on('data', (chunk: Buffer) => {
      if (size >= MAX_RESPONSE_BYTES) return;
      chunks.push(chunk.subarray(0, MAX_RESPONSE_BYTES - size));
      size += chunk.length;
      // Enough has been read: stop the receiver from streaming more.
      if (size >= MAX_RESPONSE_BYTES) response.destroy();
    });
    response.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    response.on('close', () => resolve(Buffer.concat(chunks).toString('utf8')));
    response.on('error', reject);
  });
}

function describe(error: unknown, timeoutMs: number): string {
  if (error instanceof RefusedAddressError) return error.message;
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'ETIMEDOUT_WEBHOOK') return `no answer within ${timeoutMs} ms`;
  if (code === 'ECONNREFUSED') return 'connection refused';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return 'the host name does not resolve';
  if (code === 'ECONNRESET') return 'the connection was reset';
  if (typeof code === 'string' && (code.startsWith('ERR_TLS') || code.includes('CERT') || code.startsWith('DEPTH_ZERO'))) {
    return `TLS failed (${code})`;
  }
  return code ? `request failed (${code})` : 'request failed';
}

/**
 * POSTs one signed webhook. Never follows redirects (a 3xx is an answer like any other), gives
 * up after `timeoutMs` for the whole exchange, reads at most MAX_RESPONSE_BYTES of the answer,
 * and in production connects only to addresses the guard accepted. Never throws.
 */
export async function postWebhook(request: WebhookRequest, resolver: Resolver): Promise<WebhookResponse> {
  const started = performance.now();
  const url = new URL(request.url);
  const refused = request.guard ? refusedLiteral(url.hostname) : undefined;
  if (refused) return { latencyMs: 0, error: new RefusedAddressError(refused.address, refused.range).message, refused: true };
  const deadline = started + request.timeoutMs;
  const first = await exchange(url, request, resolver, started, deadline);
  // A kept-alive connection the receiver closed meanwhile (it restarted): the request never
  // reached it, so one fresh connection is tried at once, as Node's HTTP client advises.
  return first.staleSocket ? exchange(url, request, resolver, started, deadline) : first;
}

function exchange(url: URL, request: WebhookRequest, resolver: Resolver, started: number, deadline: number): Promise<WebhookResponse & { staleSocket?: boolean }> {
  const elapsed = () => Math.round(performance.now() - started);
  const secure = url.protocol === 'https:';
  return new Promise((resolve) => {
    let settled = false;
    const done = (result: WebhookResponse & { staleSocket?: boolean }) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(result);
    };
    const outgoing = (secure ? httpsRequest : httpRequest)(
      url,
      {
        method: 'POST',
        agent: agents[request.guard ? 'guarded' : 'open'][secure ? 'https' : 'http'],
        headers: { ...request.headers, 'content-length': Buffer.byteLength(request.body) },
        ...(request.guard ? { lookup: guardedLookup(resolver) } : {}),
      },
      (response) => {
        readCapped(response).then(
          (body) => done({ status: response.statusCode!, body, latencyMs: elapsed() }),
          () => done({ status: response.statusCode!, body: '', latencyMs: elapsed() }),
        );
      },
    );
    const timer = setTimeout(
      () => outgoing.destroy(Object.assign(new Error('timeout'), { code: 'ETIMEDOUT_WEBHOOK' })),
      Math.max(0, deadline - performance.now()),
    );
    outgoing.on('error', (error: NodeJS.ErrnoException) =>
      done({
        latencyMs: elapsed(),
        error: describe(error, request.timeoutMs),
        ...(error instanceof RefusedAddressError ? { refused: true } : {}),
        ...(outgoing.reusedSocket && error.code === 'ECONNRESET' ? { staleSocket: true } : {}),
      }),
    );
    outgoing.end(request.body);
  });
}
