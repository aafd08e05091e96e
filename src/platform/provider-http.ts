import type { HttpProviderConfig } from '../config.js';
import type { AppError } from './errors.js';

/**
 * One JSON POST to an external provider (document screening, message delivery): Bearer token
 * when configured, a deadline for the whole exchange, and every failure — unreachable, timed
 * out, non-2xx — turned into the caller's `unavailable(reason)` error. Answers the 2xx response.
 */
export async function postToProvider(
  provider: HttpProviderConfig & { url: string },
  body: string | ReadableStream<Uint8Array>,
  unavailable: (reason: string) => AppError,
): Promise<Response> {
  let response: Response;
  try {
    response = await fetch(provider.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json',
        ...(provider.token ? { authorization: `Bearer ${provider.token}` } : {}),
      },
      body,
      // A streamed body needs half-duplex; a string ignores it.
      duplex: 'half',
      signal: AbortSignal.timeout(provider.timeoutMs),
    } as RequestInit);
  } catch (error) {
    throw unavailable((error as Error).name === 'TimeoutError' ? `no answer within ${provider.timeoutMs} ms` : 'unreachable');
  }
  if (!response.ok) {
    await response.body?.cancel();
    throw unavailable(`HTTP ${response.status}`);
  }
  return response;
}
