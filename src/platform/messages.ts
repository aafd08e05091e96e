import type { Logger } from 'pino';
import type { HttpProviderConfig } from '../config.js';
import { AppError } from './errors.js';
import { postToProvider } from './provider-http.js';

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
  constructor(private readonly options: HttpProviderConfig & { url: string }) {}

  async send(message: OutgoingMessage): Promise<void> {
    const response = await postToProvider(this.options, JSON.stringify(message), unavailable);
    await response.body?.cancel();
  }
}

/** No provider configured: the message is dropped, and the log says so without its content. */
export class UndeliveredMessages implements MessageSender {
  constructor(private readonly logger: Logger) {}

  async send(message: OutgoingMessage): Promise<void> {
    this.logger.warn({ channel: message.channel }, 'message not delivered: no message provider is configured (CORRIDOR_MESSAGES_URL)');
  }
}
