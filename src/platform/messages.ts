import type { Logger } from 'pino';
import { AppError } from './errors.js';

export interface OutgoingMessage {
  channel: 'EMAIL' | 'SMS';
  /** E-mail address or E.164 phone number. */
  to: string;
  subject: string;
  text: string;
  /** Sender details for e-mail, when the platform configured them. */
  from?: { address?: string; name?: string; replyTo?: string };
}

/** Delivers one-time codes and other messages to end users. */
export interface MessageSender {
  send(message: OutgoingMessage): Promise<void>;
}

function unavailable(reason: string): AppError {
  return new AppError('SERVICE_UNAVAILABLE', `The message provider could not deliver the message (${reason}). Retry later.`);
}

/**
 * A provider reached over HTTP: one JSON POST per message (the message fields above), any 2xx
 * accepts it. Failure is 503 SERVICE_UNAVAILABLE, so the caller can retry.
 */
export class HttpMessageSender implements MessageSender {
  constructor(private readonly options: { url: string; token?: string; timeoutMs: number }) {}

  async send(message: OutgoingMessage): Promise<void> {
    let response: Response;
    try {
      response = await fetch(this.options.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          ...(this.options.token ? { authorization: `Bearer ${this.options.token}` } : {}),
        },
        body: JSON.stringify(message),
        signal: AbortSignal.timeout(this.options.timeoutMs),
      });
    } catch (error) {
      throw unavailable((error as Error).name === 'TimeoutError' ? 'timed out' : 'unreachable');
    }
    await response.body?.cancel();
    if (!response.ok) throw unavailable(`HTTP ${response.status}`);
  }
}

/** No provider configured: the message is dropped, and the log says so without its content. */
export class UndeliveredMessages implements MessageSender {
  constructor(private readonly logger: Logger) {}

  async send(message: OutgoingMessage): Promise<void> {
    this.logger.warn({ channel: message.channel }, 'message not delivered: no message provider is configured (CORRIDOR_MESSAGES_URL)');
  }
}
