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

/**
 * Reads at most `maxBytes` of a provider's answer: a longer one is refused with the caller's
 * `unavailable` error as soon as it passes the cap, without reading (or holding) the rest. The
 * deadline and the connection hold for the body too: a body that stalls past the deadline, or
 * is cut off, is the provider failing (`unavailable`), never an error of Corridor's.
 */
export async function readProviderAnswer(response: Response, maxBytes: number, unavailable: (reason: string) => AppError): Promise<string> {
  const reader = response.body?.getReader();
  if (!reader) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    let read: ReadableStreamReadResult<Uint8Array>;
    try {
      read = await reader.read();
    } catch (error) {
      throw unavailable((error as Error).name === 'TimeoutError' ? 'the answer did not arrive within the deadline' : 'the answer was cut off');
    }
    const { done, value } = read;
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel();
      throw unavailable(`the answer is larger than ${maxBytes} bytes`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}
