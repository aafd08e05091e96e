import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Json } from './payments.js';

/** An answer of the stub rail provider: fixed, or a function of the request body (when it depends on the payment). */
export type RailAnswer = Json | ((body: Json) => Json);

/**
 * A stub of the HTTP rail provider (CORRIDOR_RAILS_URL = `${base}/rails`: `answers` by path,
 * changeable as the test goes) and of the production rate provider production quotes need
 * (CORRIDOR_RATES_URL = `${base}/rates`: units of each currency per US dollar, `rateOf`). Every
 * request is kept in `seen`, with its Authorization header.
 */
export async function stubRailProvider(answers: Record<string, RailAnswer>, rateOf: (currency: string) => string) {
  const seen: Array<{ path: string; body: Json; auth: string | undefined }> = [];
  const server: Server = createServer(async (request: IncomingMessage, response) => {
    let text = '';
    for await (const chunk of request) text += chunk;
    const body = JSON.parse(text) as Json;
    seen.push({ path: request.url!, body, auth: request.headers.authorization });
    const answer =
      request.url === '/rates'
        ? { asOf: new Date().toISOString(), rates: Object.fromEntries(((body.currencies as string[] | undefined) ?? []).map((c) => [c, rateOf(c)])) }
        : answers[request.url!];
    response.setHeader('content-type', 'application/json');
    response.end(JSON.stringify(typeof answer === 'function' ? answer(body) : answer));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { base, seen, answers, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}
